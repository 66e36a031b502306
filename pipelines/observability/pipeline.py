"""What the observability pipeline's SQL definition files read that differs per engine or per
deployment, as queries for the pipeline-private views that its Python definition file
(transformations/observability/sources.py) declares, and the other flows of `events`: one per other
observed pipeline's event log (`lakewatch.observed_event_logs`), and one from the ingest event log's
history.

The sources differ per engine only in where file state comes from (`cloud_files_state()` on
Databricks, the local runner's file-state table locally), which the adapter provides.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from typing import Any, Sequence

from pipelines import insights
from pipelines.adapter import (
    CATALOG_KEY,
    EVENT_LOG_HISTORY_KEY,
    EVENT_LOG_KEY,
    OBSERVED_EVENT_LOGS_KEY,
    SCHEMA_KEY,
    TABLE_SIZES_KEY,
    engine_for,
)
from pipelines.config import CORRUPT_RECORDS_SINK
from pipelines.ingestion import SINK_SCHEMA_DDL, tables_config
from pipelines.observability.catalog import CLOCK, EVENT_LOG, ObservabilityTable, bronze_union_sql
from pipelines.sqltypes import empty_relation_sql, quote_string
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
    not answer, the table is read as named."""
    return table_or_empty(spark, sink, empty_sink_sql())


def history_source(spark: Any) -> str | None:
    """The event log's history table (`lakewatch.event_log_history`), or None when the configuration
    names none or it does not exist yet (the job's archive task creates it at its first run). Should
    the catalog not answer, None too: `events` then reads the live log alone."""
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


def source_queries(spark: Any, observed: Sequence[ObservedEventLog]) -> dict[str, str]:
    """The query of each view the observability SQL reads (`catalog.SOURCE_VIEWS`, and `clock`);
    `observed` is `observed_event_logs(spark)`, looked up once per registration."""
    catalog, schema = spark.conf.get(CATALOG_KEY), spark.conf.get(SCHEMA_KEY)
    tables = tables_config(spark).tables
    bronze = [(t.name, f"{catalog}.{schema}.{t.bronze_name}", t.column_names) for t in tables]
    return {
        "landing_file_state": "SELECT * FROM " + engine_for(spark).file_state_sql(spark, [name for _, name, _ in bronze]),
        "quarantine_sink": "SELECT * FROM " + sink_source(spark, f"{catalog}.{schema}.{CORRUPT_RECORDS_SINK}"),
        "bronze_union": "SELECT * FROM " + bronze_union_sql(bronze),
        "table_size_snapshots": "SELECT * FROM " + table_sizes_source(spark),
        "ingest_tables": "SELECT * FROM " + ingest_tables_sql(tables),
        "clock": f"SELECT {CLOCK} AS now",
        "insight_rules": insights.rules_sql(),
        "observed_event_logs": observed_event_logs_sql(spark, observed),
        "event_log_errors": event_log_errors_sql(spark, observed),
    }


def _source_table(table: ObservabilityTable, placeholders: dict[str, str]) -> str:
    assert table.stream is not None, table.name
    return placeholders["event_log"] if table.stream.source == EVENT_LOG else table.stream.source


def _select(table: ObservabilityTable, placeholders: dict[str, str]) -> list[str]:
    """The streaming table's SELECT list with `${lakewatch.event_log}` (the `event_log` column's
    value) filled as the SQL engines fill it: the name of the event log read."""
    assert table.stream is not None, table.name
    return [e.replace(EVENT_LOG, placeholders["event_log"]) for e in table.stream.select]


def streaming_query(spark: Any, table: ObservabilityTable, placeholders: dict[str, str]) -> Any:
    """A streaming table's query as its definition file has it, in the DataFrame API: its source read
    as a stream (append-only Delta; `skipChangeCommits` lets a delete such as the event log's retention
    pass), filtered and projected by its SQL parts. `placeholders["event_log"]` names the event log."""
    assert table.stream is not None, table.name
    return (
        spark.readStream.option("skipChangeCommits", "true").table(_source_table(table, placeholders))
        .where(table.stream.where)
        .selectExpr(*_select(table, placeholders))
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
        .selectExpr(*_select(table, placeholders))
    )


def history_placeholders(spark: Any) -> dict[str, str] | None:
    """The live event log and its history table, or None when there is no history to read."""
    history = history_source(spark)
    return {"event_log": spark.conf.get(EVENT_LOG_KEY), "event_log_history": history} if history else None


@dataclass(frozen=True)
class ObservedEventLog:
    """An event log the observability pipeline reads besides the ingest pipeline's: `table` as
    configured, `flow` the name of the flow that appends its events to `events`, `exists` whether the
    catalog has it (a pipeline that never ran has no event log yet; its flow starts once it does)."""

    table: str
    flow: str
    exists: bool


def _table_key(name: str) -> str:
    """A table name as the catalog compares it: without backticks, case-insensitive."""
    return name.replace("`", "").strip().lower()


def observed_flow_name(table: str) -> str:
    """`events_from_<table's last part>_<8 hex digits of the whole name>`: a valid, unique flow name per
    table (two tables whose names differ only in punctuation get two flows)."""
    key = _table_key(table)
    short = re.sub(r"\W+", "_", key.rsplit(".", 1)[-1]).strip("_")[:40]
    return f"events_from_{short}_{hashlib.sha1(key.encode()).hexdigest()[:8]}"


def observed_event_logs(spark: Any) -> list[ObservedEventLog]:
    """The event logs of `lakewatch.observed_event_logs` (comma-separated table names; the ingest
    pipeline's own is read by `events`' query and is left out here), each once (names compared as the
    catalog does), in the order given. Should the catalog not answer, the table is read as named: no
    answer is not a missing table."""
    seen = {_table_key(spark.conf.get(EVENT_LOG_KEY, None) or "")}
    configured = spark.conf.get(OBSERVED_EVENT_LOGS_KEY, "") or ""
    logs: list[ObservedEventLog] = []
    for name in (n.strip() for n in configured.split(",")):
        if not name or _table_key(name) in seen:
            continue
        seen.add(_table_key(name))
        try:
            exists = bool(spark.catalog.tableExists(name))
        except Exception:  # noqa: BLE001 (no answer is not a missing table)
            exists = True
        logs.append(ObservedEventLog(name, observed_flow_name(name), exists))
    return logs


def observed_event_logs_sql(spark: Any, observed: Sequence[ObservedEventLog]) -> str:
    """The view `observed_event_logs`: one row per event log the pipeline reads (the ingest pipeline's
    first), whether it follows lakewatch's Auto Loader pattern (the ingest pipeline) and, for a log
    not read in this refresh, why."""
    rows = [f"({quote_string(spark.conf.get(EVENT_LOG_KEY))}, true, CAST(NULL AS STRING))"]
    rows += [f"({quote_string(log.table)}, false, "
             + ("CAST(NULL AS STRING))" if log.exists
                else "'the event log table was not found: the pipeline has not run yet, its event log is not published "
                     "(its event_log setting), or this pipeline cannot see it (grant it SELECT)')")
             for log in observed]
    return ("SELECT * FROM VALUES " + ", ".join(rows)
            + " AS observed(event_log, follows_lakewatch_pattern, not_read_reason)")


def event_log_errors_sql(spark: Any, observed: Sequence[ObservedEventLog]) -> str:
    """The view `event_log_errors`: id, error and time of every error event of the event logs read
    (the ingest pipeline's and each observed one that exists), for run_insights' exception chains."""
    logs = [spark.conf.get(EVENT_LOG_KEY)] + [log.table for log in observed if log.exists]
    return " UNION ALL ".join(f"SELECT id, error, `timestamp` FROM {log} WHERE error IS NOT NULL" for log in logs)
