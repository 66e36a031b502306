"""Declares the observability tables: two streaming tables (`events` from the ingest pipeline's event
log, `errors` from `events`), materialized views for the rest, and one private temporary view.

The sources differ per engine only in where file state comes from (`cloud_files_state()` on
Databricks, the local runner's file-state table locally), which the adapter provides.
"""

from __future__ import annotations

from typing import Any

from pipelines.adapter import CATALOG_KEY, EVENT_LOG_KEY, SCHEMA_KEY, engine_for
from pipelines.config import CORRUPT_RECORDS_SINK
from pipelines.ingestion import SINK_SCHEMA_DDL, tables_config
from pipelines.observability.tables import TABLES, ObservabilityTable, bronze_union_sql, table_properties


def empty_sink_sql() -> str:
    """`(SELECT CAST(NULL AS STRING) AS source_table, ... WHERE false)`: no rows, the sink's columns."""
    columns = [column.strip().split(" ", 1) for column in SINK_SCHEMA_DDL.split(",")]
    return "(SELECT " + ", ".join(f"CAST(NULL AS {kind}) AS {name}" for name, kind in columns) + " WHERE false)"


def sink_source(spark: Any, sink: str) -> str:
    """The quarantine sink, or no rows with its columns while it does not exist yet.

    On Databricks the sink's Delta table is created by its first write, so before the first ingest
    update that ran the sink's flow (an empty landing folder, a failed first update) there is no table,
    and `quarantine_deliveries` (hence `quarantine_daily`, `reconciliation`, `health_metrics`) would fail
    the whole observability update. The local runner creates the sink up front. Should the catalog
    not answer, the table is read as before."""
    try:
        exists = bool(spark.catalog.tableExists(sink))
    except Exception:  # noqa: BLE001 (no answer is not a missing table)
        exists = True
    return sink if exists else empty_sink_sql()


def sources(spark: Any) -> dict[str, str]:
    """SQL text for each placeholder of the observability SQL."""
    catalog, schema = spark.conf.get(CATALOG_KEY), spark.conf.get(SCHEMA_KEY)
    tables = tables_config(spark).tables
    bronze = [(t.name, f"{catalog}.{schema}.{t.bronze_name}") for t in tables]
    return {
        "event_log": spark.conf.get(EVENT_LOG_KEY),
        "file_state": engine_for(spark).file_state_sql(spark, [name for _, name in bronze]),
        "sink": sink_source(spark, f"{catalog}.{schema}.{CORRUPT_RECORDS_SINK}"),
        "bronze_union": bronze_union_sql(bronze),
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
            table_properties=engine_for(spark).table_properties(table_properties(table)),
        )(query)


def declare_observability(spark: Any) -> None:
    """Entry point of the observability definition file."""
    placeholders = sources(spark)
    for table in TABLES:
        declare_table(spark, table, placeholders)
