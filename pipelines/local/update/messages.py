"""Error texts as the event log and the console show them."""

from __future__ import annotations

import getpass
from typing import Sequence

from pipelines import expectations
from pipelines.errors import engine_message
from pipelines.local import jvm_log


def databricks_message(text: str | None, chain: Sequence[jvm_log.JvmException] = ()) -> str:
    """An error text as the event log keeps it: without the streaming query's plan dump, and a
    violated `fail` expectation under Databricks' error class. The expectation's text may be only in
    a cause (`chain`, the JVM's exception chain): when the error surfaced through a write task, the
    outer STREAM_FAILED / TASK_WRITE_FAILED text does not repeat it."""
    text = (text or "").split("\n=== Streaming Query ===")[0].strip()
    prefix = expectations.FAIL_MESSAGE_PREFIX
    for candidate in [text, *((c.message or "") for c in chain)]:
        if prefix in candidate:
            detail = candidate[candidate.index(prefix) + len(prefix):].strip()
            detail = detail.split("\n=== Streaming Query ===")[0].split(" SQLSTATE")[0].strip()
            return f"[{expectations.EXPECTATION_ERROR_CLASS}] {detail}"
    return text or ""


def error_text(error: BaseException) -> str:
    return engine_message(error)


def one_line(text: str | None) -> str:
    return " ".join((text or "").split())[:400]


def user() -> str:
    """The user the update runs as (its `create_update` and `user_action` events)."""
    try:
        return getpass.getuser()
    except Exception:  # noqa: BLE001
        return "local"
