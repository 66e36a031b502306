"""Reads the JVM log of the local engine for what SDP's event stream leaves out.

SDP's event stream says that a flow failed and gives the error text, but not the exception's class;
its log does (`ERROR TriggeredGraphExecution: Flow `x` failed` followed by the exception and its
`Caused by:` chain), which is what the event log's `error.exceptions` holds on Databricks.

The stream can also lose a flow's COMPLETED or last FAILED event (see
`update.flow_events.FlowEvents.recover_lost_outcomes`); the log still has the moment SDP's scheduler saw the flow
complete (`INFO TriggeredGraphExecution: Flow `x` has COMPLETED in TriggeredFlowExecution.`) or fail.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

# The engine's log4j layout: `%d{yyyy-MM-dd HH:mm:ss.SSS}{UTC} %p %c{1}: %m` (pipelines/local/session.py).
_HEADER = re.compile(r"^(?P<at>\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d+) [A-Z]+ \S+: (?P<message>.*)$")
_FLOW_COMPLETED = re.compile(r"^Flow (?P<flow>\S+) has COMPLETED in TriggeredFlowExecution\.")
# e.g. "Flow `spark_catalog`.`lakewatch`.`orders_bronze` failed", "Flow 'x' has FAILED more than 1 times ...",
# "Unhandled exception while starting flow:x"
_FLOW_FAILED = re.compile(r"Flow (?P<flow>\S+) (?:failed|has FAILED)|starting flow:\s*(?P<flow2>\S+)")
_EXCEPTION = re.compile(r"^(?:Caused by: )?(?P<cls>[A-Za-z_$][\w$]*(?:\.[\w$]+)+)(?::\s?(?P<msg>.*))?$")


@dataclass(frozen=True)
class JvmException:
    class_name: str
    message: str


def read_since(log_file: Path | None, offset: int) -> str:
    """The log's text from `offset` on ("" without a log: a remote engine's log is not readable here)."""
    if log_file is None or not log_file.is_file():
        return ""
    with log_file.open("rb") as f:
        f.seek(offset)
        return f.read().decode("utf-8", errors="replace")


def size(log_file: Path | None) -> int:
    return log_file.stat().st_size if log_file is not None and log_file.is_file() else 0


@dataclass(frozen=True)
class LoggedOutcome:
    """A flow's last terminal line in the log: COMPLETED, or FAILED with its exception chain."""
    status: str  # COMPLETED or FAILED
    at: datetime  # UTC
    chain: tuple[JvmException, ...] = ()


def _at(header: re.Match[str]) -> datetime:
    return datetime.strptime(header.group("at"), "%Y-%m-%d %H:%M:%S.%f").replace(tzinfo=timezone.utc)


def _flow(raw: str) -> str:
    return raw.split(".")[-1].strip("`'")


def _entries(text: str) -> list[tuple[str, LoggedOutcome]]:
    """(flow name's last part, outcome) for each completion or failure line, in log order."""
    entries: list[tuple[str, LoggedOutcome]] = []
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        header = _HEADER.match(lines[i])
        i += 1
        if not header:
            continue
        message = header.group("message")
        completed = _FLOW_COMPLETED.match(message)
        if completed:
            entries.append((_flow(completed.group("flow")), LoggedOutcome("COMPLETED", _at(header))))
            continue
        failed = _FLOW_FAILED.search(message)
        if not failed:
            continue
        chain: list[JvmException] = []
        while i < len(lines) and not _HEADER.match(lines[i]):
            line = lines[i]
            stripped = line.strip()
            if not line.startswith(("\t", " ")) or stripped.startswith("Caused by:"):
                match = _EXCEPTION.match(stripped)
                if match:
                    chain.append(JvmException(match.group("cls"), (match.group("msg") or "").strip()))
            i += 1
        flow = _flow(failed.group("flow") or failed.group("flow2") or "")
        entries.append((flow, LoggedOutcome("FAILED", _at(header), tuple(chain))))
    return entries


def flow_exceptions(text: str) -> dict[str, list[JvmException]]:
    """Flow name (last part) -> exception chain (outermost first) of its last logged failure."""
    result: dict[str, list[JvmException]] = {}
    for flow, outcome in _entries(text):
        if outcome.status == "FAILED" and outcome.chain:
            result[flow] = list(outcome.chain)
    return result


def flow_outcomes(text: str, since: datetime) -> dict[str, LoggedOutcome]:
    """Flow name (last part) -> its last completion or failure line logged at or after `since`.

    A flow retried after a failure and then completed ends COMPLETED; a completion followed by a
    failure ends FAILED. Lines before `since` (an earlier update's, in a log the engine keeps across
    updates) are left out."""
    result: dict[str, LoggedOutcome] = {}
    for flow, outcome in _entries(text):
        if outcome.at >= since:
            result[flow] = outcome
    return result
