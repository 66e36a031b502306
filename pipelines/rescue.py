"""Auto Loader's `rescue` semantics for JSON lines, as plain Spark expressions.

Open-source Spark ignores `rescuedDataColumn`, so the local engine reads each line as text and
derives the typed columns, `_rescued_data` and `_corrupt_record` itself:

- a line that is not a JSON object (malformed, truncated, an array, a bare value) is kept: all typed
  columns NULL, the raw text in `_corrupt_record`;
- a field that is not in the schema, differs from a schema column only in case, or whose value does
  not fit the declared type goes into `_rescued_data`, a JSON object of the rescued fields (values
  as their JSON text) plus `_file_path`; the row is kept and its other columns are typed as usual;
- fields whose value is JSON null are not rescued; a line of white space is not a record.

Type conversion is Spark's JSON parser with the declared schema (the parser Auto Loader builds on).
Works on batch and streaming DataFrames and never calls `.columns`, so it runs inside pipeline
query functions.
"""

from __future__ import annotations

from typing import Sequence

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from pipelines.config import CORRUPT_RECORD, RESCUED_DATA
from pipelines.config import Column as SchemaColumn


def _ddl(columns: Sequence[SchemaColumn]) -> str:
    return ", ".join(f"`{c.name}` {c.data_type}" for c in columns)


def rescued_fields(raw: Column, typed: Column, columns: Sequence[SchemaColumn]) -> Column:
    """Map of the fields of one JSON object that the schema cannot hold, to their JSON text.

    `raw` is the line parsed as MAP<STRING,STRING> (every key, values as text); `typed` is the
    line parsed with the declared schema. A declared field is rescued when its value is present in
    `raw` but NULL in `typed`, i.e. it did not fit the type.
    """
    declared = F.array(*[F.lit(c.name) for c in columns])
    unfit = F.create_map(
        *[x for c in columns for x in (F.lit(c.name), typed[c.name].isNull())]
    )

    def rescue(key: Column, value: Column) -> Column:
        unknown = ~F.array_contains(declared, key)
        mismatched = F.coalesce(F.try_element_at(unfit, key), F.lit(False))
        return value.isNotNull() & (unknown | mismatched)

    return F.map_filter(raw, rescue)


def rescued_json(fields: Column, file_path: Column) -> Column:
    """JSON object text of the rescued fields plus `_file_path`, or NULL when nothing was rescued.

    Built by joining two JSON objects as text, so a record that itself has a `_file_path` key
    keeps it (no map-key collision, nothing lost).
    """
    body = F.to_json(fields)
    path = F.to_json(F.create_map(F.lit("_file_path"), file_path))
    return F.when(
        F.size(fields) > 0,
        F.concat(F.regexp_replace(body, r"\}$", ","), F.regexp_replace(path, r"^\{", "")),
    )


def rescue_json_lines(
    df: DataFrame,
    columns: Sequence[SchemaColumn],
    line: str = "value",
    file_path: str = "_source_file",
    passthrough: Sequence[str] = (),
) -> DataFrame:
    """Typed columns, `_rescued_data`, `_corrupt_record`, then the `passthrough` columns.

    `df` has one raw line per row in column `line`; blank lines are dropped (not records).
    """
    text = F.col(line)
    raw = F.from_json(text, "MAP<STRING,STRING>")
    typed = F.from_json(text, _ddl(columns))
    corrupt = raw.isNull()
    typed_columns = [
        F.when(~corrupt, typed[c.name]).alias(c.name) for c in columns
    ]
    return (
        df.where(text.rlike(r"\S"))
        .select(
            *typed_columns,
            F.when(~corrupt, rescued_json(rescued_fields(raw, typed, columns), F.col(file_path))).alias(
                RESCUED_DATA
            ),
            F.when(corrupt, text).alias(CORRUPT_RECORD),
            *[F.col(c) for c in passthrough],
        )
    )
