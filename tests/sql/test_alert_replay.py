"""`lakewatch alerts --replay` on Spark: the job's snapshot file (jobs/snapshot_health_metrics.sql, run
as `lakewatch job` runs it) keeps each refresh's health metrics once, and the bundle's own alerts
replayed over that history give, refresh by refresh, the states the metric values the test wrote
call for. (Episodes and notifications without Spark: tests/unit/test_alert_replay.py.)"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest

from pipelines.alert_replay import replay_alerts
from pipelines.alerts import load_alerts
from pipelines.bundle import load_bundle
from pipelines.errors import LakewatchError
from pipelines.local.sql_task import run_sql_file

SNAPSHOT_SQL = Path(__file__).resolve().parents[2] / "jobs" / "snapshot_health_metrics.sql"
DB = "alert_replay"
LIVE, HISTORY = f"{DB}.health_metrics", f"{DB}.health_metrics_history"
T0 = datetime(2026, 11, 2, 6, 0, tzinfo=timezone.utc)
COLUMNS = "metric_name STRING, metric_value DOUBLE, reason STRING, checked_at TIMESTAMP, alert_value DOUBLE, " \
          "alert_reason STRING, explained_by STRING"
MAX_BACKLOG, STALLED_AFTER = 100, 6


@pytest.fixture(scope="module")
def session(spark):
    session = spark.newSession()
    session.sql(f"CREATE DATABASE IF NOT EXISTS {DB}")
    for name in (LIVE, HISTORY):
        session.sql(f"DROP TABLE IF EXISTS {name}")
    return session


@pytest.fixture(scope="module")
def alerts(project_root):
    bundle = load_bundle(project_root, overrides={
        "catalog": "spark_catalog", "schema": DB, "warehouse_id": "local", "health_metrics_history": HISTORY,
        "max_backlog_files": str(MAX_BACKLOG), "stalled_after_hours": str(STALLED_AFTER)})
    return {a.key: a for a in load_alerts(bundle)}


def refresh(session: Any, at: datetime, metrics: dict[str, float | None]) -> int:
    """One observability refresh's health_metrics (the live table overwritten, as a refresh does),
    then the job's snapshot task; the rows the history holds after it."""
    rows = [(name, value, None if value is not None else "not measured: test", at.replace(tzinfo=None), value,
             None if value is not None else "not measured: test", None) for name, value in metrics.items()]
    session.createDataFrame(rows, COLUMNS).write.format("delta").mode("overwrite").saveAsTable(LIVE)
    run_sql_file(session, SNAPSHOT_SQL, {"health_metrics": LIVE, "history_table": HISTORY})
    return session.table(HISTORY).count()


# The refreshes: minutes after T0, backlog_files, hours_since_last_success (None: not measured; a
# refresh without the metric leaves it out of that refresh's rows).
REFRESHES = [
    (0, 5.0, 1.0),
    (15, 150.0, 1.0),       # backlog over the threshold: TRIGGERED, notified
    (30, 200.0, 2.0),       # still over: not notified again within retrigger_seconds (3600)
    (90, 180.0, 2.5),       # still over, 75 minutes after the notification: notified again
    (120, 10.0, None),      # back under: OK (notify_on_ok); the success metric not measured: UNKNOWN
    (180, 12.0, 7.0),       # stalled: 7 hours since the last success, over STALLED_AFTER
]


@pytest.fixture(scope="module")
def history(session) -> list[int]:
    held = []
    for minutes, backlog, hours in REFRESHES:
        held.append(refresh(session, T0 + timedelta(minutes=minutes),
                            {"backlog_files": backlog, "hours_since_last_success": hours}))
    return held


def test_the_snapshot_task_keeps_each_refresh_s_metrics_once(session, history):
    assert history == [2 * (i + 1) for i in range(len(REFRESHES))]
    # the task run again after the same refresh adds nothing
    run_sql_file(session, SNAPSHOT_SQL, {"health_metrics": LIVE, "history_table": HISTORY})
    assert session.table(HISTORY).count() == 2 * len(REFRESHES)
    assert session.table(HISTORY).select("checked_at").distinct().count() == len(REFRESHES)


def test_backlog_is_triggered_exactly_where_the_written_values_exceed_its_threshold(session, history, alerts):
    times, [backlog] = replay_alerts(session, [alerts["lakewatch_backlog"]], HISTORY, T0 - timedelta(days=1))
    assert len(times) == len(REFRESHES)
    expected = ["TRIGGERED" if value > MAX_BACKLOG else "OK" for _, value, _ in REFRESHES]
    assert [c.state for c in backlog.checks] == expected
    assert [c.result.value for c in backlog.checks] == [value for _, value, _ in REFRESHES]
    assert [c.at for c in backlog.checks] == [T0 + timedelta(minutes=m) for m, _, _ in REFRESHES]
    [episode] = [e for e in backlog.episodes() if e.state == "TRIGGERED"]
    assert (episode.start, episode.end, episode.checks, episode.peak) == (
        T0 + timedelta(minutes=15), T0 + timedelta(minutes=120), 3, 200.0)
    assert backlog.notifications() == [(T0 + timedelta(minutes=15), "TRIGGERED"),
                                       (T0 + timedelta(minutes=90), "TRIGGERED"),
                                       (T0 + timedelta(minutes=120), "OK")]


def test_stalled_reads_each_refresh_s_clock_and_null_stays_unknown(session, history, alerts):
    """The metrics' age the stalled alert adds is 0 at each replayed refresh (its clock is the
    refresh's), so only the refresh that measured 7 hours triggers; a NULL metric is UNKNOWN."""
    _, [stalled] = replay_alerts(session, [alerts["lakewatch_stalled"]], HISTORY, T0 - timedelta(days=1))
    expected = [("UNKNOWN" if hours is None else "TRIGGERED" if hours > STALLED_AFTER else "OK")
                for _, _, hours in REFRESHES]
    assert [c.state for c in stalled.checks] == expected
    assert stalled.checks[4].result.reason == "not measured: test"


def test_a_refresh_without_the_metric_gives_the_alert_s_empty_result_state(session, history, alerts):
    """Every other alert's metric is in no refresh: the empty result state, UNKNOWN for them."""
    specs = [a for key, a in alerts.items() if key not in ("lakewatch_backlog", "lakewatch_stalled")]
    _, replays = replay_alerts(session, specs, HISTORY, T0 - timedelta(days=1))
    for r in replays:
        assert r.not_replayable is None, r.spec.key
        assert {c.state for c in r.checks} == {r.spec.empty_result_state}, r.spec.key


def test_since_leaves_the_earlier_refreshes_out(session, history, alerts):
    times, [backlog] = replay_alerts(session, [alerts["lakewatch_backlog"]], HISTORY, T0 + timedelta(minutes=90))
    assert len(times) == 3 and [c.state for c in backlog.checks] == ["TRIGGERED", "OK", "OK"]


def test_a_missing_history_is_a_clear_error(session, alerts):
    with pytest.raises(LakewatchError) as raised:
        replay_alerts(session, [alerts["lakewatch_backlog"]], f"{DB}.no_such_history", T0)
    assert raised.value.error_class == "ALERT_HISTORY_NOT_FOUND"
