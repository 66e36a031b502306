"""`lakewatch alerts --replay` on Spark: the job's snapshot file (jobs/snapshot_health_metrics.sql, run
as `lakewatch job` runs it) keeps each refresh's health metrics once, and the bundle's own alerts
replayed over that history give, refresh by refresh, the states the metric values the test wrote
call for. (Episodes and notifications without Spark: tests/unit/test_alert_replay_checks.py.)"""

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


# The refreshes: minutes after T0 (06:00 UTC), backlog_files, hours_since_last_success (None: not
# measured). The last refresh is at 09:00; the alerts are replayed until NOW, 16:00, with no refresh
# after 09:00 (the job stopped).
REFRESHES = [
    (0, 5.0, 1.0),
    (15, 150.0, 1.0),       # backlog over the threshold
    (30, 200.0, 2.0),
    (90, 180.0, 2.5),
    (120, 10.0, None),      # backlog back under; the success metric not measured: UNKNOWN
    (180, 12.0, 1.0),       # healthy, and the last refresh: its metrics age from here on
]
NOW = T0 + timedelta(hours=10)
SCHEDULE_MINUTES = (5, 20, 35, 50)  # the bundle's alert_schedule, 0 5/15 * * * ?


def refresh_times() -> list[datetime]:
    return [T0 + timedelta(minutes=m) for m, _, _ in REFRESHES]


def check_times() -> list[datetime]:
    """Each time the schedule fires from the first refresh until NOW, then NOW."""
    times, at = [], T0
    while at < NOW:
        if at.minute in SCHEDULE_MINUTES:
            times.append(at)
        at += timedelta(minutes=1)
    return [*times, NOW]


def latest_refresh(at: datetime) -> int:
    return max(i for i, r in enumerate(refresh_times()) if r <= at)


@pytest.fixture(scope="module")
def history(session) -> list[int]:
    held = []
    for minutes, backlog, hours in REFRESHES:
        held.append(refresh(session, T0 + timedelta(minutes=minutes),
                            {"backlog_files": backlog, "hours_since_last_success": hours}))
    return held


def replay(session, *specs):
    return replay_alerts(session, list(specs), HISTORY, T0 - timedelta(days=1), NOW)


def test_the_snapshot_task_keeps_each_refresh_s_metrics_once(session, history):
    assert history == [2 * (i + 1) for i in range(len(REFRESHES))]
    # the task run again after the same refresh adds nothing
    run_sql_file(session, SNAPSHOT_SQL, {"health_metrics": LIVE, "history_table": HISTORY})
    assert session.table(HISTORY).count() == 2 * len(REFRESHES)
    assert session.table(HISTORY).select("checked_at").distinct().count() == len(REFRESHES)


def test_backlog_is_checked_on_its_schedule_against_the_latest_refresh(session, history, alerts):
    found, [backlog] = replay(session, alerts["lakewatch_backlog"])
    assert found == refresh_times()
    assert [c.at for c in backlog.checks] == check_times()
    values = [REFRESHES[latest_refresh(at)][1] for at in check_times()]
    assert [c.result.value for c in backlog.checks] == values
    assert [c.state for c in backlog.checks] == ["TRIGGERED" if v > MAX_BACKLOG else "OK" for v in values]
    [episode] = [e for e in backlog.episodes() if e.state == "TRIGGERED"]
    assert (episode.start, episode.end, episode.peak) == (T0 + timedelta(minutes=20), T0 + timedelta(minutes=125), 200.0)
    # notified when it fired, again an hour later (retrigger_seconds 3600), and on its return to OK
    assert backlog.notifications() == [(T0 + timedelta(minutes=20), "TRIGGERED"),
                                       (T0 + timedelta(minutes=80), "TRIGGERED"),
                                       (T0 + timedelta(minutes=125), "OK")]


def test_stalled_fires_when_the_refreshes_stop_and_null_stays_unknown(session, history, alerts):
    """The stalled alert adds the metrics' age at each check to the hours they measured: after the
    last refresh (1 hour since a success, at 09:00) it fires once more than STALLED_AFTER hours have
    passed; a refresh that could not measure the hours is UNKNOWN until the next."""
    _, [stalled] = replay(session, alerts["lakewatch_stalled"])
    expected = []
    for at in check_times():
        i = latest_refresh(at)
        hours = REFRESHES[i][2]
        age = (at - refresh_times()[i]).total_seconds() / 3600
        expected.append("UNKNOWN" if hours is None else "TRIGGERED" if hours + age > STALLED_AFTER else "OK")
    assert [c.state for c in stalled.checks] == expected
    assert expected[-1] == "TRIGGERED" and "UNKNOWN" in expected
    first = next(c for c in stalled.checks if c.state == "TRIGGERED")
    assert first.at == T0 + timedelta(hours=8, minutes=5)  # 09:00 + 5 h: past 6 hours first at 14:05
    assert next(c for c in stalled.checks if c.state == "UNKNOWN").result.reason == "not measured: test"


def test_a_refresh_without_the_metric_gives_the_alert_s_empty_result_state(session, history, alerts):
    """Every other alert's metric is in no refresh: the empty result state, UNKNOWN for them."""
    specs = [a for key, a in alerts.items() if key not in ("lakewatch_backlog", "lakewatch_stalled")]
    _, replays = replay(session, *specs)
    for r in replays:
        assert r.not_replayable is None and r.checks, r.spec.key
        assert {c.state for c in r.checks} == {r.spec.empty_result_state}, r.spec.key


def test_since_leaves_the_earlier_refreshes_out(session, history, alerts):
    found, [backlog] = replay_alerts(session, [alerts["lakewatch_backlog"]], HISTORY, T0 + timedelta(minutes=90), NOW)
    assert found == refresh_times()[3:]
    assert backlog.checks[0].at == T0 + timedelta(minutes=95) and backlog.checks[0].state == "TRIGGERED"
    # The window begins TRIGGERED (the refresh before it, at 06:30, had a backlog of 200): its first
    # check sends nothing new, no re-notification falls within the hour, and the return to OK at 08:05 does.
    assert (backlog.before.state, backlog.before.result.value) == ("TRIGGERED", 200.0)
    assert backlog.notifications() == [(T0 + timedelta(minutes=125), "OK")]


def test_a_missing_history_is_a_clear_error(session, alerts):
    with pytest.raises(LakewatchError) as raised:
        replay_alerts(session, [alerts["lakewatch_backlog"]], f"{DB}.no_such_history", T0, NOW)
    assert raised.value.error_class == "ALERT_HISTORY_NOT_FOUND"
