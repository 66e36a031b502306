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


def lost_completions(statuses: Mapping[str, str], run_status: str | None, logged: Mapping[str, datetime],
                     run_ended: datetime) -> list[SdpEvent]:
    """The COMPLETED events the stream lost, for flows (SDP name -> last status seen) of a run.

    Open-source SDP 4.2 logs a flow's COMPLETED event from a callback: a batch flow's future
    completion, a streaming flow's query listener. Its scheduler does not wait for that callback, so
    when a run's last flows finish, the run can end and close its event stream first; the event is
    then dropped (the engine log says STREAM_LIFECYCLE_EVENT_SEND_AFTER_SHUTDOWN). Measured on small
    ingest updates: 4 of 31. A flow still seen unfinished completed when the engine logged its
    completion (`logged`, by last name part): at that time. In a COMPLETED run it completed even
    without that line (a failed or skipped flow fails the run): at the run's end. Otherwise (a run
    that failed, no line) its outcome is not known and nothing is said.
    """
    events = []
    for name, status in statuses.items():
        if status not in UNFINISHED:
            continue
        at = logged.get(short_name(name)) or (run_ended if run_status == "COMPLETED" else None)
        if at is not None:
            events.append(SdpEvent(at, f"Flow {name} has COMPLETED.", flow=name, status="COMPLETED"))
    return events
