"""Table size and file count of every ingest table, over time: the job's
`snapshot_table_sizes` task appends one row per table to `lakewatch_table_sizes` after each ingest
update, and the observability view `table_growth` turns the snapshots into growth.

Where the figures come from
---------------------------
Delta's `DESCRIBE DETAIL` gives `sizeInBytes` and `numFiles`: the data files the table's current
version references (what Catalog Explorer shows as the table's size; files kept only for time travel
are not counted). It is a command, not a relation: Spark 4.2 and Databricks SQL refuse it in a
subquery, `EXECUTE IMMEDIATE '...' INTO` refuses it (`INVALID_STATEMENT_FOR_EXECUTE_INTO`: the INTO
clause takes queries only) and a SQL script's FOR loop does not take it (all three measured on the
local engine; the Databricks SQL reference says the same of EXECUTE IMMEDIATE). So a SQL file task on
a warehouse cannot store it, and the event log does not carry table sizes. The task is a Python file
task (`jobs/snapshot_table_sizes.py`, serverless), where the command's result is a DataFrame, as
Databricks' own examples collect it. The table's Delta version comes from `DESCRIBE HISTORY ... LIMIT 1`
read before `DESCRIBE DETAIL` and checked after it (`measure`): when a commit landed in between, the
table is measured again (at most three times), so a row's size belongs to its version.

Databricks also keeps `system.storage.table_metrics_history` (Public Preview): one row per Unity
Catalog managed table (streaming tables and materialized views included) per day, with
`active_bytes` and `active_files`, for 13 months. It is daily, needs SELECT on the system schema and
does not exist locally; the snapshot here is taken at every job run and runs the same on both engines.

Nothing is invented: a table that is not there, is not Delta, or could not be described is a row
with NULL size, files and version and a `reason` (`table_missing`, `not_delta: <format>`,
`not_measured: <error class>`, `changed_while_measured`), never zeros; a table whose history could
not be read keeps its size and files with a NULL version (`version_not_measured: <error class>`).

The same code runs on both engines (the ingest tables are `<catalog>.<schema>.<name>` on both: the
local runner registers its Delta sink as a table of that name), so nothing here goes through the
adapter.
"""

from __future__ import annotations

import argparse
import datetime as dt
import re
import uuid
from dataclasses import dataclass
from typing import Any, Callable, Sequence

from pipelines.config import CORRUPT_RECORDS_SINK, TableSpec
from pipelines.sqltypes import empty_relation_sql

BRONZE, CLEAN, REJECTED, SINK = "bronze", "clean", "rejected", "sink"

# The snapshot table's columns (name, type, comment), in order.
COLUMNS: tuple[tuple[str, str, str], ...] = (
    ("snapshot_id", "STRING", "One id per snapshot (task run); every table measured in it has it"),
    ("snapshot_time", "TIMESTAMP", "When the table was measured (UTC)"),
    ("table_name", "STRING", "Ingest table (its name in the schema)"),
    ("full_name", "STRING", "The name the table was measured under (catalog.schema.table)"),
    ("table_kind", "STRING", "bronze ({table}_bronze), clean ({table}) or sink (corrupt_records_sink)"),
    ("source_table", "STRING", "The configured table it belongs to (NULL for the sink, which all tables share)"),
    ("table_id", "STRING", "Delta table id (a new id: the table was dropped and created again)"),
    ("delta_version", "BIGINT", "Delta version the size and files belong to"),
    ("size_bytes", "BIGINT", "Bytes of the data files of that version (DESCRIBE DETAIL sizeInBytes)"),
    ("num_files", "BIGINT", "Data files of that version (DESCRIBE DETAIL numFiles)"),
    ("reason", "STRING", "Why a figure of the row is NULL (NULL when all are measured)"),
    ("snapshot_date", "DATE", "Date (UTC) of snapshot_time: the partition"),
)
DDL = ", ".join(f"{name} {kind}" for name, kind, _ in COLUMNS)

ATTEMPTS = 3  # measurements of a table that commits while it is measured
_MISSING = ("TABLE_OR_VIEW_NOT_FOUND", "DELTA_TABLE_NOT_FOUND", "DELTA_MISSING_DELTA_TABLE", "SCHEMA_NOT_FOUND",
            "NO_SUCH_CATALOG_EXCEPTION", "CATALOG_NOT_FOUND")


@dataclass(frozen=True)
class IngestTable:
    name: str
    kind: str  # BRONZE, CLEAN, REJECTED or SINK
    source_table: str | None
    max_hours_without_rows: float | None = None  # a bronze table's own limit (tables.yml)


def ingest_tables(tables: Sequence[TableSpec]) -> list[IngestTable]:
    """The tables the ingest pipeline writes: each configured table's bronze and clean tables, the rejected
    rows of those with a `drop` expectation, then the quarantine sink."""
    found = [IngestTable(t.bronze_name, BRONZE, t.name, t.max_hours_without_rows) for t in tables]
    found += [IngestTable(t.clean_name, CLEAN, t.name) for t in tables]
    found += [IngestTable(t.rejected_name, REJECTED, t.name) for t in tables if t.drop_expectations]
    return found + [IngestTable(CORRUPT_RECORDS_SINK, SINK, None)]


INGEST_TABLES_COLUMNS = "table_name, table_kind, source_table, max_hours_without_rows"


def ingest_tables_sql(tables: Sequence[TableSpec]) -> str:
    """`(SELECT * FROM VALUES ... AS t(table_name, table_kind, source_table, max_hours_without_rows))`:
    the tables a snapshot should hold, for the observability views to name those it does not, and each
    bronze table's limit on hours without rows (`table_freshness`)."""
    def literal(value: str | None) -> str:
        return "CAST(NULL AS STRING)" if value is None else "'" + value.replace("'", "''") + "'"

    def hours(value: float | None) -> str:
        return "CAST(NULL AS DOUBLE)" if value is None else f"CAST({float(value)!r} AS DOUBLE)"

    rows = ", ".join(f"({literal(t.name)}, {literal(t.kind)}, {literal(t.source_table)}, {hours(t.max_hours_without_rows)})"
                     for t in ingest_tables(tables))
    return f"(SELECT * FROM VALUES {rows} AS t({INGEST_TABLES_COLUMNS}))"


def empty_sizes_sql() -> str:
    """No rows, the snapshot table's columns: what `table_growth` reads before the first snapshot."""
    return empty_relation_sql((name, kind) for name, kind, _ in COLUMNS)


def quote_parts(full_name: str) -> str:
    """`a.b.c` as `` `a`.`b`.`c` ``."""
    return ".".join("`" + part.strip("`").replace("`", "``") + "`" for part in full_name.split("."))


@dataclass(frozen=True)
class Measurement:
    table_id: str | None = None
    version: int | None = None
    size_bytes: int | None = None
    num_files: int | None = None
    reason: str | None = None


def error_class(error: BaseException) -> str | None:
    """The error class of a Spark error (classic or Connect), or the `[CLASS]` its message starts with."""
    for getter in ("getCondition", "getErrorClass"):
        try:
            value = getattr(error, getter)()
        except Exception:  # noqa: BLE001 (not a PySpark error, or no class)
            value = None
        if value:
            return str(value).split(".")[0]
    match = re.match(r"\s*\[([A-Z0-9_]+)", str(error))
    return match.group(1) if match else None


def latest_commit(spark: Any, quoted: str) -> tuple[int, Any] | None:
    """(version, timestamp) of the table's latest commit."""
    rows = spark.sql(f"DESCRIBE HISTORY {quoted} LIMIT 1").select("version", "timestamp").collect()
    return (int(rows[0]["version"]), rows[0]["timestamp"]) if rows else None


def _failure(error: BaseException) -> str:
    found = error_class(error)
    return found or (str(error).strip().splitlines() or [type(error).__name__])[0][:200]


def measure(spark: Any, full_name: str, attempts: int = ATTEMPTS) -> Measurement:
    """Size, files and version of one table's current version (module docstring), or NULLs and why.

    The version is the latest commit's, read before `DESCRIBE DETAIL`. The detail belongs to it when
    its `lastModified` is that commit's timestamp (one history read: the usual case); otherwise the
    history is read again, and an unchanged latest version confirms it. A commit in between makes the
    table measured again. Should the history be refused while the detail is not, size and files are
    kept and only the version is NULL (`version_not_measured: ...`)."""
    quoted = quote_parts(full_name)
    try:
        if not spark.catalog.tableExists(full_name):
            return Measurement(reason="table_missing")
    except Exception:  # noqa: BLE001 (the catalog did not answer: DESCRIBE says what is wrong)
        pass
    for _ in range(attempts):
        try:
            before, history_error = latest_commit(spark, quoted), None
        except Exception as e:  # noqa: BLE001 (the detail may still be there: see below)
            before, history_error = None, e
        try:
            detail = spark.sql(f"DESCRIBE DETAIL {quoted}").collect()[0].asDict()
        except Exception as e:  # noqa: BLE001 (any failure is this table's reason, not the task's end)
            if error_class(e) in _MISSING:
                return Measurement(reason="table_missing")
            return Measurement(reason=f"not_measured: {_failure(e)}")
        if str(detail.get("format") or "").lower() != "delta":
            return Measurement(reason=f"not_delta: {detail.get('format')}")
        figures = (detail.get("id"), detail.get("sizeInBytes"), detail.get("numFiles"))
        if before is None:
            why = _failure(history_error) if history_error is not None else "no Delta history"
            return Measurement(figures[0], None, figures[1], figures[2], f"version_not_measured: {why}")
        try:
            same = detail.get("lastModified") == before[1] or latest_commit(spark, quoted) == before
        except Exception as e:  # noqa: BLE001
            return Measurement(figures[0], None, figures[1], figures[2], f"version_not_measured: {_failure(e)}")
        if same:
            return Measurement(figures[0], before[0], figures[1], figures[2])
    return Measurement(reason="changed_while_measured")


@dataclass
class SnapshotResult:
    snapshot_id: str
    target: str
    rows: list[tuple]

    @property
    def measured(self) -> int:
        return sum(1 for r in self.rows if r[COLUMN_INDEX["size_bytes"]] is not None)

    @property
    def not_measured(self) -> list[tuple[str, str]]:
        return [(r[COLUMN_INDEX["table_name"]], r[COLUMN_INDEX["reason"]]) for r in self.rows
                if r[COLUMN_INDEX["size_bytes"]] is None]


COLUMN_INDEX = {name: i for i, (name, _, _) in enumerate(COLUMNS)}


def utc_now() -> dt.datetime:
    return dt.datetime.now(dt.timezone.utc)


def snapshot_rows(spark: Any, catalog: str, schema: str, tables: Sequence[TableSpec],
                  snapshot_id: str | None = None, clock: Callable[[], dt.datetime] = utc_now) -> list[tuple]:
    """One row per ingest table (COLUMNS), each measured when its time is taken."""
    snapshot_id = snapshot_id or str(uuid.uuid4())
    rows = []
    for table in ingest_tables(tables):
        full_name = f"{catalog}.{schema}.{table.name}"
        measured_at = clock()
        m = measure(spark, full_name)
        rows.append((snapshot_id, measured_at, table.name, full_name, table.kind, table.source_table, m.table_id,
                     m.version, m.size_bytes, m.num_files, m.reason, measured_at.astimezone(dt.timezone.utc).date()))
    return rows


def create_table_sql(target: str) -> str:
    columns = ", ".join(f"{name} {kind} COMMENT '{comment.replace(chr(39), chr(92) + chr(39))}'"
                        for name, kind, comment in COLUMNS)
    return (f"CREATE TABLE IF NOT EXISTS {quote_parts(target)} ({columns}) USING DELTA PARTITIONED BY (snapshot_date) "
            "COMMENT 'Size and file count of every ingest table at each job run (jobs/snapshot_table_sizes.py), "
            "one row per table per snapshot' TBLPROPERTIES ('delta.appendOnly' = 'true')")


def snapshot(spark: Any, target: str, catalog: str, schema: str, tables: Sequence[TableSpec],
             snapshot_id: str | None = None, clock: Callable[[], dt.datetime] = utc_now) -> SnapshotResult:
    """Measures every ingest table and appends the rows to `target` (created by the first run)."""
    rows = snapshot_rows(spark, catalog, schema, tables, snapshot_id, clock)
    spark.sql(create_table_sql(target))
    spark.createDataFrame(rows, DDL).write.format("delta").mode("append").saveAsTable(target)
    return SnapshotResult(rows[0][0] if rows else (snapshot_id or ""), target, rows)


def parse_arguments(argv: Sequence[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="snapshot_table_sizes", description=__doc__.splitlines()[0])
    parser.add_argument("--catalog", required=True, help="catalog of the ingest tables")
    parser.add_argument("--schema", required=True, help="schema of the ingest tables")
    parser.add_argument("--tables-config", required=True, help="conf/tables.yml: the configured tables")
    parser.add_argument("--target", required=True, help="the snapshot table, catalog.schema.table")
    return parser.parse_args(list(argv))


def main(argv: Sequence[str], spark: Any = None) -> SnapshotResult:
    """The task's entry point: `argv` are the task's parameters; `spark` the session (on Databricks,
    the task's own)."""
    from pipelines.config import load_tables

    args = parse_arguments(argv)
    if spark is None:
        from pyspark.sql import SparkSession

        spark = SparkSession.builder.getOrCreate()
    tables = load_tables(args.tables_config).tables
    return snapshot(spark, args.target, args.catalog, args.schema, tables)
