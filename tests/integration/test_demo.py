"""After `lakewatch demo` (four ingest updates, one failing on purpose, then the job's observability
refresh), run in a project where a user had added tables of their own first (the own_data fixture, which
test_own_data shares): the event log agrees with the tables, the observability tables are filled and
agree with the event log and bronze, and every alert query runs on them. And the dashboard page the demo
rendered: opened in headless Chromium, it loads without script errors or network requests, every data
widget shows data, and a full-page screenshot is left in tests/artifacts/ for people to look at."""

from __future__ import annotations

import json
import re
import shutil
import struct
import subprocess
import sys
from pathlib import Path
from typing import Any, Iterator

import pytest

from pipelines.dashboard.lvdash import load_dashboard
from pipelines.anomalies import MIN_HISTORY
from pipelines.demo import OBSERVED_EXAMPLE
from pipelines.observability.catalog import HEALTH_METRIC_NAMES, MATERIALIZED_VIEW, PUBLISHED
from tests.integration.chromium import CHROMIUM, WIDTH, PageEvents, headless_chromium
from tests.integration.helpers import PROJECT_ROOT, SCHEMA_DIR, Cli, LocalTables, cli_env
from tests.docs_commands import READ_ONLY_VERBS

pytestmark = pytest.mark.integration

BRONZE = ("orders_bronze", "customers_bronze", "payments_bronze")  # payments: CSV
# Observability tables the demo has nothing for (why: test_every_observability_table_is_filled_but_...)
EMPTY_IN_DEMO = ("anomalies", "bronze_duplicates")
ARTIFACTS = PROJECT_ROOT / "tests" / "artifacts"
LVDASH = PROJECT_ROOT / "dashboards" / "lakewatch.lvdash.json"


INGEST = "pipeline_name = 'lakewatch_ingest'"  # the ingest pipeline's rows (the example pipeline is observed too)

@pytest.fixture(scope="module")
def tables(spark, demo_home) -> LocalTables:
    return LocalTables(spark, demo_home)


def every_bronze(home: Path) -> list[str]:
    """The bronze tables of every table the demo's project configures (its own three and the user's)."""
    return sorted(p.name for p in (home / "warehouse" / SCHEMA_DIR).glob("*_bronze"))


def metric_sums(tables: LocalTables, flow: str) -> dict[str, int]:
    """Rows written and expectation failures a flow reported in METRICS events, over all updates."""
    metrics = tables.sql(
        "SELECT details FROM {log} WHERE event_type = 'flow_progress' AND level = 'METRICS' "
        f"AND origin.flow_name LIKE '%.{flow}'",
        log="lakewatch_ingest_event_log",
    ).collect()
    sums = {"written": 0, "no_rescued_data": 0, "no_corrupt_record": 0}
    for row in metrics:
        progress = json.loads(row["details"])["flow_progress"]
        sums["written"] += progress["metrics"].get("num_output_rows") or 0
        for e in (progress.get("data_quality") or {}).get("expectations") or []:
            sums[e["name"]] += e["failed_records"]
    return sums


@pytest.mark.parametrize("bronze", BRONZE)
def test_event_log_rows_and_expectation_counts_equal_the_table(tables, bronze):
    counts = tables.table(bronze).selectExpr(
        "count(*) AS n", "count(_rescued_data) AS rescued", "count(_corrupt_record) AS corrupt").collect()[0]
    sums = metric_sums(tables, bronze)
    assert sums["written"] == counts["n"] > 0
    assert sums["no_rescued_data"] == counts["rescued"] > 0
    assert sums["no_corrupt_record"] == counts["corrupt"] > 0


@pytest.mark.parametrize("table", [b.removesuffix("_bronze") for b in BRONZE])
def test_every_row_a_drop_expectation_removed_is_kept_once_with_its_reasons(tables, table):
    """Bronze's rows without a corrupt record are the clean table's rows and the rejected rows, each
    once (compared by content, source file and ingestion time, not by the conditions); each rejected row
    names the key expectation, whose column the generator nulled; the rows the rejected flow wrote per
    update equal the clean flow's dropped_records, and `rejected_rows` says ok for each."""
    data = [c for c in tables.table(table).columns]
    bronze = tables.table(f"{table}_bronze").where("_corrupt_record IS NULL").select(*data)
    rejected = tables.table(f"{table}_rejected")
    kept = tables.table(table).select(*data).unionAll(rejected.select(*data))
    assert rejected.count() > 0
    assert bronze.exceptAll(kept).count() == 0 and kept.exceptAll(bronze).count() == 0
    key = {"orders": "order_id", "customers": "customer_id", "payments": "payment_id"}[table]
    reasons = {tuple(r[0]) for r in rejected.select("_failed_expectations").distinct().collect()}
    assert reasons == {(f"has_{key}",)}
    assert rejected.where(f"{key} IS NOT NULL").count() == 0
    per_update = tables.sql(
        "SELECT origin.update_id AS u, substring_index(origin.flow_name, '.', -1) AS flow, "
        "sum(cast(get_json_object(details, '$.flow_progress.metrics.num_output_rows') AS BIGINT)) AS written, "
        "sum(cast(get_json_object(details, '$.flow_progress.data_quality.dropped_records') AS BIGINT)) AS dropped "
        "FROM {log} WHERE event_type = 'flow_progress' AND level = 'METRICS' GROUP BY 1, 2",
        log="lakewatch_ingest_event_log").collect()
    dropped = {r["u"]: r["dropped"] for r in per_update if r["flow"] == table and r["dropped"] is not None}
    written = {r["u"]: r["written"] for r in per_update if r["flow"] == f"{table}_rejected"}
    assert dropped and dropped == written and sum(written.values()) == rejected.count()
    statuses = {r["update_id"]: r["status"] for r in
                tables.table("rejected_rows").where(f"table_name = '{table}'").select("update_id", "status").collect()}
    # ok after each update whose clean and rejected flows completed; the failed update skipped orders' flows
    assert {u: statuses[u] for u in dropped} == {u: "ok" for u in dropped}
    assert set(statuses.values()) <= {"ok", "not_compared"} and ("not_compared" in statuses.values()) == (table == "orders")


@pytest.mark.parametrize("log", ["lakewatch_ingest_event_log", "lakewatch_observability_event_log"])
def test_every_update_has_exactly_one_terminal_state(tables, log):
    rows = tables.sql(
        """SELECT origin.update_id AS u,
                  count_if(event_type = 'update_progress' AND
                           get_json_object(details, '$.update_progress.state') IN ('COMPLETED', 'FAILED', 'CANCELED')) AS n
           FROM {log} GROUP BY origin.update_id""",
        log=log,
    ).collect()
    assert rows and {r["n"] for r in rows} == {1}


@pytest.mark.parametrize("log", ["lakewatch_ingest_event_log", "lakewatch_observability_event_log"])
def test_every_flow_of_a_completed_update_ends_completed(tables, log):
    # SDP's stream can drop a flow's COMPLETED event when the run ends first (sdp_events.lost_outcomes):
    # the flow must still end COMPLETED in the event log, not stay RUNNING in a completed update.
    rows = tables.sql(
        """WITH flows AS (
             SELECT origin.update_id AS u, origin.flow_name AS f,
                    collect_set(get_json_object(details, '$.flow_progress.status')) AS statuses
             FROM {log} WHERE event_type = 'flow_progress' GROUP BY 1, 2),
           completed AS (
             SELECT origin.update_id AS u FROM {log}
             WHERE event_type = 'update_progress' AND get_json_object(details, '$.update_progress.state') = 'COMPLETED')
           SELECT f.u, f.f, f.statuses FROM flows f JOIN completed c ON c.u = f.u""",
        log=log,
    ).collect()
    assert rows
    assert [(r["u"], r["f"], sorted(r["statuses"])) for r in rows if "COMPLETED" not in r["statuses"]] == []


def test_the_flow_that_failed_has_no_completed_event_in_its_update(tables):
    # Open-source SDP records a streaming flow COMPLETED whenever its query ends, also with an
    # exception (completion_gate): no attempt of the failed bronze flow may show as COMPLETED.
    rows = tables.sql(
        """WITH failed AS (
             SELECT origin.update_id AS u FROM {log}
             WHERE event_type = 'update_progress' AND get_json_object(details, '$.update_progress.state') = 'FAILED')
           SELECT get_json_object(details, '$.flow_progress.status') AS status, level FROM {log} e JOIN failed f
             ON e.origin.update_id = f.u
           WHERE event_type = 'flow_progress' AND origin.flow_name LIKE '%orders_bronze' AND level <> 'METRICS'
           ORDER BY timestamp, sequence.data_plane_id.seq_no""",
        log="lakewatch_ingest_event_log",
    ).collect()
    statuses = [r["status"] for r in rows]
    assert statuses.count("FAILED") >= 1 and "COMPLETED" not in statuses and statuses[-1] == "FAILED"


@pytest.mark.parametrize("bronze", BRONZE)
def test_each_update_defines_the_source_view_with_the_schema_spark_gave_its_bronze_table(tables, demo_home, bronze):
    """The view's schema in every update's `dataset_definition`, analysed by Spark in the first update
    and read from the state folder after it (plan_schemas), against the oracle Delta holds: the bronze
    table Spark wrote from the view, whose columns are the view's and then `_ingested_at`."""
    view = bronze.replace("_bronze", "_source")
    definitions = tables.sql(
        "SELECT origin.update_id AS u, get_json_object(details, '$.dataset_definition.schema') AS s FROM {log} "
        f"WHERE event_type = 'dataset_definition' AND origin.dataset_name LIKE '%.{view}'",
        log="lakewatch_ingest_event_log").collect()
    written = [(f.name, f.dataType.simpleString()) for f in tables.table(bronze).schema.fields]
    assert written[-1][0] == "_ingested_at"
    assert len(definitions) == 4  # the demo's four ingest updates
    for row in definitions:
        assert [(f["name"], f["data_type"]) for f in json.loads(row["s"])] == written[:-1], row["u"]
    # One analysed plan per view, not one per update: the key holds nothing of a single update.
    kept = json.loads((demo_home / "state" / "plan_schemas.json").read_text())["schemas"]
    assert len(kept) == len(every_bronze(demo_home))


def test_the_failed_update_has_an_insight_that_names_the_flow_its_definition_and_the_cause(tables):
    failed = [r["update_id"] for r in tables.table("update_status").where(f"final_state = 'FAILED' AND {INGEST}").collect()]
    [insight] = tables.table("run_insights").where(INGEST).collect()  # the demo fails one ingest update on purpose
    assert insight["update_id"] == failed[0]
    assert (insight["failing_flow"], insight["category"]) == ("orders_bronze", "unreadable_file")
    assert ("orders_bronze", "FAILED", "ERROR") in [(e["flow_name"], e["status"], e["level"]) for e in insight["events"]]
    assert insight["events"][-1]["status"] == "FAILED" and insight["events"][-1]["flow_name"] is None
    # Oracle: the definition file's own text, where the bronze table is declared.
    lines = (PROJECT_ROOT / "pipelines" / "ingestion.py").read_text().splitlines()
    start = next(n for n, line in enumerate(lines, 1) if "@dp.table(" in line and "bronze_name" in lines[n])
    end = next(n for n, line in enumerate(lines, 1) if line.strip().startswith("def bronze("))
    assert insight["definition_file"] == "pipelines/ingestion.py"
    assert start <= insight["definition_line"] <= end


def test_report_lists_the_updates_newest_first_with_the_failure_explained(tables, demo_cli):
    # Oracle: the terminal state of each update, read straight from the ingest event log.
    states = {r["u"]: r["s"] for r in tables.sql(
        "SELECT origin.update_id AS u, get_json_object(details, '$.update_progress.state') AS s, timestamp FROM {log} "
        "WHERE event_type = 'update_progress' AND get_json_object(details, '$.update_progress.state') "
        "IN ('COMPLETED', 'FAILED', 'CANCELED') ORDER BY timestamp DESC", log="lakewatch_ingest_event_log").collect()}
    report = json.loads(demo_cli.run("report", "--json").stdout)
    assert [(u["update_id"], u["final_state"]) for u in report["updates"]] == list(states.items())
    [failed] = [u for u in report["updates"] if u["final_state"] == "FAILED"]
    assert (failed["category"], failed["failing_flow"]) == ("unreadable_file", "orders_bronze")
    assert report["as_of"] is not None
    text = demo_cli.run("report", env={"COLUMNS": "60"}).stdout
    assert all(len(line) <= 60 for line in text.splitlines())
    assert "why: unreadable_file in flow orders_bronze (pipelines/ingestion.py:" in " ".join(text.split())


def test_every_observability_table_is_filled_but_those_the_demo_gives_nothing_to(tables):
    empty = [t.name for t in PUBLISHED if tables.table(t.name).count() == 0]
    assert sorted(empty) == sorted(EMPTY_IN_DEMO)
    # anomalies: no series has the history a baseline needs (the demo runs four ingest updates)
    comparable = tables.table("update_status").where(f"final_state = 'COMPLETED' AND full_refresh IS NOT TRUE AND {INGEST}").count()
    assert comparable < MIN_HISTORY
    # bronze_duplicates: no record of a table landed twice (counted here over the data columns)
    for bronze in BRONZE:
        rows = tables.table(bronze)
        data = [c for c in rows.columns if c not in ("_source_file", "_source_file_modification_time", "_ingested_at")]
        assert rows.groupBy(*data).count().where("count > 1").count() == 0, bronze


def test_each_materialized_view_reports_the_rows_its_last_refresh_left_once_its_flow_ran(tables):
    """The observability update's METRICS event of each materialized view: rows written equal the rows
    the view holds (counted here; a refresh writes the whole view), 0 for a view left empty, never
    NULL; stamped no earlier than the flow's RUNNING event."""
    [last] = tables.sql("SELECT max_by(origin.update_id, timestamp) AS u FROM {log} WHERE event_type = 'create_update'",
                        log="lakewatch_observability_event_log").collect()
    events = tables.sql(
        "SELECT origin.flow_name AS flow, level, timestamp, details FROM {log} "
        f"WHERE event_type = 'flow_progress' AND origin.update_id = '{last['u']}'",
        log="lakewatch_observability_event_log").collect()
    views = [t.name for t in PUBLISHED if t.kind == MATERIALIZED_VIEW]
    assert set(EMPTY_IN_DEMO) <= set(views)
    for view in views:
        mine = [e for e in events if e["flow"].rsplit(".", 1)[-1] == view]
        [metrics] = [e for e in mine if e["level"] == "METRICS"]
        progress = json.loads(metrics["details"])["flow_progress"]
        assert (view, progress["metrics"].get("num_output_rows")) == (view, tables.table(view).count())
        running = [e["timestamp"] for e in mine if json.loads(e["details"])["flow_progress"]["status"] == "RUNNING"]
        assert running and metrics["timestamp"] >= min(running), view


def test_update_status_shows_the_failed_demo_update_with_its_error(tables):
    updates = tables.table("update_status").where("pipeline_name = 'lakewatch_ingest'").orderBy("start_time").collect()
    assert [u["final_state"] for u in updates] == ["COMPLETED", "COMPLETED", "FAILED", "COMPLETED"]
    failed = updates[2]
    assert failed["failed_flows"] == 1 and failed["skipped_flows"] == 3  # the clean, rejected and sink flows
    assert failed["first_error_class"] == "STREAM_FAILED"
    roots = {r["root_cause_class"] for r in tables.table("errors").where(f"update_id = '{failed['update_id']}'").collect()}
    assert roots == {"java.io.EOFException"}


@pytest.mark.parametrize("bronze", BRONZE)
def test_throughput_and_quality_tables_agree_with_bronze(tables, bronze):
    counts = tables.table(bronze).selectExpr(
        "count(*) AS n", "count(_rescued_data) AS rescued", "count(_corrupt_record) AS corrupt").collect()[0]
    written = tables.table("flow_throughput").where(f"flow_name = '{bronze}'").selectExpr("sum(rows_written)").collect()[0][0]
    assert written == counts["n"]
    quality = {r["expectation"]: r["failed"] for r in tables.table("expectation_results").where(f"dataset = '{bronze}'")
               .groupBy("expectation").agg({"failed_records": "sum"}).withColumnRenamed("sum(failed_records)", "failed")
               .collect()}
    assert quality == {"no_rescued_data": counts["rescued"], "no_corrupt_record": counts["corrupt"]}
    table = bronze.removesuffix("_bronze")
    drift = tables.table("schema_drift").where(f"table_name = '{table}'").selectExpr("sum(rows_with_rescued_data)").collect()[0][0]
    assert drift == counts["rescued"]
    quarantined = tables.table("quarantine_daily").where(f"table_name = '{table}'").selectExpr("sum(quarantined_rows)").collect()[0][0]
    assert quarantined == counts["corrupt"]


def test_backlog_shows_the_files_left_by_the_failed_update(tables):
    failed = tables.table("update_status").where(f"final_state = 'FAILED' AND {INGEST}").collect()[0]["update_id"]
    row = tables.table("backlog").where(f"update_id = '{failed}' AND flow_name = 'orders_bronze'").collect()[0]
    assert row["backlog_files"] > 0 and row["backlog_bytes"] > 0


def test_the_failed_update_is_one_closed_incident_with_its_root_cause(tables):
    """The truncated upload failed one update; the re-delivery's update completed: one incident,
    closed by that update, its root cause the one run_insights gives the failed update."""
    [incident] = tables.table("incidents").where(INGEST).collect()
    updates = tables.table("update_status").where(INGEST).orderBy("start_time").collect()
    failed = [u["update_id"] for u in updates if u["final_state"] == "FAILED"]
    closer = next(u for u in updates if u["start_time"] > updates[[u["update_id"] for u in updates].index(failed[-1])]["start_time"]
                  and u["final_state"] == "COMPLETED")
    assert (incident["incident_id"], incident["status"], incident["failed_updates"]) == (failed[0], "CLOSED", len(failed))
    assert incident["closed_by_update_id"] == closer["update_id"]
    insight = tables.table("run_insights").where(f"update_id = '{failed[0]}'").collect()[0]
    assert (incident["category"], incident["root_cause_class"]) == (insight["category"], insight["root_cause_class"])


def test_the_demo_s_json_result_agrees_with_its_tables_alerts_and_updates(own_data, tables, demo_cli):
    """`demo -o json`: the counts it gives per table are those the test counts in the tables, its
    updates are the event log's, its health metrics and alert states those the tables and
    `lakewatch alerts` give now."""
    document = json.loads(own_data["demo_json"])
    assert document["as_intended"] is True and document["home"] == str(own_data["demo_home"])
    states = [[u["state"] for u in step["updates"] if u["pipeline"] != OBSERVED_EXAMPLE] for step in document["steps"]]
    assert states[:3] == [["COMPLETED"], ["COMPLETED"], ["FAILED"]] and set(states[3]) == {"COMPLETED"}
    example = [[u["state"] for u in step["updates"] if u["pipeline"] == OBSERVED_EXAMPLE] for step in document["steps"]]
    assert example == [["FAILED", "COMPLETED"], [], [], ["COMPLETED"]]  # before and after the ingest update
    assert [step["expect_failure"] for step in document["steps"]] == [False, False, True, False]
    logged = {r["update_id"] for r in tables.sql("SELECT DISTINCT origin.update_id AS update_id FROM {log}",
                                                 log="lakewatch_ingest_event_log").collect()}
    ingest = [u["update_id"] for step in document["steps"] for u in step["updates"] if u["pipeline"] == "lakewatch_ingest"]
    assert len(ingest) == 4 and set(ingest) <= logged
    for row in document["tables"]:
        name = row["table"]
        counted = tables.sql(
            "SELECT count(*) AS bronze_rows, count(_rescued_data) AS rescued, count(_corrupt_record) AS corrupt "
            "FROM {b}", b=f"{name}_bronze").collect()[0].asDict()
        counted["clean_rows"] = tables.table(name).count()
        counted["quarantined"] = tables.table("corrupt_records_sink").where(f"source_table = '{name}'").count()
        rejected = Path(tables.path(f"{name}_rejected"))
        counted["rejected"] = tables.table(rejected.name).count() if rejected.exists() else None
        assert {k: row[k] for k in counted} == counted, name
    assert {r["table"] for r in document["tables"]} == {b.removesuffix("_bronze") for b in every_bronze(own_data["demo_home"])}
    metrics = {r["metric_name"]: r["metric_value"] for r in tables.table("health_metrics").collect()}
    assert set(document["health_metrics"]) == set(metrics) == set(HEALTH_METRIC_NAMES)
    alerts = {a["alert"]: a["state"] for a in json.loads(demo_cli.run("alerts", "--json").stdout)}
    assert document["alerts"] == alerts and document["dashboard_failed_widgets"] == 0


def test_replaying_the_alerts_over_the_demo_s_one_refresh_gives_their_states_now(demo_cli, tables):
    """The demo's job kept its one observability refresh's metrics (snapshot_health_metrics); every
    alert replayed over it is in the state `lakewatch alerts` gives now, on the same metrics."""
    kept = tables.spark.read.format("delta").load(tables.path("lakewatch_health_metrics_history"))
    metrics = {r["metric_name"]: (r["metric_value"], r["checked_at"]) for r in tables.table("health_metrics").collect()}
    assert {r["metric_name"]: (r["metric_value"], r["checked_at"]) for r in kept.collect()} == metrics
    replay = json.loads(demo_cli.run("alerts", "--replay", "--since", "30d", "-o", "json").stdout)
    live = {a["alert"]: a["state"] for a in json.loads(demo_cli.run("alerts", "--json").stdout)}
    assert len(replay["refreshes"]) == 1
    assert {a["alert"]: a["now"]["state"] for a in replay["alerts"]} == live
    notified = {a["alert"] for a in replay["alerts"] if a["notifications"]}
    assert notified >= {k for k, v in live.items() if v == "TRIGGERED"}
    for a in replay["alerts"]:  # the episodes cover every check, the last one lasting
        assert sum(e["checks"] for e in a["episodes"]) == a["checks"] and a["episodes"][-1]["end"] is None


def test_health_metrics_hold_every_metric_once(tables):
    names = [r["metric_name"] for r in tables.table("health_metrics").collect()]
    assert sorted(names) == sorted(HEALTH_METRIC_NAMES)


def test_every_alert_query_runs_and_the_cli_pages_on_triggered_alerts(demo_cli, project_root):
    cli = demo_cli
    report = json.loads(cli.run("alerts", "--json").stdout)
    files = {p.name.removesuffix(".alert.yml") for p in (project_root / "resources" / "alerts").glob("*.alert.yml")}
    assert sorted(a["alert"] for a in report) == sorted(files)
    assert [a["alert"] for a in report if a["state"] == "ERROR"] == []
    triggered = {a["alert"] for a in report if a["state"] == "TRIGGERED"}
    # The demo's data is dirty by design. One update failed, and the next one completed: its incident
    # is closed, so neither the incident nor its errors page any more (the errors alert says why).
    assert {"lakewatch_quarantine_growing", "lakewatch_schema_drift"} <= triggered
    assert not triggered & {"lakewatch_incident", "lakewatch_errors_24h", "lakewatch_stalled"}, triggered
    errors = next(a for a in report if a["alert"] == "lakewatch_errors_24h")
    assert "closed incident" in (errors.get("reason") or ""), errors
    # Rows arrived minutes ago, and every micro-batch reported its count: measured, and no page.
    assert {a["alert"]: a["state"] for a in report}["lakewatch_no_rows"] == "OK"
    cli.run("alerts", "--fail-on-trigger", expect=1)


@pytest.mark.parametrize("table", ["orders", "customers", "payments"])
def test_each_clean_row_is_counted_once_per_expectation_per_day(tables, table):
    """The clean table's expectations count each row in the update that brought it, never again."""
    arrived = tables.table(f"{table}_bronze").where("_corrupt_record IS NULL").count()
    counted = {r["expectation"]: r["n"] for r in tables.sql(
        "SELECT expectation, sum(passed_records + failed_records) AS n FROM {daily} "
        f"WHERE dataset = '{table}' GROUP BY expectation", daily="expectation_results_daily").collect()}
    assert counted and set(counted.values()) == {arrived}


def test_reconciliation_accounts_for_every_line_of_every_file(tables):
    """Lines with content, counted by the runner without Spark, equal the rows bronze holds per file."""
    rows = tables.table("reconciliation").collect()
    assert rows and {(r["difference"], r["status"]) for r in rows} == {(0, "ok")}
    assert sum(r["lines"] for r in rows) == sum(tables.table(b).count() for b in every_bronze(tables.home))


def test_the_history_holds_each_event_of_the_live_log_once_by_utc_date(tables):
    """The job archived the ingest event log (jobs/archive_event_log.sql): every event id once."""
    # Oracle: the ids and UTC dates of the live event log, read by the test from the table itself.
    live = {r["id"]: r["d"] for r in tables.sql(
        "SELECT id, to_date(timestamp) AS d FROM {log}", log="lakewatch_ingest_event_log").collect()}
    history = tables.table("lakewatch_ingest_event_log_history").select("id", "event_date").collect()
    assert len(history) == len({r["id"] for r in history}) == len(live) > 0
    assert {r["id"]: r["event_date"] for r in history} == live
    [detail] = tables.sql("DESCRIBE DETAIL {h}", h="lakewatch_ingest_event_log_history").collect()
    assert detail["partitionColumns"] == ["event_date"]
    assert detail["properties"].get("delta.appendOnly") == "true"


def test_events_reads_the_history_flow_and_holds_each_event_once(tables):
    """`events` has its second flow (from the history) in the job's observability update, and no event
    twice: every live event with an update id, of the ingest pipeline's log and the example pipeline's
    (its own flow), is in it once, with the log it came from."""
    flows = {(r["f"], r["s"]) for r in tables.sql(
        "SELECT origin.flow_name AS f, get_json_object(details, '$.flow_progress.status') AS s FROM {log} "
        "WHERE event_type = 'flow_progress'", log="lakewatch_observability_event_log").collect()}
    assert ("events_from_history", "COMPLETED") in flows
    events = [(r["event_id"], r["event_log"].rsplit(".", 1)[-1]) for r in tables.table("events").collect()]
    live = {(r["id"], log) for log in ("lakewatch_ingest_event_log", f"{OBSERVED_EXAMPLE}_event_log")
            for r in tables.sql("SELECT id FROM {log} WHERE origin.update_id IS NOT NULL", log=log).collect()}
    assert len(events) == len(set(events)) and set(events) == live
    assert any(f.startswith(f"events_from_{OBSERVED_EXAMPLE}_event_log_") for f, _ in flows)


# -- the dashboard page ------------------------------------------------------------------------
@pytest.fixture(scope="module")
def page_html(demo_home: Path) -> Path:
    """The dashboard HTML `lakewatch demo` rendered from its tables with the local engine (the demo
    exits non-zero when a widget fails), copied next to the screenshot for people to open."""
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    rendered = demo_home / "lakewatch_observability.html"
    assert rendered.is_file(), f"the demo wrote no dashboard page at {rendered}"
    output = ARTIFACTS / "dashboard.html"
    shutil.copyfile(rendered, output)
    return output


@pytest.fixture(scope="module")
def browser(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    if not Path(CHROMIUM).exists():
        pytest.fail(f"{CHROMIUM} is missing: `make browser` installs Debian's chromium")
    with headless_chromium(tmp_path_factory.mktemp("chromium-profile")) as context:
        yield context


WIDGETS_JS = """
    () => Array.from(document.querySelectorAll('[data-widget]')).map(e => {
      const box = e.getBoundingClientRect();
      return {name: e.dataset.widget, kind: e.dataset.kind, rows: e.dataset.rows, error: e.dataset.error || null,
              width: box.width, height: box.height,
              marks: e.querySelectorAll('svg rect, svg circle, svg path').length,
              cells: e.querySelectorAll('td').length, value: (e.querySelector('.counter-value') || {}).textContent,
              choices: Array.from(e.querySelectorAll('.choices li')).map(c => c.textContent)};
    })"""


@pytest.fixture(scope="module")
def loaded(browser: Any, page_html: Path) -> dict:
    """Opens the page, records what the browser reported, measures every widget, saves a screenshot."""
    page = browser.new_page()
    events = PageEvents(page)
    try:
        page.goto(page_html.resolve().as_uri(), wait_until="load")
        widgets = page.evaluate(WIDGETS_JS)
        height = page.evaluate("() => document.documentElement.scrollHeight")
        page.screenshot(path=str(ARTIFACTS / "dashboard.png"), full_page=True,
                        clip={"x": 0, "y": 0, "width": WIDTH, "height": height})
        return {"widgets": widgets, "events": events, "height": height}
    finally:
        page.close()


def test_page_loads_without_script_errors_or_network_requests(loaded, page_html):
    events = loaded["events"]
    assert events.errors() == {"exceptions": [], "console": [], "failed requests": []}
    requests = events.requests
    assert requests and all(url == page_html.resolve().as_uri() or url.startswith("data:") for url in requests), requests


def test_every_widget_shows_data(loaded, tables):
    """Every widget shows rows; a counter of a health metric the demo could not measure (NULL in the
    table: the week-over-week trend of minutes of history) shows "—", never a made-up number."""
    dashboard = load_dashboard(LVDASH)
    expected = {w.name: w.kind for _, w in dashboard.widgets()}
    shown = {w["name"]: w for w in loaded["widgets"]}
    assert set(shown) == set(expected)
    empty = {w.name for _, w in dashboard.widgets() if w.query is not None
             and re.search(r"FROM (\w+)", dashboard.dataset(w.query.dataset_name).query).group(1) in EMPTY_IN_DEMO}
    assert len(empty) == len(EMPTY_IN_DEMO)  # one table widget each
    unmeasured = {r["metric_name"] for r in tables.table("health_metrics").where("metric_value IS NULL").collect()}
    unknown = {w.name for _, w in dashboard.widgets() if w.query is not None and w.query.dataset_name == "health"
               and {f.name for f in w.query.fields} & unmeasured}
    assert unknown  # minutes of history: the week-over-week trend is not measured
    for name in unknown:
        assert shown[name]["value"].strip() == "—", shown[name]
    for name, kind in expected.items():
        w = shown[name]
        assert w["width"] > 100 and w["height"] > 20, w
        if kind == "text":
            continue
        if name in unknown:
            continue
        if name in empty:
            assert w["error"] is None and int(w["rows"]) == 0, w
            continue
        assert w["error"] is None and int(w["rows"]) > 0, w
        if kind in ("line", "bar"):
            assert w["marks"] > 0, w
        elif kind == "table":
            assert w["cells"] > 0, w
        elif kind.startswith("filter-"):  # the choices: every observed pipeline's name
            names = sorted(r["pipeline_name"] for r in tables.table("pipelines_status").collect())
            assert w["choices"] == names and len(names) == int(w["rows"]) == 2, w
        else:
            assert w["value"] and w["value"].strip() != "—", w


def test_screenshot_is_saved_for_people(loaded):
    png = (ARTIFACTS / "dashboard.png").read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = struct.unpack("!II", png[16:24])
    assert width == WIDTH and height == int(loaded["height"]) > 3000  # six pages, one long page


def test_widgets_run_together_give_each_widget_s_own_query_result(demo_home: Path):
    """On the demo's tables, through the engine: every widget's result when a dataset's widgets run
    together (and datasets concurrently) equals its own query run alone, row for row, in order, with
    the same types, truncation and error (tests/integration/dashboard_oracle.py compares them)."""
    done = subprocess.run([sys.executable, "-m", "tests.integration.dashboard_oracle"], cwd=PROJECT_ROOT,
                          env=cli_env(demo_home), capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-4000:]
    report = json.loads(done.stdout.strip().splitlines()[-1])
    dashboard = load_dashboard(LVDASH)
    assert report["widgets"] == [w.name for _, w in dashboard.widgets() if w.query is not None]
    assert report["new_order"] == report["widgets"]  # results come back in page order
    assert report["differences"] == {}
    assert report["errors"] == {}
    # The comparison has something to compare: most widgets have rows, some several.
    assert sum(n > 0 for n in report["rows"].values()) >= len(report["rows"]) - len(EMPTY_IN_DEMO)
    assert sum(n > 1 for n in report["rows"].values()) >= 20
    assert report["clock"] == ["tp-table-freshness"]  # the only widget allowed the clock's drift


# -- the commands the README and docs show, run on the demo's state --------------------------------
# Verbs that only read the state (or the bundle): each documented command with one of them is run as it
# is shown. The commands that write, and the blocks over the reader's own files (a `~/...` path in the
# block), run in a user's project (tests/integration/own_project.py, checked by test_own_data); the
# `--remote` one in test_remote; tests/unit/test_docs.py parses every command.
def documented_read_only_commands() -> list[tuple[str, list[str]]]:
    from tests.docs_commands import read_only_on_demo_state

    return [(where, args) for where, args, _ in read_only_on_demo_state()]


def test_the_docs_show_read_only_commands_to_run():
    commands = documented_read_only_commands()
    assert len(commands) >= 10
    shown = {next(a for a in args if a in READ_ONLY_VERBS) for _, args in commands}
    assert shown >= {"query", "report", "alerts", "check", "drift"}


@pytest.mark.parametrize("where,args", documented_read_only_commands(), ids=lambda v: " ".join(v) if isinstance(v, list) else v)
def test_documented_command_runs_on_the_demo_state(demo_cli: Cli, where: str, args: list[str]):
    """Exit 0, a result on stdout; `alerts --fail-on-trigger` exits 1 on the demo, whose alerts fire."""
    expect = 1 if "--fail-on-trigger" in args else 0
    result = demo_cli.run(*args, expect=expect, timeout=300)
    assert result.stdout.strip() or "status" in args, f"{where}: lakewatch {' '.join(args)} printed no result"
    if "-o" in args and args[args.index("-o") + 1] == "json" or "--json" in args:
        json.loads(result.stdout)


def test_the_other_pipeline_s_updates_failure_and_expectations_are_observed(tables):
    """orders_daily, written with plain pyspark.pipelines and observed through its event log: every
    update its own event log (read with Spark) holds is in update_status under its name with its final
    state; its failure (run before `orders` existed) is an incident of its own, closed by its next
    completed update; its last update's expectation counts are those of the rows its view holds
    (counted by the test); pipelines_status has a row per pipeline."""
    logged = {r["u"]: (r["s"], r["t"]) for r in tables.sql(
        "SELECT origin.update_id AS u, get_json_object(details, '$.update_progress.state') AS s, timestamp AS t "
        "FROM {log} WHERE event_type = 'update_progress' "
        "AND get_json_object(details, '$.update_progress.state') IN ('COMPLETED', 'FAILED', 'CANCELED')",
        log=f"{OBSERVED_EXAMPLE}_event_log").collect()}
    status = {r["update_id"]: r["final_state"]
              for r in tables.table("update_status").where(f"pipeline_name = '{OBSERVED_EXAMPLE}'").collect()}
    assert status == {u: s for u, (s, _) in logged.items()}
    assert sorted(status.values()) == ["COMPLETED", "COMPLETED", "FAILED"]
    by_time = sorted(logged, key=lambda u: logged[u][1])
    [incident] = tables.table("incidents").where(f"pipeline_name = '{OBSERVED_EXAMPLE}'").collect()
    assert (incident["incident_id"], incident["status"], incident["closed_by_update_id"]) == (by_time[0], "CLOSED", by_time[1])
    assert incident["category"] != "unknown"  # run_insights names the missing table
    view = tables.table(OBSERVED_EXAMPLE)
    counted = {"known_currency": view.where("currency IN ('EUR', 'USD', 'GBP')").count(),
               "non_negative_amount": view.where("amount >= 0").count()}
    got = {r["expectation"]: (r["passed_records"], r["failed_records"]) for r in tables.table("expectation_results")
           .where(f"update_id = '{by_time[-1]}' AND dataset = '{OBSERVED_EXAMPLE}'").collect()}
    assert got == {name: (passed, view.count() - passed) for name, passed in counted.items()}
    pipelines = {r["pipeline_name"]: r for r in tables.table("pipelines_status").collect()}
    assert set(pipelines) == {"lakewatch_ingest", OBSERVED_EXAMPLE}
    assert pipelines["lakewatch_ingest"]["follows_lakewatch_pattern"] and not pipelines[OBSERVED_EXAMPLE]["follows_lakewatch_pattern"]
    assert (pipelines[OBSERVED_EXAMPLE]["updates"], pipelines[OBSERVED_EXAMPLE]["last_update_id"]) == (3, by_time[-1])
