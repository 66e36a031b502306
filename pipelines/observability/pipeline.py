"""Declares the observability tables: two streaming tables (`events` from the ingest pipeline's event
log and its history, `errors` from `events`), materialized views for the rest, and one private
temporary view.

The sources differ per engine only in where file state comes from (`cloud_files_state()` on
Databricks, the local runner's file-state table locally), which the adapter provides.
"""

from __future__ import annotations

from typing import Any

from pipelines.adapter import CATALOG_KEY, EVENT_LOG_HISTORY_KEY, EVENT_LOG_KEY, SCHEMA_KEY, TABLE_SIZES_KEY, engine_for
from pipelines.config import CORRUPT_RECORDS_SINK
from pipelines.ingestion import SINK_SCHEMA_DDL, tables_config
from pipelines.observability.tables import CLOCK, TABLES, ObservabilityTable, bronze_union_sql, table_properties
from pipelines.sqltypes import empty_relation_sql
from pipelines.table_sizes import empty_sizes_sql, ingest_tables_sql


def empty_sink_sql() -> str:
    """`(SELECT CAST(NULL AS STRING) AS source_table, ... WHERE false)`: no rows, the sink's columns."""
    return empty_relation_sql(column.strip().split(" ", 1) for column in SINK_SCHEMA_DDL.split(","))


def table_or_empty(spark: Any, name: str, empty: str) -> str:
    """`name`, or `empty` (no rows with its columns) when the catalog says the table does not exist
    yet. Should the catalog not answer, the table is read as named: no answer is not a missing table."""
    try:
        exists = bool(spark.catalog.tableExists(name))
    except Exception:  # noqa: BLE001 (no answer is not a missing table)
        exists = True
    return name if exists else empty


def sink_source(spark: Any, sink: str) -> str:
    """The quarantine sink, or no rows with its columns while it does not exist yet.

    On Databricks the sink's Delta table is created by its first write, so before the first ingest
    update that ran the sink's flow (an empty landing folder, a failed first update) there is no table,
    and `quarantine_deliveries` (hence `quarantine_daily`, `reconciliation`, `health_metrics`) would fail
    the whole observability update. The local runner creates the sink up front. Should the catalog
    not answer, the table is read as before."""
    return table_or_empty(spark, sink, empty_sink_sql())


def history_source(spark: Any) -> str | None:
    """The event log's history table (`lakewatch.event_log_history`), or None when the configuration
    names none or it does not exist yet (the job's archive task creates it at its first run). Should
    the catalog not answer, None too: `events` then reads the live log alone, as before the history."""
    name = spark.conf.get(EVENT_LOG_HISTORY_KEY, None)
    if not name:
        return None
    try:
        return name if spark.catalog.tableExists(name) else None
    except Exception:  # noqa: BLE001 (no answer: no history flow in this update)
        return None


def table_sizes_source(spark: Any) -> str:
    """The snapshots of the ingest tables' sizes (`lakewatch.table_sizes`), or no rows with their columns
    when the configuration names none or the table does not exist yet (the job's snapshot_table_sizes
    task creates it at its first run): `table_growth` then says `not_snapshotted` for every table.
    Should the catalog not answer, the table is read as named."""
    name = spark.conf.get(TABLE_SIZES_KEY, None)
    return table_or_empty(spark, name, empty_sizes_sql()) if name else empty_sizes_sql()


def sources(spark: Any) -> dict[str, str]:
    """SQL text for each placeholder of the observability SQL (`event_log_history` is empty when
    there is no history table)."""
    catalog, schema = spark.conf.get(CATALOG_KEY), spark.conf.get(SCHEMA_KEY)
    tables = tables_config(spark).tables
    bronze = [(t.name, f"{catalog}.{schema}.{t.bronze_name}", t.column_names) for t in tables]
    return {
        "event_log": spark.conf.get(EVENT_LOG_KEY),
        "event_log_history": history_source(spark) or "",
        "file_state": engine_for(spark).file_state_sql(spark, [name for _, name, _ in bronze]),
        "sink": sink_source(spark, f"{catalog}.{schema}.{CORRUPT_RECORDS_SINK}"),
        "bronze_union": bronze_union_sql(bronze),
        "table_sizes": table_sizes_source(spark),
        "ingest_tables": ingest_tables_sql(tables),
        "now": CLOCK,
    }


def streaming_query(spark: Any, table: ObservabilityTable, placeholders: dict[str, str]) -> Any:
    """A streaming table's query: its source read as a stream (append-only Delta; `skipChangeCommits`
    lets a delete such as the event log's retention pass), filtered and projected by its SQL parts."""
    assert table.stream is not None, table.name
    source = table.stream.source.format(**placeholders)
    return (
        spark.readStream.option("skipChangeCommits", "true").table(source)
        .where(table.stream.where)
        .selectExpr(*table.stream.select)
    )


def history_query(spark: Any, table: ObservabilityTable, placeholders: dict[str, str]) -> Any:
    """The second flow of a streaming table over the event log: the history table read as a stream,
    without the events the live log still holds (a left anti join on `id` with the live log read as a
    static table, which each micro-batch reads anew), then the same WHERE and SELECT.

    The table's first flow reads every event of the live log, so history adds only events the live
    log no longer held when the history flow read them: dropped by retention, or, after a full
    refresh, gone before it. Each event id is counted once, provided an archived event is still in
    the live log at the next refresh (the job refreshes right after archiving)."""
    assert table.stream is not None and placeholders.get("event_log_history"), table.name
    live_ids = spark.read.table(placeholders["event_log"]).select("id")
    return (
        spark.readStream.option("skipChangeCommits", "true").table(placeholders["event_log_history"])
        .join(live_ids, "id", "left_anti")
        .where(table.stream.where)
        .selectExpr(*table.stream.select)
    )


def declare_history_flow(spark: Any, table: ObservabilityTable, placeholders: dict[str, str]) -> None:
    from pyspark import pipelines as dp

    def from_history() -> Any:
        return history_query(spark, table, placeholders)

    dp.append_flow(target=table.name, name=f"{table.name}_from_history")(from_history)


def declare_table(spark: Any, table: ObservabilityTable, placeholders: dict[str, str]) -> None:
    from pyspark import pipelines as dp

    if table.streaming:
        def stream() -> Any:
            return streaming_query(spark, table, placeholders)

        dp.table(
            name=table.name,
            comment=table.comment,
            schema=table.schema_ddl,
            partition_cols=list(table.partition_cols) or None,
            table_properties=engine_for(spark).table_properties(table_properties(table)),
        )(stream)
        return

    sql = table.render(placeholders)

    def query() -> Any:
        return spark.sql(sql)

    if table.temporary:
        dp.temporary_view(name=table.name, comment=table.comment)(query)
    else:
        dp.materialized_view(
            name=table.name,
            comment=table.comment,
            schema=table.schema_ddl,
            partition_cols=list(table.partition_cols) or None,
            table_properties=engine_for(spark).materialized_view_properties(table_properties(table)),
        )(query)


def declare_observability(spark: Any) -> None:
    """Entry point of the observability definition file."""
    placeholders = sources(spark)
    for table in TABLES:
        declare_table(spark, table, placeholders)
        if table.stream is not None and table.stream.source == "{event_log}" and placeholders["event_log_history"]:
            declare_history_flow(spark, table, placeholders)
