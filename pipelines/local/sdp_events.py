"""Parses the one-line events open-source SDP streams during a run (timestamp + message only).

Exact texts, from `../shared/reference/local-engine.md` and observed runs:
    Flow spark_catalog.default.orders_bronze is QUEUED.      (also PLANNING, STARTING, RUNNING, IDLE)
    Flow spark_catalog.default.orders_bronze has COMPLETED.
    Flow 'x' has FAILED.\\nError: [ERROR_CLASS] message ...
    Flow 'x' has FAILED more than 2 times and will not be restarted.\\nError: ...
    Flow 'x' SKIPPED due to upstream failure(s).
    Flow 'x' is EXCLUDED.
    Failed to resolve flow: 'x'.\\nError: ...
    Run is COMPLETED.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime

from pipelines.local.jvm_log import LoggedOutcome

_NAME = r"'(?P<q>[^']+)'|(?P<u>\S+)"
_PATTERNS: tuple[tuple[re.Pattern[str], str | None], ...] = (
    (re.compile(rf"^Flow (?:{_NAME}) has FAILED more than \d+ times and will not be restarted\."), "FAILED"),
    (re.compile(rf"^Flow (?:{_NAME}) has (?P<s>COMPLETED|FAILED|STOPPED)\."), None),
    (re.compile(rf"^Flow (?:{_NAME}) is (?P<s>[A-Z_]+)\b"), None),
    (re.compile(rf"^Flow (?:{_NAME}) (?P<s>SKIPPED)\b"), None),
    (re.compile(rf"^Failed to resolve flow: (?:{_NAME})\."), "FAILED"),
)
_RUN = re.compile(r"^Run is (?P<s>[A-Z_]+)\.")
_ERROR_CLASS = re.compile(r"^\[([A-Za-z0-9_.:]+)\]")


@dataclass(frozen=True)
class SdpEvent:
    timestamp: datetime
    message: str
    flow: str | None = None  # as SDP names it: qualified for tables, bare for named flows
    status: str | None = None
    error: str | None = None  # the text after "Error: ", when the message has one
    final: bool = False  # "FAILED more than N times": no more retries
    resolution_failure: bool = False  # failed at analysis, before any flow ran
    run_status: str | None = None

    @property
    def short_flow(self) -> str | None:
        return short_name(self.flow) if self.flow else None


def short_name(name: str) -> str:
    """Last part of a possibly qualified name, without backticks."""
    return name.split(".")[-1].strip("`")


def error_class(message: str | None) -> str | None:
    """The `[ERROR_CLASS]` a Spark error message starts with, if any."""
    if not message:
        return None
    match = _ERROR_CLASS.match(message.strip())
    return match.group(1) if match else None


def parse(timestamp: datetime, message: str) -> SdpEvent:
    first, _, rest = message.partition("\n")
    error = None
    if rest.startswith("Error: "):
        error = rest[len("Error: "):].strip()
    elif rest.strip():
        error = rest.strip()
    run = _RUN.match(first)
    if run:
        return SdpEvent(timestamp, message, run_status=run.group("s"))
    for pattern, fixed_status in _PATTERNS:
        match = pattern.match(first)
        if match:
            flow = match.group("q") or match.group("u")
            status = fixed_status or match.group("s")
            return SdpEvent(
                timestamp,
                message,
                flow=flow,
                status=status,
                error=error if status == "FAILED" else None,
                final="will not be restarted" in first,
                resolution_failure=first.startswith("Failed to resolve flow"),
            )
    return SdpEvent(timestamp, message)


# A flow in one of these states has not finished (SDP's FlowStatus.isTerminal is false for them).
UNFINISHED = ("QUEUED", "PLANNING", "STARTING", "RUNNING")


def outcome_is_older(line: LoggedOutcome, seen_at: datetime | None) -> bool:
    """Whether a logged outcome came before the flow's last event (an earlier attempt's); the log
    keeps milliseconds, so a line in the same millisecond is not older."""
    return seen_at is not None and line.at < seen_at.replace(microsecond=seen_at.microsecond // 1000 * 1000)


@dataclass(frozen=True)
class FlowSeen:
    """A flow's last status on the stream, and when."""
    status: str
    at: datetime


def lost_outcomes(flows: Mapping[str, FlowSeen], run_status: str | None, logged: Mapping[str, LoggedOutcome],
                  run_ended: datetime) -> list[SdpEvent]:
    """The terminal events the stream lost, for flows (SDP name -> last status seen) of a run.

    Open-source SDP 4.2 logs a flow's COMPLETED event from a callback: a batch flow's future
    completion, a streaming flow's query listener. Its scheduler does not wait for that callback, so
    when a run's last flows finish, the run can end and close its event stream first; the event is
    then dropped (the engine log says STREAM_LIFECYCLE_EVENT_SEND_AFTER_SHUTDOWN). This happens on
    small ingest updates. A flow's last FAILED event, which ends the run, can be dropped the same
    way. A flow still seen unfinished ended as the engine logged it (`logged`, by last name part, its
    last completion or failure line of this update), when that line is not older than the flow's last
    event: COMPLETED, or FAILED with the logged exception. With no such line, in a COMPLETED run it
    completed (a failed or skipped flow fails the run): at the run's end. Otherwise (a run that
    failed, no line) its outcome is not known and nothing is said.
    """
    events = []
    for name, seen in flows.items():
        if seen.status not in UNFINISHED:
            continue
        line = logged.get(short_name(name))
        if line is not None and outcome_is_older(line, seen.at):
            line = None  # an earlier attempt's outcome: the flow restarted since
        if line is not None and line.status == "FAILED":
            error = line.chain[0].message if line.chain else None
            events.append(SdpEvent(line.at, f"Flow {name} has FAILED.", flow=name, status="FAILED",
                                   error=error, final=True))
            continue
        at = line.at if line is not None else (run_ended if run_status == "COMPLETED" else None)
        if at is not None:
            events.append(SdpEvent(at, f"Flow {name} has COMPLETED.", flow=name, status="COMPLETED"))
    return events
