"""The bundle's SQL alerts on Spark: for each alert a crafted event log that triggers it and a healthy
one that does not (queries run on tables built from those logs). (Evaluation semantics without Spark:
tests/unit/test_alert_evaluation.py.)"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from typing import Callable

import pytest

from pipelines.alerts import AlertSpec, load_alerts, run_alert
from pipelines.bundle import load_bundle
from pipelines.observability.catalog import HEALTH_METRIC_NAMES
from tests.eventlog_builders import OTHER_LOG, PIPELINE, Inputs, Update, bronze_rows, plain_pipeline_update, completed_update, file_row, full_refresh_story, sink_row

DB = "alert_checks"


# -- every alert of the bundle, on crafted event logs --------------------------------------------
# A fixed instant, read as the health metrics' clock too: every scenario means the same at any hour
# (one placed before midnight is not "yesterday" just after it).
NOW = datetime(2026, 6, 15, 12, 0, tzinfo=timezone.utc)


def ago(**delta: float) -> datetime:
    return NOW - timedelta(**delta)


def history(*latest: Update, files: tuple[str, ...] = ("a",), latency_seconds: float = 60,
            sink: tuple = ()) -> Inputs:
    """Three ordinary completed updates earlier today-ish (60 s, 100 rows, all clean), then `latest`;
    the last one committed `files` (2 lines each, 2 bronze rows each) `latency_seconds` after their creation."""
    base = [completed_update(f"h{i}", ago(minutes=50 - i * 10), duration=60, rows=100, clean_failed=0)
            for i in range(3)]
    commit = ago(minutes=5)
    created = commit - timedelta(seconds=latency_seconds)
    state = [file_row(f"/l/{f}.json", created, commit, lines=2) for f in files]
    bronze = [row for f in files for row in bronze_rows(f"/l/{f}.json", 2, created, commit)]
    return Inputs(base + list(latest), state, bronze, list(sink))


def healthy() -> Inputs:
    return history(completed_update("last", ago(minutes=5), duration=62, rows=100, clean_failed=0))


def failed_last() -> Inputs:
    u = Update("last", ago(minutes=5)).state("RUNNING", 1)
    u.flow("orders_bronze", "RUNNING", 2).flow("orders_bronze", "FAILED", 5, error=[("java.io.EOFException", "cut")])
    return history(u.state("FAILED", 6, error=("java.io.EOFException", "cut")))


def other_pipeline_failing() -> Inputs:
    """The ingest pipeline healthy; another observed pipeline's last update failed (an open incident)."""
    inputs = healthy()
    inputs.observed = {OTHER_LOG: [plain_pipeline_update("o1", ago(hours=2), "COMPLETED"),
                                   plain_pipeline_update("o2", ago(minutes=20), "FAILED")]}
    return inputs


def other_pipeline_recovered() -> Inputs:
    inputs = other_pipeline_failing()
    inputs.observed[OTHER_LOG].append(plain_pipeline_update("o3", ago(minutes=10), "COMPLETED"))
    return inputs


def retried_flow() -> Inputs:
    """The last update completed, but one of its flows failed once on the way (SDP retried it): an
    error outside any incident."""
    u = Update("last", ago(minutes=5)).state("RUNNING", 1)
    u.flow("orders_bronze", "RUNNING", 2).flow("orders_bronze", "FAILED", 5, error=[("java.io.IOException", "reset")])
    u.ran("orders_bronze", 6, 30, 100, backlog_files=0, backlog_bytes=0, batch_id=0)
    return history(u.state("COMPLETED", 40))


def failed_then_recovered() -> Inputs:
    inputs = failed_last()
    inputs.updates.append(completed_update("recovered", ago(minutes=2), duration=60, rows=100, clean_failed=0))
    return inputs


def degraded() -> Inputs:
    """The last update completed, but slow (190 s against 60), with failing rows, a large backlog,
    new quarantined and rescued rows, a file seven hours late, a figure it could not measure (a WARN
    event) and a landing file with one line more than bronze holds from it."""
    last = completed_update("last", ago(minutes=5), duration=190, rows=100, clean_failed=5, backlog_files=500,
                            quarantined=3, rescued=4)
    last.warn("file state", "checkpoint not readable", 180)
    inputs = history(last, files=("a", "late"), latency_seconds=7 * 3600,
                     sink=tuple(sink_row("/l/a.json", f"h{i}", ago(hours=8), last.at(30)) for i in range(3)))
    inputs.file_state.append(file_row("/l/short.json", ago(minutes=9), ago(minutes=5), lines=3))
    inputs.bronze.extend(bronze_rows("/l/short.json", 2, ago(minutes=9), ago(minutes=5)))
    return inputs


def usual(last_duration: float) -> Inputs:
    """Seven ordinary updates (60 to 62 s, 100 rows), then one of `last_duration` seconds."""
    base = [completed_update(f"s{i}", ago(minutes=80 - i * 10), duration=60 + i % 3, rows=100, clean_failed=0)
            for i in range(7)]
    return Inputs(base + [completed_update("last", ago(minutes=5), duration=last_duration, rows=100, clean_failed=0)])


def anomalous() -> Inputs:
    return usual(300)


def steady() -> Inputs:
    return usual(61)


def huge_backlog() -> Inputs:
    u = Update("last", ago(minutes=5)).state("RUNNING", 1)
    u.ran("orders_bronze", 2, 30, 100, backlog_files=5, backlog_bytes=20 * 2**30, batch_id=0)
    return history(u.state("COMPLETED", 40))


def backlog_of(*files: int | None) -> Inputs:
    """One completed update per figure, oldest first, each ending with that many files waiting (None:
    the backlog could not be measured, a WARN event says why)."""
    return Inputs([completed_update(f"b{i}", ago(minutes=60 - i * 10), backlog_files=n, clean_failed=0)
                   for i, n in enumerate(files)])


def growing_backlog() -> Inputs:
    return backlog_of(50, 5, 10, 20, 40)  # three growths in a row, every count below max_backlog_files


def up_and_down_backlog() -> Inputs:
    return backlog_of(5, 10, 20, 15, 30)  # the last growth follows a fall: no sustained growth


def weeks(last_week_seconds: float) -> Inputs:
    """Two weeks of completed updates: 60 s each 8 to 13 days ago, `last_week_seconds` in the last 7 days."""
    before = [completed_update(f"w{d}", ago(days=d), duration=60, clean_failed=0) for d in range(8, 14)]
    recent = [completed_update(f"r{d}", ago(days=d, minutes=5), duration=last_week_seconds, clean_failed=0)
              for d in range(0, 6)]
    return Inputs(before + recent)


def slower_each_week() -> Inputs:
    return weeks(66)  # 10% slower


def steady_weeks() -> Inputs:
    return weeks(61)  # 1.7% slower: within the 5% the alert allows


def no_rows() -> Inputs:
    """Rows 30 hours ago, then only updates that found nothing new to read."""
    idle = [completed_update(f"idle{h}", ago(hours=h), rows=0, clean_failed=0) for h in (20, 10)]
    return Inputs([completed_update("fed", ago(hours=30), rows=100, clean_failed=0), *idle,
                   completed_update("last", ago(minutes=5), rows=0, clean_failed=0)])


def idle_after_recent_rows() -> Inputs:
    """Rows in the last hour, then an update that found nothing new: files land less often than the
    pipeline runs, which is healthy (no page)."""
    return history(completed_update("last", ago(minutes=5), rows=0, clean_failed=0))


def one_table_quiet() -> Inputs:
    """orders got rows in every update; customers (limit 24 hours) last got rows 30 hours ago."""
    fed = completed_update("fed", ago(hours=30), rows=100, clean_failed=0)
    fed.ran("customers_bronze", 3, 20, 40, batch_id=0)
    last = completed_update("last", ago(minutes=5), rows=100, clean_failed=0)
    last.ran("customers_bronze", 3, 20, 0, batch_id=0)
    return Inputs([fed, last], limits={"orders": 24, "customers": 24})


def every_table_within_its_limit() -> Inputs:
    inputs = one_table_quiet()
    inputs.limits["customers"] = 48  # a feed that lands every other day
    return inputs


def deliveries_every_hour(last_hours_ago: float) -> Inputs:
    """orders' producer delivered a file every hour for six hours, the newest `last_hours_ago` hours
    ago; the pipeline completed an update five minutes ago (it is not stuck)."""
    state = [file_row(f"/l/o{i}.json", ago(hours=last_hours_ago + i), ago(hours=last_hours_ago + i) + timedelta(minutes=1),
                      lines=2) for i in range(6)]
    return Inputs([completed_update("last", ago(minutes=5), rows=0, clean_failed=0)], state, limits={"orders": None})


def producer_silent() -> Inputs:
    return deliveries_every_hour(5)  # due 1.5 hours after the newest delivery


def producer_on_time() -> Inputs:
    return deliveries_every_hour(0.5)


def stalled() -> Inputs:
    """Completed long ago; since then only updates that never finish successfully (canceled)."""
    old = completed_update("old", ago(hours=30), duration=60, rows=100)
    canceled = Update("c1", ago(minutes=5)).state("RUNNING", 1).state("CANCELED", 3)
    return Inputs([old, canceled])


def after_full_refresh() -> Inputs:
    return full_refresh_story(NOW)[1]


def after_full_refresh_on_databricks() -> Inputs:
    return full_refresh_story(NOW, databricks=True)[1]


def after_full_refresh_documented_only() -> Inputs:
    """create_update holds only what Databricks documents (run_as, cause): the full refresh shows only
    in its RESETTING state."""
    return full_refresh_story(NOW, databricks=True, documented_create_update=True)[1]


def dropped_and_rejected(rejected: int) -> Inputs:
    """The pipeline's first update (its clean and rejected tables start together): the drop expectation
    removed 3 rows of orders; the rejected flow wrote `rejected`."""
    u = completed_update("last", ago(minutes=5), duration=62, rows=100)
    u.ran("orders", 32, 58, 97, dropped=3, expectations=[("has_order_id", 97, 3)], batch_id=0)
    u.ran("orders_rejected", 32, 58, rejected, batch_id=0)
    return Inputs([u])


def rejected_row_lost() -> Inputs:
    return dropped_and_rejected(2)


def rejected_rows_kept() -> Inputs:
    return dropped_and_rejected(3)


SCENARIOS: dict[str, tuple[Callable[[], Inputs], Callable[[], Inputs]]] = {
    # alert key: (a scenario that triggers it, a healthy one that does not)
    "lakewatch_incident": (failed_last, failed_then_recovered),
    "lakewatch_pipeline_failing": (other_pipeline_failing, other_pipeline_recovered),
    "lakewatch_errors_24h": (retried_flow, failed_then_recovered),
    "lakewatch_slow_update": (degraded, healthy),
    "lakewatch_low_pass_rate": (degraded, healthy),
    "lakewatch_no_rows": (no_rows, idle_after_recent_rows),
    "lakewatch_backlog": (degraded, healthy),
    "lakewatch_stalled": (stalled, healthy),
    "lakewatch_quarantine_growing": (degraded, healthy),
    "lakewatch_latency_sla": (degraded, healthy),
    "lakewatch_schema_drift": (degraded, healthy),
    "lakewatch_metrics_missing": (degraded, healthy),
    "lakewatch_files_not_reconciled": (degraded, healthy),
    "lakewatch_anomalies": (anomalous, steady),
    "lakewatch_backlog_bytes": (huge_backlog, healthy),
    "lakewatch_backlog_growing": (growing_backlog, up_and_down_backlog),
    "lakewatch_duration_trend": (slower_each_week, steady_weeks),
    "lakewatch_table_without_rows": (one_table_quiet, every_table_within_its_limit),
    "lakewatch_files_late": (producer_silent, producer_on_time),
    "lakewatch_rejected_rows_not_reconciled": (rejected_row_lost, rejected_rows_kept),
}


@pytest.fixture(scope="module")
def alerts(project_root):
    bundle = load_bundle(project_root, overrides={"catalog": "spark_catalog", "schema": DB, "warehouse_id": "local"})
    return {a.key: a for a in load_alerts(bundle)}


_built: dict[Callable, list[tuple]] = {}


METRIC_COLUMNS = ("metric_name", "metric_value", "reason", "alert_value", "alert_reason", "explained_by")


def metrics_of(spark, scenario: Callable[[], Inputs]) -> list[tuple]:
    """(metric_name, metric_value, reason, alert_value, alert_reason, explained_by) of the health metrics
    of `scenario` (each built once)."""
    if scenario not in _built:
        session = spark.newSession()
        scenario().views(session, only=["health_metrics"], now=NOW)
        _built[scenario] = [tuple(r[c] for c in METRIC_COLUMNS) for r in session.table("health_metrics").collect()]
    return _built[scenario]


def measured(name: str, value: float | None, reason: str | None) -> tuple:
    """A metric row that no incident explains: the alerts read its value and reason as they are."""
    return (name, value, reason, value, reason, None)


def sql_text(v) -> str:
    return "CAST(NULL AS STRING)" if v is None else "'" + str(v).replace("'", "''") + "'"


def sql_value(v) -> str:
    return "CAST(NULL AS DOUBLE)" if v is None else f"CAST({v!r} AS DOUBLE)"


def alert_state(spark, alert: AlertSpec, metrics: list[tuple], metrics_age_hours: float = 0) -> str:
    """The alert's state on these health metrics, computed `metrics_age_hours` ago: they are published
    as a view in a real database, so the alert's own qualified query runs."""
    checked_at = f"current_timestamp() - make_interval(0, 0, 0, 0, 0, {int(metrics_age_hours * 60)}, 0)"
    values = ", ".join(f"('{name}', {sql_value(value)}, {sql_text(reason)}, {checked_at}, {sql_value(alert_value)}, "
                       f"{sql_text(alert_reason)}, {sql_text(explained_by)})"
                       for name, value, reason, alert_value, alert_reason, explained_by in metrics)
    spark.sql(f"CREATE DATABASE IF NOT EXISTS spark_catalog.{DB}")
    body = (f"SELECT * FROM VALUES {values} AS t(metric_name, metric_value, reason, checked_at, alert_value, "
            "alert_reason, explained_by)" if metrics else
            "SELECT CAST(NULL AS STRING) AS metric_name, CAST(NULL AS DOUBLE) AS metric_value, "
            "CAST(NULL AS STRING) AS reason, current_timestamp() AS checked_at, CAST(NULL AS DOUBLE) AS alert_value, "
            "CAST(NULL AS STRING) AS alert_reason, CAST(NULL AS STRING) AS explained_by WHERE false")
    spark.sql(f"CREATE OR REPLACE VIEW spark_catalog.{DB}.health_metrics AS {body}")
    result = run_alert(spark, alert)
    assert result.state != "ERROR", result.error
    return result.state


def state_of(spark, alert: AlertSpec, scenario: Callable[[], Inputs], metrics_age_hours: float = 0) -> str:
    return alert_state(spark, alert, metrics_of(spark, scenario), metrics_age_hours)


def test_every_alert_has_a_scenario(alerts):
    assert set(alerts) == set(SCENARIOS)


@pytest.mark.parametrize("key", sorted(SCENARIOS))
def test_alert_triggers_on_its_scenario_and_not_on_a_healthy_one(spark, alerts, key):
    trigger, healthy_case = SCENARIOS[key]
    assert state_of(spark, alerts[key], trigger) == "TRIGGERED"
    assert state_of(spark, alerts[key], healthy_case) == "OK"


def test_the_trend_and_the_streak_are_measured_from_the_updates(spark):
    slower = dict((n, v) for n, v, *_ in metrics_of(spark, slower_each_week))
    assert slower["duration_week_over_week_change"] == pytest.approx(66 / 60 - 1)
    assert dict((n, v) for n, v, *_ in metrics_of(spark, growing_backlog))["backlog_growth_streak"] == 3
    assert dict((n, v) for n, v, *_ in metrics_of(spark, up_and_down_backlog))["backlog_growth_streak"] == 1
    young = {n: (v, r) for n, v, r, *_ in metrics_of(spark, healthy)}
    assert young["duration_week_over_week_change"][0] is None
    assert "no trend yet" in young["duration_week_over_week_change"][1]


def test_metrics_missing_counts_a_measurement_warning(spark):
    metrics = {name: value for name, value, *_ in metrics_of(spark, degraded)}
    assert metrics["metrics_missing"] == 1  # the WARN event: everything else of the update was measured
    assert metrics["files_not_reconciled"] == 1


def test_stalled_alert_fires_when_the_metrics_themselves_stop_refreshing(spark, alerts):
    # Healthy when computed, but computed ten hours ago: the job (and the observability refresh) stopped.
    assert state_of(spark, alerts["lakewatch_stalled"], healthy, metrics_age_hours=10) == "TRIGGERED"
    assert state_of(spark, alerts["lakewatch_stalled"], healthy, metrics_age_hours=1) == "OK"


def test_no_rows_alert_counts_the_metrics_own_age(spark, alerts):
    """Metrics frozen 30 hours ago, when rows had just arrived: no one knows of rows since."""
    assert state_of(spark, alerts["lakewatch_no_rows"], healthy, metrics_age_hours=30) == "TRIGGERED"
    assert state_of(spark, alerts["lakewatch_no_rows"], healthy, metrics_age_hours=2) == "OK"


def test_no_alert_is_ok_over_a_null_metric(spark, alerts):
    """Every metric NULL (not measured): no alert may say OK; each is UNKNOWN, its reason kept."""
    unknown = [measured(name, None, f"{name} not measured") for name in HEALTH_METRIC_NAMES]
    states = {key: alert_state(spark, alert, unknown) for key, alert in alerts.items()}
    assert states == {key: "UNKNOWN" for key in alerts}


def test_no_alert_is_ok_without_metrics(spark, alerts):
    """No health metrics at all (the observability pipeline never ran): the stalled alert pages, the
    others are UNKNOWN, none is OK."""
    states = {key: alert_state(spark, alert, []) for key, alert in alerts.items()}
    assert states.pop("lakewatch_stalled") == "TRIGGERED"
    assert set(states.values()) == {"UNKNOWN"}


def test_a_healthy_full_refresh_fires_no_alert(spark, alerts):
    """The full refresh re-reads every file, re-quarantines the corrupt line, rescues the old rows
    again and takes three times as long: every alert stays OK."""
    states = {key: state_of(spark, alert, after_full_refresh) for key, alert in alerts.items()}
    assert states.pop("lakewatch_duration_trend") == "UNKNOWN"  # two days of history: no trend yet
    assert states == {key: "OK" for key in states}


def test_a_healthy_full_refresh_on_databricks_fires_no_alert(spark, alerts):
    """Where the file state loses the first commit, the re-committed files have no latency: the latency
    alert cannot say OK (UNKNOWN, with the reason); nothing is TRIGGERED."""
    states = {key: state_of(spark, alert, after_full_refresh_on_databricks) for key, alert in alerts.items()}
    assert states.pop("lakewatch_latency_sla") == "UNKNOWN"
    assert states.pop("lakewatch_duration_trend") == "UNKNOWN"
    assert states == {key: "OK" for key in states}
    reasons = {name: reason for name, _, reason, *_ in metrics_of(spark, after_full_refresh_on_databricks)}
    assert "committed again by a full refresh" in reasons["ingestion_latency_p95_seconds_24h"]


def test_a_healthy_full_refresh_known_only_by_its_resetting_state_fires_no_alert(spark, alerts):
    """The same healthy full refresh on Databricks, where create_update does not say it is one: the
    RESETTING state does. No alert fires (drift, duration and anomalies read incremental updates only)."""
    metrics = {name: (value, reason) for name, value, reason, *_ in metrics_of(spark, after_full_refresh_documented_only)}
    assert metrics == {name: (value, reason)
                       for name, value, reason, *_ in metrics_of(spark, after_full_refresh_on_databricks)}
    states = {key: state_of(spark, alert, after_full_refresh_documented_only) for key, alert in alerts.items()}
    assert states.pop("lakewatch_latency_sla") == "UNKNOWN"
    assert states.pop("lakewatch_duration_trend") == "UNKNOWN"
    assert states == {key: "OK" for key in states}


def test_an_unmeasured_backlog_within_the_streak_leaves_the_streak_unknown(spark, alerts):
    """5, 10, 20, (not measured), 40, 50: whether 40 grew is not known, so the streak is not known
    (NULL, and why); the alert is UNKNOWN, not OK. A figure not measured before a measured fall
    that already ends the streak does not matter."""
    def gap() -> Inputs:
        return backlog_of(5, 10, 20, None, 40, 50)

    value, reason = {n: (v, r) for n, v, r, *_ in metrics_of(spark, gap)}["backlog_growth_streak"]
    assert value is None and "b3" in reason and "landing folder not readable" in reason
    assert state_of(spark, alerts["lakewatch_backlog_growing"], gap) == "UNKNOWN"
    last = {n: (v, r) for n, v, r, *_ in metrics_of(spark, lambda: backlog_of(5, 10, None))}
    assert last["backlog_growth_streak"][0] is None and "b2" in last["backlog_growth_streak"][1]
    before_a_fall = {n: (v, r) for n, v, r, *_ in metrics_of(spark, lambda: backlog_of(5, None, 20, 10, 30, 40))}
    assert before_a_fall["backlog_growth_streak"] == (2, None)


def test_one_failure_pages_once_through_its_incident(spark, alerts):
    """The last update failed: without incidents the failure, its errors and what it left unmeasured
    would each page. The open incident explains them: only lakewatch_incident is TRIGGERED, its reason
    names the incident and its root cause, and each explained metric keeps its measured value beside
    an alert_value of 0 and a reason naming the incident."""
    states = {key: state_of(spark, alert, failed_last) for key, alert in alerts.items()}
    assert {key for key, state in states.items() if state == "TRIGGERED"} == {"lakewatch_incident"}
    rows = {r[0]: r for r in metrics_of(spark, failed_last)}
    assert rows["last_update_failed"][1] == 1 and rows["errors_last_24h"][1] > 0  # what happened, as measured
    for name in ("last_update_failed", "errors_last_24h", "failed_updates_last_24h"):
        _, _, _, alert_value, alert_reason, explained_by = rows[name]
        assert (alert_value, explained_by) == (0, "last"), name  # the incident is named after its first failure
        assert "explained by open incident last" in alert_reason, name
    assert rows["open_incidents"][3] == 1 and rows["open_incidents"][4].startswith(f"incident last of {PIPELINE} (")


def test_a_recovered_failure_stops_counting_toward_the_errors_alert(spark, alerts):
    """After the failure an update completed: the incident is closed, the failure's errors are still in
    the 24-hour count (metric_value) but not in what the errors alert compares; an error of a retried
    flow in a completed update, outside any incident, still pages."""
    rows = {r[0]: r for r in metrics_of(spark, failed_then_recovered)}
    name, value, _, alert_value, alert_reason, explained_by = rows["errors_last_24h"]
    assert value > 0 and alert_value == 0 and explained_by == "last" and "closed incident" in alert_reason
    assert rows["open_incidents"][1] == 0
    retried = {r[0]: r for r in metrics_of(spark, retried_flow)}["errors_last_24h"]
    assert retried[1] == retried[3] == 1 and retried[5] is None
