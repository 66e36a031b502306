"""Bad days for the runner, with real processes on one state folder: a second run while one is in
progress is refused; the first run is then killed with SIGKILL after a micro-batch committed; the next
run takes the stale lock over, closes the killed update as Databricks closes an update whose compute
died, and ingests the rest. Both tables read one file per micro-batch (`max_files_per_trigger: 1`), and
customers' stream moves committed files to an archive folder (`clean_source: move`). Truth: the landing
and archive files themselves, listed and counted by the test, and Spark's own checkpoint."""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import re
import signal
import subprocess
import sys
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import pytest

from pipelines.config import load_tables
from pipelines.eventlog.schema import TERMINAL_FLOW_STATES
from pipelines.local import inflight
from pipelines.local.home import LocalHome
from pipelines.generator import Mix, generate_batch, load_column_settings
from tests.integration.helpers import PROJECT_ROOT, Cli, LocalTables, cli_env, forget_refreshes, local_path, project_tables

pytestmark = pytest.mark.integration

TABLES = ("orders", "customers")
FILES_PER_TABLE = 6
LATE_FILES_PER_TABLE = 3  # delivered after the kill, before the rerun
UPDATE_LINE = re.compile(r"^update (?P<id>[0-9a-f-]{36}) of 'lakewatch_ingest': (?P<state>[A-Z]+)", re.M)
ARCHIVE = "_archive"  # customers' clean_source_move_destination, under the landing root


@dataclass
class Interrupted:
    tables: LocalTables
    refused: subprocess.CompletedProcess
    killed_pid: int
    killed_output: str
    committed_at_kill: dict[str, int]
    rerun: subprocess.CompletedProcess
    late: dict[str, set[str]]  # table -> files delivered after the kill: only the rerun can read them
    conf: tuple[str, ...] = ()  # the --set of the tables file the module runs with
    killed_refresh: str = ""  # the observability update killed mid-refresh
    refresh: subprocess.CompletedProcess | None = None  # the refresh after it, which closed it
    canceled: "Stopped | None" = None  # a refresh after that, stopped with SIGTERM midway
    before_run: "Stopped | None" = None  # a refresh stopped with Ctrl-C as it started
    twice: "Stopped | None" = None  # a refresh sent Ctrl-C twice: midway, then while it stopped
    escalated: "Stopped | None" = None  # a refresh sent SIGTERM, then SIGKILL while it stopped
    after_escalation: subprocess.CompletedProcess | None = None  # the next command, which closed it


def _checkpoint_commits(home: Path, table: str) -> list[int]:
    folder = home / "storage" / "lakewatch_ingest" / "_checkpoints" / "spark_catalog" / "lakewatch" / f"{table}_bronze"
    return [int(p.name) for p in folder.glob(f"{table}_bronze/*/commits/*") if p.name.isdigit()]


def lines_on_disk(path: str) -> list[str]:
    """The file's lines that hold anything (what an ingest must account for), read without Spark."""
    data = Path(path).read_bytes()
    text = (gzip.decompress(data) if path.endswith(".gz") else data).decode("utf-8")
    return [line for line in text.splitlines() if line.strip()]


def landing_files(home: Path, table: str) -> list[str]:
    return sorted(str(p) for p in (home / "landing" / table).rglob("*") if p.is_file() and not p.name.startswith(("_", ".")))


def archived_files(home: Path, table: str) -> dict[str, str]:
    """Files clean_source moved, by the path they were delivered at -> where they are now (Spark's file
    source archives a file under the archive folder with its full path)."""
    archive, landing = home / "landing" / ARCHIVE, str(home / "landing" / table) + "/"
    moved = {"/" + str(p.relative_to(archive)): str(p) for p in archive.rglob("*") if p.is_file()}
    return {path: now for path, now in moved.items() if path.startswith(landing)}


def delivered_files(home: Path, table: str) -> dict[str, str]:
    """Every file delivered for the table, by the path it was delivered at -> where it is now."""
    return {**{p: p for p in landing_files(home, table)}, **archived_files(home, table)}


def checkpoint_batches(home: Path, table: str) -> tuple[dict[int, float], dict[int, list[str]]]:
    """From the bronze flow's checkpoint, as Spark wrote it: committed batch -> commit file time, and
    batch -> the files its source log lists."""
    [checkpoint] = (home / "storage" / "lakewatch_ingest" / "_checkpoints" / "spark_catalog" / "lakewatch"
                    / f"{table}_bronze" / f"{table}_bronze").iterdir()
    commits = {int(p.name): p.stat().st_mtime for p in (checkpoint / "commits").iterdir() if p.name.isdigit()}
    files: dict[int, list[str]] = {}
    for log in (checkpoint / "sources" / "0").iterdir():
        if not log.name.isdigit():  # checksum files
            continue
        for line in log.read_text().splitlines()[1:]:
            if line.strip():
                entry = json.loads(line)
                files.setdefault(int(entry["batchId"]), []).append(local_path(entry["path"]))
    return commits, files


@pytest.fixture(scope="module")
def interrupted(spark, tmp_path_factory) -> Interrupted:
    home = tmp_path_factory.mktemp("interrupted_home")
    cli = Cli(home)
    tables_file, conf = project_tables(home, tuple(TABLES), lambda config: config.replace(
        "    format: json\n", "    format: json\n    max_files_per_trigger: 1\n").replace(
        "    landing: customers\n",
        f"    landing: customers\n    clean_source: move\n    clean_source_move_destination: {ARCHIVE}\n"))
    config = tables_file.read_text()
    assert config.count("max_files_per_trigger") == len(TABLES) and config.count("clean_source: move") == 1
    def arrive(rows: int, files: int) -> list:
        return generate_batch(
            spark, load_tables(tables_file), home / "landing", rows=rows, seed=5,
            mix=Mix(malformed=0.05, type_mismatch=0.05, unknown_field=0.05, case_variant=0.03, empty_file=0.0),
            files_per_batch=files, column_settings=load_column_settings(PROJECT_ROOT / "conf" / "generator.yml"))

    arrive(600, FILES_PER_TABLE)
    cli.run("engine", "start")  # so the run under test spends its time in the update, not in the JVM start

    first = subprocess.Popen([sys.executable, "-m", "pipelines.cli", "run", *conf], cwd=PROJECT_ROOT,
                             env=cli_env(home), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    deadline = time.monotonic() + 300
    while not any(_checkpoint_commits(home, t) for t in TABLES):
        assert first.poll() is None, f"the run ended before a micro-batch committed:\n{first.stdout.read()}"
        assert time.monotonic() < deadline, "no micro-batch committed within 5 minutes"
        time.sleep(0.05)
    refused = cli.run("run", *conf, expect=2)
    assert first.poll() is None, "the first run finished before it could be killed: make the batches slower"
    committed = {t: len(_checkpoint_commits(home, t)) for t in TABLES}
    os.kill(first.pid, signal.SIGKILL)
    first.wait(timeout=60)
    killed_output = first.stdout.read()
    # The killed run's flows may go on on the engine until the rerun releases its session; they read only
    # what was there when they started (Trigger.AvailableNow), so these files are the rerun's, one per batch.
    late: dict[str, set[str]] = {}
    for record in arrive(150, LATE_FILES_PER_TABLE):
        late.setdefault(record.table, set()).add(record.path)
    rerun = cli.run("run", *conf)
    killed_refresh = stop_a_refresh_midway(home, conf, signal.SIGKILL).update
    refresh = cli.run("run", "lakewatch_observability", *conf)
    canceled = stop_a_refresh_midway(home, conf, signal.SIGTERM)
    before_run = stop_a_refresh_midway(home, conf, signal.SIGINT, at=STARTING_LINE)
    twice = stop_a_refresh_midway(home, conf, signal.SIGINT, then=(STOPPING_STATE_LINE, signal.SIGINT))
    # A scheduler that follows SIGTERM with SIGKILL (a grace period that ran out): killed while it stops.
    escalated = stop_a_refresh_midway(home, conf, signal.SIGTERM, then=(STOPPING_LINE, signal.SIGKILL))
    after_escalation = cli.run("query", "SELECT 1")
    return Interrupted(LocalTables(spark, home), refused, first.pid, killed_output, committed, rerun, late, conf,
                       killed_refresh, refresh, canceled, before_run, twice, escalated, after_escalation)


FLOW_LINE = re.compile(r"^\s+\d\d:\d\d:\d\d\s+(?P<flow>\w+)\s+(?P<status>[A-Z_]+)\s*$", re.M)
STARTING_LINE = re.compile(r"starting update (?P<prefix>[0-9a-f]{8})")
STOPPING_LINE = re.compile(r": stopping update [0-9a-f]{8}$")
STOPPING_STATE_LINE = re.compile(r"^\s+update [0-9a-f]{8} STOPPING$")


@dataclass
class Stopped:
    update: str  # the update id's first 8 characters
    returncode: int
    output: str


def stop_a_refresh_midway(home: Path, conf: tuple[str, ...], signum: int, at: re.Pattern | None = None,
                          then: tuple[re.Pattern, int] | None = None) -> Stopped:
    """Starts an observability refresh and sends its runner `signum` once its first view completed (or
    once a line matches `at`), while the engine runs its other flows; then, if `then` is given, its
    signal once a line matches its pattern. Every view is recomputed (`forget_refreshes`)."""
    forget_refreshes(home)
    refresh = subprocess.Popen([sys.executable, "-m", "pipelines.cli", "run", "lakewatch_observability", *conf],
                               cwd=PROJECT_ROOT, env=cli_env(home), stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, text=True)
    seen, prefix = [], None
    assert refresh.stdout is not None
    for line in refresh.stdout:  # the runner prints each flow's status as the engine reports it
        seen.append(line)
        start = STARTING_LINE.search(line)
        if start and prefix is None:
            prefix = start["prefix"]
        flow = FLOW_LINE.match(line)
        if (at.search(line) if at else flow and flow["status"] == "COMPLETED"):
            break
    assert refresh.poll() is None and prefix, "".join(seen)
    os.kill(refresh.pid, signum)
    if then is not None:
        for line in refresh.stdout:
            seen.append(line)
            if then[0].search(line):
                os.kill(refresh.pid, then[1])
                break
    rest, _ = refresh.communicate(timeout=300)
    return Stopped(prefix, refresh.returncode, "".join(seen) + rest)


def view_commits(tables: LocalTables, view: str) -> list[dict]:
    """The view's commits from its Delta log, read as JSON by the test (version, operation, commit time,
    update tag, rows written)."""
    commits = []
    for path in sorted((Path(tables.path(view)) / "_delta_log").glob("*.json")):
        [info] = [json.loads(line)["commitInfo"] for line in path.read_text().splitlines()
                  if line.strip() and "commitInfo" in json.loads(line)]
        commits.append({"version": int(path.stem), "operation": info["operation"], "at": info["timestamp"] / 1000,
                        "tag": info.get("userMetadata") or "",
                        "rows": (info.get("operationMetrics") or {}).get("numOutputRows")})
    return commits


def test_a_second_run_is_refused_with_the_holder_named(interrupted):
    error = interrupted.refused.stderr
    assert "[RUN_IN_PROGRESS]" in error
    assert f"pid {interrupted.killed_pid}" in error and "lakewatch run" in error


def test_the_run_was_killed_mid_update(interrupted):
    assert any(n > 0 for n in interrupted.committed_at_kill.values())
    assert "starting update" in interrupted.killed_output
    assert not UPDATE_LINE.search(interrupted.killed_output), "the killed run must not have finished its update"


def test_the_next_run_takes_the_stale_lock_over_and_closes_the_killed_update(interrupted):
    out = interrupted.rerun.stdout + interrupted.rerun.stderr  # the result on stdout, notes on stderr
    assert "took over the run lock" in out and f"pid {interrupted.killed_pid}" in out
    assert "was interrupted" in out
    assert UPDATE_LINE.search(out)["state"] == "COMPLETED"


@pytest.mark.parametrize("table", TABLES)
def test_every_landing_line_is_in_bronze_exactly_once(interrupted, table):
    home = interrupted.tables.home
    expected = Counter({path: len(lines_on_disk(now)) for path, now in delivered_files(home, table).items()})
    rows = interrupted.tables.table(f"{table}_bronze").groupBy("_source_file").count().collect()
    actual = Counter({local_path(r["_source_file"]): r["count"] for r in rows})
    assert +expected == actual


@pytest.mark.parametrize("table", TABLES)
def test_every_corrupt_line_is_quarantined_exactly_once(interrupted, table):
    home = interrupted.tables.home
    expected: Counter = Counter()
    for path, now in delivered_files(home, table).items():
        for line in lines_on_disk(now):
            try:
                is_object = isinstance(json.loads(line), dict)
            except ValueError:
                is_object = False
            if not is_object:
                expected[(path, hashlib.sha256(line.encode()).hexdigest())] += 1
    assert expected, "the generated files must hold corrupt lines"
    rows = (interrupted.tables.table("corrupt_records_sink").where(f"source_table = '{table}'")
            .groupBy("_source_file", "_record_hash").count().collect())
    assert Counter({(local_path(r["_source_file"]), r["_record_hash"]): r["count"] for r in rows}) == expected


def test_update_status_shows_the_killed_update_failed_by_the_interruption_then_a_completed_one(interrupted):
    rows = interrupted.tables.table("update_status").where("pipeline_name = 'lakewatch_ingest'").orderBy("start_time").collect()
    assert [r["final_state"] for r in rows] == ["FAILED", "COMPLETED"]
    killed = rows[0]
    assert killed["first_error_class"] == "UPDATE_INTERRUPTED"
    assert "interrupted" in killed["first_error_message"]
    assert killed["end_time"] is not None and killed["duration_seconds"] is not None
    [insight] = interrupted.tables.table("run_insights").where(f"update_id = '{killed['update_id']}'").collect()
    assert insight["category"] == "compute_lost"


@pytest.mark.parametrize("table", TABLES)
def test_rows_written_over_both_updates_equal_bronze(interrupted, table):
    """Every committed micro-batch's rows are counted once: by the killed runner, or by the recovery
    (also a batch the kill cut between its Delta commit and its checkpoint's; the rerun then runs it
    again and reports it with 0 rows, as Delta skips its write)."""
    per_batch = interrupted.tables.sql(
        "SELECT origin.batch_id AS batch, count(*) AS events, count(DISTINCT origin.update_id) AS updates, "
        "count_if(CAST(get_json_object(details, '$.flow_progress.metrics.num_output_rows') AS BIGINT) <> 0) AS writers, "
        "count_if(get_json_object(details, '$.flow_progress.metrics.num_output_rows') IS NULL) AS unmeasured, "
        "sum(CAST(get_json_object(details, '$.flow_progress.metrics.num_output_rows') AS BIGINT)) AS rows "
        "FROM {log} WHERE level = 'METRICS' AND origin.flow_name LIKE '%.{table}_bronze' AND origin.batch_id IS NOT NULL "
        "GROUP BY origin.batch_id".replace("{table}", table), log="lakewatch_ingest_event_log").collect()
    assert per_batch and all(b["events"] == b["updates"] for b in per_batch), "a micro-batch was reported twice in an update"
    assert all(b["writers"] <= 1 for b in per_batch), "a micro-batch's rows were counted by two updates"
    assert not any(b["unmeasured"] for b in per_batch), "a micro-batch's rows were not measured"
    assert sum(b["rows"] for b in per_batch) == interrupted.tables.table(f"{table}_bronze").count()


@pytest.mark.parametrize("table", TABLES)
def test_max_files_per_trigger_gives_several_micro_batches_in_one_update_each_with_its_metrics_event(interrupted, table):
    """The files delivered after the kill are the rerun's: Spark's source log puts each in a micro-batch of
    its own, and the rerun's update has one METRICS event per such batch with the lines of its file."""
    home = interrupted.tables.home
    rerun_id = UPDATE_LINE.search(interrupted.rerun.stdout)["id"]
    commits, files = checkpoint_batches(home, table)
    late = interrupted.late[table]
    late_batches = {b for b in commits if set(files[b]) & late}
    assert len(late_batches) == len(late) >= 2 and all(len(files[b]) == 1 for b in late_batches)
    expected = {b: len(lines_on_disk(delivered_files(home, table)[files[b][0]])) for b in late_batches}
    events = interrupted.tables.sql(
        "SELECT origin.batch_id AS batch, "
        "CAST(get_json_object(details, '$.flow_progress.metrics.num_output_rows') AS BIGINT) AS rows "
        "FROM {log} WHERE level = 'METRICS' AND origin.update_id = '" + rerun_id + "' "
        "AND origin.flow_name LIKE '%." + table + "_bronze' AND origin.batch_id IS NOT NULL",
        log="lakewatch_ingest_event_log").collect()
    batches = [e["batch"] for e in events]
    assert len(batches) == len(set(batches))  # one event per micro-batch
    assert {e["batch"]: e["rows"] for e in events if e["batch"] in late_batches} == expected


def test_clean_source_moves_committed_files_to_the_archive_with_their_full_path(interrupted):
    """Spark's file source moves a batch's files when the next batch starts: the file of every batch the
    rerun ran but its last is in the archive, the last one is still in the landing folder, and only
    committed files moved."""
    home = interrupted.tables.home
    archived, landing = archived_files(home, "customers"), set(landing_files(home, "customers"))
    commits, files = checkpoint_batches(home, "customers")
    committed = {f for b in commits for f in files[b]}
    assert not set(archived) & landing
    assert set(archived) <= committed
    last = max(commits)  # its successor has not started: its file is still in the landing folder
    late_batches = sorted(b for b in commits if set(files[b]) & interrupted.late["customers"])
    assert set(files[last]) <= landing and last == late_batches[-1]
    assert {f for b in late_batches[:-1] for f in files[b]} <= set(archived)  # the rerun moved them
    assert landing_files(home, "orders") and not archived_files(home, "orders")  # orders does not clean


def test_file_state_shows_the_archived_files_and_reconciliation_still_says_ok(interrupted):
    home = interrupted.tables.home
    archived = archived_files(home, "customers")
    state = {r["path"]: r for r in interrupted.tables.table("lakewatch_file_state")
             .where("flow_name = 'customers_bronze'").collect()}
    assert {p for p, r in state.items() if r["archive_mode"] is not None} == set(archived)
    for path, now in archived.items():
        row = state[path]
        assert (row["archive_mode"], row["move_location"], row["state"]) == ("MOVE", now, "committed")
        assert row["archive_time"] is not None and row["size"] == os.path.getsize(now)
    assert all(r["archive_time"] is None and r["move_location"] is None for p, r in state.items() if p not in archived)
    reconciled = {r["path"]: r for r in interrupted.tables.table("reconciliation")
                  .where("table_name = 'customers_bronze'").collect()}
    for path, now in archived.items():
        row = reconciled[path]
        assert (row["status"], row["lines"], row["modified_after_ingest"], row["archive_mode"]) == (
            "ok", len(lines_on_disk(now)), False, "MOVE")


def test_the_run_says_which_options_have_no_local_equivalent(interrupted):
    notes = [line for line in interrupted.rerun.stderr.splitlines() if "note: table" in line]
    assert len(notes) == 1 and "table 'customers': clean_source move" in notes[0]
    assert "without a retention period" in notes[0]


OBSERVABILITY_LINE = re.compile(r"^update (?P<id>[0-9a-f-]{36}) of 'lakewatch_observability': (?P<state>[A-Z]+)", re.M)


def view_rows(tables: LocalTables, name: str) -> Counter:
    """A materialized view's rows as the test reads them by path (each row as JSON text)."""
    return Counter(r[0] for r in tables.table(name).selectExpr("to_json(struct(*))").collect())


# A refresh of these only (the others stay as they are): two read bronze, one is downstream of
# them, one reads the event log alone.
VANISHED_REFRESH = ("landing_files", "bronze_duplicates", "reconciliation", "health_metrics", "update_status")


@pytest.fixture(scope="module")
def vanished(interrupted):
    """A refresh while the data files of orders' bronze table are gone (moved away, then back): the
    views that read bronze fail, those downstream are skipped. Returns the views' rows before and
    after, the refresh's output and, from its event log, how each view's flow ended."""
    tables, home = interrupted.tables, interrupted.tables.home
    views = [p.name for p in (home / "warehouse" / "lakewatch.db").iterdir()
             if (p / "_delta_log").is_dir() and not p.name.startswith(("lakewatch_", "orders", "customers"))]
    before = {v: view_rows(tables, v) for v in views}
    bronze = Path(tables.path("orders_bronze"))
    away = home / "vanished"
    away.mkdir()
    moved = [p.rename(away / p.name) for p in bronze.glob("*.parquet")]
    forget_refreshes(home)  # bronze's Delta log is unchanged: the views would be NO_OP otherwise
    try:
        refresh = Cli(home).run("run", "lakewatch_observability", "--refresh", ",".join(VANISHED_REFRESH),
                                *interrupted.conf, expect=1)
    finally:
        for p in moved:
            p.rename(bronze / p.name)
    update = OBSERVABILITY_LINE.search(refresh.stdout)
    assert update and update["state"] == "FAILED", refresh.stdout[-3000:]
    ended = {r["flow"]: r["status"] for r in tables.table("lakewatch_observability_event_log").where(
        f"origin.update_id = '{update['id']}' AND event_type = 'flow_progress'").selectExpr(
        "origin.flow_name AS flow", "get_json_object(details, '$.flow_progress.status') AS status").where(
        "status IN ('COMPLETED', 'FAILED', 'SKIPPED')").collect()}
    ended = {v: ended.get(f"spark_catalog.lakewatch.{v}", "not selected") for v in views}
    return before, {v: view_rows(tables, v) for v in views}, refresh, ended


def test_views_whose_refresh_did_not_complete_keep_their_previous_rows(vanished):
    before, after, refresh, ended = vanished
    assert {v for v, s in ended.items() if s != "not selected"} == set(VANISHED_REFRESH)
    assert {ended[v] for v in ("landing_files", "bronze_duplicates")} == {"FAILED"}  # they read bronze
    assert {ended[v] for v in ("reconciliation", "health_metrics")} == {"SKIPPED"}  # downstream of them
    restored = {v for v, s in ended.items() if s in ("FAILED", "SKIPPED")}
    assert any(before[v] for v in restored)  # there were rows to lose
    for view in sorted(restored):
        assert after[view] == before[view], view
        assert f"{view}: refresh" in refresh.stderr, view  # said so: "... kept its previous contents"
    for view in sorted(v for v, s in ended.items() if s == "not selected"):
        assert after[view] == before[view], view


def test_views_that_completed_were_refreshed_in_that_update(vanished, interrupted):
    before, after, refresh, ended = vanished
    completed = {v for v, s in ended.items() if s == "COMPLETED"}
    assert completed == {"update_status"}
    for view in sorted(completed):  # each completed view's newest commit is this refresh's write
        newest = interrupted.tables.spark.sql(
            f"DESCRIBE HISTORY delta.`{interrupted.tables.path(view)}` LIMIT 1").collect()[0]
        assert newest["operation"] != "RESTORE" and (newest["userMetadata"] or "").endswith(
            OBSERVABILITY_LINE.search(refresh.stdout)["id"]), view



def test_a_refresh_killed_midway_is_closed_without_undoing_the_views_it_wrote(interrupted):
    """The runner of a refresh is killed while the engine runs its flows. The next command stops what
    the dead runner left running, waits for the flows already under way, and closes the update FAILED:
    a view the killed update wrote (one WRITE in its Delta log) keeps what it wrote and its flow is
    recorded COMPLETED with the rows of that write; no view is restored; and nothing of the killed
    update is written after the refresh that closed it started writing."""
    tables, refresh = interrupted.tables, interrupted.refresh
    assert refresh is not None and f"update {interrupted.killed_refresh}" in refresh.stderr
    assert "was interrupted" in refresh.stderr and OBSERVABILITY_LINE.search(refresh.stdout)["state"] == "COMPLETED"
    killed = tables.table("lakewatch_observability_event_log").where(
        f"origin.update_id LIKE '{interrupted.killed_refresh}%'")
    [killed_id] = {r[0] for r in killed.select("origin.update_id").collect()}
    closing = OBSERVABILITY_LINE.search(refresh.stdout)["id"]
    statuses = {r["flow"].split(".")[-1]: r["status"] for r in killed.where(
        "event_type = 'flow_progress' AND level != 'METRICS'").selectExpr(
        "origin.flow_name AS flow", "get_json_object(details, '$.flow_progress.status') AS status").where(
        "status IN ('COMPLETED', 'FAILED', 'SKIPPED')").collect()}
    rows = {r["flow"].split(".")[-1]: r["rows"] for r in killed.where("level = 'METRICS'").selectExpr(
        "origin.flow_name AS flow", "get_json_object(details, '$.flow_progress.metrics.num_output_rows') AS rows").collect()}
    commits_of = {p.name: view_commits(tables, p.name) for p in (tables.home / "warehouse" / "lakewatch.db").iterdir()
                  if (p / "_delta_log").is_dir() and p.name in statuses}
    views = [v for v, commits in commits_of.items() if not any(c["operation"] == "STREAMING UPDATE" for c in commits)]
    written = []
    for view in views:
        commits = commits_of[view]
        assert not any(c["operation"] == "RESTORE" for c in commits), view
        mine = [c for c in commits if c["tag"].endswith(killed_id)]
        later = [c for c in commits if c["tag"].endswith(closing)]
        assert all(m["version"] < c["version"] for m in mine for c in later), view  # no write interleaved
        if any(c["operation"] == "WRITE" for c in mine):
            written.append(view)
            assert statuses[view] == "COMPLETED", view
            assert rows[view] == str(sum(int(c["rows"]) for c in mine if c["rows"] is not None)), view
        elif statuses[view] == "COMPLETED":  # a refresh of no rows into an empty view commits nothing
            assert rows[view] == "0", view
    assert written and len(written) < len(views), (written, statuses)


@dataclass
class CanceledRefresh:
    last: dict[str, str]  # flow -> its last status in the event log
    views: list[str]  # the materialized views among its flows (Delta tables written by one overwrite)
    stopped_views: list[str]  # those STOPPED
    states: list[str]  # its update_progress states, in order


def check_canceled_refresh(tables: LocalTables, update: str, cause: str) -> CanceledRefresh:
    """What every canceled refresh must show, whoever closed it: the update's last `update_progress` is
    CANCELED with `cause` and none is FAILED; every flow has a final status; a view is COMPLETED exactly
    when its Delta log (read as JSON by the test) holds this update's WRITE, with that write's rows;
    and every commit of the update comes before its CANCELED event."""
    events = tables.table("lakewatch_observability_event_log").where(f"origin.update_id LIKE '{update}%'")
    [update_id] = {r[0] for r in events.select("origin.update_id").collect()}
    progress = events.where("event_type = 'update_progress'").selectExpr(
        "`timestamp`", "get_json_object(details, '$.update_progress.state') AS state",
        "get_json_object(details, '$.update_progress.cancellation_cause') AS cause").orderBy("timestamp").collect()
    assert [(r["state"], r["cause"]) for r in progress][-1] == ("CANCELED", cause)
    assert "FAILED" not in {r["state"] for r in progress}
    canceled_at = progress[-1]["timestamp"].timestamp()  # collect() gives this machine's local time: as is
    last = {}
    for r in events.where("event_type = 'flow_progress' AND level != 'METRICS'").selectExpr(
            "origin.flow_name AS flow", "`timestamp`", "coalesce(sequence.control_plane_seq_no, sequence.data_plane_id.seq_no) AS seq",
            "get_json_object(details, '$.flow_progress.status') AS status").orderBy("timestamp", "seq").collect():
        last[r["flow"].split(".")[-1]] = r["status"]
    assert set(last.values()) <= set(TERMINAL_FLOW_STATES), last
    rows = {r["flow"].split(".")[-1]: r["rows"] for r in events.where("level = 'METRICS'").selectExpr(
        "origin.flow_name AS flow", "get_json_object(details, '$.flow_progress.metrics.num_output_rows') AS rows").collect()}
    schema = tables.home / "warehouse" / "lakewatch.db"
    views, stopped_views = [], []
    for view in sorted(v for v in last if (schema / v / "_delta_log").is_dir()):
        commits = view_commits(tables, view)
        if any(c["operation"] == "STREAMING UPDATE" for c in commits):
            continue
        views.append(view)
        stopped_views += [view] if last[view] == "STOPPED" else []
        mine = [c for c in commits if c["tag"].endswith(update_id)]
        # Delta's commit time (commitInfo.timestamp: milliseconds, taken as the commit is made)
        assert all(c["at"] <= canceled_at for c in mine), (view, mine, canceled_at)
        if any(c["operation"] == "WRITE" for c in mine):
            assert last[view] == "COMPLETED", view
            assert rows[view] == str(sum(int(c["rows"]) for c in mine if c["rows"] is not None)), view
        else:
            assert last[view] != "COMPLETED" or rows[view] == "0", view  # a refresh of no rows into an empty view
    return CanceledRefresh(last, views, stopped_views, [r["state"] for r in progress])


def test_a_refresh_stopped_by_sigterm_ends_canceled_with_every_flow_ended(interrupted):
    """SIGTERM (a scheduler canceling its job run) while a refresh's flows run: the runner stops the
    run as SDP stops flows, closes the update CANCELED with Databricks' cause WORKFLOW_CANCELLATION and
    exits 143, leaving nothing for the next command to recover (`check_canceled_refresh`: every flow
    ended, views COMPLETED exactly when their Delta log holds the update's write). The flows queued
    behind the stop never ran (SKIPPED); the views being refreshed at the stop had their writes
    cancelled (STOPPED, without a WRITE), so the command does not wait for them to run on to their
    writes."""
    stopped, tables = interrupted.canceled, interrupted.tables
    assert stopped is not None and stopped.returncode == 128 + signal.SIGTERM, stopped.output[-3000:]
    assert f"stopping update {stopped.update}" in stopped.output and "CANCELED" in stopped.output
    assert not any(r.update_id.startswith(stopped.update) for r in inflight.load_all(LocalHome(tables.home)))
    canceled = check_canceled_refresh(tables, stopped.update, "WORKFLOW_CANCELLATION")
    assert "SKIPPED" in canceled.last.values(), canceled.last
    assert canceled.states[-2:] == ["STOPPING", "CANCELED"], canceled.states  # Databricks' state while queries stop
    # the first view completed while others ran: their writes were cancelled
    assert canceled.stopped_views, canceled.last


def test_a_refresh_stopped_by_ctrl_c_as_it_starts_ends_canceled_before_any_flow_ran(interrupted):
    """Ctrl-C as soon as the refresh says it starts (while it registers its definitions, before SDP's
    run): the update ends CANCELED with USER_ACTION and exit 130 without running a flow: no flow has a
    status in the event log, and no view's Delta log has a commit of the update."""
    stopped, tables = interrupted.before_run, interrupted.tables
    assert stopped is not None and stopped.returncode == 128 + signal.SIGINT, stopped.output[-3000:]
    assert f"stopping update {stopped.update} before its run" in stopped.output, stopped.output[-3000:]
    assert not any(r.update_id.startswith(stopped.update) for r in inflight.load_all(LocalHome(tables.home)))
    canceled = check_canceled_refresh(tables, stopped.update, "USER_ACTION")
    assert canceled.last == {} and "RUNNING" not in canceled.states and "STOPPING" not in canceled.states
    for view in check_canceled_refresh(tables, interrupted.canceled.update, "WORKFLOW_CANCELLATION").views:
        assert not any(stopped.update in c["tag"]
                       for c in view_commits(tables, view)), view


def test_a_refresh_killed_while_it_stops_is_closed_canceled_with_its_cause(interrupted):
    """SIGTERM, then SIGKILL while the runner stops the run (a scheduler whose grace period ran out):
    the next command (a query) closes the update CANCELED with WORKFLOW_CANCELLATION, not FAILED as a
    crash, and what the run left is as `check_canceled_refresh` says: every flow ended, a view COMPLETED
    exactly when its Delta log holds the update's write."""
    stopped, tables = interrupted.escalated, interrupted.tables
    assert stopped is not None and stopped.returncode == -signal.SIGKILL, stopped.output[-3000:]
    closing = interrupted.after_escalation
    assert closing is not None and f"closed update {stopped.update} as CANCELED (WORKFLOW_CANCELLATION)" in closing.stderr, (
        closing.stderr[-3000:])
    assert not any(r.update_id.startswith(stopped.update) for r in inflight.load_all(LocalHome(tables.home)))
    check_canceled_refresh(tables, stopped.update, "WORKFLOW_CANCELLATION")


def test_a_second_ctrl_c_closes_the_update_without_waiting_for_its_flows(interrupted):
    """Ctrl-C midway, then again once the update is STOPPING: the runner stops waiting for the flows
    being stopped, and still closes the update itself (nothing left for a recovery), CANCELED with
    USER_ACTION, exit 130, and what it left is as `check_canceled_refresh` says: every flow ended, a
    view COMPLETED exactly when its Delta log holds the update's write, nothing committed after
    CANCELED."""
    stopped, tables = interrupted.twice, interrupted.tables
    assert stopped is not None and stopped.returncode == 128 + signal.SIGINT, stopped.output[-3000:]
    assert f"again: closing update {stopped.update} without waiting for its flows" in stopped.output, (
        stopped.output[-3000:])
    assert not any(r.update_id.startswith(stopped.update) for r in inflight.load_all(LocalHome(tables.home)))
    check_canceled_refresh(tables, stopped.update, "USER_ACTION")
