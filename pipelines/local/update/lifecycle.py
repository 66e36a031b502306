"""One update from its start to its close: the update's states, the registration, SDP's run with its
event stream and the query listener, and the close (the measurements, the terminal state, the last
event-log commit), as a Databricks update records them."""

from __future__ import annotations

import time
from datetime import datetime, timezone
from typing import Callable

from pyspark.pipelines.spark_connect_pipeline import start_run

from pipelines import cancellation
from pipelines.bundle import PipelineResource
from pipelines.eventlog import events
from pipelines.eventlog.writer import EventLogStream
from pipelines.local import inflight, jvm_log, measure
from pipelines.local.capture import ProgressCollector, session_relay
from pipelines.local.sdp_events import parse, short_name
from pipelines.local.update.context import UpdateContext
from pipelines.local.update.definitions import Definitions
from pipelines.local.update.flow_events import FlowEvents
from pipelines.local.update.measurements import Measurements
from pipelines.local.update import planning
from pipelines.local.update.messages import databricks_message, error_text, one_line, user
from pipelines.local.update.stopping import Stopping
from pipelines.local.update.types import UpdateHost, UpdateRequest, UpdateResult, now


class Update:
    """One update of one pipeline."""

    def __init__(self, runner: UpdateHost, pipeline: PipelineResource, request: UpdateRequest) -> None:
        ctx = self.ctx = UpdateContext(runner, pipeline, request)
        self.state = ctx.state
        self.definitions = Definitions(ctx)
        self.flow_events = FlowEvents(ctx, on_running=self.definitions.write)
        self.stopping = Stopping(ctx)
        self.measurements = Measurements(ctx)
        self.refresh = planning.RefreshPlan()
        ctx.stream = self.stream = EventLogStream(
            ctx.writer, lambda count: runner.state.next_sequence(pipeline.name, count), ctx.app_id,
            on_error=lambda text: ctx.say(f"  warning: event log write failed (retried): {text}"),
            prepare=self.flow_events.complete_event, journal=ctx.fresh_journal(),
        )

    def run(self) -> UpdateResult:
        with cancellation.graceful(self.stopping.on_signal):
            return self.run_update()

    def run_update(self) -> UpdateResult:
        ctx, state, request = self.ctx, self.state, self.ctx.request
        refresh = " (full refresh)" if request.full_refresh else (
            f" (full refresh of {', '.join(request.full_refresh_selection)})" if request.full_refresh_selection else "")
        ctx.say(f"pipeline '{ctx.pipeline.name}': starting update {ctx.update_id[:8]}{refresh}")
        ctx.add(events.create_update(
            ctx.origin, ctx.started_at, cause=request.cause, full_refresh=request.full_refresh,
            full_refresh_selection=request.full_refresh_selection, refresh_selection=request.refresh_selection,
            run_as=user(),
        ))
        ctx.add(events.user_action(ctx.origin, ctx.started_at, action="START", user_name=user()))
        ctx.update_state("INITIALIZING")
        with ctx.clock("initialize"):
            namespace = f"{ctx.catalog}.{ctx.schema}"
            # Spark 4.2 tries the create and ignores Hive's AlreadyExistsException, which the metastore
            # logs as an ERROR with its stack trace in the engine's log at every update: ask first.
            if not ctx.spark.catalog.databaseExists(namespace):
                ctx.spark.sql(f"CREATE DATABASE IF NOT EXISTS {namespace}")
            ctx.writer.ensure_table()
            ctx.save_record()
            # The update's first events are written while the definitions register; the journal holds
            # them on disk already.
            self.stream.start()
            self.stream.flush_soon()

        error: BaseException | None = None
        final_state = "COMPLETED"
        try:
            self.stopping.raise_if_canceled()
            with ctx.clock("register definitions"):
                self.definitions.register()
                self.definitions.record_flows()
            self.stopping.raise_if_canceled()
            # The first events must be in the table before any flow runs: this waits for the background
            # write (done by now, as a rule) and raises when the event log cannot be written.
            self.stream.flush()
            for table, notes in sorted(ctx.graph.source_notes.items()):
                for note in notes:
                    ctx.say(f"  note: table '{table}': {note}")
            measure.count_before_delete(ctx.flow_records.values(), inflight.ledger_path(ctx.home, ctx.pipeline.name))
            with ctx.clock("plan refreshes"):
                self.plan_refreshes()
            if request.full_refresh or request.full_refresh_selection:
                ctx.update_state("RESETTING")
            ctx.update_state("SETTING_UP_TABLES")
            self.execute()
        except KeyboardInterrupt as e:
            self.stopping.after_interrupt(e)
        except Exception as e:  # noqa: BLE001 (every failure becomes a FAILED update)
            error, final_state = e, "FAILED"
        if any(f.status == "FAILED" for f in state.flow_status.values()) and final_state == "COMPLETED":
            final_state = "FAILED"
        if state.cancellation is not None:  # asked to stop: what failed meanwhile may be the stop's doing
            error, final_state = state.cancellation, "CANCELED"
            self.stopping.save_cancellation()

        state.closing = True
        final_state, ended, error = self.finish(final_state, error)
        self.stopping.say_signal_notes()
        return UpdateResult(
            pipeline_name=ctx.pipeline.name,
            pipeline_id=ctx.pipeline_id,
            update_id=ctx.update_id,
            state=final_state,
            started_at=ctx.started_at,
            ended_at=ended,
            flows=state.flow_status,
            error=error_text(error) if error else None,
            error_class_name=type(error).__name__ if error else None,
            events_written=self.stream.written,
            timings=list(ctx.clock.spans),
            canceled=state.cancellation or state.late_cancellation,
        )

    def plan_refreshes(self) -> None:
        """Which materialized views this update recomputes (`planning`), with a planning_information
        event each; a plan that cannot be made recomputes them all, as SDP would."""
        ctx = self.ctx
        try:
            self.refresh = planning.plan(ctx)
        except Exception as e:  # noqa: BLE001 (without a plan every view is recomputed: slower, never stale)
            ctx.warn("refresh planning", one_line(error_text(e)))
            self.refresh = planning.RefreshPlan()
        ctx.unchanged_views = frozenset(self.refresh.skipped)
        for view in self.refresh.views.values():
            ctx.add(planning.planning_event(ctx, view))
        if ctx.unchanged_views:
            ctx.say(f"  {len(ctx.unchanged_views)} of {len(self.refresh.views)} materialized views unchanged since "
                    "their last refresh: not recomputed (NO_OP)")

    def execute(self) -> None:
        ctx, state, measurements = self.ctx, self.state, self.measurements
        with ctx.clock("prepare run"):
            ctx.storage.mkdir(parents=True, exist_ok=True)
            self.definitions.create_sinks()
            ctx.record.materialized_views = ctx.materialized_views()
            ctx.record.expectation_datasets = sorted(ctx.graph.expectations)
            ctx.record.graph_id = ctx.graph_id
            ctx.save_record()
            measurements.committed_before = measurements.committed_now()
            collector = measurements.collector = ProgressCollector(
                on_batch=measurements.record_batch, on_ended=self.flow_events.query_ended)
            relay = session_relay(ctx.spark)
            relay.attach(collector)
        run_started = time.monotonic()
        try:
            state.run_started = True
            self.stopping.raise_if_canceled()  # a signal from here on stops the run instead
            self.run_pipeline()
        finally:
            state.run_over.set()
            ctx.clock.spans.append(("pipeline run (setup and flows)", time.monotonic() - run_started))
            try:
                with ctx.clock("wait for progress events"):
                    if not state.hard_stop:
                        if state.cancellation is not None:
                            self.stopping.drain_flows()
                        measurements.wait_for_progress()
            finally:
                try:
                    logged = jvm_log.flow_outcomes(jvm_log.read_since(ctx.local.log_file, ctx.log_offset),
                                                   since=ctx.started_at)
                    self.flow_events.settle(logged)
                    if state.cancellation is None:
                        self.flow_events.complete_unchanged()
                except Exception as e:  # noqa: BLE001 (a measurement; the run's own outcome stands)
                    ctx.warn("lost flow events", one_line(error_text(e)))
                # Not under events_lock: the listener thread holds the relay's lock while it waits for it.
                relay.detach()  # not removeListener: see capture.ListenerRelay
            for dropped in self.flow_events.gate.dropped:
                ctx.say(f"    note: {short_name(dropped.event.flow or '')}: SDP's COMPLETED event left out, "
                        f"{dropped.reason} (SDP records a streaming flow COMPLETED whenever its query ends)")
            for problem in collector.errors:
                ctx.say(f"  warning: a streaming query event could not be handled: {problem}")

    def run_pipeline(self) -> None:
        """SDP's run of the graph, applying its events as they come. Its operation carries the update's
        tag (thread-local: this thread's operations only), so that a stop can interrupt it alone."""
        ctx, request = self.ctx, self.ctx.request
        selection = self.refresh.selection
        if selection == () and not request.full_refresh_selection:  # every table unchanged: nothing to run
            self.flow_events.complete_unchanged()
            return
        ctx.spark.addTag(ctx.run_tag)
        try:
            results = start_run(
                ctx.spark, ctx.graph_id,
                full_refresh=list(request.full_refresh_selection),
                full_refresh_all=request.full_refresh,
                refresh=list(selection if selection is not None else request.refresh_selection),
                dry=False, storage=ctx.storage.as_uri(),
            )
            for result in results:
                if "pipeline_event_result" not in result:
                    continue
                raw = result["pipeline_event_result"].event
                timestamp = raw.timestamp.ToDatetime().replace(tzinfo=timezone.utc)
                self.flow_events.on_sdp_event(parse(timestamp, raw.message))
        finally:
            ctx.spark.removeTag(ctx.run_tag)

    def record_refreshes(self) -> None:
        ctx = self.ctx
        assert ctx.registry is not None
        completed = {name for name, output in ctx.registry.outputs.items()
                     if output.dataset_type in ("STREAMING_TABLE", "MATERIALIZED_VIEW")
                     and getattr(self.state.flow_status.get(ctx.sdp_flow_name(name)), "status", None) == "COMPLETED"}
        planning.record(ctx, self.refresh, completed)

    def finish(self, final_state: str, error: BaseException | None) -> tuple[str, datetime, BaseException | None]:
        """Closes the update: each measurement of the close (one failing does not stop the others), the
        terminal state with its error, and the event log's last commit; then the in-flight record goes."""
        ctx, state, measurements = self.ctx, self.state, self.measurements
        lost = ctx.local.lost() if error is not None else None
        if lost is not None and error is not None:
            # The engine or the endpoint is gone: nothing more can be measured or written there. The
            # update is left to the next command's recovery, which closes it whole from the record,
            # the journal and the checkpoints (views restored, batches counted, running flows FAILED),
            # as UPDATE_INTERRUPTED with this cause.
            ctx.record.stopped_by = lost
            ctx.save_record()
            self.stream.abandon()
            raise error
        if ctx.registry is not None:
            steps: list[tuple[str, Callable[[], None]]] = [
                *([("flows the stop ended", self.flow_events.close_stopped_flows)] if final_state == "CANCELED" else []),
                ("materialized views kept", measurements.keep_unrefreshed_views),
                ("dataset and flow definitions", self.definitions.write),
                ("micro-batches cut by the stop", measurements.add_cut_batches),
                ("rows written per flow", measurements.tally_streaming_rows),
                ("bytes written per flow", measurements.add_streaming_bytes),
                ("flows that ran no micro-batch", measurements.add_idle_flow_metrics),
                ("materialized view metrics", measurements.add_batch_view_metrics),
                ("backlog at the end of the update", measurements.add_backlog_at_end),
                ("file state", measurements.write_file_state),
                ("what the refreshed views read", self.record_refreshes),
            ]
            for name, step in steps:
                try:
                    with ctx.clock(name):
                        step()
                except Exception as e:  # noqa: BLE001 (one measurement failing must not stop the others)
                    ctx.warn(name, one_line(error_text(e)))
        ended = now()
        error_struct = None
        if final_state == "FAILED":
            failed = [f for f in state.flow_status.values() if f.status == "FAILED"]
            if failed and failed[0].exceptions:
                first = databricks_message(failed[0].error, failed[0].exceptions)
                chain = [events.ExceptionInfo(c.class_name, first if i == 0 else c.message)
                         for i, c in enumerate(failed[0].exceptions)]
            else:
                chain = [events.ExceptionInfo(type(error).__name__ if error else "UpdateFailed",
                                              databricks_message(error_text(error)) if error else "a flow failed")]
            error_struct = events.error(chain, fatal=True)
        ctx.update_state(
            final_state, ended, error_struct=error_struct,
            cancellation_cause=(state.cancellation or cancellation.Canceled()).cause if final_state == "CANCELED" else None,
        )
        with ctx.clock("event log close"):
            # One last commit: the flow events held for their exception chain (completed now) and the
            # update's terminal event, which sorts after them (its timestamp is the latest).
            self.stream.close()
        try:  # what the session writes next (a job's next task) is not this update's
            ctx.spark.conf.unset(measure.USER_METADATA_CONF)
        except Exception:  # noqa: BLE001 (the engine is gone: nothing more is written on this session)
            pass
        inflight.remove(ctx.home, ctx.record)
        return final_state, ended, error
