"""The pipeline's definitions in an update: registering the definition files with SDP (the local
engine recording what the runner measures into the update's own `LocalGraph`), the in-flight record
of the flows, the local Delta sinks, and the `dataset_definition`, `sink_definition` and
`flow_definition` events."""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path
from typing import Any, Callable

from pyspark.pipelines.cli import LibrariesGlob, PipelineSpec, register_definitions
from pyspark.pipelines.spark_connect_pipeline import create_dataflow_graph

from pipelines.local import adapter as local_adapter
from pipelines.eventlog import events
from pipelines.local import checkpoints
from pipelines.local import codegen, engine, expectation_decorators, inflight, measure, polling
from pipelines.local.plan_schemas import Session as PlanSession
from pipelines.local.plan_schemas import plan_key
from pipelines.local.registry import RecordedFlow, RecordingRegistry
from pipelines.local.sdp_events import short_name
from pipelines.local.update.context import UpdateContext
from pipelines.local.update.messages import one_line
from pipelines.local.update.types import now

Fields = list[tuple[str, str]]


class Definitions:
    """Registers one update's definitions and writes their events."""

    def __init__(self, ctx: UpdateContext) -> None:
        self.ctx = ctx
        self._plan_session: PlanSession | bool | None = None  # False: could not be read

    def register(self) -> None:
        """Creates the dataflow graph with the update's SQL configuration and registers the pipeline's
        definition files in it (main thread)."""
        ctx = self.ctx
        ctx.registered_at = now()
        conf = ctx.configuration()
        backlogs = codegen.landing_backlogs(conf, ctx.storage, ctx.catalog, ctx.schema)
        choice = codegen.choose(backlogs, conf)
        conf.update(choice.settings)  # the graph's SQL configuration: every flow of the update runs with it
        conf.update(polling.choose(backlogs, conf))  # read from the session by SDP's flow scheduler
        for key, value in conf.items():
            ctx.spark.conf.set(key, value)
        graph_id = create_dataflow_graph(ctx.spark, default_catalog=ctx.catalog, default_database=ctx.schema,
                                         sql_conf=conf)
        ctx.graph = local_adapter.LocalGraph()
        registry = ctx.registry = RecordingRegistry(ctx.spark, graph_id)
        root = ctx.runner.bundle.root
        globs = [LibrariesGlob(str(Path(g).relative_to(root))) for g in ctx.pipeline.library_globs]
        spec = PipelineSpec(
            name=ctx.pipeline.name, storage=ctx.storage.as_uri(), catalog=ctx.catalog,
            database=ctx.schema, configuration=conf, libraries=globs,
        )
        ctx.say(f"  registering definitions from {', '.join(g.include for g in spec.libraries)}")
        with local_adapter.recording(ctx.graph), expectation_decorators.installed():
            _quietly(lambda: register_definitions(root / "spark-pipeline.yml", registry, spec, ctx.spark, graph_id))
        ctx.graph_id = graph_id

    def record_flows(self) -> None:
        """Completes the in-flight record with what recovery needs should this runner die."""
        ctx = self.ctx
        assert ctx.registry is not None
        graph = ctx.graph
        flows = []
        for flow in ctx.registry.flows.values():
            target, is_sink = ctx.flow_target(flow.name)
            root = (checkpoints.flow_checkpoint_root(ctx.storage, flow.name, short_name(target), ctx.catalog, ctx.schema,
                                                     is_sink)
                    if target else None)
            checkpoint = checkpoints.latest_checkpoint(root) if root else None
            flows.append(inflight.FlowRecord(
                name=flow.name, sdp_name=ctx.sdp_flow_name(flow.name), target=target, is_sink=is_sink,
                measured=flow.name in graph.measured_flows,
                checkpoint_root=str(root) if root else None,
                landing=graph.file_sources.get(flow.name),
                target_table=ctx.qualified(short_name(target)) if target else None,
                checkpoint_before=str(checkpoint) if checkpoint else None,
                batch_before=max(checkpoints.committed_batches(checkpoint), default=-1) if checkpoint else -1,
                clean_source=graph.clean_sources.get(flow.name, (None, None))[0],
                archive_dir=graph.clean_sources.get(flow.name, (None, None))[1],
                record_counter=graph.record_counters.get(flow.name),
            ))
        ctx.record.flows = flows
        ctx.flow_records = {f.name: f for f in flows}
        ctx.record.registered = True
        ctx.save_record()

    def create_sinks(self) -> None:
        """Creates each local Delta sink before the run, as a table named after the sink.

        Two append flows that create one Delta sink at once collide (DELTA_PROTOCOL_CHANGED); a sink
        that exists up front does not, and its name makes it queryable like a `tableName` sink.
        """
        ctx = self.ctx
        for sink in ctx.graph.sinks.values():
            ctx.spark.sql(
                f"CREATE TABLE IF NOT EXISTS {ctx.qualified(sink.name)} ({sink.schema_ddl}) "
                f"USING DELTA LOCATION '{sink.path}' "
                f"TBLPROPERTIES ('delta.enableChangeDataFeed' = 'true')"
            )

    def write(self) -> None:
        """dataset, sink and flow definitions, once per update (when its tables exist)."""
        ctx = self.ctx
        registry = ctx.registry
        if ctx.state.definitions_written or registry is None:
            return
        ctx.state.definitions_written = True
        at = ctx.registered_at
        flows_per_target: dict[str, int] = {}
        for flow in registry.flows.values():
            flows_per_target[flow.target] = flows_per_target.get(flow.target, 0) + 1
        schemas: dict[str, Fields | None] = {}
        for output in registry.outputs.values():
            if output.dataset_type in ("STREAMING_TABLE", "MATERIALIZED_VIEW", "SINK"):
                schemas[output.name] = self.table_schema(output.name)
            else:
                view_flow = registry.flows.get(output.name)
                schemas[output.name] = self.view_schema(view_flow) if view_flow else None
        for output in registry.outputs.values():
            fields = schemas.get(output.name)
            if output.dataset_type == "SINK":
                origin = ctx.origin.replace(sink_name=output.name)
                ctx.add(events.sink_definition(origin, at, output.format or "delta", output.options))
                continue
            rules = ctx.graph.expectations.get(output.name)
            origin = ctx.origin.replace(dataset_name=ctx.qualified(output.name),
                                        table_name=ctx.qualified(output.name) if output.dataset_type != "VIEW" else None)
            ctx.add(events.dataset_definition(
                origin, at, output.dataset_type, flows_per_target.get(output.name, 0),
                expectations=[{"name": e.name, "constraint": e.condition, "action": e.action.value.upper()}
                              for e in (rules.expectations if rules else ())],
                schema=events.schema_fields(fields) if fields else None,
            ))
        for flow in registry.flows.values():
            output = registry.outputs.get(flow.target)
            kind = output.dataset_type if output else "STREAMING_TABLE"
            flow_type = {"MATERIALIZED_VIEW": "MATERIALIZED_VIEW", "VIEW": "VIEW"}.get(kind, "APPEND")
            fields = schemas.get(flow.target)
            is_sink = kind == "SINK"
            ctx.add(events.flow_definition(
                ctx.flow_origin(flow.name), at, flow_type,
                output_dataset=None if is_sink else ctx.qualified(flow.target),
                output_sink=flow.target if is_sink else None,
                input_datasets=[ctx.qualified(d) if ctx.is_table(d) else d for d in flow.input_datasets],
                schema=events.schema_fields(fields) if fields else None,
                source_code_location=self.source_code_location(flow),
            ))

    def table_schema(self, name: str) -> Fields | None:
        try:
            return [(f.name, f.dataType.simpleString())
                    for f in self.ctx.spark.table(self.ctx.qualified(name)).schema.fields]
        except Exception:  # noqa: BLE001 (not created: the flow failed before writing)
            return None

    def view_schema(self, flow: RecordedFlow) -> Fields | None:
        """A view's schema: Spark's analysis of its plan, or the schema an earlier update's analysis gave
        for the same plan in the same session settings (plan_schemas: only for plans nothing outside enters)."""
        plan_schemas = self.ctx.runner.plan_schemas
        session = self.plan_session()
        key = plan_key(flow.relation, session) if session is not None and flow.relation is not None else None
        known = plan_schemas.get(key) if key else None
        if known is not None:
            return known
        fields = _dataframe_schema(flow.dataframe)
        if key and fields is not None:
            try:
                plan_schemas.put(key, fields)
            except OSError as e:  # the next update analyses it again
                self.ctx.say(f"  warning: view schema not kept in {plan_schemas.path}: {e}")
        return fields

    def plan_session(self) -> PlanSession | None:
        """What besides a plan decides its schema, read once per update: the Spark version, the engine's
        settings, the session's SQL settings (a job's SQL task may have SET one), the pipeline
        configuration and the user functions. None on a `--remote` endpoint, whose settings lakewatch
        does not know, or when they cannot be read (then every view is analysed)."""
        ctx = self.ctx
        if self._plan_session is None:
            self._plan_session = False
            info = None if ctx.local.remote else engine.read_info(ctx.home)
            if info is not None:
                try:
                    per_update = {codegen.FACTORY_MODE, polling.POLLING_INTERVAL}  # chosen by each update's backlog
                    sql = {k: v for k, v in ctx.spark.conf.getAll.items()
                           if k.startswith("spark.sql.") and k not in per_update}
                    conf = {k: v for k, v in ctx.configuration().items() if k != measure.USER_METADATA_CONF}
                    functions = frozenset(str(r[0]).rsplit(".", 1)[-1].lower()
                                          for r in ctx.spark.sql("SHOW USER FUNCTIONS").collect())
                    self._plan_session = PlanSession({
                        "spark_version": ctx.spark.version, "engine_settings": info.fingerprint,
                        "sql_conf": json.dumps(sorted(sql.items())), "configuration": json.dumps(sorted(conf.items())),
                    }, functions)
                except Exception as e:  # noqa: BLE001 (then the views are analysed, as before)
                    ctx.say(f"  warning: view schemas analysed anew: the session's settings could not be read: "
                            f"{one_line(str(e))}")
        return self._plan_session or None

    def source_code_location(self, flow: RecordedFlow) -> dict[str, Any] | None:
        """Where the flow was declared: the file relative to the bundle root when it is inside it."""
        if not flow.source_file:
            return None
        path = Path(flow.source_file)
        try:
            path = path.resolve().relative_to(self.ctx.runner.bundle.root.resolve())
        except ValueError:
            pass
        return {"file_name": str(path), "line_number": flow.source_line}


def _dataframe_schema(df: Any) -> Fields | None:
    try:
        return [(f.name, f.dataType.simpleString()) for f in df.schema.fields]
    except Exception:  # noqa: BLE001 (a view over pipeline datasets cannot be analyzed outside the run)
        return None


def _quietly(action: Callable[[], None]) -> None:
    """Runs SDP's definition loading without its per-file log lines on stdout."""
    with contextlib.redirect_stdout(io.StringIO()):
        action()
