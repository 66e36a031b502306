"""Ctrl-C and SIGTERM during an update: the signal handler, the stop of SDP's run (on the local engine
and on a `--remote` endpoint), and the wait for what a stopped run still writes.

The flags a signal sets live in the update's `SharedState` (which thread writes which is said there).
"""

from __future__ import annotations

import threading
import time

from pipelines import cancellation
from pipelines.local import inflight, sdp_control
from pipelines.local.sdp_events import short_name
from pipelines.local.update.context import UpdateContext
from pipelines.local.update.messages import error_text, one_line

# After a stop on a `--remote` endpoint: how long a flow SDP had started may take to start its streaming query.
REMOTE_STREAM_STOP_SECONDS = 15


class Stopping:
    """The stop of one update."""

    def __init__(self, ctx: UpdateContext) -> None:
        self.ctx = ctx
        self.state = ctx.state
        self.update_id = ctx.update_id

    def on_signal(self, canceled: cancellation.Canceled) -> bool:
        """Ctrl-C or SIGTERM while this update runs (in the main thread, between two instructions: returns
        at once; False makes the signal raise where the main thread is). The first signal:
        - before SDP's run was asked for: recorded, and raised at the next step's start
          (`raise_if_canceled`), so the update ends CANCELED before any flow runs;
        - while the run goes on: the run is stopped from another thread (`stop_run`) and ends by itself,
          with every flow's event; the update ends CANCELED;
        - once the run is over (its flows are done; the update is being measured and closed, seconds):
          the close goes on, the update keeps the state its run gave it, and the command then exits
          as the signal asks.
        A second signal before the close raises at once: the runner stops waiting for the run's flows,
        interrupts the session's operations and closes the update CANCELED without them. A signal
        during the close after a second one (or a second during the close) leaves the close to the
        next command's recovery, which closes the update CANCELED with the cause."""
        # Messages wait for the main thread (`say_signal_notes`): printing here, between two instructions
        # of a print under way, can fail.
        state = self.state
        if state.closing:
            if state.late_cancellation is None and not state.hard_stop:
                state.late_cancellation = canceled
                state.signal_notes.append(f"  {canceled.why}: closed update {self.update_id[:8]} first")
                return True
            return False
        if state.cancellation is None and state.late_cancellation is None:
            if state.run_over.is_set():
                state.late_cancellation = canceled
                state.signal_notes.append(f"  {canceled.why}: closed update {self.update_id[:8]} first, "
                                          "its flows being done")
                return True
            state.cancellation = canceled
            if state.run_started:
                state.stopper = threading.Thread(target=self.stop_run, name="lakewatch-stop-run", daemon=True)
                state.stopper.start()
            else:
                state.signal_notes.append(f"  {canceled.why}: stopping update {self.update_id[:8]} before its run")
            return True
        if state.hard_stop:
            return False
        state.hard_stop = True
        state.cancellation = state.cancellation or canceled
        state.signal_notes.append(f"  {canceled.why} again: closing update {self.update_id[:8]} without waiting "
                                  "for its flows")
        return False

    def say_signal_notes(self) -> None:
        """Prints what `on_signal` recorded (in the main thread, outside the handler)."""
        while self.state.signal_notes:
            self.ctx.say(self.state.signal_notes.pop(0))

    def save_cancellation(self) -> None:
        """Keeps the stop's cause in the in-flight record, so that an update whose close is cut short
        is closed CANCELED with it by the next command's recovery."""
        assert self.state.cancellation is not None
        record = self.ctx.record
        if record.cancellation_cause != self.state.cancellation.cause:
            record.cancellation_cause = self.state.cancellation.cause
            try:
                inflight.save(self.ctx.home, record)
            except OSError as e:
                self.ctx.say(f"  warning: the stop's cause could not be kept for a recovery: {e}")

    def raise_if_canceled(self) -> None:
        """Raises the signal that came before SDP's run was asked for (see `on_signal`)."""
        self.say_signal_notes()
        if self.state.cancellation is not None:
            raise self.state.cancellation

    def after_interrupt(self, interrupt: KeyboardInterrupt) -> None:
        """In the main thread, where a signal raised (a second one, or one before the run): the session's
        operations are interrupted; after a second signal during the run, the run is stopped once more."""
        ctx, state = self.ctx, self.state
        state.cancellation = state.cancellation or cancellation.canceled(interrupt)
        self.say_signal_notes()
        try:
            ctx.spark.interruptAll()
        except Exception:  # noqa: BLE001 (best effort while cancelling)
            pass
        if state.hard_stop and state.run_started and not ctx.local.remote:
            # One more stop, now that the stop thread asks no more: a flow's write that escaped the
            # last one is cancelled (SDP's own STOPPED report then fails, its event stream shut by
            # the interrupt: the writes are cancelled all the same). Then a short wait for a commit
            # already under way, so that the views are read as the run left them.
            try:
                assert ctx.graph_id is not None
                sdp_control.stop_run(ctx.spark, ctx.local.session_id, ctx.graph_id)
            except Exception:  # noqa: BLE001 (see above)
                pass
            sdp_control.drain_flows(ctx.spark, ctx.say, "this update", sdp_control.HARD_STOP_DRAIN_SECONDS)

    def stop_run(self) -> None:
        """Stops SDP's run of this update: its queued flows do not start and its running flows stop, as
        SDP stops them (`sdp_control.stop_run`); a materialized view's write under way has its Spark jobs
        cancelled, so the view keeps its rows (a write that reached its commit first is kept). Asks
        again until the run has ended (`sdp_control.stop_run_until_ended`). Where lakewatch's classes
        are not in the engine (`--remote`), `stop_remote_run`."""
        ctx, state = self.ctx, self.state
        assert state.cancellation is not None
        self.save_cancellation()  # first: a scheduler may follow SIGTERM with SIGKILL
        ctx.say(f"  {state.cancellation.why}: stopping update {self.update_id[:8]}")
        ctx.update_state("STOPPING")  # Databricks' state while an update waits for its queries to shut down
        try:
            assert ctx.graph_id is not None  # registered before the run was asked for
            answer = sdp_control.stop_run_until_ended(ctx.spark, ctx.local.session_id, ctx.graph_id,
                                                      state.run_over.wait, started=True)
        except Exception as e:  # noqa: BLE001 (said; the session's operations are interrupted instead)
            if state.hard_stop:
                return  # the main thread interrupted the session's operations, this call's among them
            ctx.say(f"  warning: the run could not be stopped as SDP stops flows ({one_line(error_text(e))}); "
                    "interrupting its operations instead")
            try:
                ctx.spark.interruptAll()
            except Exception as e2:  # noqa: BLE001 (the engine is gone: the run ends with it)
                ctx.say(f"  warning: the run's operations could not be interrupted: {one_line(error_text(e2))}")
            return
        if answer is None:
            try:
                self.stop_remote_run()
            except Exception as e:  # noqa: BLE001 (said; the update is closed without them)
                if not state.hard_stop:
                    ctx.say(f"  warning: the run's streaming queries could not be waited for "
                            f"({one_line(error_text(e))}); what they commit may land after this update is closed")

    def stop_remote_run(self) -> None:
        """Stops the run on an endpoint without lakewatch's classes (`--remote`) with what Spark Connect
        offers, and waits for what it cannot stop. Interrupting the run's operation (by its tag, not the
        session's: the query listener that reports the micro-batches is one of those) makes SDP stop its
        scheduler and report its flows STOPPED or SKIPPED, but the streaming queries of flows that had
        started go on to the end of their input, and a flow SDP was starting starts its query after it
        reported it, so what they commit would land after the update is closed, counted by no event.
        A client cannot stop them: Spark Connect lists SDP's queries (`streams.active`) but stops only
        queries a client started (STREAMING_QUERY_NOT_FOUND). So the update stays open until each flow
        that had started has its query seen to end, or not seen in `REMOTE_STREAM_STOP_SECONDS` (it
        never started), for at most `sdp_control.DRAIN_SECONDS`: what they commit is measured and
        counted in this update."""
        ctx, state = self.ctx, self.state
        end = time.monotonic() + sdp_control.DRAIN_SECONDS
        # Until the run's operation was interrupted or the run ended: a signal just after the run was
        # asked for may come before the endpoint has registered its operation.
        while not ctx.spark.interruptTag(ctx.run_tag) and not state.run_over.wait(0.2) and time.monotonic() < end:
            pass
        state.run_over.wait(max(0.0, end - time.monotonic()))
        with state.events_lock:
            waiting = {flow for flow in state.started_flows
                       if ctx.is_streaming_flow(short_name(flow))
                       and state.flow_status[flow].status not in ("COMPLETED", "FAILED")}
        started = time.monotonic()
        seen: set[str] = set()
        said = False
        while not state.hard_stop:
            # Every query of this command's session is one of the run's flows, also one whose STARTING
            # event the interrupted run's event stream did not deliver.
            active = {query.name for query in ctx.spark.streams.active}
            waiting |= active
            seen |= active
            with state.events_lock:
                waiting -= state.ended_queries - active
            if time.monotonic() - started >= REMOTE_STREAM_STOP_SECONDS:
                waiting &= seen  # a query not seen by now was never started
            waiting -= seen - active
            if not waiting or time.monotonic() >= end:
                break
            if not said and active:
                ctx.say(f"  waiting for {', '.join(sorted(short_name(f) for f in active))}: the endpoint "
                        "does not let a client stop a pipeline's streaming query; what it commits is counted in "
                        "this update (Ctrl-C again to close the update without it)")
                said = True
            time.sleep(0.5)
        if waiting and not state.hard_stop:
            ctx.say(f"  {', '.join(sorted(short_name(f) for f in waiting))} still running after "
                    f"{sdp_control.DRAIN_SECONDS} s; what it writes lands after this update is closed")

    def drain_flows(self) -> None:
        """After a stop: SDP's flows still at work (a view's write under way when the run was
        interrupted rather than stopped) are waited for, so what they write is there when the update
        is measured. The stop's own thread is waited for first: on a `--remote` endpoint it waits for
        the streaming queries it cannot stop (`stop_remote_run`)."""
        if self.state.stopper is not None:  # it says itself what it could not wait for
            self.state.stopper.join(sdp_control.DRAIN_SECONDS + 30)
        if not self.ctx.local.remote:
            sdp_control.drain_flows(self.ctx.spark, self.ctx.say, "this update")
