"""Alert replay without Spark: `--since`, the query rewritten for one refresh, episodes and the
notifications Databricks' alert settings would send. (On Spark: tests/sql/test_alert_replay.py.)"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

from pipelines.alert_replay import Check, at_refresh, episodes, notifications, parse_since
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


def test_the_query_reads_one_refresh_of_the_history_and_its_clock():
    query = ("SELECT alert_value + (unix_millis(current_timestamp()) - unix_millis(checked_at)) AS v, now() AS n\n"
             "FROM spark_catalog.lakewatch.health_metrics WHERE metric_name = 'x' AND current_date() > DATE'2020-01-01';")
    text = at_refresh(query, "h.history", "2026-11-02 06:15:00.000000")
    rows = "(SELECT * FROM h.history WHERE checked_at = TIMESTAMP '2026-11-02 06:15:00.000000')"
    assert f"FROM {rows} WHERE" in text
    assert "current_timestamp" not in text and "now()" not in text and "current_date" not in text
    assert text.count("TIMESTAMP '2026-11-02 06:15:00.000000'") == 4  # the history's key, three clocks
    assert not text.endswith(";")


@pytest.mark.parametrize("name", ["health_metrics", "`health_metrics`", "lakewatch.health_metrics",
                                  "`main`.`lakewatch`.`health_metrics`"])
def test_every_spelling_of_the_table_is_replaced_and_longer_names_are_not(name):
    text = at_refresh(f"SELECT * FROM {name} JOIN x.health_metrics_history ON true", "h", "t")
    assert text.startswith("SELECT * FROM (SELECT * FROM h WHERE checked_at = TIMESTAMP 't') JOIN x.health_metrics_history")


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
