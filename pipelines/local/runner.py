"""Runs one pipeline update with open-source SDP and writes its event log, as Databricks would.

The runner plays Databricks' control plane: it reads the pipeline resource from the bundle, creates
the dataflow graph, registers the definition files, starts the run, and records every event of the
update in the event log table named by the resource's `event_log` setting. Its sources are real:
SDP's event stream (flow states, errors), a streaming query listener (per-batch rows and observed
expectation counts), the JVM log (exception classes), Delta commit history (materialized-view rows),
and streaming checkpoints with the landing folders (backlog, file state).
"""

from __future__ import annotations

import contextlib
import getpass
import json
import os
import threading
import time
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Sequence
from urllib.parse import urlparse

from pyspark.pipelines.cli import LibrariesGlob, PipelineSpec, register_definitions
from pyspark.pipelines.spark_connect_pipeline import create_dataflow_graph, start_run

from pipelines import adapter, cancellation, insights
from pipelines import expectations as X
from pipelines.bundle import Bundle, LocalSettings, PipelineResource
from pipelines.eventlog import events as E
from pipelines.errors import LakewatchError, engine_message
from pipelines.eventlog.schema import TERMINAL_FLOW_STATES
from pipelines.eventlog.writer import PENDING_ERROR, EventLogStream, EventLogWriter
from pipelines.local import checkpoints as C
from pipelines.local import codegen, engine, inflight, jvm_log, measure, polling, sdp_control
from pipelines.local.capture import BatchProgress, ProgressCollector, session_relay
from pipelines.local.completion_gate import CompletionGate
from pipelines.local.home import ControlPlaneState, LocalHome
from pipelines.local.plan_schemas import FILE_NAME as PLAN_SCHEMAS_FILE, PlanSchemas, plan_key
from pipelines.local.plan_schemas import Session as PlanSession
from pipelines.local.registry import RecordingRegistry
from pipelines.local.sdp_events import FlowSeen, SdpEvent, error_class, lost_outcomes, parse, short_name
from pipelines.local.session import LocalSpark

FILE_STATE_TABLE = adapter.FILE_STATE_TABLE
# After a stop on a `--remote` endpoint: how long a flow SDP had started may take to start its streaming query.
REMOTE_STREAM_STOP_SECONDS = 15


def now() -> datetime:
    return datetime.now(timezone.utc)


@dataclass(frozen=True)
class UpdateRequest:
    pipeline: str  # the pipeline resource key in the bundle
    full_refresh: bool = False
    full_refresh_selection: tuple[str, ...] = ()
    refresh_selection: tuple[str, ...] = ()
    cause: str = "USER_ACTION"
    configuration: tuple[tuple[str, str], ...] = ()  # extra pipeline configuration (like --set)


@dataclass
class FlowResult:
    name: str  # as SDP names it
    status: str
    rows_written: int | None = None
    error: str | None = None
    ended_at: datetime | None = None  # when SDP reported its final state
    seen_at: datetime | None = None  # its last event's time
    exceptions: list[jvm_log.JvmException] = field(default_factory=list)

    @property
    def short_name(self) -> str:
        return short_name(self.name)


@dataclass
class UpdateResult:
    pipeline_name: str
    pipeline_id: str
    update_id: str
    state: str
    started_at: datetime
    ended_at: datetime
    flows: dict[str, FlowResult]
    error: str | None = None
    error_class_name: str | None = None
    events_written: int = 0
    canceled: cancellation.Canceled | None = None  # the signal that stopped it (CANCELED), or came at its end
    timings: list[tuple[str, float]] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.state == "COMPLETED"

    def failed_flows(self) -> list[FlowResult]:
        return [f for f in self.flows.values() if f.status == "FAILED"]


Printer = Callable[[str], None]


class Timings:
    """Wall-clock seconds of an update's phases, in order (`lakewatch run --verbose`, bench/)."""

    def __init__(self) -> None:
        self.spans: list[tuple[str, float]] = []

    @contextlib.contextmanager
    def __call__(self, name: str) -> Iterator[None]:
        start = time.monotonic()
        try:
            yield
        finally:
            self.spans.append((name, time.monotonic() - start))

    def describe(self) -> str:
        return ", ".join(f"{name} {seconds:.2f}s" for name, seconds in self.spans)


class LocalRunner:
    def __init__(self, local: LocalSpark, bundle: Bundle, settings: LocalSettings, home: LocalHome,
                 printer: Printer = print, verbose: bool = False) -> None:
        self.local = local
        self.spark = local.spark
        self.bundle = bundle
        self.settings = settings
        self.home = home
        self.print = printer
        self.verbose = verbose
        self.state = ControlPlaneState(home)
        self.plan_schemas = PlanSchemas(home.root / "state" / PLAN_SCHEMAS_FILE)

    # -- public --------------------------------------------------------------------------------
    def run_update(self, request: UpdateRequest) -> UpdateResult:
        pipeline = self.bundle.pipeline(request.pipeline)
        interrupted = inflight.load(self.home, pipeline.name)
        if interrupted is not None and not interrupted.ran_where(self.local.remote_url):
            # Recovery closed this endpoint's interrupted updates already; this one's event log is elsewhere.
            raise LakewatchError("UPDATE_OPEN_ELSEWHERE", {
                "update_id": interrupted.update_id, "pipeline": pipeline.name, "ran_on": interrupted.ran_on(),
                "closed_by": interrupted.closed_by(),
                "remote": f" --remote {interrupted.remote_url}" if interrupted.remote_url else ""})
        return _Update(self, pipeline, request).run()


class _Update:
    """One update of one pipeline."""

    def __init__(self, runner: LocalRunner, pipeline: PipelineResource, request: UpdateRequest) -> None:
        self.runner = runner
        self.spark = runner.spark
        self.pipeline = pipeline
        self.request = request
        self.catalog = pipeline.catalog or "spark_catalog"
        self.schema = pipeline.schema or "default"
        self.storage = runner.home.storage(pipeline.name)
        self.pipeline_id = runner.state.pipeline_id(pipeline.name)
        self.update_id = str(uuid.uuid4())
        self.started_at = now()
        app_id = self.spark.conf.get("spark.app.id", None)
        self.origin = E.Origin(
            pipeline_id=self.pipeline_id,
            pipeline_name=pipeline.name,
            update_id=self.update_id,
            cluster_id=app_id,
            catalog_name=self.catalog,
            schema_name=self.schema,
        )
        if pipeline.event_log is None:
            raise ValueError(f"pipeline '{pipeline.key}' has no event_log setting in {pipeline.source_file}")
        self.writer = EventLogWriter(self.spark, pipeline.event_log.full_name)
        self.stream = EventLogStream(
            self.writer, lambda count: runner.state.next_sequence(pipeline.name, count), app_id,
            on_error=lambda text: self.say(f"  warning: event log write failed (retried): {text}"),
            prepare=self.complete_event, journal=self.fresh_journal(),
        )
        self.sdp_events: list[SdpEvent] = []
        self.definitions_written = False
        self._plan_session: PlanSession | bool | None = None  # False: could not be read
        self.clock = Timings()
        self.flow_records: dict[str, inflight.FlowRecord] = {}
        self.registry: RecordingRegistry | None = None
        self.collector: ProgressCollector | None = None
        self.log_offset = jvm_log.size(runner.local.log_file)
        self.flow_status: dict[str, FlowResult] = {}
        self.gate = CompletionGate(self.is_streaming_flow)
        self.events_lock = threading.RLock()  # SDP's events and the query listener's both apply events
        self.committed_before: set[tuple[str, str, int]] = set()
        self.cut: dict[str, dict[int, measure.BatchCommit]] = {}  # flow -> its micro-batches a stop cut (add_cut_batches)
        self.cut_commits: dict[str, dict[int, datetime]] = {}  # flow -> every cut batch the table holds -> its commit time
        self.printed_running = False
        self.run_status: SdpEvent | None = None  # SDP's last "Run is ..." event
        self.cancellation: cancellation.Canceled | None = None  # Ctrl-C or SIGTERM while the update ran
        self.run_over = threading.Event()  # SDP's run has ended (or never started)
        self.late_cancellation: cancellation.Canceled | None = None  # a signal while the update was closed
        self.run_started = False  # SDP's run was asked for (a signal then stops the run)
        self.closing = False  # the update is being closed (`finish`)
        self.signal_notes: list[str] = []  # what a signal handler has to say, printed by the main thread
        self.hard_stop = False  # a second signal: stop waiting for the run's flows
        self.stopper: threading.Thread | None = None  # the thread that stops the run (`stop_run`)
        self.run_tag = f"lakewatch-run-{self.update_id}"  # Spark Connect tag of SDP's run operation
        self.started_flows: set[str] = set()  # flows SDP reported STARTING or RUNNING in this update
        self.ended_queries: set[str] = set()  # names of the streaming queries the listener saw end
        self.record = inflight.InFlightUpdate(
            update_id=self.update_id, pipeline_key=pipeline.key, pipeline_name=pipeline.name,
            pipeline_id=self.pipeline_id, catalog=self.catalog, schema=self.schema,
            event_log=pipeline.event_log.full_name, started_at=self.started_at.isoformat(), pid=os.getpid(),
            session_id=runner.local.session_id, url=runner.local.url, cluster_id=app_id,
            log_file=str(runner.local.log_file) if runner.local.log_file else None, log_offset=self.log_offset,
            full_refresh=request.full_refresh or bool(request.full_refresh_selection),
            remote_url=runner.local.remote_url,
        )

    # -- helpers -------------------------------------------------------------------------------
    def qualified(self, name: str) -> str:
        return name if "." in name else f"{self.catalog}.{self.schema}.{name}"

    def say(self, text: str) -> None:
        self.runner.print(text)

    def configuration(self) -> dict[str, str]:
        conf = {**self.pipeline.configuration, **self.runner.settings.configuration_of(self.pipeline.key),
                **dict(self.request.configuration)}
        conf[adapter.ENGINE_KEY] = "local"
        conf.setdefault(adapter.SINK_ROOT_KEY, str(self.runner.home.sinks / self.pipeline.name))
        conf.setdefault(adapter.CATALOG_KEY, self.catalog)
        conf.setdefault(adapter.SCHEMA_KEY, self.schema)
        conf[measure.USER_METADATA_CONF] = measure.commit_tag(self.update_id)
        return conf

    def fresh_journal(self) -> Path:
        path = inflight.journal_path(self.runner.home, self.pipeline.name)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("")
        return path

    def add(self, event: dict[str, Any]) -> None:
        self.stream.add(event)

    def warn(self, measurement: str, reason: str, flow: str | None = None) -> None:
        """A figure that could not be measured: printed, and a WARN event in the event log."""
        self.say(f"  warning: {measurement} not measured: {reason}")
        origin = self.flow_origin(flow) if flow and self.registry is not None else self.origin
        self.add(E.measurement_warning(origin, now(), measurement, reason))

    def update_state(self, state: str, timestamp: datetime | None = None, **kw: Any) -> None:
        self.add(E.update_progress(self.origin, timestamp or now(), state, **kw))
        self.say(f"  update {self.update_id[:8]} {state}")

    # -- the update ----------------------------------------------------------------------------
    def run(self) -> UpdateResult:
        with cancellation.graceful(self.on_signal):
            return self.run_update()

    def run_update(self) -> UpdateResult:
        request = self.request
        refresh = " (full refresh)" if request.full_refresh else (
            f" (full refresh of {', '.join(request.full_refresh_selection)})" if request.full_refresh_selection else "")
        self.say(f"pipeline '{self.pipeline.name}': starting update {self.update_id[:8]}{refresh}")
        self.add(E.create_update(
            self.origin, self.started_at, cause=request.cause, full_refresh=request.full_refresh,
            full_refresh_selection=request.full_refresh_selection, refresh_selection=request.refresh_selection,
            run_as=_user(),
        ))
        self.add(E.user_action(self.origin, self.started_at, action="START", user_name=_user()))
        self.update_state("INITIALIZING")
        with self.clock("initialize"):
            namespace = f"{self.catalog}.{self.schema}"
            # Spark 4.2 tries the create and ignores Hive's AlreadyExistsException, which the metastore
            # logs as an ERROR with its stack trace in the engine's log at every update: ask first.
            if not self.spark.catalog.databaseExists(namespace):
                self.spark.sql(f"CREATE DATABASE IF NOT EXISTS {namespace}")
            self.writer.ensure_table()
            inflight.save(self.runner.home, self.record)
            # The update's first events are written while the definitions register (a Delta commit,
            # 0.5 s that the update used to wait for); the journal holds them on disk already.
            self.stream.start()
            self.stream.flush_soon()

        error: BaseException | None = None
        final_state = "COMPLETED"
        try:
            self.raise_if_canceled()
            with self.clock("register definitions"):
                self.register()
                self.record_flows()
            self.raise_if_canceled()
            # The first events must be in the table before any flow runs: this waits for the background
            # write (done by now, as a rule) and raises when the event log cannot be written.
            self.stream.flush()
            for table, notes in sorted(adapter.LOCAL_GRAPH.source_notes.items()):
                for note in notes:
                    self.say(f"  note: table '{table}': {note}")
            measure.count_before_delete(self.flow_records.values(),
                                        inflight.ledger_path(self.runner.home, self.pipeline.name))
            if request.full_refresh or request.full_refresh_selection:
                self.update_state("RESETTING")
            self.update_state("SETTING_UP_TABLES")
            self.execute()
        except KeyboardInterrupt as e:
            self.cancellation = self.cancellation or cancellation.canceled(e)
            self.say_signal_notes()
            try:
                self.spark.interruptAll()
            except Exception:  # noqa: BLE001 (best effort while cancelling)
                pass
            if self.hard_stop and self.run_started and not self.runner.local.remote:
                # One more stop, now that the stop thread asks no more: a flow's write that escaped the
                # last one is cancelled (SDP's own STOPPED report then fails, its event stream shut by
                # the interrupt: the writes are cancelled all the same). Then a short wait for a commit
                # already under way, so that the views are read as the run left them.
                try:
                    sdp_control.stop_run(self.spark, self.runner.local.session_id, self.graph_id)
                except Exception:  # noqa: BLE001 (see above)
                    pass
                sdp_control.drain_flows(self.spark, self.say, "this update", sdp_control.HARD_STOP_DRAIN_SECONDS)
        except Exception as e:  # noqa: BLE001 (every failure becomes a FAILED update)
            error, final_state = e, "FAILED"
        if any(f.status == "FAILED" for f in self.flow_status.values()) and final_state == "COMPLETED":
            final_state = "FAILED"
        if self.cancellation is not None:  # asked to stop: what failed meanwhile may be the stop's doing
            error, final_state = self.cancellation, "CANCELED"
            self.save_cancellation()

        self.closing = True
        final_state, ended, error = self.finish(final_state, error)
        self.say_signal_notes()
        result = UpdateResult(
            pipeline_name=self.pipeline.name,
            pipeline_id=self.pipeline_id,
            update_id=self.update_id,
            state=final_state,
            started_at=self.started_at,
            ended_at=ended,
            flows=self.flow_status,
            error=_error_text(error) if error else None,
            error_class_name=type(error).__name__ if error else None,
            events_written=self.stream.written,
            timings=list(self.clock.spans),
            canceled=self.cancellation or self.late_cancellation,
        )
        return result

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
        if self.closing:
            if self.late_cancellation is None and not self.hard_stop:
                self.late_cancellation = canceled
                self.signal_notes.append(f"  {canceled.why}: closed update {self.update_id[:8]} first")
                return True
            return False
        if self.cancellation is None and self.late_cancellation is None:
            if self.run_over.is_set():
                self.late_cancellation = canceled
                self.signal_notes.append(f"  {canceled.why}: closed update {self.update_id[:8]} first, "
                                         "its flows being done")
                return True
            self.cancellation = canceled
            if self.run_started:
                self.stopper = threading.Thread(target=self.stop_run, name="lakewatch-stop-run", daemon=True)
                self.stopper.start()
            else:
                self.signal_notes.append(f"  {canceled.why}: stopping update {self.update_id[:8]} before its run")
            return True
        if self.hard_stop:
            return False
        self.hard_stop = True
        self.cancellation = self.cancellation or canceled
        self.signal_notes.append(f"  {canceled.why} again: closing update {self.update_id[:8]} without waiting "
                                 "for its flows")
        return False

    def say_signal_notes(self) -> None:
        """Prints what `on_signal` recorded (in the main thread, outside the handler)."""
        while self.signal_notes:
            self.say(self.signal_notes.pop(0))

    def save_cancellation(self) -> None:
        """Keeps the stop's cause in the in-flight record, so that an update whose close is cut short
        is closed CANCELED with it by the next command's recovery."""
        assert self.cancellation is not None
        if self.record.cancellation_cause != self.cancellation.cause:
            self.record.cancellation_cause = self.cancellation.cause
            try:
                inflight.save(self.runner.home, self.record)
            except OSError as e:
                self.say(f"  warning: the stop's cause could not be kept for a recovery: {e}")

    def raise_if_canceled(self) -> None:
        """Raises the signal that came before SDP's run was asked for (see `on_signal`)."""
        self.say_signal_notes()
        if self.cancellation is not None:
            raise self.cancellation

    def stop_run(self) -> None:
        """Stops SDP's run of this update: its queued flows do not start and its running flows stop, as
        SDP stops them (`sdp_control.stop_run`); a materialized view's write under way has its Spark jobs
        cancelled, so the view keeps its rows (a write that reached its commit first is kept). Asks
        again until the run has ended (`sdp_control.stop_run_until_ended`). Where lakewatch's classes
        are not in the engine (`--remote`), `stop_remote_run`."""
        assert self.cancellation is not None
        self.save_cancellation()  # first: a scheduler may follow SIGTERM with SIGKILL
        self.say(f"  {self.cancellation.why}: stopping update {self.update_id[:8]}")
        self.update_state("STOPPING")  # Databricks' state while an update waits for its queries to shut down
        try:
            answer = sdp_control.stop_run_until_ended(self.spark, self.runner.local.session_id, self.graph_id,
                                                      self.run_over.wait, started=True)
        except Exception as e:  # noqa: BLE001 (said; the session's operations are interrupted instead)
            if self.hard_stop:
                return  # the main thread interrupted the session's operations, this call's among them
            self.say(f"  warning: the run could not be stopped as SDP stops flows ({_one_line(_error_text(e))}); "
                     "interrupting its operations instead")
            try:
                self.spark.interruptAll()
            except Exception as e2:  # noqa: BLE001 (the engine is gone: the run ends with it)
                self.say(f"  warning: the run's operations could not be interrupted: {_one_line(_error_text(e2))}")
            return
        if answer is None:
            try:
                self.stop_remote_run()
            except Exception as e:  # noqa: BLE001 (said; the update is closed without them)
                if not self.hard_stop:
                    self.say(f"  warning: the run's streaming queries could not be waited for "
                             f"({_one_line(_error_text(e))}); what they commit may land after this update is closed")

    def stop_remote_run(self) -> None:
        """Stops the run on an endpoint without lakewatch's classes (`--remote`) with what Spark Connect
        offers, and waits for what it cannot stop. Interrupting the run's operation (by its tag, not the
        session's: the query listener that reports the micro-batches is one of those) makes SDP stop its
        scheduler and report its flows STOPPED or SKIPPED, but the streaming queries of flows that had
        started go on to the end of their input, and a flow SDP was starting starts its query after it
        reported it (measured: a bronze stream committed 100,000 rows 16 s after the update was closed
        CANCELED, and no event counted them). A client cannot stop them: Spark Connect lists SDP's
        queries (`streams.active`) but stops only queries a client started
        (STREAMING_QUERY_NOT_FOUND). So the update stays open until each flow that had started has its
        query seen to end, or not seen in `REMOTE_STREAM_STOP_SECONDS` (it never started), for at
        most `sdp_control.DRAIN_SECONDS`: what they commit is measured and counted in this update."""
        end = time.monotonic() + sdp_control.DRAIN_SECONDS
        # Until the run's operation was interrupted or the run ended: a signal just after the run was
        # asked for may come before the endpoint has registered its operation.
        while not self.spark.interruptTag(self.run_tag) and not self.run_over.wait(0.2) and time.monotonic() < end:
            pass
        self.run_over.wait(max(0.0, end - time.monotonic()))
        with self.events_lock:
            waiting = {flow for flow in self.started_flows
                       if self.is_streaming_flow(short_name(flow))
                       and self.flow_status[flow].status not in ("COMPLETED", "FAILED")}
        started = time.monotonic()
        seen: set[str] = set()
        said = False
        while not self.hard_stop:
            # Every query of this command's session is one of the run's flows, also one whose STARTING
            # event the interrupted run's event stream did not deliver.
            active = {query.name for query in self.spark.streams.active}
            waiting |= active
            seen |= active
            with self.events_lock:
                waiting -= self.ended_queries - active
            if time.monotonic() - started >= REMOTE_STREAM_STOP_SECONDS:
                waiting &= seen  # a query not seen by now was never started
            waiting -= seen - active
            if not waiting or time.monotonic() >= end:
                break
            if not said and active:
                self.say(f"  waiting for {', '.join(sorted(short_name(f) for f in active))}: the endpoint "
                         "does not let a client stop a pipeline's streaming query; what it commits is counted in "
                         "this update (Ctrl-C again to close the update without it)")
                said = True
            time.sleep(0.5)
        if waiting and not self.hard_stop:
            self.say(f"  {', '.join(sorted(short_name(f) for f in waiting))} still running after "
                     f"{sdp_control.DRAIN_SECONDS} s; what it writes lands after this update is closed")

    def register(self) -> None:
        self.registered_at = now()
        conf = self.configuration()
        backlogs = codegen.landing_backlogs(conf, self.storage, self.catalog, self.schema)
        choice = codegen.choose(backlogs, conf)
        conf.update(choice.settings)  # the graph's SQL configuration: every flow of the update runs with it
        conf.update(polling.choose(backlogs, conf))  # read from the session by SDP's flow scheduler
        for key, value in conf.items():
            self.spark.conf.set(key, value)
        graph_id = create_dataflow_graph(self.spark, default_catalog=self.catalog, default_database=self.schema, sql_conf=conf)
        adapter.LOCAL_GRAPH.clear()
        self.registry = RecordingRegistry(self.spark, graph_id)
        root = self.runner.bundle.root
        globs = [LibrariesGlob(str(Path(g).relative_to(root))) for g in self.pipeline.library_globs]
        spec = PipelineSpec(
            name=self.pipeline.name, storage=self.storage.as_uri(), catalog=self.catalog,
            database=self.schema, configuration=conf, libraries=globs,
        )
        self.say(f"  registering definitions from {', '.join(g.include for g in spec.libraries)}")
        _quietly(lambda: register_definitions(root / "spark-pipeline.yml", self.registry, spec, self.spark, graph_id))
        self.graph_id = graph_id

    def record_flows(self) -> None:
        """Completes the in-flight record with what recovery needs should this runner die."""
        assert self.registry is not None
        flows = []
        for flow in self.registry.flows.values():
            target, is_sink = self.flow_target(flow.name)
            root = (C.flow_checkpoint_root(self.storage, flow.name, short_name(target), self.catalog, self.schema, is_sink)
                    if target else None)
            checkpoint = C.latest_checkpoint(root) if root else None
            flows.append(inflight.FlowRecord(
                name=flow.name, sdp_name=self.sdp_flow_name(flow.name), target=target, is_sink=is_sink,
                measured=flow.name in adapter.LOCAL_GRAPH.measured_flows,
                checkpoint_root=str(root) if root else None,
                landing=adapter.LOCAL_GRAPH.file_sources.get(flow.name),
                target_table=self.qualified(short_name(target)) if target else None,
                checkpoint_before=str(checkpoint) if checkpoint else None,
                batch_before=max(C.committed_batches(checkpoint), default=-1) if checkpoint else -1,
                clean_source=adapter.LOCAL_GRAPH.clean_sources.get(flow.name, (None, None))[0],
                archive_dir=adapter.LOCAL_GRAPH.clean_sources.get(flow.name, (None, None))[1],
                record_counter=adapter.LOCAL_GRAPH.record_counters.get(flow.name),
            ))
        self.record.flows = flows
        self.flow_records = {f.name: f for f in flows}
        self.record.registered = True
        inflight.save(self.runner.home, self.record)

    def create_sinks(self) -> None:
        """Creates each local Delta sink before the run, as a table named after the sink.

        Two append flows that create one Delta sink at once collide (DELTA_PROTOCOL_CHANGED); a sink
        that exists up front does not, and its name makes it queryable like a `tableName` sink.
        """
        for sink in adapter.LOCAL_GRAPH.sinks.values():
            self.spark.sql(
                f"CREATE TABLE IF NOT EXISTS {self.qualified(sink.name)} ({sink.schema_ddl}) "
                f"USING DELTA LOCATION '{sink.path}' "
                f"TBLPROPERTIES ('delta.enableChangeDataFeed' = 'true')"
            )

    def materialized_views(self) -> list[str]:
        assert self.registry is not None
        return [o.name for o in self.registry.outputs.values() if o.dataset_type == "MATERIALIZED_VIEW"]

    def close_stopped_flows(self) -> None:
        """A canceled update: each flow SDP left without a final status gets one. A materialized view
        whose refresh this update wrote (its one overwrite, committed while the run stopped) was
        refreshed whole: COMPLETED, its rows counted as any refresh's. A flow still at work when the
        update stopped is STOPPED; one that had not started is SKIPPED."""
        assert self.cancellation is not None
        views = {self.sdp_flow_name(name): name for name in self.materialized_views()}
        for name, result in sorted(self.flow_status.items()):
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
                    self.spark, self.qualified(view), self.update_id, table_dir=self.local_table_dir(view)).wrote():
                status = "COMPLETED"
            if status == result.status:
                continue
            message = None if status == "COMPLETED" else (
                f"Flow '{flow}' {'SKIPPED' if status == 'SKIPPED' else 'has STOPPED'}: the update was canceled "
                f"({self.cancellation.why}).")
            at = now()
            result.status, result.ended_at, result.seen_at = status, at, at
            self.add(E.flow_progress(self.flow_origin(flow), at, status, message=message))
            self.say(f"    {at:%H:%M:%S}  {flow:<40} {status}")

    def keep_unrefreshed_views(self) -> None:
        """Gives back a materialized view's previous contents when its refresh did not complete.

        On Databricks such a view keeps its last contents. With lakewatch's rewrite of SDP
        (pipelines/local/sdp_classes.py) a view is replaced in one commit when its flow completes, so
        a view whose flow failed or was skipped was never touched. Without it (another Spark, or a
        `--remote` endpoint running open-source SDP), SDP truncates every view while it sets up tables
        and refills it when the flow runs, so the runner restores the view: to the version before
        this update's first commit (every commit of the update carries its id).
        """
        unrefreshed = [name for name in self.materialized_views()
                       if getattr(self.flow_status.get(self.sdp_flow_name(name)), "status", None) != "COMPLETED"]
        history = _in_parallel(lambda name: measure.update_commits(self.spark, self.qualified(name), self.update_id,
                                                                   table_dir=self.local_table_dir(name)), unrefreshed)
        for name in unrefreshed:
            result = self.flow_status.get(self.sdp_flow_name(name))
            status = result.status if result is not None else "not run"
            found = history[name]
            if found.wrote():  # a write is a whole refresh, whatever status the flow was last seen in
                self.say(f"    {name}: refresh {status}, but its write landed: kept its new contents")
            elif found.before is not None:
                self.spark.sql(f"RESTORE TABLE {self.qualified(name)} TO VERSION AS OF {found.before}")
                self.say(f"    {name}: refresh {status}; kept its previous contents (version {found.before})")
            elif found.read and not found.commits:
                self.say(f"    {name}: refresh {status}; kept its previous contents (this update did not write it)")

    def execute(self) -> None:
        with self.clock("prepare run"):
            self.storage.mkdir(parents=True, exist_ok=True)
            self.create_sinks()
            self.record.materialized_views = self.materialized_views()
            self.record.expectation_datasets = sorted(adapter.LOCAL_GRAPH.expectations)
            self.record.graph_id = self.graph_id
            inflight.save(self.runner.home, self.record)
            self.committed_before = self.committed_now()
            self.collector = ProgressCollector(on_batch=self.record_batch, on_ended=self.query_ended)
            relay = session_relay(self.spark)
            relay.attach(self.collector)
        run_started = time.monotonic()
        try:
            self.run_started = True
            self.raise_if_canceled()  # a signal from here on stops the run instead
            self.run_pipeline()
        finally:
            self.run_over.set()
            self.clock.spans.append(("pipeline run (setup and flows)", time.monotonic() - run_started))
            try:
                with self.clock("wait for progress events"):
                    if not self.hard_stop:
                        if self.cancellation is not None:
                            self.drain_flows()
                        self.wait_for_progress()
            finally:
                try:
                    logged = jvm_log.flow_outcomes(jvm_log.read_since(self.runner.local.log_file, self.log_offset),
                                                   since=self.started_at)
                    with self.events_lock:  # a query's end may arrive meanwhile: one at a time
                        self.settle_held_completions(logged)
                        self.recover_lost_outcomes(logged)
                except Exception as e:  # noqa: BLE001 (a measurement; the run's own outcome stands)
                    self.warn("lost flow events", _one_line(_error_text(e)))
                # Not under events_lock: the listener thread holds the relay's lock while it waits for it.
                relay.detach()  # not removeListener: see capture.ListenerRelay
            for dropped in self.gate.dropped:
                self.say(f"    note: {short_name(dropped.event.flow or '')}: SDP's COMPLETED event left out, "
                         f"{dropped.reason} (SDP records a streaming flow COMPLETED whenever its query ends)")
            for problem in self.collector.errors:
                self.say(f"  warning: a streaming query event could not be handled: {problem}")

    def run_pipeline(self) -> None:
        """SDP's run of the graph, applying its events as they come. Its operation carries the update's
        tag (thread-local: this thread's operations only), so that a stop can interrupt it alone."""
        self.spark.addTag(self.run_tag)
        try:
            results = start_run(
                self.spark, self.graph_id,
                full_refresh=list(self.request.full_refresh_selection),
                full_refresh_all=self.request.full_refresh,
                refresh=list(self.request.refresh_selection),
                dry=False, storage=self.storage.as_uri(),
            )
            for result in results:
                if "pipeline_event_result" not in result:
                    continue
                raw = result["pipeline_event_result"].event
                timestamp = raw.timestamp.ToDatetime().replace(tzinfo=timezone.utc)
                self.on_sdp_event(parse(timestamp, raw.message))
        finally:
            self.spark.removeTag(self.run_tag)

    def drain_flows(self) -> None:
        """After a stop: SDP's flows still at work (a view's write under way when the run was
        interrupted rather than stopped) are waited for, so what they write is there when the update
        is measured. The stop's own thread is waited for first: on a `--remote` endpoint it waits for
        the streaming queries it cannot stop (`stop_remote_run`)."""
        if self.stopper is not None:  # it says itself what it could not wait for
            self.stopper.join(sdp_control.DRAIN_SECONDS + 30)
        if not self.runner.local.remote:
            sdp_control.drain_flows(self.spark, self.say, "this update")

    def query_ended(self, query_name: str, exception: str | None) -> None:
        """The client listener saw a streaming flow's query end: a COMPLETED held for it is applied
        now when it ended without an exception (`completion_gate`)."""
        with self.events_lock:  # the lock order of on_sdp_event: events_lock, then the gate's
            self.ended_queries.add(query_name)
            released = self.gate.query_terminated(query_name, exception)
            if released is not None:
                self.apply_sdp_event(released)

    def settle_held_completions(self, logged: Mapping[str, jvm_log.LoggedOutcome]) -> None:
        """Under events_lock. Applies the COMPLETED events still held when the run is over whose flow
        did complete (`CompletionGate.settle`)."""
        seen_at = {name: result.seen_at for name, result in self.flow_status.items()}
        for event in self.gate.settle(logged, seen_at):
            self.apply_sdp_event(event)

    def recover_lost_outcomes(self, logged: Mapping[str, jvm_log.LoggedOutcome]) -> None:
        """Under events_lock. Writes the COMPLETED and FAILED events SDP's stream lost
        (`sdp_events.lost_outcomes`), so a flow that ended is not left RUNNING in the event log, a
        materialized view it refreshed taken for unrefreshed and rolled back, nor a failed flow missing
        from the update's failures."""
        run = self.run_status
        seen = {name: FlowSeen(result.status, result.seen_at or self.started_at)
                for name, result in self.flow_status.items()}
        for event in lost_outcomes(seen, run.run_status if run else None, logged, run.timestamp if run else now()):
            self.say(f"    note: the engine's {event.status} event of {short_name(event.flow or '')} was lost "
                     "(sent after the run closed its event stream); written from the engine log")
            self.apply_sdp_event(event)

    def on_sdp_event(self, event: SdpEvent) -> None:
        """One event of SDP's stream, through the gate for streaming flows' COMPLETED events."""
        with self.events_lock:
            before = self.flow_status.get(event.flow) if event.flow else None
            for passed in self.gate.offer(event, before.status if before else None):
                self.apply_sdp_event(passed)

    def apply_sdp_event(self, event: SdpEvent) -> None:
        self.sdp_events.append(event)
        if event.run_status is not None:
            self.run_status = event
        if event.flow is None:
            return
        if not self.printed_running and event.status in ("QUEUED", "PLANNING", "STARTING", "RUNNING"):
            self.update_state("RUNNING", event.timestamp)
            self.printed_running = True
            self.write_definitions()
        current = self.flow_status.setdefault(event.flow, FlowResult(event.flow, event.status or ""))
        current.status = event.status or current.status
        current.seen_at = event.timestamp
        if event.status == "FAILED":
            current.error = event.error
        if event.status in TERMINAL_FLOW_STATES:
            current.ended_at = event.timestamp
        if event.status in ("STARTING", "RUNNING"):
            self.started_flows.add(event.flow)
            self.ended_queries.discard(event.flow)  # a retry: the earlier attempt's query end is no news
        if event.status is not None:
            self.add_flow_event(event)
        if event.status in ("COMPLETED", "FAILED", "SKIPPED", "EXCLUDED", "RUNNING"):
            detail = f": {_one_line(_databricks_message(event.error))[:200]}" if event.status == "FAILED" and event.error else ""
            self.say(f"    {event.timestamp:%H:%M:%S}  {short_name(event.flow):<40} {event.status}{detail}")

    def is_streaming_flow(self, flow_short: str) -> bool:
        """Whether a flow (by its last name part) may run as a streaming query: every flow but one
        registered here without a streaming read."""
        flows = self.registry.flows.values() if self.registry is not None else ()
        flow = next((f for f in flows if short_name(f.name) == flow_short), None)
        return flow is None or flow.streaming_inputs

    # -- measurements --------------------------------------------------------------------------
    def flow_target(self, flow_short: str) -> tuple[str | None, bool]:
        """(target dataset, target is a sink) of a registered flow."""
        assert self.registry is not None
        flow = self.registry.flows.get(flow_short)
        if flow is None:
            return None, False
        output = self.registry.outputs.get(flow.target)
        return flow.target, bool(output and output.dataset_type == "SINK")

    def checkpoint(self, flow_short: str) -> Path | None:
        record = self.flow_records.get(flow_short)
        return measure.checkpoint_of(record) if record is not None else None

    def record_batch(self, batch: BatchProgress) -> dict[str, Any]:
        """Runs in the listener thread as each micro-batch ends: measures the backlog left at that
        moment and writes the batch's METRICS event (rows, backlog, expectation counts)."""
        flow = short_name(batch.flow)
        extra: dict[str, Any] = {}
        landing = adapter.LOCAL_GRAPH.file_sources.get(flow)
        if landing is not None:
            try:
                left = C.backlog(landing, self.checkpoint(flow))
                extra = {"backlog_files": left.files, "backlog_bytes": left.bytes}
            except OSError as e:
                self.add(E.measurement_warning(self.flow_origin(flow, batch.batch_id), batch.ended_at, "backlog",
                                               f"landing folder not readable: {e}"))
        if flow in adapter.LOCAL_GRAPH.measured_flows:
            self.add(self.batch_metrics_event(flow, batch, extra))
        return extra

    def batch_metrics_event(self, flow: str, batch: BatchProgress, extra: dict[str, Any]) -> dict[str, Any]:
        target, _ = self.flow_target(flow)
        written = batch.observed.get(adapter.output_metric_name(flow), {}).get("num_output_rows")
        rules = adapter.LOCAL_GRAPH.expectations.get(short_name(target)) if target else None
        expectations, dropped = None, None
        if rules is not None:
            counts = batch.observed.get(adapter.dq_metric_name(rules.dataset))
            if counts is not None:
                expectations = _expectation_results(rules, counts, self.qualified(rules.dataset))
                dropped = counts.get(X.DROPPED_METRIC)
        return E.flow_metrics(
            self.flow_origin(flow, batch.batch_id), batch.ended_at,
            num_output_rows=written, backlog_bytes=extra.get("backlog_bytes"),
            backlog_files=extra.get("backlog_files"), dropped_records=dropped, expectations=expectations,
        )

    def committed_now(self) -> set[tuple[str, str, int]]:
        """(flow, checkpoint, batch) of every committed batch of the measured flows."""
        found = set()
        for flow in adapter.LOCAL_GRAPH.measured_flows:
            cp = self.checkpoint(flow)
            if cp is not None:
                found |= {(flow, str(cp), batch) for batch in C.committed_batches(cp)}
        return found

    def wait_for_progress(self, timeout: float = 15.0) -> None:
        """Waits until the listener has reported every batch this update committed."""
        assert self.collector is not None
        deadline = time.monotonic() + timeout
        while True:
            expected = {(flow, batch) for flow, _, batch in self.committed_now() - self.committed_before}
            seen = {(short_name(b.flow), b.batch_id) for b in self.collector.snapshot()}
            if expected <= seen:
                return
            if time.monotonic() >= deadline:
                missing = ", ".join(f"{f} batch {b}" for f, b in sorted(expected - seen))
                self.say(f"  warning: no progress event arrived for {missing}; their metrics are NULL")
                return
            time.sleep(0.1)

    # -- finishing -----------------------------------------------------------------------------
    def finish(self, final_state: str, error: BaseException | None) -> tuple[str, datetime, BaseException | None]:
        lost = self.runner.local.lost() if error is not None else None
        if lost is not None and error is not None:
            # The engine or the endpoint is gone: nothing more can be measured or written there. The
            # update is left to the next command's recovery, which closes it whole from the record,
            # the journal and the checkpoints (views restored, batches counted, running flows FAILED),
            # as UPDATE_INTERRUPTED with this cause.
            self.record.stopped_by = lost
            inflight.save(self.runner.home, self.record)
            self.stream.abandon()
            raise error
        if self.registry is not None:
            steps: list[tuple[str, Callable[[], None]]] = [
                *([("flows the stop ended", self.close_stopped_flows)] if final_state == "CANCELED" else []),
                ("materialized views kept", self.keep_unrefreshed_views),
                ("dataset and flow definitions", self.write_definitions),
                ("micro-batches cut by the stop", self.add_cut_batches),
                ("rows written per flow", self.tally_streaming_rows),
                ("bytes written per flow", self.add_streaming_bytes),
                ("flows that ran no micro-batch", self.add_idle_flow_metrics),
                ("materialized view metrics", self.add_batch_view_metrics),
                ("backlog at the end of the update", self.add_backlog_at_end),
                ("file state", self.write_file_state),
            ]
            for name, step in steps:
                try:
                    with self.clock(name):
                        step()
                except Exception as e:  # noqa: BLE001 (one measurement failing must not stop the others)
                    self.warn(name, _one_line(_error_text(e)))
        ended = now()
        error_struct = None
        if final_state == "FAILED":
            failed = [f for f in self.flow_status.values() if f.status == "FAILED"]
            if failed and failed[0].exceptions:
                first = _databricks_message(failed[0].error, failed[0].exceptions)
                chain = [E.ExceptionInfo(c.class_name, first if i == 0 else c.message)
                         for i, c in enumerate(failed[0].exceptions)]
            else:
                chain = [E.ExceptionInfo(type(error).__name__ if error else "UpdateFailed",
                                         _databricks_message(_error_text(error)) if error else "a flow failed")]
            error_struct = E.error(chain, fatal=True)
        self.update_state(
            final_state, ended, error_struct=error_struct,
            cancellation_cause=(self.cancellation or cancellation.Canceled()).cause if final_state == "CANCELED" else None,
        )
        with self.clock("event log close"):
            # One last commit: the flow events held for their exception chain (completed now) and the
            # update's terminal event, which sorts after them (its timestamp is the latest).
            self.stream.close()
        try:  # what the session writes next (a job's next task) is not this update's
            self.spark.conf.unset(measure.USER_METADATA_CONF)
        except Exception:  # noqa: BLE001 (the engine is gone: nothing more is written on this session)
            pass
        inflight.remove(self.runner.home, self.record)
        return final_state, ended, error

    def table_schema(self, name: str) -> list[tuple[str, str]] | None:
        try:
            return [(f.name, f.dataType.simpleString()) for f in self.spark.table(self.qualified(name)).schema.fields]
        except Exception:  # noqa: BLE001 (not created: the flow failed before writing)
            return None

    def view_schema(self, flow: Any) -> list[tuple[str, str]] | None:
        """A view's schema: Spark's analysis of its plan, or the schema an earlier update's analysis gave
        for the same plan in the same session settings (plan_schemas: only for plans nothing outside enters)."""
        session = self.plan_session()
        key = plan_key(flow.relation, session) if session is not None and flow.relation is not None else None
        known = self.runner.plan_schemas.get(key) if key else None
        if known is not None:
            return known
        fields = _dataframe_schema(flow.dataframe)
        if key and fields is not None:
            try:
                self.runner.plan_schemas.put(key, fields)
            except OSError as e:  # the next update analyses it again
                self.say(f"  warning: view schema not kept in {self.runner.plan_schemas.path}: {e}")
        return fields

    def plan_session(self) -> PlanSession | None:
        """What besides a plan decides its schema, read once per update: the Spark version, the engine's
        settings, the session's SQL settings (a job's SQL task may have SET one), the pipeline
        configuration and the user functions. None on a `--remote` endpoint, whose settings lakewatch
        does not know, or when they cannot be read (then every view is analysed)."""
        if self._plan_session is None:
            self._plan_session = False
            info = None if self.runner.local.remote else engine.read_info(self.runner.home)
            if info is not None:
                try:
                    per_update = {codegen.FACTORY_MODE, polling.POLLING_INTERVAL}  # chosen by each update's backlog
                    sql = {k: v for k, v in self.spark.conf.getAll.items()
                           if k.startswith("spark.sql.") and k not in per_update}
                    conf = {k: v for k, v in self.configuration().items() if k != measure.USER_METADATA_CONF}
                    functions = frozenset(str(r[0]).rsplit(".", 1)[-1].lower()
                                          for r in self.spark.sql("SHOW USER FUNCTIONS").collect())
                    self._plan_session = PlanSession({
                        "spark_version": self.spark.version, "engine_settings": info.fingerprint,
                        "sql_conf": json.dumps(sorted(sql.items())), "configuration": json.dumps(sorted(conf.items())),
                    }, functions)
                except Exception as e:  # noqa: BLE001 (then the views are analysed, as before)
                    self.say(f"  warning: view schemas analysed anew: the session's settings could not be read: "
                             f"{_one_line(str(e))}")
        return self._plan_session or None

    def write_definitions(self) -> None:
        """dataset, sink and flow definitions, once per update (when its tables exist)."""
        if self.definitions_written or self.registry is None:
            return
        self.definitions_written = True
        at = self.registered_at
        flows_per_target: dict[str, int] = {}
        for flow in self.registry.flows.values():
            flows_per_target[flow.target] = flows_per_target.get(flow.target, 0) + 1
        schemas: dict[str, list[tuple[str, str]] | None] = {}
        for output in self.registry.outputs.values():
            if output.dataset_type in ("STREAMING_TABLE", "MATERIALIZED_VIEW", "SINK"):
                schemas[output.name] = self.table_schema(output.name)
            else:
                flow = self.registry.flows.get(output.name)
                schemas[output.name] = self.view_schema(flow) if flow else None
        for output in self.registry.outputs.values():
            fields = schemas.get(output.name)
            if output.dataset_type == "SINK":
                origin = self.origin.replace(sink_name=output.name)
                self.add(E.sink_definition(origin, at, output.format or "delta", output.options))
                continue
            rules = adapter.LOCAL_GRAPH.expectations.get(output.name)
            origin = self.origin.replace(dataset_name=self.qualified(output.name),
                                         table_name=self.qualified(output.name) if output.dataset_type != "VIEW" else None)
            self.add(E.dataset_definition(
                origin, at, output.dataset_type, flows_per_target.get(output.name, 0),
                expectations=[{"name": e.name, "constraint": e.condition, "action": e.action.value.upper()}
                              for e in (rules.expectations if rules else ())],
                schema=E.schema_fields(fields) if fields else None,
            ))
        for flow in self.registry.flows.values():
            output = self.registry.outputs.get(flow.target)
            kind = output.dataset_type if output else "STREAMING_TABLE"
            flow_type = {"MATERIALIZED_VIEW": "MATERIALIZED_VIEW", "VIEW": "VIEW"}.get(kind, "APPEND")
            fields = schemas.get(flow.target)
            is_sink = kind == "SINK"
            origin = self.flow_origin(flow.name)
            self.add(E.flow_definition(
                origin, at, flow_type,
                output_dataset=None if is_sink else self.qualified(flow.target),
                output_sink=flow.target if is_sink else None,
                input_datasets=[self.qualified(d) if self.is_table(d) else d for d in flow.input_datasets],
                schema=E.schema_fields(fields) if fields else None,
                source_code_location=self.source_code_location(flow),
            ))

    def source_code_location(self, flow: Any) -> dict[str, Any] | None:
        """Where the flow was declared: the file relative to the bundle root when it is inside it."""
        if not flow.source_file:
            return None
        path = Path(flow.source_file)
        try:
            path = path.resolve().relative_to(self.runner.bundle.root.resolve())
        except ValueError:
            pass
        return {"file_name": str(path), "line_number": flow.source_line}

    def is_table(self, name: str) -> bool:
        assert self.registry is not None
        output = self.registry.outputs.get(short_name(name))
        return bool(output and output.dataset_type in ("STREAMING_TABLE", "MATERIALIZED_VIEW"))

    def sdp_flow_name(self, flow_short: str) -> str:
        """The flow's name as SDP reports it (qualified for a table's own flow)."""
        target, is_sink = self.flow_target(flow_short)
        if not is_sink and target is not None and short_name(target) == flow_short:
            return self.qualified(flow_short)
        return flow_short

    def flow_origin(self, flow_short: str, batch_id: int | None = None) -> E.Origin:
        record = self.flow_records.get(flow_short)
        if record is None:  # not a registered flow (cannot happen for SDP's own flows)
            return self.origin.replace(flow_name=flow_short, batch_id=batch_id)
        return measure.flow_origin(self.origin, record, batch_id)

    def add_flow_event(self, event: SdpEvent) -> None:
        flow = short_name(event.flow or "")
        row = E.flow_progress(self.flow_origin(flow), event.timestamp, event.status or "")
        if event.status == "FAILED":
            row[PENDING_ERROR] = {"sdp_name": event.flow, "error": event.error,
                                   "fatal": event.final or event.resolution_failure}
        self.add(row)

    def complete_event(self, row: dict[str, Any], final: bool) -> bool:
        """Fills a FAILED flow event's exception chain from the JVM log; holds it until the chain
        is logged (or `final`)."""
        pending = row.get(PENDING_ERROR)
        if pending is None:
            return True
        flow = short_name(pending["sdp_name"])
        chain = jvm_log.flow_exceptions(jvm_log.read_since(self.runner.local.log_file, self.log_offset)).get(flow) or []
        if not chain and not final:
            return False
        message = _databricks_message(pending["error"], chain)
        infos = [E.ExceptionInfo(c.class_name, message if i == 0 else c.message) for i, c in enumerate(chain)]
        if not infos:
            infos = [E.ExceptionInfo("org.apache.spark.SparkException", message)]
        row["error"] = E.error(infos, fatal=pending["fatal"])
        result = self.flow_status.get(pending["sdp_name"])
        if result is not None and chain:
            result.exceptions = list(chain)
        del row[PENDING_ERROR]
        return True

    def add_cut_batches(self) -> None:
        """A micro-batch whose rows reached its table while the stop (or a failure) came before the
        stream recorded it in its checkpoint has no progress event (`measure.cut_batches`): a METRICS
        event each, with the rows of its Delta commit; its expectation counts were not measured (a WARN
        event says so), and the next update, which runs the batch again, writes none of its rows."""
        # Without a run (registration failed) no batch is this update's, but an earlier one's cut is still held.
        reported = {(short_name(b.flow), b.batch_id) for b in self.collector.snapshot()} if self.collector else set()
        for flow in adapter.LOCAL_GRAPH.measured_flows:
            record, checkpoint = self.flow_records.get(flow), self.checkpoint(flow)
            if record is None or not record.target_table or checkpoint is None:
                continue
            try:
                held = measure.cut_batches(
                    self.spark, record.target_table, checkpoint,
                    self.local_table_dir(record.target_table, record.target if record.is_sink else None))
            except Exception as e:  # noqa: BLE001 (one flow's lookup failing must not skip the others)
                self.warn("micro-batches cut by the stop", _one_line(_error_text(e)), flow)
                continue
            if held:  # their files were committed then, whichever update wrote them (an earlier one's cut)
                self.cut_commits[flow] = {batch: commit.at for batch, commit in held.items()}
            cut = {batch: commit for batch, commit in held.items()
                   if commit.update_id == self.update_id and (flow, batch) not in reported}
            if not cut:
                continue
            self.cut[flow] = cut
            for batch, commit in sorted(cut.items()):
                self.add(E.flow_metrics(self.flow_origin(flow, batch), commit.at, num_output_rows=commit.rows))
            self.warn("expectation counts", f"micro-batch(es) {', '.join(map(str, sorted(cut)))} of {flow} wrote "
                      "their rows before the stream could record them in its checkpoint (it was stopped between "
                      "the two); their rows come from the table's Delta commits", flow)

    def tally_streaming_rows(self) -> None:
        """Rows each streaming flow wrote in the update (for the summary; 0 when it committed nothing)."""
        if self.collector is None:  # the pipeline never started (registration failed): no flow ran
            return
        for batch in self.collector.snapshot():
            flow = short_name(batch.flow)
            written = batch.observed.get(adapter.output_metric_name(flow), {}).get("num_output_rows")
            result = self.flow_status.get(self.sdp_flow_name(flow))
            if result is not None and written is not None:
                result.rows_written = (result.rows_written or 0) + int(written)
        for flow, cut in self.cut.items():
            result = self.flow_status.get(self.sdp_flow_name(flow))
            rows = [commit.rows for commit in cut.values()]
            if result is not None:  # a cut batch without a row count makes the flow's count unknown
                result.rows_written = None if None in rows else (result.rows_written or 0) + sum(
                    r for r in rows if r is not None)
        for flow in adapter.LOCAL_GRAPH.measured_flows:
            result = self.flow_status.get(self.sdp_flow_name(flow))
            if result is not None and result.status == "COMPLETED" and result.rows_written is None:
                result.rows_written = 0

    def add_streaming_bytes(self) -> None:
        """Bytes each streaming flow wrote in the update, from the `numOutputBytes` of the Delta commits of
        its micro-batches: one METRICS event per flow, without a batch id (so it adds no micro-batch and
        no row count). A flow with a micro-batch whose commit carries no byte count gets none (NULL).
        A micro-batch that wrote no rows (its observed count) added no file: 0 bytes, without a lookup."""
        if self.collector is None:  # the pipeline never started (registration failed): no flow ran
            return
        batches: dict[str, list[int]] = {}  # flow -> its micro-batches that wrote rows (or an unknown count)
        ended: dict[str, datetime] = {}
        for batch in self.collector.snapshot():
            if not batch.ran:  # a trigger that found nothing new committed nothing
                continue
            flow = short_name(batch.flow)
            written = batch.observed.get(adapter.output_metric_name(flow), {}).get("num_output_rows")
            batches.setdefault(flow, [])
            if written != 0:
                batches[flow].append(batch.batch_id)
            ended[flow] = max(ended.get(flow, batch.ended_at), batch.ended_at)
        for flow, cut in self.cut.items():  # measured by add_cut_batches from their own commits
            batches.setdefault(flow, [])
            ended[flow] = max([c.at for c in cut.values()] + ([ended[flow]] if flow in ended else []))
        measured = [f for f in batches if f in adapter.LOCAL_GRAPH.measured_flows
                    and self.flow_records.get(f) is not None and self.flow_records[f].target_table
                    and self.checkpoint(f) is not None]

        def bytes_of(flow: str) -> dict[int, int]:  # no lookup for a flow with no batch left to look up
            record, checkpoint = self.flow_records[flow], self.checkpoint(flow)
            assert record.target_table is not None and checkpoint is not None
            # From the Delta log where it is on this machine (DESCRIBE HISTORY took 1 s per update).
            return measure.rows_per_batch(
                self.spark, record.target_table, checkpoint, batches[flow], "numOutputBytes",
                last_commits=2 * len(batches[flow]) + 10,
                table_dir=self.local_table_dir(record.target_table, record.target if record.is_sink else None),
                update_id=self.update_id)

        found = _in_parallel(bytes_of, measured)
        for flow in measured:
            per_batch = found[flow]
            cut = [commit.bytes for commit in self.cut.get(flow, {}).values()]
            if all(b in per_batch for b in batches[flow]) and None not in cut:
                self.add(E.flow_metrics(self.flow_origin(flow), ended[flow], num_output_bytes=sum(
                    per_batch[b] for b in batches[flow]) + sum(c for c in cut if c is not None)))

    def add_idle_flow_metrics(self) -> None:
        """A streaming flow that completed without a micro-batch (nothing new upstream) wrote 0 rows and
        0 bytes: one METRICS event without a batch id says so, so its rows in flow_throughput are 0
        instead of NULL (not measured). Only when its checkpoint committed no batch in this update
        either, so a batch whose progress event never arrived stays unmeasured."""
        if self.collector is None:  # the pipeline never started (registration failed): no flow ran
            return
        completed = {flow for flow in adapter.LOCAL_GRAPH.measured_flows if self.checkpoint(flow) is not None
                     and getattr(self.flow_status.get(self.sdp_flow_name(flow)), "status", None) == "COMPLETED"}
        completed -= set(self.cut)  # a batch of theirs reached the table (add_cut_batches)
        for flow in idle_flows(completed, self.collector.snapshot(), self.committed_now() - self.committed_before):
            result = self.flow_status[self.sdp_flow_name(flow)]
            self.add(E.flow_metrics(self.flow_origin(flow), result.ended_at or now(),
                                    num_output_rows=0, num_output_bytes=0))

    def add_batch_view_metrics(self) -> None:
        """Materialized views: rows from Delta commit metrics, expectation counts by evaluating the
        view's expectations over the same input it read in this update."""
        assert self.registry is not None
        refreshed = []
        for flow in self.registry.flows.values():
            output = self.registry.outputs.get(flow.target)
            result = self.flow_status.get(self.sdp_flow_name(flow.name))
            if output is not None and output.dataset_type == "MATERIALIZED_VIEW" and result is not None \
                    and result.status == "COMPLETED":
                refreshed.append(flow)
        # From the Delta logs where they are on this machine (29 DESCRIBE HISTORY took 3.3 s per refresh).
        history = _in_parallel(lambda f: measure.update_commits(self.spark, self.qualified(f.target), self.update_id,
                                                                table_dir=self.local_table_dir(f.target)),
                               refreshed, key=lambda f: f.name)
        for flow in refreshed:
            result = self.flow_status[self.sdp_flow_name(flow.name)]
            found = history[flow.name]
            # The refresh overwrites the view in one commit, which counts its rows. Delta commits no
            # write that changes nothing: a query of no rows into an empty view (with lakewatch's
            # rewrite of SDP) or into a truncated one (SDP as shipped, which truncates, then appends).
            # So a completed refresh whose commits hold no write, or that made none, wrote 0; when the
            # history could not be read, or a write lacks the metric, the figure is not known.
            written, written_bytes = found.written("numOutputRows"), found.written("numOutputBytes")
            at = result.ended_at or max((t for t, _ in found.commits), default=now())
            rules = adapter.LOCAL_GRAPH.expectations.get(flow.target)
            expectations, dropped = None, None
            if rules is not None:
                counts = self.count_expectations(rules)
                if counts is not None:
                    expectations = _expectation_results(rules, counts, self.qualified(rules.dataset))
                    dropped = counts.get(X.DROPPED_METRIC)
            self.add(E.flow_metrics(self.flow_origin(flow.name), at, num_output_rows=written,
                                    dropped_records=dropped, expectations=expectations,
                                    status="COMPLETED", streaming=False,
                                    num_output_bytes=written_bytes))
            result.rows_written = written

    def local_table_dir(self, table: str, sink: str | None = None) -> Path | None:
        """The folder on this machine of a table, or of the sink named `sink` (at its path): where its
        Delta log is read. None on `--remote` and for a sink elsewhere (a scheme other than file)."""
        if self.runner.local.remote:
            return None
        location = adapter.LOCAL_GRAPH.sinks[sink].path if sink in adapter.LOCAL_GRAPH.sinks else None
        if location is not None:
            return Path(C.to_local_path(location)) if urlparse(location).scheme in ("", "file") else None
        return measure.local_table_dir(self.runner.home.warehouse, self.qualified(table))

    def count_expectations(self, rules: adapter.DatasetExpectations) -> dict[str, Any] | None:
        from pyspark.sql import functions as F

        try:
            self.spark.sql(f"USE {self.catalog}.{self.schema}")
            row = rules.query().agg(
                *X.count_columns(rules.expectations),
                F.count_if(~X.all_pass(rules.expectations, X.Action.DROP)).alias(X.DROPPED_METRIC),
            ).collect()[0]
            return row.asDict()
        except Exception as e:  # noqa: BLE001 (then the counts were not measured: NULL)
            self.say(f"  warning: expectation counts of {rules.dataset} not measured: {_one_line(str(e))}")
            return None

    def add_backlog_at_end(self) -> None:
        """Backlog of each file-reading flow when the update ends (also for failed and idle flows)."""
        for event in measure.backlog_events(self.origin, self.flow_records.values(), now(), self.cut_commits):
            self.add(event)

    def write_file_state(self) -> None:
        measure.write_file_state(self.spark, self.qualified(FILE_STATE_TABLE), self.flow_records.values(),
                                 inflight.ledger_path(self.runner.home, self.pipeline.name), self.cut_commits)


def idle_flows(completed: set[str], batches: Iterable[BatchProgress],
               committed: set[tuple[str, str, int]]) -> list[str]:
    """The completed streaming flows (short names) that ran no micro-batch in the update: none reported
    by the listener (`ran`) and none committed in their checkpoints during the update (a batch whose
    progress event was lost still counts as run, so its rows stay unmeasured, not 0)."""
    ran = {short_name(b.flow) for b in batches if b.ran}
    written = {flow for flow, _, _ in committed}
    return sorted(completed - ran - written)


def _in_parallel(function: Callable[[Any], Any], items: Sequence[Any], key: Callable[[Any], Any] = lambda x: x,
                 workers: int = 4) -> dict[Any, Any]:
    """`{key(item): function(item)}`, calls made concurrently (small catalog requests to the engine)."""
    from concurrent.futures import ThreadPoolExecutor

    if not items:
        return {}
    with ThreadPoolExecutor(max_workers=min(workers, len(items))) as pool:
        return dict(zip((key(i) for i in items), pool.map(function, items)))


def _expectation_results(rules: adapter.DatasetExpectations, counts: dict[str, Any], dataset: str) -> list[dict[str, Any]]:
    results = []
    for e in rules.expectations:
        passed, failed = X.metric_names(e)
        results.append(E.expectation_result(e.name, dataset, int(counts.get(passed) or 0), int(counts.get(failed) or 0)))
    return results


def _databricks_message(text: str | None, chain: Sequence[Any] = ()) -> str:
    """An error text as the event log keeps it: without the streaming query's plan dump, and a
    violated `fail` expectation under Databricks' error class. The expectation's text may be only in
    a cause (`chain`, the JVM's exception chain): when the error surfaced through a write task, the
    outer STREAM_FAILED / TASK_WRITE_FAILED text does not repeat it."""
    text = (text or "").split("\n=== Streaming Query ===")[0].strip()
    for candidate in [text, *((c.message or "") for c in chain)]:
        if X.FAIL_MESSAGE_PREFIX in candidate:
            detail = candidate[candidate.index(X.FAIL_MESSAGE_PREFIX) + len(X.FAIL_MESSAGE_PREFIX):].strip()
            detail = detail.split("\n=== Streaming Query ===")[0].split(" SQLSTATE")[0].strip()
            return f"[{X.EXPECTATION_ERROR_CLASS}] {detail}"
    return text or ""


def _dataframe_schema(df: Any) -> list[tuple[str, str]] | None:
    try:
        return [(f.name, f.dataType.simpleString()) for f in df.schema.fields]
    except Exception:  # noqa: BLE001 (a view over pipeline datasets cannot be analyzed outside the run)
        return None


def _user() -> str:
    try:
        return getpass.getuser()
    except Exception:  # noqa: BLE001
        return "local"


def _error_text(error: BaseException) -> str:
    return engine_message(error)


def _one_line(text: str | None) -> str:
    return " ".join((text or "").split())[:400]


def _quietly(action: Callable[[], None]) -> None:
    """Runs SDP's definition loading without its per-file log lines on stdout."""
    import contextlib
    import io

    buffer = io.StringIO()
    with contextlib.redirect_stdout(buffer):
        action()


def summarize(result: UpdateResult) -> Sequence[str]:
    lines = [f"update {result.update_id} of '{result.pipeline_name}': {result.state} "
             f"in {(result.ended_at - result.started_at).total_seconds():.1f}s"]
    for flow in sorted(result.flows.values(), key=lambda f: f.short_name):
        rows = f"{flow.rows_written:>8} rows" if flow.rows_written is not None else " " * 13
        lines.append(f"  {flow.short_name:<40} {flow.status:<10} {rows}")
        if flow.status == "FAILED":
            lines.append(f"      {describe_failure(flow)}")
    return lines


def describe_failure(flow: FlowResult) -> str:
    """Root cause first (class and message), then the file it concerns when Spark names one."""
    if not flow.exceptions:
        return _one_line(_databricks_message(flow.error))
    root = flow.exceptions[-1]
    text = f"{root.class_name}: {root.message}" if root.message else root.class_name
    for e in flow.exceptions:
        if error_class(e.message) and error_class(e.message).startswith(insights.FILE_ERROR_CLASS):
            text += f" ({_one_line(e.message)})"
            break
    return _one_line(text)
