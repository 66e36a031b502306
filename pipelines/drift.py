"""Schema drift turned into a change (`lakewatch drift`): the fields found in `_rescued_data` of a
table's bronze table, and the ones chosen added to its schema in conf/tables.yml.

A field is listed with the type Spark's JSON reader infers from its rescued values (the reader run over
the `_rescued_data` texts themselves, so every field is typed in one pass), the rows holding it, and the
first and last file (by modification time) it came in. Each field is one of:

- `new`: no column of the schema has its name; `--apply` adds it as a column.
- `in schema`: a column has its name now. Rows ingested before the column existed keep the value in
  `_rescued_data` (a value of the column's type would not have been rescued); a full refresh of the
  bronze table reads their files again and fills the column. Values that do not fit the type are
  counted apart: they are rescued for that reason and stay rescued.
- `case variant`: it differs from a column only in case (rescued, as Auto Loader rescues it).

What happens after `--apply`, as on Databricks after a schema change: the next update reads new files
with the new column filled; rows already in bronze keep the value in `_rescued_data` until a full
refresh of the table's streaming tables (`lakewatch run --full-refresh <table>_bronze,<table>,<table>_rejected`), and
`lakewatch drift` says how many are waiting.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Sequence

from pipelines.config import (COLUMN_NAME_PATTERN, RESCUED_DATA, SOURCE_FILE, SOURCE_FILE_MTIME, TablesConfig,
                              TableSpec)
from pipelines.errors import LakewatchError
from pipelines.schema_inference import declared_type
from pipelines.tables_file import add_columns

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

FILE_PATH_KEY = "_file_path"  # the source file's path, which `_rescued_data` always carries
NEW, IN_SCHEMA, CASE_VARIANT = "new", "in schema", "case variant"


@dataclass(frozen=True)
class DriftField:
    """One field found in `_rescued_data`."""

    name: str
    data_type: str  # as conf/tables.yml would declare it
    rows: int
    first_file: str
    first_time: datetime | None
    last_file: str
    last_time: datetime | None
    kind: str  # NEW, IN_SCHEMA or CASE_VARIANT: "new", "in schema", "case variant"
    column: str | None = None  # the schema's column of that name (any case)
    waiting: int = 0  # IN_SCHEMA: rows whose value fits the column, until a full refresh fills it
    mismatched: int = 0  # IN_SCHEMA: rows whose value does not fit the column's type


def _quote(text: str) -> str:
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def _json_path(field: str) -> str:
    return _quote("$['" + field.replace("'", "\\'") + "']")


def rescued_fields(spark: SparkSession, schema: str, table: TableSpec) -> list[DriftField]:
    """The fields of `table`'s bronze `_rescued_data`, oldest first; DRIFT_NO_BRONZE when the bronze
    table does not exist."""
    bronze = f"{schema}.{table.bronze_name}"
    if not spark.catalog.tableExists(bronze):
        raise LakewatchError("DRIFT_NO_BRONZE", {"table": table.name, "bronze": bronze})
    rows = spark.sql(f"""
        SELECT field, count(*) AS rows,
               min_by(file, mtime) AS first_file, min(mtime) AS first_time,
               max_by(file, mtime) AS last_file, max(mtime) AS last_time
        FROM (SELECT explode(json_object_keys({RESCUED_DATA})) AS field, {SOURCE_FILE} AS file,
                     {SOURCE_FILE_MTIME} AS mtime
              FROM {bronze} WHERE {RESCUED_DATA} IS NOT NULL)
        WHERE field <> '{FILE_PATH_KEY}'
        GROUP BY field ORDER BY first_time, field""").collect()
    if not rows:
        return []
    inferred = _inferred_types(spark, bronze)
    columns = {c.name.lower(): c for c in table.columns}
    found = []
    for row in rows:
        name = row["field"]
        data_type, _ = declared_type(table.name, name, inferred.get(name, "string"))
        column = columns.get(name.lower())
        kind = NEW if column is None else IN_SCHEMA if column.name == name else CASE_VARIANT
        waiting = mismatched = 0
        if kind == IN_SCHEMA:
            assert column is not None
            waiting, mismatched = _fitting(spark, bronze, name, column.data_type)
        found.append(DriftField(
            name=name, data_type=data_type if column is None else column.data_type, rows=int(row["rows"]),
            first_file=row["first_file"], first_time=row["first_time"], last_file=row["last_file"],
            last_time=row["last_time"], kind=kind, column=column.name if column else None,
            waiting=waiting, mismatched=mismatched))
    return found


def _json_text(column: str) -> str:
    """SQL of `column`'s text as a JSON string literal (quoted and escaped)."""
    return f"substring(to_json(array({column})), 2, length(to_json(array({column}))) - 2)"


def _inferred_types(spark: SparkSession, bronze: str) -> dict[str, str]:
    """Field name -> the type Spark's JSON reader infers from the field's rescued values. `_rescued_data`
    holds a string as its content and any other value as its JSON text, so each value is turned back
    into JSON (as it is when it parses as JSON, else as a string) in a line `{"<field>": <value>}`, and
    the reader, run over all of them, merges each field's type (with inferTimestamp, so timestamps in
    strings are found)."""
    from pyspark.sql import functions as F

    value = f"get_json_object({RESCUED_DATA}, concat('$[''', replace(field, '''', ''), ''']'))"
    is_json = "from_json(concat('{\"v\":', value, '}'), 'v STRING').v IS NOT NULL"
    lines = spark.sql(f"""
        SELECT concat('{{', {_json_text('field')}, ':',
                      CASE WHEN {is_json} THEN value ELSE {_json_text('value')} END, '}}') AS value
        FROM (SELECT field, {value} AS value
              FROM (SELECT explode(json_object_keys({RESCUED_DATA})) AS field, {RESCUED_DATA}
                    FROM {bronze} WHERE {RESCUED_DATA} IS NOT NULL)
              WHERE field <> '{FILE_PATH_KEY}')
        WHERE value IS NOT NULL""")
    parsed = spark.read.option("inferTimestamp", "true").json(lines.select(F.col("value")))
    return {f.name: f.dataType.simpleString() for f in parsed.schema.fields if f.name != "_corrupt_record"}


def _fitting(spark: SparkSession, bronze: str, field: str, data_type: str) -> tuple[int, int]:
    """(rows whose rescued `field` fits `data_type`, rows whose value does not)."""
    value = f"get_json_object({RESCUED_DATA}, {_json_path(field)})"
    simple = not data_type.startswith(("STRUCT<", "ARRAY<", "MAP<"))
    fits = f"try_cast({value} AS {data_type}) IS NOT NULL" if simple else "true"
    row = spark.sql(f"SELECT count_if({fits}) AS fit, count(*) AS n FROM {bronze} "
                    f"WHERE {RESCUED_DATA} IS NOT NULL AND {value} IS NOT NULL").collect()[0]
    return int(row["fit"]), int(row["n"]) - int(row["fit"])


def apply(tables_file: Path, table: TableSpec, fields: Sequence[DriftField], chosen: Sequence[str],
          landing_root: str | None = None) -> list[DriftField]:
    """Adds the `chosen` new fields (all new ones when none is chosen) to the table's schema in
    conf/tables.yml; refuses a field that is not new or cannot be a column, writing nothing then."""
    new = {f.name: f for f in fields if f.kind == NEW}
    if chosen:
        unknown = [name for name in chosen if name not in new]
        if unknown:
            listed = ", ".join(sorted(new)) or "none"
            raise LakewatchError("CLI_INVALID_ARGUMENT", {
                "reason": f"{', '.join(unknown)}: not a new field of {table.bronze_name}'s _rescued_data "
                          f"(new fields: {listed})"})
        picked = [new[name] for name in chosen]
    else:
        picked = list(new.values())
    for f in picked:
        if not COLUMN_NAME_PATTERN.match(f.name):
            raise LakewatchError("CLI_INVALID_ARGUMENT", {
                "reason": f"field '{f.name}' cannot be a column name (letters, digits and underscores)"})
    if picked:
        add_columns(tables_file, table.name, [(f.name, f.data_type) for f in picked], landing_root)
    return picked


def describe(fields: Sequence[DriftField], table: TableSpec) -> list[str]:
    """The listing `lakewatch drift` prints for one table."""
    if not fields:
        return [f"{table.name}: no field in {table.bronze_name}._rescued_data"]
    lines = [f"{table.name}: fields in {table.bronze_name}._rescued_data"]
    width = max(len(f.name) for f in fields)
    for f in fields:
        first = f"{f.first_file} ({f.first_time:%Y-%m-%d %H:%M})" if f.first_time else f.first_file
        last = f"{f.last_file} ({f.last_time:%Y-%m-%d %H:%M})" if f.last_time else f.last_file
        kind = f"case variant of {f.column}" if f.kind == CASE_VARIANT else f.kind
        lines.append(f"  {f.name:<{width}}  {f.data_type:<10} {f.rows:>7} rows  {kind}")
        lines.append(f"  {'':<{width}}  first {first}")
        if f.last_file != f.first_file:
            lines.append(f"  {'':<{width}}  last  {last}")
        if f.kind == IN_SCHEMA and f.waiting:
            lines.append(f"  {'':<{width}}  {f.waiting} rows keep it in _rescued_data until a full refresh: "
                         f"lakewatch run --full-refresh {','.join(table.streaming_tables())}")
        if f.kind == IN_SCHEMA and f.mismatched:
            lines.append(f"  {'':<{width}}  {f.mismatched} values do not fit {f.data_type} (rescued for that)")
    return lines


def tables_of(config: TablesConfig, name: str | None) -> list[TableSpec]:
    """The table named (CLI_INVALID_ARGUMENT when there is none), or every table."""
    if name is None:
        return list(config.tables)
    try:
        return [config.table(name)]
    except KeyError:
        raise LakewatchError("CLI_INVALID_ARGUMENT", {"reason": f"no table '{name}' in {config.path}"}) from None
