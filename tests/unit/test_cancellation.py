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


# -- the runner's answer to a signal, by the phase of the update (`Stopping.on_signal`) --------------
def an_update(**phase):
    """An update's stop alone (all `on_signal` reads: its id and its `SharedState`), in the phase `phase`
    sets; stopping the run is recorded instead of asked of an engine."""
    import threading
    from types import SimpleNamespace

    from pipelines.local.update.state import SharedState
    from pipelines.local.update.stopping import Stopping

    state = SharedState()
    for name, value in phase.items():
        if name == "run_over":
            state.run_over.set()
        else:
            setattr(state, name, value)
    update = Stopping(SimpleNamespace(state=state, update_id="0123456789abcdef"))  # type: ignore[arg-type]
    update.stopped = threading.Event()  # type: ignore[attr-defined]
    update.stop_run = update.stopped.set  # type: ignore[method-assign,attr-defined]
    return update


SIGTERM, SIGINT = cancellation.Canceled(signal.SIGTERM), cancellation.Canceled(signal.SIGINT)


def test_a_signal_before_the_run_is_recorded_for_the_next_step_and_no_run_is_stopped():
    update = an_update()
    assert update.on_signal(SIGINT) is True
    assert update.state.cancellation is SIGINT and not update.stopped.wait(0.2)
    assert [n.endswith("stopping update 01234567 before its run") for n in update.state.signal_notes] == [True]


def test_a_signal_during_the_run_stops_it_and_a_second_one_stops_waiting():
    update = an_update(run_started=True)
    assert update.on_signal(SIGTERM) is True
    assert update.stopped.wait(5) and update.state.cancellation is SIGTERM and not update.state.hard_stop
    assert update.on_signal(SIGINT) is False  # raises where the main thread is: stop waiting for the flows
    assert update.state.hard_stop and update.state.cancellation is SIGTERM  # the update keeps the first cause
    assert update.on_signal(SIGINT) is False and "again" in update.state.signal_notes[-1]


def test_a_signal_once_the_flows_are_done_lets_the_close_go_on_and_keeps_the_runs_state():
    update = an_update(run_started=True, run_over=True)
    assert update.on_signal(SIGTERM) is True
    assert update.state.cancellation is None and update.state.late_cancellation is SIGTERM and not update.stopped.wait(0.2)
    assert "its flows being done" in update.state.signal_notes[-1]


def test_during_the_close_one_signal_waits_for_it_and_the_next_one_leaves_it_to_recovery():
    update = an_update(run_started=True, run_over=True, closing=True)
    assert update.on_signal(SIGINT) is True and update.state.late_cancellation is SIGINT
    assert update.on_signal(SIGINT) is False
    after_hard_stop = an_update(run_started=True, closing=True, hard_stop=True, cancellation=SIGINT)
    assert after_hard_stop.on_signal(SIGINT) is False and after_hard_stop.state.late_cancellation is None
