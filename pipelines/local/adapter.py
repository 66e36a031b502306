"""The local engine's side of `pipelines.adapter`: how the pipeline definitions read files, enforce
expectations and declare tables on open-source SDP, and what they record for the local runner.

`LocalEngine` implements `pipelines.adapter.Engine`; the local project registers it under
`lakewatch.engine=local` (`adapter.register_engine`), so the deployed package never imports it. While
the runner registers a pipeline's definition files (`recording`), the engine records into a
`LocalGraph` what the runner needs to measure the update: which flows read which landing folders,
each dataset's expectations, the sinks, the clean-source modes and the options without a local
equivalent.
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
from dataclasses import dataclass, field
from typing import Iterator, Mapping, Sequence

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from pipelines import expectations as expectation_rules
from pipelines.adapter import (CATALOG_KEY, CHECKPOINT_INTERVAL, FILE_STATE_TABLE, LOCAL_CHECKPOINT_INTERVAL,
                               ROW_TRACKING, SCHEMA_KEY, SINK_ROOT_KEY, Decorator, QueryFunction,
                               dq_metric_name, landing_root_of, output_metric_name)
from pipelines.config import TableSpec
from pipelines.formats import file_format
from pipelines.table_options import CLEAN_DELETE, CLEAN_MOVE, CLEAN_OFF


def local_file_options(table: TableSpec, landing_root: str) -> tuple[dict[str, str], list[str]]:
    """The table's Auto Loader options as options of Spark's file source, and a note for each one that
    has no local equivalent or behaves otherwise (the runner prints them once per table).

    Spark 4.2's FileStreamOptions: `maxFilesPerTrigger` and `maxBytesPerTrigger` (a positive whole
    number of bytes; the two cannot both be set), `cleanSource` archive|delete|off with
    `sourceArchiveDir` for archive. The source cleans the files of batch N when batch N+1 starts (its
    `commit`), on a cleaner thread, so the files of an update's last batch stay until a later update
    runs a batch; an archived file lands under the archive folder with its full path."""
    # Every file under the landing folder, subfolders too, as Auto Loader lists a path (and as the file
    # state's `checkpoints.list_landing` counts them), with no partition columns from `key=value` folder
    # names. Without it Spark's file source reads a micro-batch whose files include a name with a glob
    # character (`?`, `[`, `{`) once more per such file: each other file of the batch landed in bronze
    # two or three times; it skips files in plain subfolders for good, and
    # fails every update once two subfolder depths are mixed (CONFLICTING_DIRECTORY_STRUCTURES).
    options: dict[str, str] = {"recursiveFileLookup": "true"}
    notes: list[str] = []
    if table.max_files_per_trigger is not None:
        options["maxFilesPerTrigger"] = str(table.max_files_per_trigger)
    if table.max_bytes_per_trigger is not None:
        if table.max_files_per_trigger is None:
            options["maxBytesPerTrigger"] = str(table.max_bytes_per_trigger)
        else:
            notes.append("max_bytes_per_trigger is not applied locally: Spark's file source refuses it together "
                         "with maxFilesPerTrigger (Auto Loader stops at whichever limit comes first); "
                         "max_files_per_trigger applies")
    for key, on in (("use_notifications", table.use_notifications),
                    ("use_managed_file_events", table.use_managed_file_events)):
        if on:
            notes.append(f"{key} has no local equivalent: the local file source lists the landing folder "
                         "for every micro-batch")
    if table.clean_source != CLEAN_OFF:
        if table.clean_source == CLEAN_MOVE:
            options["cleanSource"] = "archive"
            options["sourceArchiveDir"] = table.move_destination_path(landing_root) or ""
            done = "moves a committed file under clean_source_move_destination, with its full path,"
        else:
            options["cleanSource"] = "delete"
            done = "deletes a committed file"
        retention = (f"clean_source_retention '{table.clean_source_retention}'" if table.clean_source_retention
                     else "Auto Loader's default retention of 30 days")
        notes.append(f"clean_source {table.clean_source.lower()}: locally Spark's file source {done} when the "
                     f"micro-batch after the one that read it starts, without a retention period "
                     f"({retention} has no local equivalent)")
    return options, notes


@dataclass
class DatasetExpectations:
    dataset: str
    expectations: tuple[expectation_rules.Expectation, ...]
    streaming: bool
    query: QueryFunction  # the dataset's query before expectations are applied


@dataclass(frozen=True)
class LocalSink:
    name: str
    path: str
    schema_ddl: str


@dataclass
class LocalGraph:
    """What the local engine learned while the definitions were registered."""

    file_sources: dict[str, str] = field(default_factory=dict)  # flow name -> landing folder
    expectations: dict[str, DatasetExpectations] = field(default_factory=dict)
    measured_flows: set[str] = field(default_factory=set)
    sinks: dict[str, LocalSink] = field(default_factory=dict)
    # flow name -> (clean_source mode DELETE or MOVE, the archive folder for MOVE)
    clean_sources: dict[str, tuple[str, str | None]] = field(default_factory=dict)
    source_notes: dict[str, list[str]] = field(default_factory=dict)  # table -> options without local equivalent
    record_counters: dict[str, str] = field(default_factory=dict)  # flow name -> formats.count_records counter


# The graph of the registration under way in this context; set only by `recording`.
_RECORDING: contextvars.ContextVar[LocalGraph | None] = contextvars.ContextVar("lakewatch_local_graph", default=None)


@contextlib.contextmanager
def recording(graph: LocalGraph) -> Iterator[LocalGraph]:
    """Has the local engine record into `graph` what the definitions registered in this context declare
    (the local runner wraps its registration of a pipeline's definition files in it)."""
    token = _RECORDING.set(graph)
    try:
        yield graph
    finally:
        _RECORDING.reset(token)


def recorded_graph() -> LocalGraph:
    """The graph `recording` installed; outside one (a test or a session reading files through the local
    engine without a runner) a fresh graph that nobody reads."""
    graph = _RECORDING.get()
    return graph if graph is not None else LocalGraph()


def enforce(df: DataFrame, dataset: str, expectations: Sequence[expectation_rules.Expectation],
            streaming: bool) -> DataFrame:
    """Applies expectation actions as Databricks does; on streams also counts passed/failed rows."""
    if expectations and streaming:
        df = df.observe(
            dq_metric_name(dataset),
            *expectation_rules.count_columns(expectations),
            F.count_if(~expectation_rules.all_pass(expectations, expectation_rules.Action.DROP))
            .alias(expectation_rules.DROPPED_METRIC),
        )
    if any(e.action == expectation_rules.Action.FAIL for e in expectations):
        df = df.where(
            F.when(expectation_rules.all_pass(expectations, expectation_rules.Action.FAIL), F.lit(True)).otherwise(
                F.raise_error(expectation_rules.fail_message(dataset, expectations))
            )
        )
    if any(e.action == expectation_rules.Action.DROP for e in expectations):
        df = df.where(expectation_rules.all_pass(expectations, expectation_rules.Action.DROP))
    return df


class LocalEngine:
    name = "local"

    def read_files(self, spark: SparkSession, table: TableSpec, path: str) -> DataFrame:
        root = landing_root_of(table, path)
        options, notes = local_file_options(table, root)
        graph = recorded_graph()
        if notes:
            graph.source_notes[table.name] = notes
        if table.clean_source in (CLEAN_DELETE, CLEAN_MOVE):
            graph.clean_sources[table.bronze_name] = (table.clean_source, table.move_destination_path(root))
        return file_format(table).read_local(spark, table, path, options)

    def sink_options(self, spark: SparkSession, sink: str, schema_ddl: str) -> dict[str, str]:
        root = spark.conf.get(SINK_ROOT_KEY)
        path = f"{root.rstrip('/')}/{sink}"
        recorded_graph().sinks[sink] = LocalSink(sink, path, schema_ddl)
        return {"path": path}

    def register_file_source(self, flow: str, path: str, counter: str) -> None:
        graph = recorded_graph()
        graph.file_sources[flow] = path
        graph.record_counters[flow] = counter

    def table_properties(self, properties: Mapping[str, str]) -> dict[str, str]:
        """`properties` without `delta.enableRowTracking`.

        Row tracking is there for Databricks' incremental refresh of materialized views; open-source
        SDP recomputes them in full, so locally it buys nothing and costs much: each commit to a
        row-tracking table reads the table's state for row IDs, and SDP's ALTER at every update with
        the property set runs a backfill scan, costly per commit and per table even on tiny tables
        (see bench/RESULTS.md)."""
        return {k: v for k, v in properties.items() if k != ROW_TRACKING}

    def materialized_view_properties(self, properties: Mapping[str, str]) -> dict[str, str]:
        """`table_properties`, with a Delta checkpoint every 100 commits instead of every 10.

        Open-source SDP rewrites a materialized view at every refresh (as shipped, a TRUNCATE and a
        write: two commits; with lakewatch's rewrite of it, pipelines/local/sdp_classes.py, one
        overwrite), so with Delta's default every fifth refresh would write a checkpoint of every view,
        which makes that refresh markedly slower. The table is rewritten whole each time, so its log
        holds one live file set; loading 90 commits of it cold costs about as much as loading a
        checkpoint and one commit (see bench/RESULTS.md)."""
        return {**self.table_properties(properties), CHECKPOINT_INTERVAL: LOCAL_CHECKPOINT_INTERVAL}

    def file_state_sql(self, spark: SparkSession, bronze_tables: Sequence[str]) -> str:
        catalog, schema = spark.conf.get(CATALOG_KEY), spark.conf.get(SCHEMA_KEY)
        return f"{catalog}.{schema}.{FILE_STATE_TABLE}"

    def query(
        self,
        dataset: str | None,
        flow: str,
        expectations: Sequence[expectation_rules.Expectation] = (),
        streaming: bool = True,
    ) -> Decorator:
        rules = tuple(expectations)

        def decorate(function: QueryFunction) -> QueryFunction:
            graph = recorded_graph()
            if dataset is not None and rules:
                graph.expectations[dataset] = DatasetExpectations(dataset, rules, streaming, function)
            if streaming:
                graph.measured_flows.add(flow)

            @functools.wraps(function)
            def enforced() -> DataFrame:
                df = enforce(function(), dataset or flow, rules, streaming)
                if streaming:
                    df = df.observe(output_metric_name(flow), F.count(F.lit(1)).alias("num_output_rows"))
                return df

            return enforced

        return decorate
