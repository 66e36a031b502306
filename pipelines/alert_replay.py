"""`lakewatch alerts --replay`: today's alert definitions over the health metrics of earlier
observability refreshes, so that a threshold is tuned on what it would have done.

The job's `snapshot_health_metrics` task appends the health metrics of every completed refresh to a
history table (jobs/snapshot_health_metrics.sql), one set of rows per refresh, keyed by `checked_at`.
A replay checks each alert when Databricks would have: at every time of its schedule (a Quartz cron,
the bundle's `alert_schedule`, such as `0 5/15 * * * ?`) from the first refresh in the window, and
once more now. At each check the alert's own query runs with `health_metrics` standing for the
rows of the latest refresh before it and the clock reading the check's time (so `lakewatch_stalled`
fires when refreshes stop), and the rows are evaluated as the alert does (`pipelines.alerts.evaluate`:
NULL is UNKNOWN, never OK). The replay reports the alert's episodes (runs of checks in one state, when
each began and ended) and the notifications Databricks would have sent: one when the alert becomes
TRIGGERED, again at each check at least `retrigger_seconds` after the last one while it stays
TRIGGERED, and one on the return to OK when `notify_on_ok` is set. The alert's state when the window
begins comes from one check just before its first, on the latest refresh before the window: an alert
already TRIGGERED then sends nothing new at its first check in the window (its last notification is
taken to be that check's, so a re-notification comes no later than Databricks would send it).

The metrics are replayed as each refresh computed them: a metric whose definition changed since keeps
its old values. An alert whose query does not read `health_metrics` cannot be replayed and says so; one
that reads other tables too reads them as they are now. A schedule other than "every N minutes" (or
every hour at given minutes) is not expanded: the alerts are then checked at each refresh.
"""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from typing import Any, Sequence

from pipelines.alerts import AlertResult, AlertSpec, evaluate, failed_query
from pipelines.errors import LakewatchError, engine_message

# A reference to the health metrics table, bare or qualified, quoted or not; not a longer name such as
# health_metrics_history, nor a column qualified by the table's name.
HEALTH_METRICS = re.compile(r"(?<![\w`.])(?:`?\w+`?\.){0,2}`?health_metrics`?(?![\w`.])")
# The clock an alert's query reads (a metric's age): at a replayed check, the check's time.
CLOCK = re.compile(r"\b(current_timestamp|now|current_date)\b(\s*\(\s*\))?", re.I)
_LEADING_COMMENTS = re.compile(r"^(\s*(--[^\n]*\n|/\*.*?\*/))*\s*", re.S)
CHECK_COLUMN = "__replay_check"
CHUNK = 100  # checks per query: one UNION ALL branch each
_DURATION = re.compile(r"(\d+)\s*([dhm])")
_UNITS = {"d": "days", "h": "hours", "m": "minutes"}
# Quartz: seconds minutes hours day-of-month month day-of-week [year]; "every N minutes from M" only.
_EVERY_MINUTES = re.compile(r"^0\s+(\d+|\*)(?:/(\d+))?\s+\*\s+\*\s+\*\s+[?*](?:\s+\*)?$")


def parse_since(text: str, now: datetime) -> datetime:
    """`30d`, `12h`, `90m` before `now`, or a date or date and time (UTC unless it says otherwise)."""
    match = _DURATION.fullmatch(text.strip())
    if match:
        return now - timedelta(**{_UNITS[match.group(2)]: int(match.group(1))})
    try:
        parsed = datetime.fromisoformat(re.sub(r"Z$", "+00:00", text.strip()))
    except ValueError:
        raise LakewatchError("CLI_INVALID_ARGUMENT", {
            "reason": f"--since expects a duration (30d, 12h, 90m) or a date or time (2026-11-01, "
                      f"2026-11-01T06:00), got {text!r}"}) from None
    return parsed.astimezone(timezone.utc) if parsed.tzinfo else parsed.replace(tzinfo=timezone.utc)


def schedule_minutes(quartz: str) -> list[int] | None:
    """The minutes of each hour a Quartz schedule of "every N minutes from M" fires at (`0 5/15 * * * ?`:
    5, 20, 35, 50), or None for any other schedule."""
    match = _EVERY_MINUTES.match(quartz.strip())
    if not match:
        return None
    first = 0 if match.group(1) == "*" else int(match.group(1))
    step = int(match.group(2)) if match.group(2) else 60
    return [m for m in range(first, 60, step)] if 0 <= first < 60 and step > 0 else None


def check_times(refreshes: Sequence[datetime], now: datetime, minutes: Sequence[int] | None) -> list[datetime]:
    """When the alerts are checked: each scheduled minute from the first refresh on, and now; at each
    refresh and now when the schedule is not expanded."""
    if not refreshes:
        return []
    if minutes is None:
        return sorted({*refreshes, now})
    times = []
    hour = refreshes[0].replace(minute=0, second=0, microsecond=0)
    while hour <= now:
        times += [t for t in (hour.replace(minute=m) for m in minutes) if refreshes[0] <= t < now]
        hour += timedelta(hours=1)
    return [*times, now]


@dataclass(frozen=True)
class Check:
    """One alert evaluated at one time, on the health metrics of the latest refresh before it."""

    at: datetime
    result: AlertResult

    @property
    def state(self) -> str:
        return self.result.state


@dataclass(frozen=True)
class Episode:
    """Consecutive checks in one state: from its first check to the first check in another state
    (`end` None while it lasts)."""

    state: str
    start: datetime
    end: datetime | None
    checks: int
    peak: Any = None  # the largest value of a TRIGGERED episode


@dataclass
class Replay:
    spec: AlertSpec
    checks: list[Check] = field(default_factory=list)
    not_replayable: str | None = None  # why the alert cannot be replayed
    before: Check | None = None  # the check just before the window, on the latest refresh before it

    def episodes(self) -> list[Episode]:
        return episodes(self.checks)

    def notifications(self) -> list[tuple[datetime, str]]:
        return notifications(self.spec, self.checks, self.before)


def episodes(checks: Sequence[Check]) -> list[Episode]:
    runs: list[list[Check]] = []
    for check in checks:
        if runs and runs[-1][-1].state == check.state:
            runs[-1].append(check)
        else:
            runs.append([check])
    found = []
    for i, run in enumerate(runs):
        values = [c.result.value for c in run if isinstance(c.result.value, (int, float))]
        found.append(Episode(run[0].state, run[0].at, runs[i + 1][0].at if i + 1 < len(runs) else None, len(run),
                             max(values) if values and run[0].state == "TRIGGERED" else None))
    return found


def notifications(spec: AlertSpec, checks: Sequence[Check], before: Check | None = None) -> list[tuple[datetime, str]]:
    """(when, TRIGGERED or OK) of each notification the checks would have sent, after the state of
    `before` (the check before them; none: the alert starts from no state)."""
    sent: list[tuple[datetime, str]] = []
    previous: str | None = before.state if before is not None else None
    last_sent: datetime | None = before.at if before is not None and before.state == "TRIGGERED" else None
    for check in checks:
        if check.state == "TRIGGERED":
            again = (previous == "TRIGGERED" and spec.retrigger_seconds is not None and last_sent is not None
                     and (check.at - last_sent).total_seconds() >= spec.retrigger_seconds)
            if previous != "TRIGGERED" or again:
                sent.append((check.at, "TRIGGERED"))
                last_sent = check.at
        elif check.state == "OK" and previous == "TRIGGERED" and spec.notify_on_ok:
            sent.append((check.at, "OK"))
        previous = check.state
    return sent


def refreshes(spark: Any, history: str, since: datetime) -> tuple[list[datetime], datetime | None]:
    """The `checked_at` of each refresh the history holds since `since`, oldest first, and of the
    latest before it (read as microseconds since the epoch: exact in any session time zone)."""
    at = f"timestamp_micros({micros(since)})"
    try:
        rows = spark.sql(f"SELECT DISTINCT unix_micros(checked_at) AS at FROM {history} "
                         f"WHERE checked_at >= {at} ORDER BY at").collect()
        earlier = spark.sql(f"SELECT max(unix_micros(checked_at)) AS at FROM {history} WHERE checked_at < {at}").collect()
    except Exception as e:  # noqa: BLE001 (a missing table is the usual cause; the reason says)
        raise LakewatchError("ALERT_HISTORY_NOT_FOUND", {"table": history, "reason": " ".join(engine_message(e).split())[:300]}) from e
    before = earlier[0]["at"]
    return [from_micros(r["at"]) for r in rows], from_micros(before) if before is not None else None


def micros(at: datetime) -> int:
    return int(at.timestamp()) * 1_000_000 + at.microsecond


def from_micros(value: int) -> datetime:
    return datetime(1970, 1, 1, tzinfo=timezone.utc) + timedelta(microseconds=value)


def at_check(query: str, history: str, refresh: datetime | None, clock: datetime) -> str:
    """The alert's query as checked at `clock`: `health_metrics` stands for the history's rows of
    `refresh` (the latest before the check; none: no rows), the clock reads `clock`."""
    rows = (f"SELECT * FROM {history} WHERE checked_at = timestamp_micros({micros(refresh)})" if refresh
            else f"SELECT * FROM {history} WHERE false")
    text = query.strip().rstrip(";")
    head = _LEADING_COMMENTS.match(text).end()  # type: ignore[union-attr]
    body = HEALTH_METRICS.sub("health_metrics", text[head:])
    at = f"timestamp_micros({micros(clock)})"

    def clock_call(m: re.Match[str]) -> str:
        if m.group(1).lower() == "now" and not m.group(2):
            return m.group(0)  # a column or alias named now, not the function
        return f"to_date({at})" if m.group(1).lower() == "current_date" else at

    body = CLOCK.sub(clock_call, body)
    if re.match(r"with\b", body, re.I):  # the query's own common table expressions follow ours
        return f"WITH health_metrics AS ({rows}), {body[4:].lstrip()}"
    return f"WITH health_metrics AS ({rows})\n{body}"


def replay_alert(spark: Any, spec: AlertSpec, history: str, refreshes: Sequence[datetime],
                 times: Sequence[datetime], before: datetime | None = None) -> Replay:
    """The alert checked at `times` over the `refreshes` of the history; with `before` (the latest
    refresh before them), also just before the first of `times`, for the state the window begins in."""
    if not HEALTH_METRICS.search(spec.query_text):
        return Replay(spec, not_replayable="its query does not read health_metrics, whose history is kept")
    seeded = before is not None and bool(times)
    if seeded:
        assert before is not None  # checked just before the window's first refresh, on the one before it
        start = min([times[0], *refreshes]) - timedelta(microseconds=1)
        refreshes, times = [before, *refreshes], [start, *times]
    ordered = sorted(refreshes)
    latest = [ordered[i - 1] if (i := bisect.bisect_right(ordered, t)) else None for t in times]
    reads_clock = bool(CLOCK.search(spec.query_text))
    # A query that does not read the clock gives the same rows at every check of one refresh: run once each.
    keys = list(zip(latest, times)) if reads_clock else [(r, r or t) for r, t in zip(latest, times)]
    unique = list(dict.fromkeys(keys))
    results: dict[tuple[datetime | None, datetime], AlertResult] = {}
    for start in range(0, len(unique), CHUNK):
        chunk = unique[start:start + CHUNK]
        query = " UNION ALL ".join(f"SELECT {i} AS {CHECK_COLUMN}, * FROM (\n{at_check(spec.query_text, history, r, c)}\n)"
                                   for i, (r, c) in enumerate(chunk))
        try:
            rows = [r.asDict() for r in spark.sql(query).collect()]
        except Exception as e:  # noqa: BLE001 (a failing query is the alert's ERROR state, as live)
            results.update({key: failed_query(spec, e) for key in chunk})
            continue
        by_check: dict[int, list[dict[str, Any]]] = {i: [] for i in range(len(chunk))}
        for row in rows:
            by_check[row.pop(CHECK_COLUMN)].append(row)
        results.update({key: evaluate(spec, by_check[i]) for i, key in enumerate(chunk)})
    checks = [Check(t, results[key]) for t, key in zip(times, keys)]
    return Replay(spec, checks[1:], before=checks[0]) if seeded else Replay(spec, checks)


def replay_alerts(spark: Any, specs: Sequence[AlertSpec], history: str, since: datetime,
                  now: datetime) -> tuple[list[datetime], list[Replay]]:
    """The refreshes replayed, and each alert's replay over them, checked on its own schedule."""
    found, before = refreshes(spark, history, since)
    return found, [replay_alert(spark, spec, history, found, check_times(found, now, schedule_minutes(spec.schedule or "")),
                                before) for spec in specs]


def _when(at: datetime | None) -> str:
    return at.astimezone(timezone.utc).strftime("%Y-%m-%d %H:%M UTC") if at else "now"


def render(replays: Sequence[Replay], refreshes_replayed: Sequence[datetime], since: datetime) -> list[str]:
    """Each alert's line (how often it would have notified), and its TRIGGERED, UNKNOWN and ERROR episodes."""
    lines = [f"{len(refreshes_replayed)} observability refreshes since {_when(since)}; each alert as defined today, "
             f"checked on its schedule from the first of them, and now:"]
    width = max((len(r.spec.key) for r in replays), default=0)
    for r in replays:
        if r.not_replayable:
            lines.append(f"  {r.spec.key:<{width}}  not replayed: {r.not_replayable}")
            continue
        pages = sum(1 for _, kind in r.notifications() if kind == "TRIGGERED")
        triggered = sum(1 for c in r.checks if c.state == "TRIGGERED")
        lines.append(f"  {r.spec.key:<{width}}  {pages} notification(s), TRIGGERED at {triggered} of {len(r.checks)} "
                     f"checks, now {r.checks[-1].state if r.checks else 'not checked'}")
        for e in r.episodes():
            if e.state == "OK":
                continue
            peak = f", up to {e.peak:.4g} against {r.spec.threshold_value}" if e.peak is not None else ""
            why = next((c.result.reason or c.result.error for c in r.checks
                        if c.at == e.start and (c.result.reason or c.result.error)), None)
            lines.append(f"    {e.state:<9} {_when(e.start)} -> {_when(e.end)} ({e.checks} checks{peak})"
                         + (f": {why}" if why and e.state != "TRIGGERED" else ""))
    return lines


def document(replays: Sequence[Replay], refreshes_replayed: Sequence[datetime], since: datetime) -> dict[str, Any]:
    """The replay as `lakewatch alerts --replay -o json` prints it (its shape: docs/cli.md)."""
    return {
        "since": since.isoformat(),
        "refreshes": [at.isoformat() for at in refreshes_replayed],
        "alerts": [{
            "alert": r.spec.key,
            "display_name": r.spec.display_name,
            "not_replayable": r.not_replayable,
            "now": ({"state": r.checks[-1].state, "value": r.checks[-1].result.value, "reason": r.checks[-1].result.reason,
                     "error": r.checks[-1].result.error} if r.checks else None),
            "checks": len(r.checks),
            "triggered_checks": sum(1 for c in r.checks if c.state == "TRIGGERED"),
            "episodes": [{"state": e.state, "start": e.start.isoformat(), "end": e.end.isoformat() if e.end else None,
                          "checks": e.checks, "peak": e.peak} for e in r.episodes()],
            "notifications": [{"at": at.isoformat(), "state": kind} for at, kind in r.notifications()],
        } for r in replays],
    }
