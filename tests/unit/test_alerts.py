"""The bundle's SQL alerts: evaluation semantics, and for each alert a crafted event log that
triggers it and a healthy one that does not (queries run on tables built from those logs)."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from typing import Callable

import pytest

from pipelines.alerts import AlertSpec, aggregate, evaluate, load_alerts, run_alert
from pipelines.bundle import load_bundle
from tests.eventlog_builders import Update, completed_update, observability_views

DB = "alert_checks"


def spec(**changes) -> AlertSpec:
    base = dict(key="a", display_name="a", query_text="", operator="GREATER_THAN", source="v",
                source_aggregation=None, threshold_value=0.0, empty_result_state="OK")
    base.update(changes)
    return AlertSpec(**base)


@pytest.mark.parametrize("aggregation, expected", [
    (None, 3), ("SUM", 12.0), ("COUNT", 3), ("COUNT_DISTINCT", 2), ("AVG", 4.0), ("MEDIAN", 3.0),
    ("MIN", 3.0), ("MAX", 6.0), ("STDDEV", pytest.approx(3 ** 0.5)),
])
def test_aggregations_skip_nulls_and_unset_means_first_row(aggregation, expected):
    assert aggregate([3, None, 6, 3], aggregation) == expected


def test_comparison_operators_and_thresholds():
    rows = [{"v": 5.0, "limit": 4.0}]
    assert evaluate(spec(operator="GREATER_THAN", threshold_value=4.0), rows).state == "TRIGGERED"
    assert evaluate(spec(operator="LESS_THAN_OR_EQUAL", threshold_value=4.0), rows).state == "OK"
    assert evaluate(spec(operator="EQUAL", threshold_value=5.0), rows).state == "TRIGGERED"
    assert evaluate(spec(operator="NOT_EQUAL", threshold_value=5.0), rows).state == "OK"
    assert evaluate(spec(threshold_value=None, threshold_column="limit"), rows).state == "TRIGGERED"
    assert evaluate(spec(operator="IS_NULL"), [{"v": None}]).state == "TRIGGERED"
    assert evaluate(spec(operator="IS_NOT_NULL"), [{"v": None}]).state == "OK"
    assert evaluate(spec(operator="EQUAL", threshold_value="FAILED"), [{"v": "FAILED"}]).state == "TRIGGERED"


def test_empty_result_null_value_and_missing_column():
    assert evaluate(spec(empty_result_state="TRIGGERED"), []).state == "TRIGGERED"
    assert evaluate(spec(empty_result_state="OK"), []).state == "OK"
    assert evaluate(spec(), [{"v": None}]).state == "UNKNOWN"
    missing = evaluate(spec(source="nope"), [{"v": 1}])
    assert missing.state == "ERROR" and "nope" in (missing.error or "")


# -- every alert of the bundle, on crafted event logs --------------------------------------------
NOW = datetime.now(timezone.utc)


def ago(**delta: float) -> datetime:
    return NOW - timedelta(**delta)


def history(*latest: Update, file_state: tuple = ()) -> tuple[list[Update], tuple]:
    """Three ordinary completed updates earlier today-ish (60 s, 100 rows, all clean), then `latest`."""
    base = [completed_update(f"h{i}", ago(minutes=50 - i * 10), duration=60, rows=100, clean_failed=0)
            for i in range(3)]
    return base + list(latest), file_state


def healthy() -> tuple[list[Update], tuple]:
    return history(completed_update("last", ago(minutes=5), duration=62, rows=100, clean_failed=0),
                   file_state=file_committed(latency_seconds=60))


def file_committed(latency_seconds: float) -> tuple:
    commit = ago(minutes=5)
    return (("orders_bronze", "orders_bronze", "/l/a.json", 10, commit - timedelta(seconds=latency_seconds),
             commit, commit, 0, "committed"),)


def failed_last() -> tuple[list[Update], tuple]:
    u = Update("last", ago(minutes=5)).state("RUNNING", 1)
    u.flow("orders_bronze", "RUNNING", 2).flow("orders_bronze", "FAILED", 5, error=[("java.io.EOFException", "cut")])
    return history(u.state("FAILED", 6, error=("java.io.EOFException", "cut")))


def failed_then_recovered() -> tuple[list[Update], tuple]:
    updates, files = failed_last()
    updates.append(completed_update("recovered", ago(minutes=2), duration=60, rows=100, clean_failed=0))
    return updates, files


def stalled() -> tuple[list[Update], tuple]:
    """Completed long ago; since then only updates that never finish successfully (canceled)."""
    old = completed_update("old", ago(hours=30), duration=60, rows=100)
    canceled = Update("c1", ago(minutes=5)).state("RUNNING", 1).state("CANCELED", 3)
    return [old, canceled], ()


SCENARIOS: dict[str, tuple[Callable, Callable]] = {
    # alert key: (a scenario that triggers it, a healthy one that does not)
    "lakewatch_update_failed": (failed_last, failed_then_recovered),
    "lakewatch_errors_today": (failed_then_recovered, healthy),
    "lakewatch_slow_update": (lambda: history(completed_update("last", ago(minutes=5), duration=190, rows=100)), healthy),
    "lakewatch_low_pass_rate": (lambda: history(completed_update("last", ago(minutes=5), rows=100, clean_failed=5)), healthy),
    "lakewatch_no_rows": (lambda: history(completed_update("last", ago(minutes=5), rows=0, clean_failed=0)), healthy),
    "lakewatch_backlog": (lambda: history(completed_update("last", ago(minutes=5), backlog_files=500)), healthy),
    "lakewatch_stalled": (stalled, healthy),
    "lakewatch_quarantine_growing": (lambda: history(completed_update("last", ago(minutes=5), quarantined=3)), healthy),
    "lakewatch_latency_sla": (lambda: history(completed_update("last", ago(minutes=5)),
                                              file_state=file_committed(latency_seconds=7200)), healthy),
    "lakewatch_schema_drift": (lambda: history(completed_update("last", ago(minutes=5), rescued=4)), healthy),
}


@pytest.fixture(scope="module")
def alerts(project_root):
    bundle = load_bundle(project_root, overrides={"catalog": "spark_catalog", "schema": DB, "warehouse_id": "local"})
    return {a.key: a for a in load_alerts(bundle)}


_built: dict[Callable, list] = {}


def sql_value(v) -> str:
    return "CAST(NULL AS DOUBLE)" if v is None else f"CAST({v!r} AS DOUBLE)"


def state_of(spark, alert: AlertSpec, scenario: Callable, metrics_age_hours: float = 0) -> str:
    """The alert's state on the health metrics of `scenario` (each scenario is built once),
    computed `metrics_age_hours` ago.

    The metrics are published as a view in a real database, so the alert's own qualified query runs.
    """
    if scenario not in _built:
        updates, files = scenario()
        session = spark.newSession()
        observability_views(session, updates, file_state=files, only=["health_metrics"])
        _built[scenario] = session.table("health_metrics").collect()
    checked_at = f"current_timestamp() - make_interval(0, 0, 0, 0, 0, {int(metrics_age_hours * 60)}, 0)"
    values = ", ".join(f"('{r['metric_name']}', {sql_value(r['metric_value'])}, {checked_at})"
                       for r in _built[scenario])
    spark.sql(f"CREATE DATABASE IF NOT EXISTS spark_catalog.{DB}")
    spark.sql(f"CREATE OR REPLACE VIEW spark_catalog.{DB}.health_metrics AS "
              f"SELECT * FROM VALUES {values} AS t(metric_name, metric_value, checked_at)")
    result = run_alert(spark, alert)
    assert result.state != "ERROR", result.error
    return result.state


def test_every_alert_has_a_scenario(alerts):
    assert set(alerts) == set(SCENARIOS)


@pytest.mark.parametrize("key", sorted(SCENARIOS))
def test_alert_triggers_on_its_scenario_and_not_on_a_healthy_one(spark, alerts, key):
    trigger, healthy_case = SCENARIOS[key]
    assert state_of(spark, alerts[key], trigger) == "TRIGGERED"
    assert state_of(spark, alerts[key], healthy_case) == "OK"


def test_stalled_alert_fires_when_the_metrics_themselves_stop_refreshing(spark, alerts):
    # Healthy when computed, but computed ten hours ago: the job (and the observability refresh) stopped.
    assert state_of(spark, alerts["lakewatch_stalled"], healthy, metrics_age_hours=10) == "TRIGGERED"
    assert state_of(spark, alerts["lakewatch_stalled"], healthy, metrics_age_hours=1) == "OK"
