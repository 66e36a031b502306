"""Numbers to trust, on real updates of files the test writes itself (so it knows exactly what
arrived): two healthy batches; a full refresh that must not look like new trouble; a batch where 30%
of the orders fail an expectation; a file appended to after it was ingested."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from pipelines.local.measure import commit_tag
from pipelines.observability.catalog import TABLES
from tests.integration.helpers import Cli, LocalTables, project_tables

pytestmark = pytest.mark.integration

UPDATE_LINE = re.compile(r"^update (?P<id>[0-9a-f-]{36}) of 'lakewatch_ingest': (?P<state>[A-Z]+)", re.M)
REFRESH_LINE = re.compile(r"^update (?P<id>[0-9a-f-]{36}) of 'lakewatch_observability': (?P<state>[A-Z]+)", re.M)
ROWS = 100
FAILING = 30  # orders with a negative amount in the third batch


def order(i: int, amount: float = 12.5) -> dict:
    return {"order_id": i, "customer_id": i % 7, "order_ts": "2026-11-30T10:00:00Z", "amount": amount,
            "currency": "EUR", "status": "NEW"}


def customer(i: int) -> dict:
    return {"customer_id": i, "email": f"c{i}@example.com", "country": "DE", "signup_date": "2026-01-02",
            "is_active": True}


def write_lines(path: Path, records: list[dict]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in records))


@dataclass
class Trust:
    tables: LocalTables
    alerts: dict[str, dict[str, str]] = field(default_factory=dict)  # step -> alert -> state
    latency: dict[str, dict[str, float]] = field(default_factory=dict)  # step -> path -> seconds
    updates: list[str] = field(default_factory=list)
    refreshes: list[str] = field(default_factory=list)  # the observability updates, in order
    appended: str = ""
    conf: tuple[str, ...] = ()  # the --set of the tables file the module runs with


def snapshot(cli: Cli, trust: Trust, step: str) -> None:
    trust.refreshes.append(REFRESH_LINE.search(cli.run("run", "lakewatch_observability", *trust.conf).stdout)["id"])
    trust.alerts[step] = {a["alert"]: a["state"] for a in json.loads(cli.run("alerts", "--json").stdout)}
    trust.latency[step] = {r["path"]: r["latency_seconds"] for r in trust.tables.table("file_latency").collect()}


@pytest.fixture(scope="module")
def trust(spark, tmp_path_factory) -> Trust:
    home = tmp_path_factory.mktemp("trust_home")
    cli = Cli(home)
    landing = home / "landing"
    t = Trust(LocalTables(spark, home))
    _, t.conf = project_tables(home, ("orders", "customers"))  # JSON lines only: CSV has tests of its own

    def update(*args: str) -> None:
        out = cli.run("run", *args, *t.conf).stdout
        t.updates.append(UPDATE_LINE.search(out)["id"])

    for batch in (0, 1):
        write_lines(landing / "orders" / f"orders-{batch}.json", [order(batch * ROWS + i) for i in range(ROWS)])
        write_lines(landing / "customers" / f"customers-{batch}.json",
                    [customer(batch * ROWS + i) for i in range(ROWS)])
        update()
    snapshot(cli, t, "healthy")
    update("--full-refresh-all")
    snapshot(cli, t, "after full refresh")
    write_lines(landing / "orders" / "orders-2.json",
                [order(2 * ROWS + i, amount=-1.0 if i < FAILING else 3.0) for i in range(ROWS)])
    appended = landing / "orders" / "orders-0.json"
    with appended.open("a") as f:  # a producer appends to a file that was already ingested
        f.write(json.dumps(order(9999)) + "\n")
    t.appended = str(appended)
    update()
    snapshot(cli, t, "bad batch")
    snapshot(cli, t, "nothing new")
    return t


def planning_events(trust: Trust, refresh: str) -> dict[str, list[dict]]:
    """Each view's techniques in the refresh's planning_information event."""
    return {r["flow"].rsplit(".", 1)[-1]: json.loads(r["details"])["planning_information"]["technique_information"]
            for r in trust.tables.sql(
        "SELECT origin.flow_name AS flow, details FROM {log} WHERE event_type = 'planning_information' "
        f"AND origin.update_id = '{refresh}'", log="lakewatch_observability_event_log").collect()}


def planned_techniques(trust: Trust, refresh: str) -> dict[str, str]:
    """The technique each view's planning_information event of the refresh chose."""
    return {flow: next(t["maintenance_type"] for t in techniques if t["is_chosen"])
            for flow, techniques in planning_events(trust, refresh).items()}


# Minutes of history: the week-over-week duration trend cannot be measured yet (UNKNOWN, never OK).
YOUNG = {"lakewatch_duration_trend": "UNKNOWN"}


def test_the_state_before_the_full_refresh_is_healthy(trust):
    assert {a: s for a, s in trust.alerts["healthy"].items() if s != "OK"} == YOUNG


def test_a_healthy_full_refresh_fires_no_alert(trust):
    assert {a: s for a, s in trust.alerts["after full refresh"].items() if s != "OK"} == YOUNG


def test_a_full_refresh_does_not_change_the_latency_of_old_files(trust):
    before, after = trust.latency["healthy"], trust.latency["after full refresh"]
    assert before and after == before


def test_the_bad_batch_update_has_its_own_pass_rate(trust):
    bad_update = trust.updates[-1]
    rows = trust.tables.table("expectation_results").where(
        f"update_id = '{bad_update}' AND dataset = 'orders' AND expectation = 'non_negative_amount'").collect()
    assert len(rows) == 1
    assert (rows[0]["passed_records"], rows[0]["failed_records"]) == (ROWS - FAILING, FAILING)
    assert rows[0]["pass_rate"] == pytest.approx((ROWS - FAILING) / ROWS)
    assert trust.alerts["bad batch"]["lakewatch_low_pass_rate"] == "TRIGGERED"


def test_daily_quality_counts_each_arrived_row_once(trust):
    arrived = 3 * ROWS  # every order line the test wrote is a clean row (the appended line is not read)
    counted = trust.tables.sql(
        "SELECT expectation, sum(passed_records + failed_records) AS n FROM {daily} "
        "WHERE dataset = 'orders' GROUP BY expectation", daily="expectation_results_daily").collect()
    assert counted and {r["n"] for r in counted} == {arrived}


def test_reconciliation_flags_only_the_file_appended_after_it_was_ingested(trust):
    rows = {Path(r["path"]).name: r for r in trust.tables.table("reconciliation").collect()}
    appended = rows.pop(Path(trust.appended).name)
    assert appended["modified_after_ingest"] is True and appended["status"] == "modified_after_ingest"
    assert appended["lines"] == ROWS  # counted when it was committed, before the append
    assert rows and {(r["difference"], r["status"]) for r in rows.values()} == {(0, "ok")}
    assert trust.alerts["bad batch"]["lakewatch_files_not_reconciled"] == "TRIGGERED"


def test_each_refresh_replaces_each_materialized_view_in_one_commit(trust):
    """As on Databricks, a reader (an alert, the dashboard) never finds a view emptied by a refresh
    under way: Delta's own history of every view holds no TRUNCATE, and each refresh after the first
    made one commit to each view, an overwrite; or none, for a view that was empty and stayed empty
    (Delta commits no write that changes nothing), whose flow then reports 0 rows written, not NULL.
    (Open-source SDP as shipped truncates every view while it sets up tables and appends when the
    view's flow runs: a reader saw `update_status` empty for tens of seconds.)"""
    views = [t.name for t in TABLES if t.kind == "materialized_view"]
    assert len(trust.refreshes) == 4 and len(views) > 20
    written = {(r["update_id"], r["flow"].rsplit(".", 1)[-1]): r["rows"] for r in trust.tables.sql(
        "SELECT origin.update_id, origin.flow_name AS flow, "
        "get_json_object(details, '$.flow_progress.metrics.num_output_rows') AS rows FROM {log} "
        "WHERE event_type = 'flow_progress' AND level = 'METRICS'", log="lakewatch_observability_event_log").collect()}
    untouched = set()
    for view in views:
        history = trust.tables.spark.sql(f"DESCRIBE HISTORY delta.`{trust.tables.path(view)}`").select(
            "operation", "operationParameters", "operationMetrics", "userMetadata").collect()
        assert "TRUNCATE" not in {c["operation"] for c in history}, view
        for refresh in trust.refreshes[1:3]:
            mine = [(c["operation"], c["operationParameters"]["mode"]) for c in history
                    if c["userMetadata"] == commit_tag(refresh)]
            if planned_techniques(trust, refresh)[view] == "MAINTENANCE_TYPE_NO_OP":  # inputs unchanged
                assert not mine and written[(refresh, view)] == "0", view
            elif not mine:  # nothing to replace: the view never held a row
                untouched.add(view)
                assert trust.tables.table(view).count() == 0, view
                assert not any(int((c["operationMetrics"] or {}).get("numOutputRows") or 0) for c in history), view
                assert written[(refresh, view)] == "0", view
            else:
                assert mine == [("WRITE", "Overwrite")], view
    assert len(untouched) < len(views) / 2, untouched  # most views hold rows here


def test_a_refresh_with_nothing_new_recomputes_only_what_reads_the_clock(trust):
    """Nothing was ingested between the last two refreshes: as Databricks does, each materialized view
    whose inputs did not change is planned NO_OP and not written (Delta's own history of each view has
    no commit of that refresh), and only health_metrics, which reads the clock, is recomputed; each
    view's planning_information event says which."""
    last, before = trust.refreshes[-1], trust.refreshes[-2]
    planned = planning_events(trust, last)
    chosen = planned_techniques(trust, last)
    views = {t.name for t in TABLES if t.kind == "materialized_view"}
    assert set(chosen) == views
    assert {v for v, technique in chosen.items() if technique != "MAINTENANCE_TYPE_NO_OP"} == {"health_metrics"}
    [issue] = next(t for t in planned["health_metrics"] if not t["is_chosen"])["incrementalization_issues"]
    assert issue["issue_type"] == "PLAN_NOT_DETERMINISTIC"
    for view in views:
        tags = {c["userMetadata"] for c in trust.tables.spark.sql(
            f"DESCRIBE HISTORY delta.`{trust.tables.path(view)}`").select("userMetadata").collect()}
        assert (commit_tag(last) in tags) == (view == "health_metrics"), view
    # the same alerts as after the refresh that recomputed everything over the same inputs
    assert trust.alerts["nothing new"] == trust.alerts["bad batch"]
    assert trust.latency["nothing new"] == trust.latency["bad batch"]
    assert before != last
