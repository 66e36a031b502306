"""A graph element registry that records what it registers, for the event log's
`dataset_definition`, `sink_definition` and `flow_definition` events.

It registers everything with the Spark Connect server exactly as SDP's own registry does, and keeps
each output's type and each flow's target, input datasets (read from the flow's query plan) and
query DataFrame (to read its schema after the run). A SQL definition file's datasets are recorded from
its statements (`pipelines/sqldefs.py`): each CREATE declares a dataset and its one flow, named after
it, whose inputs are the relations its query reads. Locally, their table properties are the local
engine's, as the adapter gives a Python-declared dataset's (`engine_for(spark).table_properties`).
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable, cast

import pyspark.sql.connect.proto as pb2
from pyspark.pipelines.add_pipeline_analysis_context import add_pipeline_analysis_context
from pyspark.pipelines.flow import Flow
from pyspark.pipelines.output import MaterializedView, Output, Sink, StreamingTable, TemporaryView
from pyspark.pipelines.spark_connect_graph_element_registry import (
    SparkConnectGraphElementRegistry,
    source_code_location_to_proto,
)
from pyspark.sql.connect.dataframe import DataFrame as ConnectDataFrame
from pyspark.sql.types import StructType

from pipelines import sqldefs
from pipelines.adapter import Engine, engine_for
from pipelines.local import expectation_decorators, flow_inputs
from pipelines.local.flow_inputs import Inputs, proto_children

DATASET_TYPES = {
    StreamingTable: "STREAMING_TABLE",
    MaterializedView: "MATERIALIZED_VIEW",
    TemporaryView: "VIEW",
    Sink: "SINK",
}
SQL_DATASET_TYPES = {
    sqldefs.STREAMING_TABLE: "STREAMING_TABLE",
    sqldefs.MATERIALIZED_VIEW: "MATERIALIZED_VIEW",
    sqldefs.TEMPORARY_VIEW: "VIEW",
}


@dataclass
class RecordedOutput:
    name: str
    dataset_type: str
    comment: str | None
    format: str | None = None
    options: dict[str, str] = field(default_factory=dict)
    definition: str = ""  # what declares the dataset's table (columns, properties, ...), as text
    registered_at: datetime = field(default_factory=lambda: datetime.now(timezone.utc))


@dataclass
class RecordedFlow:
    name: str
    target: str
    input_datasets: list[str]
    streaming_inputs: bool
    dataframe: Any
    relation: Any = None  # the flow's Connect plan, as registered
    source_file: str | None = None  # where the flow was declared (SDP's Python API records it)
    source_line: int | None = None
    registered_at: datetime = field(default_factory=lambda: datetime.now(timezone.utc))
    query: str | None = None  # a SQL flow's query text
    definition: str | bytes = b""  # the flow's query as registered (SQL text, or its Connect plan)
    inputs: Inputs = field(default_factory=Inputs)  # what its query reads (`flow_inputs`)


@dataclass
class SqlViewQuery:
    """A view declared in SQL, for its schema after the run: its query with the pipeline's views it reads
    bound to their recorded DataFrames (outside the run, a name of the pipeline's own resolves to nothing)."""

    spark: Any
    query: str
    flows: dict[str, RecordedFlow]

    @property
    def schema(self) -> StructType:
        bound = {name: flow.dataframe for name, flow in self.flows.items()
                 if isinstance(flow.dataframe, ConnectDataFrame)
                 and re.search(rf"(?<![\w.]){name}(?![\w.])", self.query)}
        if not bound:
            return self.spark.sql(self.query).schema
        text = self.query.replace("{", "{{").replace("}", "}}")
        for name in bound:
            text = re.sub(rf"(?<![\w.{{]){name}(?![\w.}}])", "{" + name + "}", text)
        return self.spark.sql(text, **bound).schema


def read_tables(message: Any) -> list[tuple[str | None, bool]]:
    """(table name, is streaming) of every read in a Connect relation, in plan order; the name is None
    for a read of a data source (`spark.readStream.format(...).load()`)."""
    found: list[tuple[str | None, bool]] = []

    def walk(node: Any) -> None:
        if isinstance(node, pb2.Read):
            name = node.named_table.unparsed_identifier if node.HasField("named_table") else None
            found.append((name, node.is_streaming))
        for child in proto_children(node):
            walk(child)

    walk(message)
    return found


class RecordingRegistry(SparkConnectGraphElementRegistry):
    def __init__(self, spark: Any, dataflow_graph_id: str) -> None:
        super().__init__(spark, dataflow_graph_id)
        self.outputs: dict[str, RecordedOutput] = {}
        self.flows: dict[str, RecordedFlow] = {}

    def register_output(self, output: Output) -> None:
        super().register_output(output)
        dataset_type = next((v for k, v in DATASET_TYPES.items() if isinstance(output, k)), type(output).__name__)
        recorded = RecordedOutput(output.name, dataset_type, output.comment, definition=repr(
            {k: v for k, v in sorted(vars(output).items()) if k != "source_code_location"}))
        if isinstance(output, Sink):
            recorded.format = output.format
            recorded.options = dict(output.options)
        elif hasattr(output, "format"):
            recorded.format = getattr(output, "format") or "delta"
        self.outputs[output.name] = recorded

    def register_flow(self, flow: Flow) -> None:
        rules = expectation_decorators.declared(flow.func)
        if rules:
            # Databricks' expectation decorators on a plain pyspark.pipelines dataset: enforced and
            # counted by the engine as lakewatch's own datasets' expectations are.
            output = self.outputs.get(flow.target)
            streaming = output is None or output.dataset_type == "STREAMING_TABLE"
            enforced = engine_for(self._spark).query(flow.target, flow.name, rules, streaming)(flow.func)
            flow = dataclasses.replace(flow, func=enforced)
        # Same steps as SparkConnectGraphElementRegistry.register_flow, keeping the plan.
        with add_pipeline_analysis_context(
            spark=self._spark, dataflow_graph_id=self._dataflow_graph_id, flow_name=flow.name
        ):
            df = flow.func()
        relation = cast(ConnectDataFrame, df)._plan.plan(self._client)
        command = pb2.Command()
        command.pipeline_command.define_flow.CopyFrom(
            pb2.PipelineCommand.DefineFlow(
                dataflow_graph_id=self._dataflow_graph_id,
                flow_name=flow.name,
                target_dataset_name=flow.target,
                relation_flow_details=pb2.PipelineCommand.DefineFlow.WriteRelationFlowDetails(relation=relation),
                sql_conf=flow.spark_conf,
                source_code_location=source_code_location_to_proto(flow.source_code_location),
            )
        )
        self._client.execute_command(command)
        reads = read_tables(relation)
        self.flows[flow.name] = RecordedFlow(
            name=flow.name,
            target=flow.target,
            input_datasets=[name for name, _ in reads if name is not None],
            streaming_inputs=any(streaming for _, streaming in reads),
            dataframe=df,
            relation=relation,
            source_file=getattr(flow.source_code_location, "filename", None),
            source_line=getattr(flow.source_code_location, "line_number", None),
            definition=flow_inputs.relation_text(relation) + repr(sorted(flow.spark_conf.items())).encode(),
            inputs=flow_inputs.relation_inputs(relation),
        )

    def register_sql(self, sql_text: str, file_path: Path) -> None:
        text = engine_sql(sql_text, engine_for(self._spark))
        super().register_sql(text, file_path)
        outputs, flows = sql_records(text, Path(file_path).resolve(), self.substitute)  # SDP reads from the spec's folder
        self.outputs.update((o.name, o) for o in outputs)
        for flow, output in zip(flows, outputs):
            if output.dataset_type == "VIEW":
                flow.dataframe = SqlViewQuery(self._spark, self.substitute(flow.query or ""), self.flows)
            self.flows[flow.name] = flow

    def substitute(self, text: str) -> str:
        """`${key}` replaced by the session's configuration, as Spark's parser does for the SQL files."""
        return re.sub(r"\$\{([^}]+)\}", lambda m: str(self._spark.conf.get(m.group(1), m.group(0))), text)


def sql_records(text: str, source_file: Path, substitute: Callable[[str], str]) -> tuple[list[RecordedOutput], list[RecordedFlow]]:
    """The outputs and flows a SQL definition file declares: each CREATE a dataset (a table's format is
    Delta) and its one flow, named after it, reading the relations its query names (`substitute` fills
    in their `${key}` references); a flow reading a STREAM is streaming."""
    outputs, flows = [], []
    for definition in sqldefs.parse_file(text):
        dataset_type = SQL_DATASET_TYPES[definition.kind]
        declared = substitute(repr(dataclasses.replace(definition, line=0)))
        outputs.append(RecordedOutput(definition.name, dataset_type, definition.comment,
                                      format="delta" if dataset_type != "VIEW" else None, definition=declared))
        reads = [(substitute(name), streaming) for name, streaming in definition.reads()]
        flows.append(RecordedFlow(
            name=definition.name,
            target=definition.name,
            input_datasets=[name for name, _ in reads],
            streaming_inputs=any(streaming for _, streaming in reads),
            dataframe=None,
            source_file=str(source_file),
            source_line=definition.line,
            query=definition.query,
            definition=substitute(definition.query),
            inputs=flow_inputs.sql_inputs(substitute(definition.query)),
        ))
    return outputs, flows


def engine_sql(text: str, engine: Engine) -> str:
    """A SQL definition file's text with the table properties `engine` declares for what its datasets
    declare: `table_properties` for a streaming table, `materialized_view_properties` for a
    materialized view (on Databricks both are what is declared)."""
    def properties(kind: str, declared: dict[str, str]) -> dict[str, str]:
        if kind == sqldefs.MATERIALIZED_VIEW:
            return engine.materialized_view_properties(declared)
        return engine.table_properties(declared)

    return sqldefs.replace_properties(text, properties)
