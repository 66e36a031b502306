"""JSON documents: with `format: json` and `multi_line: true` each landing file is one JSON document,
as Spark's JSON reader with `multiLine` reads it. An object is one record, a top-level array of
objects one record per object; an empty file or one of JSON white space makes none; anything else
(malformed or truncated JSON, a bare value, an array holding anything but objects, a raw line end
inside a string, bytes that are not UTF-8) is one corrupt record, the whole file text in
`_corrupt_record`. Each record is typed and rescued as a JSON line is (`pipelines.rescue` with its
`DOCUMENTS` layout: CR and LF are white space between tokens too). Like Spark's reader: one UTF-8
byte-order mark is skipped when something follows it, text after the document is ignored (a
JSON-lines file read this way gives its first record only), gzip and bzip2 are read by extension.

Known, deliberate differences from Spark's reader: an empty array `[]` is one corrupt record (Spark's
reader makes none; as with JSON lines, nothing is silently lost), and both counts below say 1; a value
that does not fit its column is rescued and the rest of the record typed (Spark's reader types the
rest and marks the whole record corrupt). A STRING column, and a rescued value, spanning lines keep
the exact text, line ends and indentation included (Spark's reader gives the same for STRING
columns; whether Auto Loader rescues nested values so is not verified).

The counts, for reconciliation: `count_document_records` reads the file with Python's `json` module,
so an array written with syntax only Jackson accepts (single quotes, `+INF`) counts 1 where the
readers make a row per object; `DOCUMENT_RECORDS_SQL` parses with Spark's JSON options.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Mapping

from pipelines.formats.files import metadata_columns, read_whole, text_stream

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

    from pipelines.config import TableSpec

_BOM = "\\uFEFF(?=(?s:.))"  # as in pipelines.rescue.DOCUMENTS: Jackson skips it when something follows
_ARRAY = f"from_json(regexp_replace(value, '^{_BOM}', ''), 'ARRAY<STRING>')"
# Records one file (`value`: its whole text) makes, as `count_document_records` counts them.
DOCUMENT_RECORDS_SQL = (
    f"CASE WHEN value RLIKE '^(?:{_BOM})?[ \\t\\r\\n]*+\\\\z' THEN 0 "
    f"WHEN NOT value RLIKE '^(?:{_BOM})?[ \\t\\r\\n]*+\\\\[' THEN 1 "
    f"WHEN is_valid_utf8(value) AND size({_ARRAY}) > 0 AND forall({_ARRAY}, x -> x LIKE '{{%') "
    f"THEN size({_ARRAY}) ELSE 1 END"
)


def read_documents(spark: "SparkSession", table: "TableSpec", path: str, options: Mapping[str, str]) -> "DataFrame":
    """The landing folder `path` as a stream of records with Auto Loader's rescue semantics: the
    declared columns, `_rescued_data`, `_corrupt_record`, `_source_file`,
    `_source_file_modification_time`; `options` are Spark's file-source options."""
    from pipelines.config import SOURCE_FILE, SOURCE_FILE_MTIME
    from pipelines.rescue import DOCUMENTS, rescue_json_lines

    files = text_stream(spark, path, options, whole_files=True).select("value", *metadata_columns())
    return rescue_json_lines(files, table.columns, line="value", file_path=SOURCE_FILE,
                             passthrough=(SOURCE_FILE, SOURCE_FILE_MTIME), layout=DOCUMENTS)


_UTF8_BOM = b"\xef\xbb\xbf"
_WHITE_SPACE = b" \t\r\n"


def _records(data: bytes) -> int:
    """Records one document makes: none for white space only, one per object of a non-empty
    array of objects, else one (an object, or a corrupt record)."""
    if len(data) > len(_UTF8_BOM) and data.startswith(_UTF8_BOM):
        data = data[len(_UTF8_BOM):]
    text = data.lstrip(_WHITE_SPACE)
    if not text:
        return 0
    if not text.startswith(b"["):
        return 1
    try:  # text after the array is ignored, as Spark's reader ignores it
        value, _ = json.JSONDecoder().raw_decode(text.decode("utf-8"))
    except (ValueError, RecursionError):  # not JSON, or not UTF-8: one corrupt record
        return 1
    if isinstance(value, list) and value and all(isinstance(v, dict) for v in value):
        return len(value)
    return 1


def count_document_records(path: str | Path) -> int | None:
    """Records of one landing file as the local reader (and Spark's `multiLine` reader) makes them;
    None when it cannot be read whole or is compressed with a codec this count does not read."""
    data = read_whole(path)
    return None if data is None else _records(data)
