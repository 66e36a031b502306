"""CSV landing files (being built: issue 12.1)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Mapping

from pipelines.formats import FileFormat, PathKey

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

    from pipelines.config import TableSpec

ROWS = "csv:rows"


def reader_options(table: "TableSpec") -> dict[str, str]:
    return {}


def read_local(spark: "SparkSession", table: "TableSpec", path: str, options: Mapping[str, str]) -> "DataFrame":
    raise NotImplementedError("format: csv is not readable locally yet")


def counter(table: "TableSpec") -> str:
    return ROWS


def records_sql(table: "TableSpec", folder: str, path_key: PathKey) -> str:
    return (f"SELECT {path_key('_metadata.file_path')} AS path_key, count(*) AS n "
            f"FROM read_files({folder}, format => 'text', ignoreCorruptFiles => 'true') GROUP BY 1")


def count_rows(path):  # type: ignore[no-untyped-def]
    raise NotImplementedError


COUNTERS = {ROWS: count_rows}

FORMAT = FileFormat("csv", reader_options, read_local, counter, records_sql)
