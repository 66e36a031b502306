"""Alert replay without Spark: `--since`, the query rewritten for one refresh, episodes and the
notifications Databricks' alert settings would send. (On Spark: tests/sql/test_alert_replay.py.)"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

from pipelines.alert_replay import Check, at_check, check_times, episodes, notifications, parse_since, schedule_minutes
from pipelines.alerts import AlertResult, AlertSpec
from pipelines.errors import LakewatchError

NOW = datetime(2026, 12, 7, 18, 0, tzinfo=timezone.utc)
SPEC = AlertSpec("a", "A", "SELECT 1", "GREATER_THAN", "v", None, threshold_value=0.0,
                 retrigger_seconds=3600, notify_on_ok=True)


def checks(*states: str, every_minutes: int = 30, spec: AlertSpec = SPEC) -> list[Check]:
    return [Check(NOW + timedelta(minutes=i * every_minutes), AlertResult(spec, s, value=float(i)))
            for i, s in enumerate(states)]


@pytest.mark.parametrize("text,expected", [
    ("30d", NOW - timedelta(days=30)), ("12h", NOW - timedelta(hours=12)), ("90m", NOW - timedelta(minutes=90)),
    ("2026-11-01", datetime(2026, 11, 1, tzinfo=timezone.utc)),
    ("2026-11-01T06:30", datetime(2026, 11, 1, 6, 30, tzinfo=timezone.utc)),
    ("2026-11-01T06:30+01:00", datetime(2026, 11, 1, 5, 30, tzinfo=timezone.utc)),
])
def test_since_takes_a_duration_or_a_date(text, expected):
    assert parse_since(text, NOW) == expected


@pytest.mark.parametrize("text", ["30", "last month", "-3d", "3w", ""])
def test_since_refuses_anything_else_with_a_clear_error(text):
    with pytest.raises(LakewatchError) as raised:
        parse_since(text, NOW)
    assert raised.value.error_class == "CLI_INVALID_ARGUMENT" and "--since" in str(raised.value)


AT = datetime(2026, 11, 2, 6, 15, tzinfo=timezone.utc)
AT_MICROS = 1_793_600_100_000_000  # 2026-11-02 06:15:00 UTC, as `date -u -d @1793600100` says


def test_the_query_reads_the_latest_refresh_and_the_check_s_clock():
    query = ("-- a comment first\nSELECT alert_value + (unix_millis(current_timestamp()) - unix_millis(checked_at)) AS v,\n"
             "       now() AS n, health_metrics.reason\nFROM spark_catalog.lakewatch.health_metrics "
             "WHERE metric_name = 'x' AND current_date() > DATE'2020-01-01' -- trailing comment\n;")
    check = AT + timedelta(minutes=20)
    text = at_check(query, "h.history", AT, check)
    assert text.startswith(f"WITH health_metrics AS (SELECT * FROM h.history WHERE checked_at = timestamp_micros({AT_MICROS}))\n")
    assert "FROM health_metrics WHERE" in text and "health_metrics.reason" in text  # a qualified column stays
    assert "current_timestamp" not in text and "now()" not in text and "current_date" not in text
    assert text.count(f"timestamp_micros({AT_MICROS + 20 * 60 * 1_000_000})") == 3  # three clocks
    assert text.rstrip().endswith("-- trailing comment")  # the caller closes its parenthesis on a new line


def test_a_query_with_its_own_common_table_expressions_keeps_them_after_ours():
    text = at_check("WITH m AS (SELECT * FROM lakewatch.health_metrics) SELECT * FROM m", "h", AT, AT)
    assert text.startswith("WITH health_metrics AS (SELECT * FROM h WHERE checked_at = timestamp_micros(")
    assert "), m AS (SELECT * FROM health_metrics) SELECT * FROM m" in text


def test_a_check_before_any_refresh_reads_no_rows():
    assert "WHERE false" in at_check("SELECT * FROM health_metrics", "h", None, AT)


@pytest.mark.parametrize("name", ["health_metrics", "`health_metrics`", "lakewatch.health_metrics",
                                  "`main`.`lakewatch`.`health_metrics`"])
def test_every_spelling_of_the_table_is_replaced_and_longer_names_are_not(name):
    text = at_check(f"SELECT * FROM {name} JOIN x.health_metrics_history ON true", "h", AT, AT)
    assert text.endswith("SELECT * FROM health_metrics JOIN x.health_metrics_history ON true")


@pytest.mark.parametrize("quartz,minutes", [("0 5/15 * * * ?", [5, 20, 35, 50]), ("0 */30 * * * ?", [0, 30]),
                                            ("0 10 * * * ?", [10]), ("0 0 6 * * ?", None), ("0 5/15 * * MON ?", None)])
def test_a_schedule_of_every_n_minutes_is_expanded_and_no_other(quartz, minutes):
    assert schedule_minutes(quartz) == minutes


def test_checks_run_on_the_schedule_from_the_first_refresh_and_now():
    refreshes = [AT, AT + timedelta(hours=1)]
    now = AT + timedelta(hours=1, minutes=10)
    # 06:15 and 07:15 refreshes, now 07:25: the schedule's 06:35 and 07:05, then now
    assert check_times(refreshes, now, [5, 35]) == [AT + timedelta(minutes=20), AT + timedelta(minutes=50), now]
    assert check_times(refreshes, now, None) == [*refreshes, now]
    assert check_times([], now, [5]) == []


def test_episodes_run_from_their_first_check_to_the_first_in_another_state():
    found = episodes(checks("OK", "TRIGGERED", "TRIGGERED", "UNKNOWN", "OK"))
    assert [(e.state, e.checks) for e in found] == [("OK", 1), ("TRIGGERED", 2), ("UNKNOWN", 1), ("OK", 1)]
    assert (found[1].start, found[1].end, found[1].peak) == (NOW + timedelta(minutes=30), NOW + timedelta(minutes=90), 2.0)
    assert found[-1].end is None and found[0].peak is None


def test_notifications_follow_retrigger_seconds_and_notify_on_ok():
    # checks every 30 minutes: TRIGGERED at 30, again at 90 (an hour after the first), OK at 120
    sent = notifications(SPEC, checks("OK", "TRIGGERED", "TRIGGERED", "TRIGGERED", "OK"))
    assert sent == [(NOW + timedelta(minutes=30), "TRIGGERED"), (NOW + timedelta(minutes=90), "TRIGGERED"),
                    (NOW + timedelta(minutes=120), "OK")]
    sent = notifications(SPEC, checks("TRIGGERED", "TRIGGERED", "TRIGGERED", "OK", every_minutes=40))
    assert sent == [(NOW, "TRIGGERED"), (NOW + timedelta(minutes=80), "TRIGGERED"), (NOW + timedelta(minutes=120), "OK")]


def test_without_retrigger_or_notify_on_ok_an_alert_notifies_once_per_trigger():
    spec = AlertSpec("a", "A", "SELECT 1", "GREATER_THAN", "v", None, threshold_value=0.0)
    sent = notifications(spec, checks("TRIGGERED", "TRIGGERED", "OK", "UNKNOWN", "TRIGGERED", every_minutes=120, spec=spec))
    assert sent == [(NOW, "TRIGGERED"), (NOW + timedelta(minutes=480), "TRIGGERED")]


def test_the_state_before_the_window_decides_the_first_notification():
    """The check just before the window (on the refresh before it) says whether the alert was already
    TRIGGERED: then its first check in the window sends nothing new, and a re-notification follows
    retrigger_seconds after the earlier check at the latest."""
    spec = AlertSpec("a", "A", "SELECT 1", "GREATER_THAN", "v", None, threshold_value=0.0)
    before = Check(NOW - timedelta(minutes=1), AlertResult(spec, "TRIGGERED", value=1.0))
    assert notifications(spec, checks("TRIGGERED", "TRIGGERED", "OK", "TRIGGERED", spec=spec), before) == [
        (NOW + timedelta(minutes=90), "TRIGGERED")]
    assert notifications(SPEC, checks("TRIGGERED", "TRIGGERED", "TRIGGERED"), before) == [
        (NOW + timedelta(minutes=60), "TRIGGERED")]  # an hour after the earlier check, not after the first in the window
    was_ok = Check(NOW - timedelta(minutes=1), AlertResult(spec, "OK", value=0.0))
    assert notifications(spec, checks("TRIGGERED", spec=spec), was_ok) == [(NOW, "TRIGGERED")]
