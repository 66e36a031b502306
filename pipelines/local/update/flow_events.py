"""Applying SDP's events to an update: each flow's state, the streaming flows' COMPLETED events held
until their query's end is known (`completion_gate`), the outcomes SDP's stream lost, the exception
chain of a FAILED event, and the final status of the flows a stop left open."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from typing import Any

from pipelines.eventlog import events
from pipelines.eventlog.schema import TERMINAL_FLOW_STATES
from pipelines.eventlog.writer import PENDING_ERROR
from pipelines import cancellation
from pipelines.local import jvm_log, measure
from pipelines.local.completion_gate import CompletionGate
from pipelines.local.sdp_events import FlowSeen, SdpEvent, lost_outcomes, short_name
from pipelines.local.update.context import UpdateContext
from pipelines.local.update.messages import databricks_message, one_line
from pipelines.local.update.types import FlowResult, now


class FlowEvents:
    """SDP's events of one update, from the run's thread (its event stream) and the listener thread
    (a query's end). Every change to the flow states is made under `SharedState.events_lock`."""

    def __init__(self, ctx: UpdateContext, on_running: Callable[[], None]) -> None:
        self.ctx = ctx
        self.state = ctx.state
        self.on_running = on_running  # once, when the first flow is under way (the definitions are written)
        self.gate = CompletionGate(ctx.is_streaming_flow)

    def on_sdp_event(self, event: SdpEvent) -> None:
        """One event of SDP's stream, through the gate for streaming flows' COMPLETED events."""
        if event.status == "EXCLUDED" and event.flow and short_name(event.flow) in self.ctx.unchanged_views:
            event = dataclasses.replace(event, status="COMPLETED")  # left out because unchanged: up to date
        with self.state.events_lock:
            before = self.state.flow_status.get(event.flow) if event.flow else None
            for passed in self.gate.offer(event, before.status if before else None):
                self.apply(passed)

    def complete_unchanged(self) -> None:
        """The materialized views planned NO_OP that SDP's run did not report (or that no run was
        needed for) are COMPLETED: their tables hold what a refresh would write."""
        ctx = self.ctx
        with self.state.events_lock:
            for name in sorted(ctx.unchanged_views):
                flow = ctx.sdp_flow_name(name)
                current = self.state.flow_status.get(flow)
                if current is None or current.status not in TERMINAL_FLOW_STATES:
                    self.apply(SdpEvent(now(), f"Flow '{flow}' has COMPLETED.", flow=flow, status="COMPLETED"))

    def query_ended(self, query_name: str, exception: str | None) -> None:
        """The client listener saw a streaming flow's query end: a COMPLETED held for it is applied
        now when it ended without an exception (`completion_gate`)."""
        with self.state.events_lock:  # the lock order of on_sdp_event: events_lock, then the gate's
            self.state.ended_queries.add(query_name)
            released = self.gate.query_terminated(query_name, exception)
            if released is not None:
                self.apply(released)

    def settle(self, logged: Mapping[str, jvm_log.LoggedOutcome]) -> None:
        """Once the run is over: the COMPLETED events still held whose flow did complete
        (`CompletionGate.settle`), then the outcomes SDP's stream lost (`recover_lost_outcomes`)."""
        with self.state.events_lock:  # a query's end may arrive meanwhile: one at a time
            self.settle_held_completions(logged)
            self.recover_lost_outcomes(logged)

    def settle_held_completions(self, logged: Mapping[str, jvm_log.LoggedOutcome]) -> None:
        """Under events_lock. Applies the COMPLETED events still held when the run is over whose flow
        did complete (`CompletionGate.settle`)."""
        seen_at = {name: result.seen_at for name, result in self.state.flow_status.items()}
        for event in self.gate.settle(logged, seen_at):
            self.apply(event)

    def recover_lost_outcomes(self, logged: Mapping[str, jvm_log.LoggedOutcome]) -> None:
        """Under events_lock. Writes the COMPLETED and FAILED events SDP's stream lost
        (`sdp_events.lost_outcomes`), so a flow that ended is not left RUNNING in the event log, a
        materialized view it refreshed taken for unrefreshed and rolled back, nor a failed flow missing
        from the update's failures."""
        run = self.state.run_status
        seen = {name: FlowSeen(result.status, result.seen_at or self.ctx.started_at)
                for name, result in self.state.flow_status.items()}
        for event in lost_outcomes(seen, run.run_status if run else None, logged, run.timestamp if run else now()):
            self.ctx.say(f"    note: the engine's {event.status} event of {short_name(event.flow or '')} was lost "
                         "(sent after the run closed its event stream); written from the engine log")
            self.apply(event)

    def apply(self, event: SdpEvent) -> None:
        """Under events_lock. One event that passed the gate: the flow's state, its event log row, its line."""
        ctx, state = self.ctx, self.state
        state.sdp_events.append(event)
        if event.run_status is not None:
            state.run_status = event
        if event.flow is None:
            return
        if not state.printed_running and event.status in ("QUEUED", "PLANNING", "STARTING", "RUNNING"):
            ctx.update_state("RUNNING", event.timestamp)
            state.printed_running = True
            self.on_running()
        current = state.flow_status.setdefault(event.flow, FlowResult(event.flow, event.status or ""))
        current.status = event.status or current.status
        current.seen_at = event.timestamp
        if event.status == "FAILED":
            current.error = event.error
        if event.status in TERMINAL_FLOW_STATES:
            current.ended_at = event.timestamp
        if event.status in ("STARTING", "RUNNING"):
            state.started_flows.add(event.flow)
            state.ended_queries.discard(event.flow)  # a retry: the earlier attempt's query end is no news
        if event.status is not None:
            self.add_flow_event(event)
        if event.status in ("COMPLETED", "FAILED", "SKIPPED", "EXCLUDED", "RUNNING"):
            detail = (f": {one_line(databricks_message(event.error))[:200]}"
                      if event.status == "FAILED" and event.error else "")
            if event.status == "COMPLETED" and short_name(event.flow) in ctx.unchanged_views:
                detail = " (unchanged: NO_OP)"
            ctx.say(f"    {event.timestamp:%H:%M:%S}  {short_name(event.flow):<40} {event.status}{detail}")

    def add_flow_event(self, event: SdpEvent) -> None:
        flow = short_name(event.flow or "")
        row = events.flow_progress(self.ctx.flow_origin(flow), event.timestamp, event.status or "")
        if event.status == "FAILED":
            row[PENDING_ERROR] = {"sdp_name": event.flow, "error": event.error,
                                  "fatal": event.final or event.resolution_failure}
        self.ctx.add(row)

    def complete_event(self, row: dict[str, Any], final: bool) -> bool:
        """Fills a FAILED flow event's exception chain from the JVM log; holds it until the chain
        is logged (or `final`)."""
        pending = row.get(PENDING_ERROR)
        if pending is None:
            return True
        flow = short_name(pending["sdp_name"])
        log = jvm_log.read_since(self.ctx.local.log_file, self.ctx.log_offset)
        chain = jvm_log.flow_exceptions(log).get(flow) or []
        if not chain and not final:
            return False
        message = databricks_message(pending["error"], chain)
        infos = [events.ExceptionInfo(c.class_name, message if i == 0 else c.message) for i, c in enumerate(chain)]
        if not infos:
            infos = [events.ExceptionInfo("org.apache.spark.SparkException", message)]
        row["error"] = events.error(infos, fatal=pending["fatal"])
        result = self.state.flow_status.get(pending["sdp_name"])
        if result is not None and chain:
            result.exceptions = list(chain)
        del row[PENDING_ERROR]
        return True

    def close_stopped_flows(self) -> None:
        """A canceled update: each flow SDP left without a final status gets one. A materialized view
        whose refresh this update wrote (its one overwrite, committed while the run stopped) was
        refreshed whole: COMPLETED, its rows counted as any refresh's. A flow still at work when the
        update stopped is STOPPED; one that had not started is SKIPPED."""
        ctx, state = self.ctx, self.state
        assert state.cancellation is not None
        views = {ctx.sdp_flow_name(name): name for name in ctx.materialized_views()}
        for name, result in sorted(state.flow_status.items()):
            view = views.get(name)
            # IDLE: a flow that runs once and had run before (SDP's state for it), not the stop's doing.
            if result.status in (*TERMINAL_FLOW_STATES, "IDLE") and not (result.status == "STOPPED" and view is not None):
                continue
            flow = short_name(name)
            status = cancellation.flow_closed_as(result.status)
            # A view's flow that started may have reached its commit before the stop (or its jobs'
            # cancel): its COMPLETED event can come after the run closed its event stream, or never
            # reach the runner after a second signal. Its Delta log says whether the write is there.
            if result.status != "QUEUED" and view is not None and measure.update_commits(
                    ctx.spark, ctx.qualified(view), ctx.update_id, table_dir=ctx.local_table_dir(view)).wrote():
                status = "COMPLETED"
            if status == result.status:
                continue
            message = None if status == "COMPLETED" else (
                f"Flow '{flow}' {'SKIPPED' if status == 'SKIPPED' else 'has STOPPED'}: the update was canceled "
                f"({state.cancellation.why}).")
            at = now()
            result.status, result.ended_at, result.seen_at = status, at, at
            ctx.add(events.flow_progress(ctx.flow_origin(flow), at, status, message=message))
            ctx.say(f"    {at:%H:%M:%S}  {flow:<40} {status}")
