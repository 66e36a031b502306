"""`lakewatch alerts --replay`: today's alert definitions over the health metrics of earlier
observability refreshes, so that a threshold is tuned on what it would have done.

The job's `snapshot_health_metrics` task appends the health metrics of every completed refresh to a
history table (jobs/snapshot_health_metrics.sql), one set of rows per refresh, keyed by `checked_at`.
A replay runs each alert's own query with `health_metrics` standing for one refresh's rows of that
history, refresh by refresh, evaluates the rows as the alert does (`pipelines.alerts.evaluate`: NULL
is UNKNOWN, never OK; the clock a query reads is the refresh's time), and reports the alert's episodes (runs of checks in one state, when each began
and ended) and the notifications Databricks would have sent at those checks: one when the alert
becomes TRIGGERED, again at each check at least `retrigger_seconds` after the last one while it stays
TRIGGERED, and one on the return to OK when `notify_on_ok` is set.

The metrics are replayed as each refresh computed them: a metric whose definition changed since keeps
its old values. An alert whose query does not read `health_metrics` cannot be replayed and says so.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from typing import Any, Sequence

from pipelines.alerts import AlertResult, AlertSpec, evaluate
from pipelines.errors import LakewatchError, engine_message

# A reference to the health metrics table, bare or qualified, quoted or not; not a longer name such as
# health_metrics_history.
HEALTH_METRICS = re.compile(r"(?<![\w`.])(?:`?\w+`?\.){0,2}`?health_metrics`?(?![\w`])")
# The clock an alert's query reads (a metric's age): at a replayed refresh, that refresh's time.
CLOCK = re.compile(r"\b(current_timestamp|now|current_date)\b(\s*\(\s*\))?", re.I)
CHECK_COLUMN = "__replay_check"
CHUNK = 50  # refreshes per query: one UNION ALL branch each
_DURATION = re.compile(r"(\d+)\s*([dhm])")
_UNITS = {"d": "days", "h": "hours", "m": "minutes"}


def parse_since(text: str, now: datetime) -> datetime:
    """`30d`, `12h`, `90m` before `now`, or a date or date and time (UTC unless it says otherwise)."""
    match = _DURATION.fullmatch(text.strip())
    if match:
        return now - timedelta(**{_UNITS[match.group(2)]: int(match.group(1))})
    try:
        parsed = datetime.fromisoformat(text.strip())
    except ValueError:
        raise LakewatchError("CLI_INVALID_ARGUMENT", {
            "reason": f"--since expects a duration (30d, 12h, 90m) or a date or time (2026-11-01, "
                      f"2026-11-01T06:00), got {text!r}"}) from None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=timezone.utc)


@dataclass(frozen=True)
class Check:
    """One alert evaluated on one refresh's health metrics."""

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

    def episodes(self) -> list[Episode]:
        return episodes(self.checks)

    def notifications(self) -> list[tuple[datetime, str]]:
        return notifications(self.spec, self.checks)


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


def notifications(spec: AlertSpec, checks: Sequence[Check]) -> list[tuple[datetime, str]]:
    """(when, TRIGGERED or OK) of each notification the checks would have sent."""
    sent: list[tuple[datetime, str]] = []
    previous: str | None = None
    last_sent: datetime | None = None
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


def refreshes(spark: Any, history: str, since: datetime) -> list[str]:
    """The `checked_at` of each refresh the history holds since `since`, oldest first, as the UTC text
    a TIMESTAMP literal takes back exactly."""
    bound = since.astimezone(timezone.utc).strftime("%Y-%m-%d %H:%M:%S.%f")
    try:
        rows = spark.sql(
            f"SELECT DISTINCT date_format(checked_at, 'yyyy-MM-dd HH:mm:ss.SSSSSS') AS at FROM {history} "
            f"WHERE checked_at >= TIMESTAMP '{bound}' ORDER BY at").collect()
    except Exception as e:  # noqa: BLE001 (a missing table is the usual cause; the reason says)
        raise LakewatchError("ALERT_HISTORY_NOT_FOUND", {"table": history, "reason": " ".join(engine_message(e).split())[:300]}) from e
    return [r["at"] for r in rows]


def at_refresh(query: str, history: str, at: str) -> str:
    """The alert's query as if checked right after one refresh: `health_metrics` stands for the
    history's rows of that refresh, and the clock reads its time."""
    rows = f"(SELECT * FROM {history} WHERE checked_at = TIMESTAMP '{at}')"
    text = HEALTH_METRICS.sub(lambda _m: rows, query.strip().rstrip(";"))

    def clock(m: re.Match[str]) -> str:
        if m.group(1).lower() == "current_date":
            return f"to_date(TIMESTAMP '{at}')"
        if m.group(1).lower() == "now" and not m.group(2):
            return m.group(0)  # a column or alias named now, not the function
        return f"TIMESTAMP '{at}'"

    return CLOCK.sub(clock, text)


def replay_alert(spark: Any, spec: AlertSpec, history: str, times: Sequence[str]) -> Replay:
    if not HEALTH_METRICS.search(spec.query_text):
        return Replay(spec, not_replayable="its query does not read health_metrics, whose history is kept")
    replay = Replay(spec)
    for start in range(0, len(times), CHUNK):
        chunk = times[start:start + CHUNK]
        query = " UNION ALL ".join(f"SELECT {i} AS {CHECK_COLUMN}, * FROM ({at_refresh(spec.query_text, history, at)})"
                                   for i, at in enumerate(chunk))
        try:
            rows = [r.asDict() for r in spark.sql(query).collect()]
        except Exception as e:  # noqa: BLE001 (a failing query is the alert's ERROR state, as live)
            error = " ".join(engine_message(e).split())[:500]
            replay.checks += [Check(utc(at), AlertResult(spec, "ERROR", error=error)) for at in chunk]
            continue
        by_check: dict[int, list[dict[str, Any]]] = {i: [] for i in range(len(chunk))}
        for row in rows:
            by_check[row.pop(CHECK_COLUMN)].append(row)
        replay.checks += [Check(utc(at), evaluate(spec, by_check[i])) for i, at in enumerate(chunk)]
    return replay


def replay_alerts(spark: Any, specs: Sequence[AlertSpec], history: str, since: datetime) -> tuple[list[str], list[Replay]]:
    """The refreshes replayed and each alert's replay over them."""
    times = refreshes(spark, history, since)
    return times, [replay_alert(spark, spec, history, times) for spec in specs]


def utc(text: str) -> datetime:
    return datetime.fromisoformat(text).replace(tzinfo=timezone.utc)


def _when(at: datetime | None) -> str:
    return at.strftime("%Y-%m-%d %H:%M UTC") if at else "now"


def render(replays: Sequence[Replay], refreshes_replayed: int, since: datetime) -> list[str]:
    """Each alert's line (how often it would have paged), and its TRIGGERED, UNKNOWN and ERROR episodes."""
    lines = [f"{refreshes_replayed} observability refreshes since {_when(since)}, each alert as defined today:"]
    width = max((len(r.spec.key) for r in replays), default=0)
    for r in replays:
        if r.not_replayable:
            lines.append(f"  {r.spec.key:<{width}}  not replayed: {r.not_replayable}")
            continue
        pages = sum(1 for _, kind in r.notifications() if kind == "TRIGGERED")
        triggered = sum(1 for c in r.checks if c.state == "TRIGGERED")
        lines.append(f"  {r.spec.key:<{width}}  {pages} notification(s), TRIGGERED at {triggered} of {len(r.checks)} "
                     f"refreshes, now {r.checks[-1].state if r.checks else 'not checked'}")
        for e in r.episodes():
            if e.state == "OK":
                continue
            peak = f", up to {e.peak:.4g} against {r.spec.threshold_value}" if e.peak is not None else ""
            why = next((c.result.reason or c.result.error for c in r.checks
                        if c.at == e.start and (c.result.reason or c.result.error)), None)
            lines.append(f"    {e.state:<9} {_when(e.start)} -> {_when(e.end)} ({e.checks} refreshes{peak})"
                         + (f": {why}" if why and e.state != "TRIGGERED" else ""))
    return lines


def document(replays: Sequence[Replay], refreshes_replayed: Sequence[str], since: datetime) -> dict[str, Any]:
    """The replay as `lakewatch alerts --replay -o json` prints it (its shape: docs/cli.md)."""
    return {
        "since": since.isoformat(),
        "refreshes": [utc(at).isoformat() for at in refreshes_replayed],
        "alerts": [{
            "alert": r.spec.key,
            "display_name": r.spec.display_name,
            "not_replayable": r.not_replayable,
            "checks": [{"at": c.at.isoformat(), "state": c.state, "value": c.result.value,
                        "reason": c.result.reason, "error": c.result.error} for c in r.checks],
            "episodes": [{"state": e.state, "start": e.start.isoformat(), "end": e.end.isoformat() if e.end else None,
                          "checks": e.checks, "peak": e.peak} for e in r.episodes()],
            "notifications": [{"at": at.isoformat(), "state": kind} for at, kind in r.notifications()],
        } for r in replays],
    }
