"""The Auto Loader observability pattern, applied to every configured table.

For a table `t` it declares:
- `t_source`  temporary view: the landing files read with rescue semantics (engine-specific);
- `t_bronze`  streaming table (Delta): typed columns, `_rescued_data`, `_corrupt_record`, the
              source file's path and modification time, `_ingested_at`; warns on rescued and
              corrupt rows;
- an append flow `t_to_corrupt_records_sink` of bronze rows with `_corrupt_record` set into the
  shared `corrupt_records_sink` (each row names its source table, file and a content hash);
- `t`         the clean table: a streaming table fed from bronze, without corrupt rows, with the
              table's business expectations;
- `t_rejected` (when `t` has a `drop` expectation) the rows those expectations remove, with the
              clean table's columns and the names of the `drop` expectations each row failed:
              Databricks' documented quarantine pattern, a flow of the inverse condition beside the
              expectation, so that a dropped row is kept and can be found, not only counted.

Why the clean dataset is a streaming table and not a view: the seeds call `{table}` a clean view, but
a view (or a materialized view, which Databricks recomputes in full when it has expectations) would
evaluate the business expectations over all of history at every update: the same row counted once per
update, a bad new batch diluted into history, and a cost that grows with the table. A streaming table
reads each bronze row once, so each row's expectations are counted once, in the update that brought
it, on both engines: Databricks counts `expect_all*` per micro-batch of a streaming table, and the
local engine counts the same conditions with `observe` on the same micro-batches. `drop` rows never
reach the table and are counted in `dropped_records`. A full refresh of bronze needs one of its clean
table too (a streaming read of bronze cannot follow a truncated table).
"""

from __future__ import annotations

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from pipelines import expectations, replay
from pipelines.adapter import CATALOG_KEY, LANDING_ROOT_KEY, SCHEMA_KEY, Engine, engine_for, tables_config
from pipelines.config import (
    CORRUPT_RECORD,
    CORRUPT_RECORDS_SINK,
    FAILED_EXPECTATIONS,
    INGESTED_AT,
    RECORD_HASH,
    REJECTED_AT,
    RESCUED_DATA,
    SOURCE_FILE,
    SOURCE_FILE_MTIME,
    TableSpec,
)
from pipelines.formats import file_format

BRONZE_EXPECTATIONS: tuple[expectations.Expectation, ...] = (
    expectations.warn("no_rescued_data", f"{RESCUED_DATA} IS NULL"),
    expectations.warn("no_corrupt_record", f"{CORRUPT_RECORD} IS NULL"),
)

# Change data feed and row tracking on the tables the observability views read, so Databricks can
# refresh those materialized views incrementally instead of recomputing them.
CHANGE_TRACKING = {"delta.enableChangeDataFeed": "true", "delta.enableRowTracking": "true"}

SINK_SCHEMA_DDL = (
    f"source_table STRING, {CORRUPT_RECORD} STRING, {RECORD_HASH} STRING, {SOURCE_FILE} STRING, "
    f"{SOURCE_FILE_MTIME} TIMESTAMP, {INGESTED_AT} TIMESTAMP, _quarantined_at TIMESTAMP"
)


def bronze_query(source: DataFrame) -> DataFrame:
    """Bronze rows: the source's columns plus the ingestion timestamp."""
    return source.select("*", F.current_timestamp().alias(INGESTED_AT))


def quarantine_query(bronze: DataFrame, table: str) -> DataFrame:
    """Sink rows: bronze rows whose record was malformed (`_corrupt_record`), with table, file and content hash."""
    return bronze.where(F.col(CORRUPT_RECORD).isNotNull()).select(
        F.lit(table).alias("source_table"),
        F.col(CORRUPT_RECORD),
        F.sha2(F.col(CORRUPT_RECORD), 256).alias(RECORD_HASH),
        F.col(SOURCE_FILE),
        F.col(SOURCE_FILE_MTIME),
        F.col(INGESTED_AT),
        F.current_timestamp().alias("_quarantined_at"),
    )


def clean_columns(table: TableSpec) -> list[str]:
    """The clean table's columns: the table's own, then what bronze adds but `_corrupt_record`."""
    return [*table.column_names, RESCUED_DATA, SOURCE_FILE, SOURCE_FILE_MTIME, INGESTED_AT]


def clean_query(bronze: DataFrame, table: TableSpec) -> DataFrame:
    """Clean rows: bronze without corrupt rows and without the `_corrupt_record` column."""
    return bronze.where(F.col(CORRUPT_RECORD).isNull()).select(*[F.col(f"`{c}`") for c in clean_columns(table)])


def rejected_query(bronze: DataFrame, table: TableSpec) -> DataFrame:
    """Rejected rows: the clean query's rows that fail one or more of the table's `drop` expectations
    (false or NULL, as the expectation counts them), with the names of those it failed and when."""
    drops = table.drop_expectations
    failed = F.array_compact(F.array(*[F.when(~e.passes(), F.lit(e.name)) for e in drops]))
    return clean_query(bronze, table).where(~expectations.all_pass(drops, expectations.Action.DROP)).select(
        "*", failed.alias(FAILED_EXPECTATIONS), F.current_timestamp().alias(REJECTED_AT))


def declare_sink(spark: SparkSession, engine: Engine) -> None:
    from pyspark import pipelines as dp

    options = engine.sink_options(spark, CORRUPT_RECORDS_SINK, SINK_SCHEMA_DDL)
    dp.create_sink(CORRUPT_RECORDS_SINK, format="delta", options=options)


def declare_table(spark: SparkSession, table: TableSpec, engine: Engine, landing_root: str) -> None:
    """Declares the datasets of one table (`TableSpec.dataset_names`) and its flow into the sink."""
    from pyspark import pipelines as dp

    path = table.landing_path(landing_root)
    engine.register_file_source(table.bronze_name, path, file_format(table).counter(table))

    @dp.temporary_view(name=table.source_name, comment=f"Landing files of {table.name} ({table.format}) at {path}.")
    def source() -> DataFrame:
        return engine.read_files(spark, table, path)

    @dp.table(
        name=table.bronze_name,
        comment=f"Raw {table.name} records, every landing line once: typed columns, rescued and corrupt data, source file.",
        table_properties=engine.table_properties({"quality": "bronze", **CHANGE_TRACKING}),
    )
    @engine.query(table.bronze_name, table.bronze_name, BRONZE_EXPECTATIONS, streaming=True)
    def bronze() -> DataFrame:
        return bronze_query(spark.readStream.table(table.source_name))

    @dp.append_flow(target=CORRUPT_RECORDS_SINK, name=table.sink_flow_name)
    @engine.query(None, table.sink_flow_name, (), streaming=True)
    def quarantine() -> DataFrame:
        # A refresh selection names tables, never a sink's flow: a full refresh of bronze (with the
        # tables that stream from it) rewrites bronze under this flow's checkpoint. Skipping the
        # truncation's commit, the flow goes on with the rows bronze is written again with (their
        # corrupt lines quarantined again, as a full refresh of every table does) instead of failing
        # every later update with DELTA_SOURCE_IGNORE_DELETE.
        bronze_rows = spark.readStream.option("skipChangeCommits", "true").table(table.bronze_name)
        return quarantine_query(bronze_rows, table.name)

    @dp.table(
        name=table.clean_name,
        comment=table.comment or f"Clean {table.name}: bronze without corrupt records, business expectations applied.",
        table_properties=engine.table_properties({"quality": "silver", **CHANGE_TRACKING}),
    )
    @engine.query(table.clean_name, table.clean_name, table.expectations, streaming=True)
    def clean() -> DataFrame:
        return clean_query(spark.readStream.table(table.bronze_name), table)

    if table.drop_expectations:
        @dp.table(
            name=table.rejected_name,
            comment=f"Rows of {table.name} that its drop expectations removed, with the expectations each failed.",
            table_properties=engine.table_properties({"quality": "silver", **CHANGE_TRACKING}),
        )
        @engine.query(table.rejected_name, table.rejected_name, (), streaming=True)
        def rejected() -> DataFrame:
            return rejected_query(spark.readStream.table(table.bronze_name), table)

        queue = replay_queue_name(spark, table)
        if replay_queue_exists(spark, queue):
            # Rows queued by `lakewatch replay` met the expectations when they were queued; Databricks
            # takes no expectation decorators on an append flow.
            @dp.append_flow(target=table.clean_name, name=table.replay_flow_name)
            @engine.query(table.clean_name, table.replay_flow_name, (), streaming=True)
            def replayed() -> DataFrame:
                # skipChangeCommits: rows deleted from the queue do not stop the flow (a key queued again
                # after that is not one the clean table holds: replay.queue_statements).
                queued = spark.readStream.option("skipChangeCommits", "true").table(queue)
                return replay.replay_query(queued, spark.read.table(table.rejected_name), clean_columns(table))


def replay_queue_name(spark: SparkSession, table: TableSpec) -> str:
    """The table's replay queue in the pipeline's catalog and schema (a plain table, which the pipeline
    does not resolve as one of its datasets)."""
    catalog, schema = spark.conf.get(CATALOG_KEY, None), spark.conf.get(SCHEMA_KEY, None)
    return f"{catalog}.{schema}.{table.replay_name}" if catalog and schema else table.replay_name


def replay_queue_exists(spark: SparkSession, queue: str) -> bool:
    """Whether `lakewatch replay` has created the replay queue `queue`. When the catalog does not
    answer, the queue is read as named: an update that cannot read it fails and says so, rather than
    leaving queued rows behind without a word."""
    try:
        return bool(spark.catalog.tableExists(queue))
    except Exception:  # noqa: BLE001 (no answer is not a missing table)
        return True


def declare_ingestion(spark: SparkSession) -> None:
    """Entry point of the ingest definition file: the shared sink, then every configured table."""
    engine = engine_for(spark)
    landing_root = spark.conf.get(LANDING_ROOT_KEY)
    tables = tables_config(spark).tables
    declare_sink(spark, engine)
    for table in tables:
        declare_table(spark, table, engine, landing_root)
