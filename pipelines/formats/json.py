"""JSON landing files: JSON lines (one record per line, the default) or, with `multi_line: true`,
one JSON document per file (an object, or an array of objects), as Spark's JSON reader with
`multiLine` reads them. Rescue semantics: `pipelines.rescue`."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Callable, Mapping

from pipelines.formats.base import FileFormat, PathKey
from pipelines.formats.files import metadata_columns, text_stream
from pipelines.formats.json_lines import count_content_lines

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

    from pipelines.config import TableSpec

LINES = "json:lines"
DOCUMENT = "json:document"

# Rows one landing line (`value`, from the text reader) makes, as `json_lines.count_content_lines`
# counts them locally: none for a line of spaces and tabs, one per object for a line holding a JSON
# array of objects (Spark's JSON reader makes a row of each), else one. A byte-order mark at the start
# of a line is skipped when something follows it, as the reader skips it (and only there).
_LINE_BODY = "regexp_replace(value, '^\\uFEFF(?=(?s:.))', '')"
_LINE_ARRAY = f"from_json({_LINE_BODY}, 'ARRAY<STRING>')"
LINE_RECORDS_SQL = (
    f"CASE WHEN NOT {_LINE_BODY} RLIKE '[^ \\t]' THEN 0 "
    f"WHEN NOT {_LINE_BODY} RLIKE '^[ \\t]*\\\\[' THEN 1 "
    f"WHEN size({_LINE_ARRAY}) > 0 AND forall({_LINE_ARRAY}, x -> ltrim(x) LIKE '{{%') THEN size({_LINE_ARRAY}) "
    "ELSE 1 END"
)


def reader_options(table: "TableSpec") -> dict[str, str]:
    return {"multiLine": "true"} if table.multi_line else {}


def read_local(spark: "SparkSession", table: "TableSpec", path: str, options: Mapping[str, str]) -> "DataFrame":
    from pipelines.config import SOURCE_FILE, SOURCE_FILE_MTIME
    from pipelines.rescue import rescue_json_lines

    if table.multi_line:
        from pipelines.formats.json_document import read_documents

        return read_documents(spark, table, path, options)
    lines = text_stream(spark, path, options).select("value", *metadata_columns())
    return rescue_json_lines(lines, table.columns, line="value", file_path=SOURCE_FILE,
                             passthrough=(SOURCE_FILE, SOURCE_FILE_MTIME))


def counter(table: "TableSpec") -> str:
    return DOCUMENT if table.multi_line else LINES


def records_sql(table: "TableSpec", folder: str, path_key: PathKey) -> str:
    if table.multi_line:
        from pipelines.formats.json_document import DOCUMENT_RECORDS_SQL

        return (f"SELECT {path_key('_metadata.file_path')} AS path_key, {DOCUMENT_RECORDS_SQL} AS n "
                f"FROM read_files({folder}, format => 'text', wholetext => 'true', ignoreCorruptFiles => 'true')")
    return (f"SELECT {path_key('_metadata.file_path')} AS path_key, {LINE_RECORDS_SQL} AS n "
            f"FROM read_files({folder}, format => 'text', ignoreCorruptFiles => 'true')")


def _count_documents(path: str | Path) -> int | None:
    from pipelines.formats.json_document import count_document_records

    return count_document_records(path)


COUNTERS: dict[str, Callable[[str | Path], int | None]] = {LINES: count_content_lines, DOCUMENT: _count_documents}

FORMAT = FileFormat("json", reader_options, read_local, counter, records_sql)
