"""Ctrl-C and SIGTERM: a command asked to stop.

A scheduler (cron, Airflow, a container's stop) cancels a run with SIGTERM; a user presses Ctrl-C
(SIGINT). Either raises `Canceled` in the main thread, so whatever the command does stops, and an
update it was running ends CANCELED with Databricks' `cancellation_cause`: USER_ACTION for Ctrl-C,
WORKFLOW_CANCELLATION for SIGTERM (a job run's cancellation). The exit code is 128 plus the signal's
number (130, 143), as a shell reports a command a signal ended.

While an update's pipeline run goes on, the runner stops it the graceful way instead (`graceful`): its
flows stop and the run ends by itself, with every event. A second signal then raises at once.
"""

from __future__ import annotations

import signal
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import FrameType

CAUSES = {signal.SIGINT: "USER_ACTION", signal.SIGTERM: "WORKFLOW_CANCELLATION"}
WHY = {signal.SIGINT: "Ctrl-C (SIGINT)", signal.SIGTERM: "SIGTERM: its job run was canceled"}


class Canceled(KeyboardInterrupt):
    """The command got SIGINT or SIGTERM."""

    def __init__(self, signum: int = signal.SIGINT) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum

    @property
    def cause(self) -> str:
        """`update_progress.cancellation_cause` of an update this stops."""
        return CAUSES.get(self.signum, "USER_ACTION")

    @property
    def why(self) -> str:
        return WHY.get(self.signum, signal.Signals(self.signum).name)

    @property
    def exit_code(self) -> int:
        return 128 + self.signum


def flow_closed_as(status: str) -> str:
    """The final status of a canceled update's flow that was last seen in `status` (not final): SKIPPED
    when it had not started running (QUEUED, PLANNING, STARTING), else STOPPED."""
    return "SKIPPED" if status in ("QUEUED", "PLANNING", "STARTING") else "STOPPED"


def canceled(error: BaseException) -> Canceled:
    """A KeyboardInterrupt as `Canceled` (Python raises plain KeyboardInterrupt before `install`)."""
    return error if isinstance(error, Canceled) else Canceled(signal.SIGINT)


# Called with the cancellation when a signal arrives; True when it stops the work itself.
_hook: Callable[[Canceled], bool] | None = None


def _on_signal(signum: int, frame: FrameType | None) -> None:
    cancellation = Canceled(signum)
    if _hook is not None and _hook(cancellation):
        return
    raise cancellation


def install() -> None:
    """Makes SIGINT and SIGTERM raise `Canceled` in the main thread (the CLI's `main`)."""
    signal.signal(signal.SIGINT, _on_signal)
    signal.signal(signal.SIGTERM, _on_signal)


@contextmanager
def graceful(hook: Callable[[Canceled], bool]) -> Iterator[None]:
    """While inside, a signal calls `hook` (in the main thread, between two Python instructions: it
    must return at once) instead of raising; when `hook` returns False, the signal raises."""
    global _hook
    previous, _hook = _hook, hook
    try:
        yield
    finally:
        _hook = previous
