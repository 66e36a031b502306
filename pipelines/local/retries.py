"""How long a Spark Connect client retries a server that does not answer.

Spark Connect's default policy retries an unavailable server for at least 10 minutes per call, and a
command makes many calls (the update, then its failure events, then closing the session). Against a
dead server that is a command that ends an hour later, saying nothing meanwhile. So:

- on the local engine, a call is retried only while the engine's process lives (`WhileAlive`);
- on a `--remote` endpoint, which lakewatch cannot watch, a call is retried for at most
  `LAKEWATCH_REMOTE_RETRY_SECONDS` after its first failure (`WithinBudget`, 60 s by default: a
  network drop, not an outage); once one call has given up, later calls of the command fail at
  once, so the command exits with `[REMOTE_UNREACHABLE]` instead of waiting the budget again for
  each call. A server that restarts within the budget answers as a new server, without the
  command's session: that is `[REMOTE_SESSION_LOST]` (see `connection.LocalSpark.lost`).

Both keep the default policy's backoff and its choice of which errors are worth a retry.
"""

from __future__ import annotations

import math
import os
import time
import warnings
from typing import Any

from pyspark.sql.connect.client.retries import DefaultPolicy, RetryPolicyState

from pipelines.local.processes import pid_alive

# pyspark warns when a call's retries run out; the command's own error says it, with the reason.
warnings.filterwarnings("ignore", message=r"\[RETRIES_EXCEEDED\]", category=UserWarning)

REMOTE_RETRY_ENV = "LAKEWATCH_REMOTE_RETRY_SECONDS"
DEFAULT_REMOTE_RETRY_SECONDS = 60.0


def remote_retry_seconds() -> float:
    """The per-call retry budget for `--remote` endpoints, from the environment."""
    raw = os.environ.get(REMOTE_RETRY_ENV, "").strip()
    if not raw:
        return DEFAULT_REMOTE_RETRY_SECONDS
    try:
        seconds = float(raw)
    except ValueError:
        seconds = -1.0
    if not math.isfinite(seconds) or seconds < 0:
        from pipelines.errors import LakewatchError

        raise LakewatchError("CLI_INVALID_ARGUMENT", {
            "reason": f"{REMOTE_RETRY_ENV}={raw!r} is not a number of seconds, 0 or more"})
    return seconds


class WhileAlive(DefaultPolicy):
    """Retries a call only while the local engine's process `pid` lives."""

    def __init__(self, pid: int) -> None:
        super().__init__()
        self.pid = pid

    def can_retry(self, e: BaseException) -> bool:
        return pid_alive(self.pid) and super().can_retry(e)


class WithinBudget(DefaultPolicy):
    """Retries a call for at most `seconds` (the last wait is cut to what is left); after a call gave
    up, `gave_up` says why and no later call is retried."""

    def __init__(self, seconds: float) -> None:
        super().__init__(max_retries=None)
        self.seconds = seconds
        self.gave_up: str | None = None

    def can_retry(self, e: BaseException) -> bool:
        return self.gave_up is None and super().can_retry(e)

    def to_state(self) -> RetryPolicyState:
        return _BudgetState(self)


class _BudgetState(RetryPolicyState):
    """One call's retries (pyspark makes a new state per call). The budget runs from the call's first
    failure, not its start: a long-running stream (an update's run, the listener's events) may wait
    for minutes between answers before a network drop."""

    def __init__(self, policy: WithinBudget) -> None:
        super().__init__(policy)
        self.first_failure: float | None = None

    def next_attempt(self, exception: BaseException | None = None) -> int | None:
        policy: WithinBudget = self.policy  # type: ignore[assignment]
        if self.first_failure is None:
            self.first_failure = time.monotonic()
        wait_ms = super().next_attempt(exception)
        left_ms = int((policy.seconds - (time.monotonic() - self.first_failure)) * 1000)
        if wait_ms is None or left_ms <= 0:  # (less than a millisecond left is none: a wait of 0 would spin)
            policy.gave_up = _describe(exception)
            return None
        return min(wait_ms, left_ms)


def _describe(exception: BaseException | None) -> str:
    """The gRPC status and its text, which say why the server did not answer."""
    if exception is None:
        return "no answer"
    code: Any = getattr(exception, "code", None)
    details: Any = getattr(exception, "details", None)
    if callable(code) and callable(details):
        try:
            return f"{code().name}: {details()}"
        except Exception:  # noqa: BLE001 (a call object that was never completed)
            pass
    return str(exception).strip() or type(exception).__name__
