"""Real ingest updates on the local engine (open-source SDP on Delta), driven through the CLI.

Scenario, one local home: batch 1 -> update 1; batch 2 -> update 2; batch 3 with an incomplete
gzip upload of orders -> update 3 fails; the file is re-delivered -> update 4, a full refresh;
new orders arrive and update 5 runs with a `fail` expectation that some of them violate. Then a
`drop` rule on the amount that turns out too strict: update 6 resets orders and its rejected rows
under it; its fix is replayed (`lakewatch replay`, update 7), replayed again (update 8), and update 9
resets orders and its rejected rows under the fixed rule.
The generator's manifest and the landing files themselves are the truth the tables are checked against.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from pyspark.sql import functions as F

from pipelines.config import load_tables
from pipelines.generator import Mix, generate_batch, load_column_settings, redeliver
from tests.integration.helpers import PROJECT_ROOT, Cli, LocalTables, corrupt_lines_on_disk, local_path

pytestmark = pytest.mark.integration

TABLES = {"orders": "order_id", "customers": "customer_id", "payments": "payment_id"}  # table -> column of its drop rule (payments: CSV)
MIX = Mix(malformed=0.06, type_mismatch=0.05, unknown_field=0.05, case_variant=0.04, empty_file=0.5)
UPDATE_LINE = re.compile(r"^update (?P<id>[0-9a-f-]{36}) of 'lakewatch_ingest': (?P<state>[A-Z]+)", re.M)


@dataclass
class Scenario:
    tables: LocalTables
    updates: list[tuple[str, str]] = field(default_factory=list)  # (update id, state)
    outputs: list[str] = field(default_factory=list)
    exit_codes: list[int] = field(default_factory=list)
    rows_per_file_after: dict[int, dict[str, Counter]] = field(default_factory=dict)
    manifest_after: dict[int, dict] = field(default_factory=dict)
    sink_after: dict[int, Counter] = field(default_factory=dict)
    events_after: dict[int, dict[str, tuple]] = field(default_factory=dict)
    clean_after_5: dict[str, tuple[int, int]] = field(default_factory=dict)  # table -> (rows, rows without its key)
    replays: list[dict] = field(default_factory=list)  # `replay -o json` of updates 7 and 8
    orders_after: dict[int, Counter] = field(default_factory=dict)  # update -> the clean table's rows


def bronze_rows_per_file(tables: LocalTables, table: str) -> Counter:
    rows = tables.table(f"{table}_bronze").groupBy("_source_file").count().collect()
    return Counter({local_path(r["_source_file"]): r["count"] for r in rows})


def sink_rows(tables: LocalTables) -> Counter:
    rows = tables.table("corrupt_records_sink").groupBy("source_table", "_source_file", "_record_hash").count().collect()
    return Counter({(r["source_table"], local_path(r["_source_file"]), r["_record_hash"]): r["count"] for r in rows})


@pytest.fixture(scope="module")
def scenario(spark, tmp_path_factory) -> Scenario:
    home = tmp_path_factory.mktemp("ingest_home")
    cli = Cli(home)
    s = Scenario(LocalTables(spark, home))

    def update(*args: str, expect: int = 0) -> None:
        result = cli.run("run", *args, expect=expect)
        match = UPDATE_LINE.search(result.stdout)
        assert match, result.stdout
        s.updates.append((match["id"], match["state"]))
        s.outputs.append(result.stdout + result.stderr)
        s.exit_codes.append(result.returncode)
        number = len(s.updates)
        s.rows_per_file_after[number] = {t: bronze_rows_per_file(s.tables, t) for t in TABLES}
        s.sink_after[number] = sink_rows(s.tables)
        s.manifest_after[number] = s.tables.manifest()
        s.events_after[number] = {
            r["id"]: (r["seq"], r["details"], r["timestamp"])
            for r in s.tables.table("lakewatch_ingest_event_log").selectExpr(
                "id", "coalesce(sequence.control_plane_seq_no, sequence.data_plane_id.seq_no) AS seq",
                "details", "timestamp").collect()
        }

    # Files are written by the generator in this process (the same code `lakewatch generate` runs),
    # so only the updates pay for an engine start.
    tables = load_tables(PROJECT_ROOT / "conf" / "tables.yml")
    columns = load_column_settings(PROJECT_ROOT / "conf" / "generator.yml")
    landing = home / "landing"

    def arrive(rows: int, **kw) -> None:
        generate_batch(spark, tables, landing, rows=rows, seed=21, mix=MIX, column_settings=columns, **kw)

    arrive(150)
    update()
    arrive(150)
    update()
    arrive(100, incomplete_upload=["orders"])
    update(expect=1)
    redeliver(landing)
    update("--full-refresh-all")
    strict = (PROJECT_ROOT / "conf" / "tables.yml").read_text().replace(
        "      - name: non_negative_amount\n        condition: amount >= 0\n        action: warn",
        "      - name: amount_below_limit\n        condition: amount < 400\n        action: fail",
    )
    assert "amount_below_limit" in strict
    (home / "strict_tables.yml").write_text(strict)
    arrive(60, only=["orders"])  # new orders reach the clean table's flow; about a fifth have an amount of 400 or more
    update("--set", f"lakewatch.tables_config={home / 'strict_tables.yml'}", expect=1)
    s.clean_after_5 = {t: (s.tables.table(t).count(), s.tables.table(t).where(f"{c} IS NULL").count())
                       for t, c in TABLES.items()}

    limited = (PROJECT_ROOT / "conf" / "tables.yml").read_text().replace(
        "      - name: non_negative_amount\n        condition: amount >= 0\n        action: warn",
        f"      - name: {LIMIT_RULE}\n        condition: amount < {LIMIT}\n        action: drop",
    )
    assert LIMIT_RULE in limited
    (home / "limited_tables.yml").write_text(limited)
    (home / "fixed_tables.yml").write_text(limited.replace(f"amount < {LIMIT}", f"amount < {FIXED_LIMIT}"))
    limited_conf, fixed_conf = (f"lakewatch.tables_config={home / name}" for name in ("limited_tables.yml", "fixed_tables.yml"))

    def replay(*args: str) -> None:
        result = cli.run("replay", "orders", *args, "-o", "json")
        document = json.loads(result.stdout)
        s.replays.append(document)
        s.updates.append((document["update"]["update_id"], document["update"]["state"]))
        s.exit_codes.append(result.returncode)
        s.orders_after[len(s.updates)] = clean_orders(s.tables)

    update("--full-refresh", "orders,orders_rejected", "--set", limited_conf)
    s.orders_after[6] = clean_orders(s.tables)
    replay("--expectation", LIMIT_RULE, "--set", fixed_conf)
    replay("--expectation", LIMIT_RULE, "--set", fixed_conf)
    update("--full-refresh", "orders,orders_rejected", "--set", fixed_conf)
    s.orders_after[9] = clean_orders(s.tables)
    return s


LIMIT_RULE, LIMIT, FIXED_LIMIT = "amount_within_limit", 300, 450  # the generator's amounts run from 1 to 500


def clean_orders(tables: LocalTables) -> Counter:
    return Counter(tuple(r) for r in tables.table("orders").select("_source_file", "order_id", "amount").collect())


def files_of(manifest: dict, table: str, batch: int | None = None) -> dict[str, dict]:
    return {f["path"]: f for f in manifest["files"]
            if f["table"] == table and f["complete"] and (batch is None or f["batch"] == batch)}


def event_log(s: Scenario):
    return s.tables.table("lakewatch_ingest_event_log")


def test_update_states_and_exit_codes(scenario):
    assert [state for _, state in scenario.updates] == ["COMPLETED", "COMPLETED", "FAILED", "COMPLETED", "FAILED",
                                                         *["COMPLETED"] * 4]
    assert scenario.exit_codes == [0, 0, 1, 0, 1, 0, 0, 0, 0]


@pytest.mark.parametrize("table", TABLES)
def test_every_non_empty_line_is_in_bronze_exactly_once(scenario, table):
    for number in (1, 2, 4):  # update 4 is a full refresh after the re-delivery
        manifest = scenario.manifest_after[number]
        expected = Counter({p: sum(f["lines"].values()) for p, f in files_of(manifest, table).items()
                            if sum(f["lines"].values()) > 0})
        assert scenario.rows_per_file_after[number][table] == expected, f"after update {number}"


@pytest.mark.parametrize("table", TABLES)
def test_second_update_processes_only_the_new_files(scenario, table):
    first, second = scenario.rows_per_file_after[1][table], scenario.rows_per_file_after[2][table]
    assert {p: n for p, n in second.items() if p in first} == dict(first)  # batch-1 files untouched
    new_files = set(files_of(scenario.manifest_after[2], table, batch=1))
    assert set(second) - set(first) == {p for p in new_files if second.get(p)}
    update_2 = scenario.updates[1][0]
    written = (
        event_log(scenario)
        .where(f"origin.update_id = '{update_2}' AND origin.flow_name LIKE '%.{table}_bronze' AND level = 'METRICS'")
        .selectExpr("sum(cast(get_json_object(details, '$.flow_progress.metrics.num_output_rows') AS BIGINT)) AS n")
        .collect()[0]["n"]
    )
    assert written == sum(sum(f["lines"].values()) for f in files_of(scenario.manifest_after[2], table, 1).values())


@pytest.mark.parametrize("dataset", [f"{t}{suffix}" for t in TABLES for suffix in ("_bronze", "")])
def test_bytes_written_are_the_sizes_of_the_files_each_update_added(scenario, dataset):
    """A streaming flow's num_output_bytes over all updates equals the size of every data file its
    streaming appends added, read by the test from the table's Delta log (JSON commits on disk)."""
    log_dir = Path(scenario.tables.path(dataset)) / "_delta_log"
    added = 0
    for commit in sorted(log_dir.glob("*.json")):
        actions = [json.loads(line) for line in commit.read_text().splitlines() if line.strip()]
        if any(a.get("commitInfo", {}).get("operation") == "STREAMING UPDATE" for a in actions):
            added += sum(a["add"]["size"] for a in actions if "add" in a)
    reported = (
        event_log(scenario)  # the clean table's own flow, and the replay flow into it
        .where(f"(origin.flow_name LIKE '%.{dataset}' OR origin.flow_name = '{dataset}_replayed') AND level = 'METRICS'")
        .selectExpr("sum(cast(get_json_object(details, '$.flow_progress.metrics.num_output_bytes') AS BIGINT)) AS n")
        .collect()[0]["n"]
    )
    assert reported == added > 0


@pytest.mark.parametrize("table", TABLES)
def test_counts_match_the_manifest(scenario, table):
    manifest = scenario.tables.manifest()
    totals = Counter()
    for f in files_of(manifest, table).values():
        totals.update(f["lines"])
    row = scenario.tables.table(f"{table}_bronze").selectExpr(
        "count(*) AS n", "count(_rescued_data) AS rescued", "count(_corrupt_record) AS corrupt",
        "count_if(_rescued_data IS NOT NULL AND _corrupt_record IS NOT NULL) AS both",
    ).collect()[0]
    assert row["n"] == sum(totals.values())
    assert row["corrupt"] == totals["malformed"] > 0
    assert row["rescued"] == totals["type_mismatch"] + totals["unknown_field"] + totals["case_variant"] > 0
    assert row["both"] == 0


@pytest.mark.parametrize("table, drop_column", TABLES.items())
def test_clean_table_holds_exactly_the_non_corrupt_rows_that_pass_drop_rules(scenario, table, drop_column):
    manifest = scenario.manifest_after[4]  # update 5 failed in the clean table: its batch is not there
    files = files_of(manifest, table)
    lines = sum(sum(f["lines"].values()) for f in files.values())
    malformed = sum(f["lines"]["malformed"] for f in files.values())
    nulled = sum(f["nulled_columns"].get(drop_column, 0) for f in files.values())
    assert scenario.clean_after_5[table] == (lines - malformed - nulled, 0)
    assert "_corrupt_record" not in scenario.tables.table(table).columns


def corrupt_on_disk(manifest: dict, batches: set[int] | None = None) -> Counter:
    expected: Counter = Counter()
    for table in TABLES:
        for (path, digest), n in corrupt_lines_on_disk(manifest, table, batches).items():
            expected[(table, path, digest)] += n
    return expected


def test_every_corrupt_line_is_in_the_sink_exactly_once(scenario):
    expected = corrupt_on_disk(scenario.manifest_after[2], batches={0, 1})
    assert sum(expected.values()) > 0
    assert scenario.sink_after[2] == expected


def test_full_refresh_rebuilds_bronze_and_the_sink_keeps_every_quarantined_record(scenario):
    manifest = scenario.manifest_after[4]
    for table in TABLES:  # bronze rebuilt from every file: each line once
        assert scenario.rows_per_file_after[4][table] == Counter(
            {p: sum(f["lines"].values()) for p, f in files_of(manifest, table).items() if sum(f["lines"].values())}
        )
    # Databricks does not clear sinks on a full refresh: what was quarantined stays, and every corrupt
    # line is quarantined again, recognisable by its file and content hash.
    assert scenario.sink_after[4] == scenario.sink_after[3] + corrupt_on_disk(manifest)
    refreshed = event_log(scenario).where(
        f"event_type = 'create_update' AND origin.update_id = '{scenario.updates[3][0]}'"
    ).selectExpr("get_json_object(details, '$.create_update.full_refresh') AS fr").collect()
    assert [r["fr"] for r in refreshed] == ["true"]


def test_failed_update_names_the_flow_and_error(scenario):
    output = scenario.outputs[2]
    assert "orders_bronze" in output and "java.io.EOFException" in output
    assert "\ninsight: unreadable_file: " in output  # the CLI's root-cause verdict under the error line
    log = event_log(scenario).where(f"origin.update_id = '{scenario.updates[2][0]}'")
    failed = log.where("event_type = 'flow_progress' AND get_json_object(details, '$.flow_progress.status') = 'FAILED'")
    classes = {r["cls"] for r in failed.selectExpr("explode(error.exceptions.class_name) AS cls").collect()}
    assert "java.io.EOFException" in classes
    assert {r["flow"] for r in failed.selectExpr("origin.flow_name AS flow").collect()} == {
        "spark_catalog.lakewatch.orders_bronze"
    }
    skipped = {r["flow"] for r in log.where(
        "get_json_object(details, '$.flow_progress.status') = 'SKIPPED'").selectExpr("origin.flow_name AS flow").collect()}
    assert skipped == {"spark_catalog.lakewatch.orders", "spark_catalog.lakewatch.orders_rejected",
                       "orders_to_corrupt_records_sink"}
    terminal = log.where("event_type = 'update_progress'").orderBy("timestamp").collect()[-1]
    assert terminal["level"] == "ERROR" and '"FAILED"' in terminal["details"]
    assert terminal["error"]["exceptions"][-1]["class_name"] == "java.io.EOFException"


def test_fail_expectation_fails_the_update_with_databricks_error_class(scenario):
    update_5 = scenario.updates[4][0]
    assert "amount_below_limit" in scenario.outputs[4]
    assert "\ninsight: expectation_failed: " in scenario.outputs[4]
    log = event_log(scenario).where(f"origin.update_id = '{update_5}'")
    failed = log.where("get_json_object(details, '$.flow_progress.status') = 'FAILED'").collect()
    assert {r["origin"]["flow_name"] for r in failed} == {"spark_catalog.lakewatch.orders"}
    message = failed[-1]["error"]["exceptions"][0]["message"]
    assert message.startswith("[EXPECTATION_VIOLATION.VERIFY_FAILED]") and "amount_below_limit" in message
    states = [r["state"] for r in log.where("event_type = 'update_progress'").orderBy("timestamp").selectExpr(
        "get_json_object(details, '$.update_progress.state') AS state").collect()]
    assert states[-1] == "FAILED"


def test_drop_expectation_rows_are_dropped_and_counted(scenario):
    update_4 = scenario.updates[3][0]
    metrics = event_log(scenario).where(
        f"origin.update_id = '{update_4}' AND origin.flow_name = 'spark_catalog.lakewatch.orders' AND level = 'METRICS'"
    )
    row = metrics.selectExpr(
        "sum(cast(get_json_object(details, '$.flow_progress.data_quality.dropped_records') AS BIGINT)) AS dropped",
        "sum(cast(get_json_object(details, '$.flow_progress.metrics.num_output_rows') AS BIGINT)) AS written",
    ).collect()[0]
    has_id = metrics.selectExpr(
        "explode(from_json(get_json_object(details, '$.flow_progress.data_quality.expectations'), "
        "'ARRAY<STRUCT<name: STRING, passed_records: BIGINT, failed_records: BIGINT>>')) AS e"
    ).where("e.name = 'has_order_id'").selectExpr(
        "sum(e.passed_records) AS passed", "sum(e.failed_records) AS failed").collect()[0]
    manifest = scenario.manifest_after[4]
    nulled = sum(f["nulled_columns"].get("order_id", 0) for f in files_of(manifest, "orders").values())
    assert row["dropped"] == nulled > 0
    assert has_id["failed"] == nulled
    lines = sum(sum(f["lines"].values()) for f in files_of(manifest, "orders").values())
    malformed = sum(f["lines"]["malformed"] for f in files_of(manifest, "orders").values())
    assert has_id["passed"] + has_id["failed"] == lines - malformed  # each clean row counted once
    assert row["written"] == lines - malformed - nulled


def test_reruns_append_events_and_never_rewrite_them(scenario):
    numbers = sorted(scenario.events_after)
    for before, after in zip(numbers, numbers[1:]):
        old, new = scenario.events_after[before], scenario.events_after[after]
        assert set(old) < set(new)
        assert all(new[i] == old[i] for i in old)  # nothing rewritten
        # events are written as an update goes: a later update's numbers all follow the earlier ones'
        assert min(new[i][0] for i in set(new) - set(old)) > max(seq for seq, _, _ in old.values())
    final = scenario.events_after[numbers[-1]]
    assert len({seq for seq, _, _ in final.values()}) == len(final)  # sequence numbers unique
    per_update = {}
    for update_id, _ in scenario.updates:
        per_update[update_id] = event_log(scenario).where(
            f"origin.update_id = '{update_id}' AND event_type = 'update_progress' "
            "AND get_json_object(details, '$.update_progress.state') IN ('COMPLETED', 'FAILED', 'CANCELED')"
        ).count()
    assert set(per_update.values()) == {1}


def test_file_state_says_when_each_file_was_committed(scenario):
    state = scenario.tables.table("lakewatch_file_state").where("flow_name = 'orders_bronze'").collect()
    manifest = scenario.tables.manifest()  # update 5's bronze flow committed the last batch too
    assert {r["path"] for r in state} == set(files_of(manifest, "orders"))
    assert {r["state"] for r in state} == {"committed"}
    assert all(r["commit_time"] >= r["create_time"] for r in state)
    # the full refresh (update 4) re-committed every earlier file; the first commit stays the earlier one
    assert all(r["first_commit_time"] <= r["commit_time"] for r in state)
    assert any(r["first_commit_time"] < r["commit_time"] for r in state)


def test_a_clean_table_whose_flow_fails_keeps_its_previous_contents(scenario):
    # Update 5 failed in the clean table `orders` itself; update 3 skipped it. Both leave the table as
    # the last successful update wrote it, as on Databricks.
    manifest = scenario.manifest_after[4]
    files = files_of(manifest, "orders")
    lines = sum(sum(f["lines"].values()) for f in files.values())
    malformed = sum(f["lines"]["malformed"] for f in files.values())
    nulled = sum(f["nulled_columns"].get("order_id", 0) for f in files.values())
    assert scenario.clean_after_5["orders"][0] == lines - malformed - nulled


def tagged_commits(scenario: Scenario, dataset: str, update_id: str) -> list[str]:
    """The operations of the commits `update_id` made to `dataset`, read from its Delta log on disk
    (every commit an update makes carries `lakewatch update <id>` as its userMetadata)."""
    operations = []
    for commit in sorted((Path(scenario.tables.path(dataset)) / "_delta_log").glob("*.json")):
        for line in commit.read_text().splitlines():
            info = json.loads(line).get("commitInfo") if line.strip() else None
            if info and info.get("userMetadata") == f"lakewatch update {update_id}":
                operations.append(info["operation"])
    return operations


@pytest.mark.parametrize("table", ["customers", "payments"])
def test_an_update_with_nothing_new_for_a_table_commits_nothing_to_it(scenario, table):
    """Update 5 brought new files for orders only. SDP sets every dataset's declared properties at
    every update, which Delta would commit as a version of nothing (SET TBLPROPERTIES), and that
    version would make the clean table's stream run a micro-batch of no rows and commit it: the local
    engine's catalog commits no property set that changes nothing (pipelines/local/delta_catalog.py)."""
    update_5 = scenario.updates[4][0]
    assert tagged_commits(scenario, "orders_bronze", update_5) == ["STREAMING UPDATE"]  # the tags are there
    for dataset in (f"{table}_bronze", table, f"{table}_rejected"):
        assert tagged_commits(scenario, dataset, update_5) == [], dataset
    # No micro-batch ran, so each flow's METRICS say 0 rows without a batch id (not NULL: not measured).
    rows = {r["flow"]: (r["rows"], r["batches"]) for r in event_log(scenario).where(
        f"origin.update_id = '{update_5}' AND level = 'METRICS' AND origin.flow_name LIKE '%{table}%'"
    ).groupBy("origin.flow_name").agg(
        F.expr("sum(cast(get_json_object(details, '$.flow_progress.metrics.num_output_rows') AS BIGINT))").alias("rows"),
        F.expr("count(origin.batch_id)").alias("batches"),
    ).selectExpr("substring_index(flow_name, '.', -1) AS flow", "rows", "batches").collect()}
    assert rows == {f"{table}_bronze": (0, 0), table: (0, 0), f"{table}_to_corrupt_records_sink": (0, 0),
                    f"{table}_rejected": (0, 0)}


def test_updates_of_an_existing_schema_log_no_metastore_error(scenario):
    """The engine's own log (every JVM log of the home): five updates of a schema that exists from the
    first one on leave no ERROR of Hive's metastore (a CREATE DATABASE it refuses as existing)."""
    logs = sorted(Path(scenario.tables.home, "logs").glob("*.log"))
    assert logs
    text = "\n".join(p.read_text(errors="replace") for p in logs)
    assert "Materializing metadata" in text  # SDP's lines of the updates are in these logs
    assert "AlreadyExistsException" not in text


def bronze_orders(scenario: Scenario) -> list:
    """Every orders row bronze holds that is not corrupt (bronze is checked against the landing files above)."""
    return scenario.tables.table("orders_bronze").where("_corrupt_record IS NULL").select(
        "_source_file", "order_id", "amount").collect()


def kept(rows: list, limit: float) -> Counter:
    """The rows a clean table keeps under the drop rules has_order_id and `amount < limit` (NULL fails)."""
    return Counter(tuple(r) for r in rows if r["order_id"] is not None and r["amount"] is not None and r["amount"] < limit)


def test_a_replay_after_a_fix_leaves_the_clean_table_as_a_full_refresh_under_the_fix_would(scenario):
    rows = bronze_orders(scenario)
    assert scenario.orders_after[6] == kept(rows, LIMIT)  # the rule too strict
    failed = [r for r in rows if r["amount"] is None or r["amount"] >= LIMIT]  # they failed the limit rule
    passing = [r for r in failed if r["order_id"] is not None and r["amount"] is not None and r["amount"] < FIXED_LIMIT]
    first, second = scenario.replays
    assert (first["selected"], first["passing"], first["queued"], first["still_failing"]) == (
        len(failed), len(passing), len(passing), len(failed) - len(passing))
    assert len(passing) > 0 and len(failed) > len(passing)  # the scenario has both kinds of rows
    assert first["replayed_rows"] == len(passing)
    assert scenario.orders_after[7] == kept(rows, FIXED_LIMIT)  # each replayed row once, beside the rows kept
    # Each row once: a second replay queues and sends nothing, and the full refresh under the fixed rule
    # (which evaluates every bronze row again) leaves the clean table as the replay did.
    assert (second["queued"], second["not_queued"], second["replayed_rows"]) == (0, len(passing), 0)
    assert scenario.orders_after[8] == scenario.orders_after[9] == kept(rows, FIXED_LIMIT)


def test_the_replay_flow_s_rows_are_in_the_event_log_of_its_update(scenario):
    update_7 = scenario.updates[6][0]
    written = event_log(scenario).where(
        f"origin.update_id = '{update_7}' AND origin.flow_name = 'orders_replayed' AND level = 'METRICS'"
    ).selectExpr("sum(cast(get_json_object(details, '$.flow_progress.metrics.num_output_rows') AS BIGINT)) AS n"
                 ).collect()[0]["n"]
    assert written == scenario.replays[0]["queued"]
    definition = event_log(scenario).where(
        f"origin.update_id = '{update_7}' AND event_type = 'flow_definition' AND origin.flow_name = 'orders_replayed'"
    ).selectExpr("get_json_object(details, '$.flow_definition.output_dataset') AS target").collect()
    assert [r["target"] for r in definition] == ["spark_catalog.lakewatch.orders"]
