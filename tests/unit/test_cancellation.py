"""Ctrl-C and SIGTERM in a command: real signals sent to this process (the handlers are the CLI's)."""

from __future__ import annotations

import os
import signal
import time

import pytest

from pipelines import cancellation


@pytest.fixture
def installed():
    before = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}
    cancellation.install()
    yield
    for s, handler in before.items():
        signal.signal(s, handler)


def deliver(signum: int) -> None:
    """Sends `signum` to this process and gives Python the chance to run its handler."""
    os.kill(os.getpid(), signum)
    for _ in range(100):
        time.sleep(0.01)


@pytest.mark.parametrize("signum, cause, code", [
    (signal.SIGINT, "USER_ACTION", 130),
    (signal.SIGTERM, "WORKFLOW_CANCELLATION", 143),
])
def test_a_signal_raises_canceled_with_databricks_cause_and_the_shell_exit_code(installed, signum, cause, code):
    with pytest.raises(cancellation.Canceled) as raised:
        deliver(signum)
    assert isinstance(raised.value, KeyboardInterrupt)
    assert (raised.value.cause, raised.value.exit_code) == (cause, code)


def test_inside_graceful_the_hook_takes_the_first_signal_and_the_second_raises(installed):
    seen: list[int] = []

    def hook(canceled: cancellation.Canceled) -> bool:
        seen.append(canceled.signum)
        return len(seen) == 1  # the runner stops the run once; a second signal stops at once

    with cancellation.graceful(hook):
        deliver(signal.SIGTERM)
        with pytest.raises(cancellation.Canceled):
            deliver(signal.SIGINT)
    assert seen == [signal.SIGTERM, signal.SIGINT]
    with pytest.raises(cancellation.Canceled):  # outside, no hook
        deliver(signal.SIGTERM)


def test_a_plain_keyboard_interrupt_counts_as_ctrl_c():
    assert cancellation.canceled(KeyboardInterrupt()).cause == "USER_ACTION"
