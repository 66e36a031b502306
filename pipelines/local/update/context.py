"""One update's facts and the services its parts share: its ids and origin, the event log stream, the
graph it registered, and the lookups every part makes (qualified names, a flow's target and origin)."""

from __future__ import annotations

import os
import uuid
from datetime import datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

from pipelines import adapter
from pipelines.local import adapter as local_adapter
from pipelines.bundle import PipelineResource
from pipelines.eventlog import events
from pipelines.eventlog.writer import EventLogStream, EventLogWriter
from pipelines.local import checkpoints
from pipelines.local import inflight, jvm_log, measure
from pipelines.local.registry import RecordingRegistry
from pipelines.local.sdp_events import short_name
from pipelines.local.update.state import SharedState
from pipelines.local.update.types import FlowResult, Timings, UpdateHost, UpdateRequest, now


class UpdateContext:
    """One update of one pipeline: what is known from its start, and what its registration adds.

    The registration fields (`registry`, `graph`, `graph_id`, `registered_at`, `flow_records`) are
    written by the main thread while the definitions register, before SDP's run starts; the listener
    and stop threads only read them once the run is under way."""

    def __init__(self, runner: UpdateHost, pipeline: PipelineResource, request: UpdateRequest) -> None:
        self.runner = runner
        self.local = runner.local
        self.home = runner.home
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
        self.origin = events.Origin(
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
        self.app_id = app_id
        self.stream: EventLogStream | None = None  # set by the update, which completes its events
        self.clock = Timings()
        self.state = SharedState()
        self.log_offset = jvm_log.size(runner.local.log_file)
        self.run_tag = f"lakewatch-run-{self.update_id}"  # Spark Connect tag of SDP's run operation
        # -- the registration (main thread, before the run) --
        self.registry: RecordingRegistry | None = None
        self.graph = local_adapter.LocalGraph()  # what the local engine recorded while the definitions registered
        self.graph_id: str | None = None
        self.registered_at: datetime = self.started_at
        self.flow_records: dict[str, inflight.FlowRecord] = {}
        # materialized views whose inputs did not change since their last refresh (`planning`): left out
        # of SDP's run, COMPLETED without a write
        self.unchanged_views: frozenset[str] = frozenset()
        self.record = inflight.InFlightUpdate(
            update_id=self.update_id, pipeline_key=pipeline.key, pipeline_name=pipeline.name,
            pipeline_id=self.pipeline_id, catalog=self.catalog, schema=self.schema,
            event_log=pipeline.event_log.full_name, started_at=self.started_at.isoformat(), pid=os.getpid(),
            session_id=runner.local.session_id, url=runner.local.url, cluster_id=app_id,
            log_file=str(runner.local.log_file) if runner.local.log_file else None, log_offset=self.log_offset,
            full_refresh=request.full_refresh or bool(request.full_refresh_selection),
            remote_url=runner.local.remote_url,
        )

    # -- output --------------------------------------------------------------------------------
    def say(self, text: str) -> None:
        self.runner.print(text)

    def add(self, event: dict[str, Any]) -> None:
        assert self.stream is not None
        self.stream.add(event)

    def warn(self, measurement: str, reason: str, flow: str | None = None) -> None:
        """A figure that could not be measured: printed, and a WARN event in the event log."""
        self.say(f"  warning: {measurement} not measured: {reason}")
        origin = self.flow_origin(flow) if flow and self.registry is not None else self.origin
        self.add(events.measurement_warning(origin, now(), measurement, reason))

    def update_state(self, state: str, timestamp: datetime | None = None, **kw: Any) -> None:
        self.add(events.update_progress(self.origin, timestamp or now(), state, **kw))
        self.say(f"  update {self.update_id[:8]} {state}")

    def save_record(self) -> None:
        inflight.save(self.home, self.record)

    # -- configuration -------------------------------------------------------------------------
    def configuration(self) -> dict[str, str]:
        conf = {**self.pipeline.configuration, **self.runner.settings.configuration_of(self.pipeline.key),
                **dict(self.request.configuration)}
        conf[adapter.ENGINE_KEY] = "local"
        conf.setdefault(adapter.SINK_ROOT_KEY, str(self.home.sinks / self.pipeline.name))
        conf.setdefault(adapter.CATALOG_KEY, self.catalog)
        conf.setdefault(adapter.SCHEMA_KEY, self.schema)
        conf[measure.USER_METADATA_CONF] = measure.commit_tag(self.update_id)
        return conf

    # -- names and lookups ---------------------------------------------------------------------
    def qualified(self, name: str) -> str:
        return name if "." in name else f"{self.catalog}.{self.schema}.{name}"

    def flow_target(self, flow_short: str) -> tuple[str | None, bool]:
        """(target dataset, target is a sink) of a registered flow."""
        assert self.registry is not None
        flow = self.registry.flows.get(flow_short)
        if flow is None:
            return None, False
        output = self.registry.outputs.get(flow.target)
        return flow.target, bool(output and output.dataset_type == "SINK")

    def sdp_flow_name(self, flow_short: str) -> str:
        """The flow's name as SDP reports it (qualified for a table's own flow)."""
        target, is_sink = self.flow_target(flow_short)
        if not is_sink and target is not None and short_name(target) == flow_short:
            return self.qualified(flow_short)
        return flow_short

    def flow_result(self, flow_short: str) -> FlowResult | None:
        """The flow's state as SDP's events left it. SDP names an append flow into a table qualified in
        its events, though the flow keeps its short name everywhere else (`sdp_flow_name`)."""
        status = self.state.flow_status
        return status.get(self.sdp_flow_name(flow_short)) or status.get(self.qualified(flow_short))

    def flow_origin(self, flow_short: str, batch_id: int | None = None) -> events.Origin:
        record = self.flow_records.get(flow_short)
        if record is None:  # not a registered flow (cannot happen for SDP's own flows)
            return self.origin.replace(flow_name=flow_short, batch_id=batch_id)
        return measure.flow_origin(self.origin, record, batch_id)

    def checkpoint(self, flow_short: str) -> Path | None:
        record = self.flow_records.get(flow_short)
        return measure.checkpoint_of(record) if record is not None else None

    def is_streaming_flow(self, flow_short: str) -> bool:
        """Whether a flow (by its last name part) may run as a streaming query: every flow but one
        registered here without a streaming read."""
        flows = self.registry.flows.values() if self.registry is not None else ()
        flow = next((f for f in flows if short_name(f.name) == flow_short), None)
        return flow is None or flow.streaming_inputs

    def is_table(self, name: str) -> bool:
        assert self.registry is not None
        output = self.registry.outputs.get(short_name(name))
        return bool(output and output.dataset_type in ("STREAMING_TABLE", "MATERIALIZED_VIEW"))

    def materialized_views(self) -> list[str]:
        assert self.registry is not None
        return [o.name for o in self.registry.outputs.values() if o.dataset_type == "MATERIALIZED_VIEW"]

    def local_table_dir(self, table: str, sink: str | None = None) -> Path | None:
        """The folder on this machine of a table, or of the sink named `sink` (at its path): where its
        Delta log is read. None on `--remote` and for a sink elsewhere (a scheme other than file)."""
        if self.local.remote:
            return None
        location = self.graph.sinks[sink].path if sink in self.graph.sinks else None
        if location is not None:
            return Path(checkpoints.to_local_path(location)) if urlparse(location).scheme in ("", "file") else None
        return measure.local_table_dir(self.home.warehouse, self.qualified(table))

    def fresh_journal(self) -> Path:
        path = inflight.journal_path(self.home, self.pipeline.name)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("")
        return path

