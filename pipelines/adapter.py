"""The one place where Databricks and the local engine differ.

The pipeline configuration key `lakewatch.engine` picks the engine: `databricks` (the default, set
by the bundle) or `local` (set by the local runner). Everything else in the pipeline definitions is
plain PySpark that both engines run.

| concern       | DatabricksEngine                                  | LocalEngine                                   |
| ------------- | ------------------------------------------------- | --------------------------------------------- |
| file source   | Auto Loader, `rescue` mode, `_rescued_data`        | Spark's file stream + `formats.<format>`      |
| expectations  | `dp.expect_all`, `_or_drop`, `_or_fail`            | same actions enforced, counts via `observe`   |
| delta sink    | `tableName` in the pipeline's catalog and schema   | a Delta `path` under the local home           |
| row tracking  | on for tables that views read (incremental refresh) | off (SDP recomputes every view in full)     |

`DatabricksEngine` is here; `LocalEngine` is in `pipelines.local.adapter`, registered by the local
project (`register_engine`), so that the package deployed to Databricks never imports the local engine.
"""

from __future__ import annotations

from typing import Callable, Mapping, Protocol, Sequence

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from pipelines import expectations as expectation_rules
from pipelines.config import TablesConfig, TableSpec, load_tables
from pipelines.table_options import CLEAN_OFF
from pipelines.formats import file_format
from pipelines.sqltypes import quote_string
from pipelines.formats.files import metadata_columns

ENGINE_KEY = "lakewatch.engine"
CATALOG_KEY = "lakewatch.catalog"
SCHEMA_KEY = "lakewatch.schema"
TABLES_CONFIG_KEY = "lakewatch.tables_config"
LANDING_ROOT_KEY = "lakewatch.landing_root"
SINK_ROOT_KEY = "lakewatch.sink_root"  # local engine only
EVENT_LOG_KEY = "lakewatch.event_log"  # observability pipeline: the ingest pipeline's event log table
# observability pipeline: the event log tables of the other pipelines it observes, comma-separated
OBSERVED_EVENT_LOGS_KEY = "lakewatch.observed_event_logs"
# observability pipeline: the event log's history table (the job's archive_event_log task fills it)
EVENT_LOG_HISTORY_KEY = "lakewatch.event_log_history"
# observability pipeline: the snapshots of the ingest tables' sizes (the job's snapshot_table_sizes task)
TABLE_SIZES_KEY = "lakewatch.table_sizes"
FILE_STATE_TABLE = "lakewatch_file_state"  # local engine: written by the runner after each update

ROW_TRACKING = "delta.enableRowTracking"
CHECKPOINT_INTERVAL = "delta.checkpointInterval"
# Local tables rewritten or appended to many times per update (materialized views, the event log): a
# Delta checkpoint every 100 commits instead of Delta's 10 (see `pipelines.local.adapter.LocalEngine.materialized_view_properties`).
LOCAL_CHECKPOINT_INTERVAL = "100"

QueryFunction = Callable[[], DataFrame]
Decorator = Callable[[QueryFunction], QueryFunction]


def dq_metric_name(dataset: str) -> str:
    """Name of the observed metric holding a dataset's expectation counts (local engine)."""
    return f"lakewatch_dq:{dataset}"


def output_metric_name(flow: str) -> str:
    """Name of the observed metric holding a flow's written-row count (local engine)."""
    return f"lakewatch_out:{flow}"


class Engine(Protocol):
    name: str

    def read_files(self, spark: SparkSession, table: TableSpec, path: str) -> DataFrame:
        """Streaming read of a landing folder: typed columns, `_rescued_data`, `_corrupt_record`,
        `_source_file` and `_source_file_modification_time`."""
        ...

    def sink_options(self, spark: SparkSession, sink: str, schema_ddl: str) -> dict[str, str]:
        """Options of a Delta sink created with `dp.create_sink`; `schema_ddl` is its rows' schema."""
        ...

    def register_file_source(self, flow: str, path: str, counter: str) -> None:
        """Notes that `flow` streams the files of `path` (the local runner measures its backlog) and how
        their records are counted (`formats.count_records`)."""
        ...

    def table_properties(self, properties: Mapping[str, str]) -> dict[str, str]:
        """The table properties to declare for a dataset whose definition asks for `properties`."""
        ...

    def materialized_view_properties(self, properties: Mapping[str, str]) -> dict[str, str]:
        """The table properties to declare for a materialized view whose definition asks for `properties`."""
        ...

    def file_state_sql(self, spark: SparkSession, bronze_tables: Sequence[str]) -> str:
        """A subquery with one row per landing file: table_name, path, size, create_time,
        discovery_time, commit_time, state (committed, discovered or pending), ..., archive_time,
        archive_mode and move_location (docs/observability.md "The file state the tables rely on")."""
        ...

    def query(
        self,
        dataset: str | None,
        flow: str,
        expectations: Sequence[expectation_rules.Expectation] = (),
        streaming: bool = True,
    ) -> Decorator:
        """Decorator for a dataset's (or append flow's) query function, placed under the `dp`
        decorator: applies the expectations with their actions."""
        ...


def landing_root_of(table: TableSpec, path: str) -> str:
    """The landing root a table's landing folder `path` (from `TableSpec.landing_path`) lies under."""
    suffix = "/" + table.landing
    assert path.endswith(suffix), (path, table.landing)
    return path[: -len(suffix)] or "/"


def cloud_files_options(table: TableSpec, landing_root: str) -> dict[str, str]:
    """The table's Auto Loader options as `cloudFiles.*` reader options (docs/tables.md "Auto Loader
    options"). The byte limit is passed as a byte string in bytes (`<n>b`)."""
    options: dict[str, str] = {}
    if table.max_files_per_trigger is not None:
        options["cloudFiles.maxFilesPerTrigger"] = str(table.max_files_per_trigger)
    if table.max_bytes_per_trigger is not None:
        options["cloudFiles.maxBytesPerTrigger"] = f"{table.max_bytes_per_trigger}b"
    if table.use_notifications:
        options["cloudFiles.useNotifications"] = "true"
    if table.use_managed_file_events:
        options["cloudFiles.useManagedFileEvents"] = "true"
    if table.clean_source != CLEAN_OFF:
        options["cloudFiles.cleanSource"] = table.clean_source
        destination = table.move_destination_path(landing_root)
        if destination is not None:
            options["cloudFiles.cleanSource.moveDestination"] = destination
        if table.clean_source_retention is not None:
            options["cloudFiles.cleanSource.retentionDuration"] = table.clean_source_retention
    return options


def _folder_exists(spark: SparkSession, folder: str) -> bool:
    """Whether Spark can list `folder` (analysing a batch read checks the path)."""
    try:
        spark.read.format("binaryFile").load(folder).schema  # noqa: B018 (the analysis is the check)
        return True
    except Exception:  # noqa: BLE001 (not there, or not readable: not counted there)
        return False


class DatabricksEngine:
    name = "databricks"

    def read_files(self, spark: SparkSession, table: TableSpec, path: str) -> DataFrame:
        reader = spark.readStream.format("cloudFiles")
        for key, value in cloud_files_options(table, landing_root_of(table, path)).items():
            reader = reader.option(key, value)
        return (
            reader
            .options(**file_format(table).reader_options(table))
            .option("cloudFiles.format", table.format)
            .option("cloudFiles.schemaEvolutionMode", "rescue")
            .option("rescuedDataColumn", "_rescued_data")
            .option("columnNameOfCorruptRecord", "_corrupt_record")
            # With an explicit schema, the rescued and corrupt columns are declared in it too.
            .schema(f"{table.schema_ddl}, `_rescued_data` STRING, `_corrupt_record` STRING")
            .load(path)
            .select(
                *[F.col(f"`{c}`") for c in table.column_names],
                F.col("_rescued_data"),
                F.col("_corrupt_record"),
                *metadata_columns(),
            )
        )

    def sink_options(self, spark: SparkSession, sink: str, schema_ddl: str) -> dict[str, str]:
        catalog = spark.conf.get(CATALOG_KEY)
        schema = spark.conf.get(SCHEMA_KEY)
        return {"tableName": f"{catalog}.{schema}.{sink}"}

    def register_file_source(self, flow: str, path: str, counter: str) -> None:
        """Auto Loader reports backlog itself."""

    def table_properties(self, properties: Mapping[str, str]) -> dict[str, str]:
        return dict(properties)

    def materialized_view_properties(self, properties: Mapping[str, str]) -> dict[str, str]:
        return dict(properties)

    def file_state_sql(self, spark: SparkSession, bronze_tables: Sequence[str]) -> str:
        """`cloud_files_state()` of every bronze table (DBR 13.3+), in the local file state's columns.

        What Databricks lacks, and what stands in for it:
        - `commit_time` is filled only on DBR 18.2+ (or with `cloudFiles.cleanSource` on 16.4-18.1); before
          that it is NULL and `state` is `discovered` for every file (the observability tables then take a
          file with rows in bronze as landed, without a latency).
        - `first_commit_time` is `commit_time`: the state describes the live checkpoint only, and a full
          refresh starts a new one, so the first commit of a file committed again is lost (file_latency
          leaves such a file's latency NULL instead of measuring a new one).
        - `batch_id`: not in the state (NULL).
        - `lines` (the file's records, for reconciliation) is counted by the table's format over its landing
          folder (`formats.<format>.records_sql`: `read_files` as text, whole text, or Parquet, grouped by
          `_metadata.file_path`; `ignoreCorruptFiles` keeps an incomplete gzip from failing the refresh, its
          count is then partial). A file of which `read_files` makes no row (an empty file, a Parquet file
          without rows) has no count: NULL, `not_counted`.
          It needs the landing root in the observability pipeline's configuration (`lakewatch.landing_root`);
          without it `lines` is NULL (reconciliation says `not_counted`). It reads every landing file at
          each refresh: the cost grows with the landing folder.
        - `committed_size` and `committed_modification_time` are the state's `size` and `create_time` (what
          Auto Loader recorded when it took the file); `modified_after_ingest` is NULL: the state does not
          say whether the file changed since (Auto Loader with `cloudFiles.allowOverwrites=false`, the
          default, does not read a changed file again).
        - `archive_time`, `archive_mode` (MOVE or DELETE) and `move_location` are the state's own (filled
          with `cloudFiles.cleanSource`). A moved file's lines are counted at its `move_location` (the
          move destination is read too, once it exists); a deleted file's are not (NULL: `not_counted`).
        """
        from pipelines.pathkeys import path_key

        landings = self._landing_folders(spark)
        parts = []
        for table in bronze_tables:
            flow = table.rsplit(".", 1)[-1].strip("`")
            spec, folders = landings.get(flow, (None, []))
            if spec is not None and folders:
                # records per file, as the local count makes them (formats.<format>.records_sql)
                fmt = file_format(spec)
                counted = " UNION ALL ".join(
                    fmt.records_sql(spec, quote_string(folder), path_key) for folder in folders
                )
                # a file cleanSource moved is counted where it is now (move_location)
                lines = (
                    f"LEFT JOIN (SELECT path_key, sum(n) AS lines FROM ({counted}) GROUP BY path_key) l "
                    f"ON l.path_key = {path_key('coalesce(s.move_location, s.path)')}"
                )
                lines_column = "l.lines"
            else:
                lines, lines_column = "", "CAST(NULL AS BIGINT)"
            parts.append(
                f"SELECT '{table}' AS table_name, '{flow}' AS flow_name, s.path, s.size, s.create_time, "
                f"s.discovery_time, s.commit_time, CAST(NULL AS BIGINT) AS batch_id, "
                f"CASE WHEN s.commit_time IS NOT NULL THEN 'committed' ELSE 'discovered' END AS state, "
                f"s.commit_time AS first_commit_time, {lines_column} AS lines, "
                f"CASE WHEN s.commit_time IS NOT NULL THEN s.size END AS committed_size, "
                f"CASE WHEN s.commit_time IS NOT NULL THEN s.create_time END AS committed_modification_time, "
                f"CAST(NULL AS BOOLEAN) AS modified_after_ingest, "
                f"s.archive_time, s.archive_mode, s.move_location "
                f"FROM cloud_files_state(TABLE({table})) s {lines}".rstrip()
            )
        return "(" + " UNION ALL ".join(parts) + ")"

    @staticmethod
    def _landing_folders(spark: SparkSession) -> dict[str, tuple[TableSpec, list[str]]]:
        """Bronze table name -> its table and the folders its files are in: the landing folder and, with clean_source
        MOVE, the move destination once it exists (Auto Loader creates it with its first move; reading
        a folder that is not there would fail the refresh). Empty without the landing root."""
        root = spark.conf.get(LANDING_ROOT_KEY, None)
        if not root:
            return {}
        folders = {}
        for t in tables_config(spark).tables:
            folders[t.bronze_name] = (t, [t.landing_path(root)])
            destination = t.move_destination_path(root)
            if destination is not None and _folder_exists(spark, destination):
                folders[t.bronze_name][1].append(destination)
        return folders

    def query(
        self,
        dataset: str | None,
        flow: str,
        expectations: Sequence[expectation_rules.Expectation] = (),
        streaming: bool = True,
    ) -> Decorator:
        def decorate(function: QueryFunction) -> QueryFunction:
            from pyspark import pipelines as dp  # Databricks' dp carries the expect_all family

            appliers = (
                (expectation_rules.Action.WARN, getattr(dp, "expect_all", None)),
                (expectation_rules.Action.DROP, getattr(dp, "expect_all_or_drop", None)),
                (expectation_rules.Action.FAIL, getattr(dp, "expect_all_or_fail", None)),
            )
            for action, apply in appliers:
                rules = expectation_rules.by_action(expectations, action)
                if rules:
                    if apply is None:
                        raise RuntimeError(
                            "this runtime's pyspark.pipelines has no expectations; "
                            f"set {ENGINE_KEY}=local to run with the local engine"
                        )
                    function = apply(rules)(function)
            return function

        return decorate


def tables_config(spark: SparkSession) -> TablesConfig:
    """The tables of the pipeline configuration's `lakewatch.tables_config`."""
    return load_tables(spark.conf.get(TABLES_CONFIG_KEY))


# `lakewatch.engine` value -> the engine's implementation. Databricks' is the deployed default; the
# local engine's is added by `pipelines.local` when its runner starts (`register_engine`), so the
# deployed package never imports the local engine.
ENGINES: dict[str, Callable[[], Engine]] = {DatabricksEngine.name: DatabricksEngine}


def register_engine(name: str, factory: Callable[[], Engine]) -> None:
    """Makes `lakewatch.engine=<name>` choose the engine `factory` makes."""
    ENGINES[name] = factory


def engine_for(spark: SparkSession) -> Engine:
    """The engine named by the pipeline configuration (`lakewatch.engine`, default databricks)."""
    name = spark.conf.get(ENGINE_KEY, DatabricksEngine.name) or DatabricksEngine.name
    try:
        return ENGINES[name]()
    except KeyError:
        raise ValueError(f"{ENGINE_KEY}={name!r} is not one of {sorted(ENGINES)} (the local engine is "
                         "registered by lakewatch's local runner)") from None
