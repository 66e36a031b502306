"""CSV landing files with Auto Loader's rescue semantics, as plain Spark expressions.

Open-source Spark's CSV reader maps columns by position and has no rescued data column, so the local
engine reads each file whole (Spark's text source, `wholetext`) and derives the columns itself.
Spark's own CSV reader (PERMISSIVE, the table's schema, `_corrupt_record`) is the reference, and
Spark's parser does every conversion: each field's text goes through `from_csv`, the same parser
with the same options (`sep`, `quote`, `escape`). tests/sql/test_format_csv.py compares with the
reader on files from disk.

- Records. A file is split into lines at LF, CRLF and CR; a line of nothing but characters up to
  U+0020 (spaces, tabs, control characters) is no record, as Spark's reader skips it. A UTF-8
  byte-order mark at the start of a file is skipped. Fields are not read across lines (Spark's
  `multiLine` is off): a quoted field left open takes the rest of its line, as Spark's parser does.
- Header (`header: true`, the default): the first line with content of each file names its columns,
  and a field goes to the declared column of exactly its header name (Auto Loader matches by name;
  Spark's reader would match by position). A declared column the header lacks is NULL. A field under
  a header name that is not declared, that differs from a declared name only in case, or that repeats
  a name seen before in the header is rescued under that name (an empty header name is `_c<i>`, the
  0-based position, as Spark names it). Without a header, fields go to the declared columns by
  position.
- A record with more or fewer fields than the header (or the schema, without a header) is malformed:
  the raw line is in `_corrupt_record` and nothing of it is rescued (the line holds it all); its
  typed columns are what Spark's reader gives (the fields it has, by position or name).
- Typed values: Spark's CSV conversion of the declared type. A field whose text is not empty and
  does not convert is rescued under its column's name and the column is NULL (where Spark's reader
  would mark the whole line corrupt). An empty field, or `""`, is NULL and nothing is rescued.
- `_rescued_data`: a JSON object of header name to the field's text (as Spark's parser unquotes
  it), in header order, then `_file_path`; NULL when nothing is rescued.

Known differences: in a line with too few or too many fields (corrupt either way) where a quote is
followed by the escape character, Spark's parser may split the fields otherwise, so the partial
typed values of such a corrupt line can differ (its raw text is the same).

Known limits: a file is one string in memory while it is split (files of hundreds of MB need the
Databricks engine); quoted fields spanning lines are not supported (Auto Loader needs `multiLine`
for them too, which lakewatch does not set). Whether Databricks names an empty header field `_c<i>`
in `_rescued_data` is not verified.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Mapping

from pipelines.formats.base import FileFormat, PathKey
from pipelines.formats.files import read_whole

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame, SparkSession

    from pipelines.config import TableSpec

ROWS_WITH_HEADER = "csv:header"
ROWS = "csv:rows"

_P = "__csv_"  # prefix of intermediate columns
_LINE_END = "\r\n|\r|\n"
_CONTENT = "[^\\x00-\\x20]"  # a line with content holds a character above U+0020 (Java's trim)


def parser_options(table: "TableSpec") -> dict[str, str]:
    """Options of Spark's CSV parser for this table (reader and `from_csv` alike)."""
    return {"sep": table.delimiter, "quote": table.quote, "escape": table.escape}


def reader_options(table: "TableSpec") -> dict[str, str]:
    return {"header": str(table.header).lower(), **parser_options(table)}


def field_pattern(table: "TableSpec") -> str:
    """A Java regular expression matching the next field of a line that starts with a delimiter
    (the reader puts one before each line); group 1 is the field's raw text.

    As Spark's parser (univocity, unescaped quotes handled STOP_AT_DELIMITER) splits a line: a field
    that opens with the quote character runs, delimiters included, to a quote followed by nothing but
    spaces or tabs before the next delimiter or the line's end (a quoted field), or to a quote
    followed by anything else and then on to the next delimiter (the text is kept as it is), or, when
    no quote closes it, to the end of the line. Any other field runs to the next delimiter. Inside
    quotes the escape character takes the next character; when the escape is the quote character
    (RFC 4180's `""`), a doubled quote is one quote."""
    d, q, e = (re.escape(c) for c in (table.delimiter, table.quote, table.escape))
    blanks = "".join(c for c in " \t" if c != table.delimiter).replace("\t", "\\t")
    # \z and (?s:.), not $ and .: Java's $ and . take U+2028, U+2029 and U+0085 for line ends
    if table.escape == table.quote:
        quoted = f"{q}(?:[^{q}]|{q}{q})*+(?:{q}[{blanks}]*+(?={d}|\\z)|{q}[^{d}]*+|\\z)"
    else:
        quoted = f"{q}(?:[^{q}{e}]|{e}(?s:.))*+(?:{q}[{blanks}]*+(?={d}|\\z)|{q}[^{d}]*+|{e}?\\z)"
    plain = f"[^{d}]*+"
    return f"\\G{d}({quoted}|{plain})"


def _value(field: "Column", data_type: str, options: Mapping[str, str]) -> "Column":
    """A field's text converted by Spark's CSV parser to `data_type` (NULL if it does not convert)."""
    from pyspark.sql import functions as F

    return F.from_csv(field, f"v {data_type}", dict(options))["v"]


def rescue_csv_files(df: "DataFrame", table: "TableSpec", text: str = "value", file_path: str = "_source_file",
                     passthrough: tuple[str, ...] = ()) -> "DataFrame":
    """Typed columns, `_rescued_data`, `_corrupt_record`, then the `passthrough` columns, from a
    frame with one row per file holding its whole text in `text`."""
    from pyspark.sql import functions as F

    from pipelines.config import CORRUPT_RECORD, RESCUED_DATA
    from pipelines.rescue import declared_once, rescued_json

    options = parser_options(table)
    pattern = F.lit(field_pattern(table))
    keep = [F.col(c) for c in dict.fromkeys([file_path, *passthrough])]
    lines = F.split(F.regexp_replace(F.col(text), "^\ufeff", ""), _LINE_END, -1)
    content = F.filter(lines, lambda line: line.rlike(_CONTENT))
    if table.header:
        header = F.transform(
            F.regexp_extract_all(F.concat(F.lit(table.delimiter), F.get(content, 0)), pattern, 1),
            lambda f, i: F.coalesce(_value(f, "STRING", options), F.concat(F.lit("_c"), i.cast("string"))),
        )
        records = F.filter(content, lambda _, i: i > 0)
    else:
        header = F.array(*[F.lit(c.name) for c in table.columns])
        records = content
    declared = F.array(*[F.lit(c.name) for c in table.columns])
    files = df.select(*keep, header.alias(f"{_P}header"), records.alias(f"{_P}records"))
    # A file whose header names declared columns only, each once (always so without a header): its
    # records rescue nothing but values that do not convert. Once per file, not per record.
    named = F.col(f"{_P}header")
    files = files.select("*", (
        F.lit(True) if not table.header else declared_once(named, table.columns)
    ).alias(f"{_P}by_name"))
    rows = files.select(
        *keep, F.col(f"{_P}header"), F.col(f"{_P}by_name"), F.explode(F.col(f"{_P}records")).alias(f"{_P}line"),
    ).select(
        "*", F.regexp_extract_all(F.concat(F.lit(table.delimiter), F.col(f"{_P}line")), pattern, 1).alias(f"{_P}fields"),
    )
    header, line, fields = F.col(f"{_P}header"), F.col(f"{_P}line"), F.col(f"{_P}fields")
    corrupt = F.size(fields) != F.size(header)

    typed, texts, mismatched = {}, {}, {}
    for k, c in enumerate(table.columns):
        # 1-based position of the column's field: its name's first place in the header, or k + 1
        at = F.array_position(header, c.name) if table.header else F.lit(k + 1)
        field = F.when((at > 0) & (at <= F.size(fields)), F.get(fields, (at - 1).cast("int")))
        texts[c.name] = _value(field, "STRING", options)
        typed[c.name] = texts[c.name] if c.data_type == "STRING" else _value(field, c.data_type, options)
        mismatched[c.name] = texts[c.name].isNotNull() & typed[c.name].isNull()
    values = rows.select(
        "*",
        *[typed[c.name].alias(f"{_P}t{k}") for k, c in enumerate(table.columns)],
        F.array(*[mismatched[c.name] for c in table.columns]).alias(f"{_P}mismatched"),
    )
    mismatched_at = F.col(f"{_P}mismatched")
    # Nothing to rescue (a column of its own: the optimizer would otherwise copy it where it is read).
    values = values.select("*", (F.col(f"{_P}by_name") & ~F.array_contains(mismatched_at, True)).alias(f"{_P}plain"))
    plain = F.col(f"{_P}plain")

    def rescued(name: "Column", i: "Column") -> "Column":
        column = F.array_position(declared, name)  # 1-based, 0 when not declared
        typed_here = (column > 0) & (F.array_position(header, name) == i + 1)
        return ~typed_here | F.get(mismatched_at, (column - 1).cast("int"))

    pairs = F.transform(
        F.arrays_zip(F.slice(header, 1, F.size(fields)).alias("key"), fields.alias("raw")),
        lambda p, i: F.struct(p["key"].alias("key"), _value(p["raw"], "STRING", options).alias("value"),
                              rescued(p["key"], i).alias("rescued")),
    )
    to_rescue = F.filter(pairs, lambda p: p["rescued"] & p["value"].isNotNull())
    to_rescue = F.transform(to_rescue, lambda p: F.struct(p["key"].alias("key"), p["value"].alias("value")))
    return values.select(
        *[F.col(f"{_P}t{k}").alias(c.name) for k, c in enumerate(table.columns)],
        F.when(~corrupt & ~plain, rescued_json(to_rescue, F.col(file_path))).alias(RESCUED_DATA),
        F.when(corrupt, line).alias(CORRUPT_RECORD),
        *[F.col(c) for c in passthrough],
    )


def read_local(spark: "SparkSession", table: "TableSpec", path: str, options: Mapping[str, str]) -> "DataFrame":
    from pipelines.config import SOURCE_FILE, SOURCE_FILE_MTIME
    from pipelines.formats.files import metadata_columns, text_stream

    files = text_stream(spark, path, options, whole_files=True).select("value", *metadata_columns())
    return rescue_csv_files(files, table, file_path=SOURCE_FILE, passthrough=(SOURCE_FILE, SOURCE_FILE_MTIME))


def counter(table: "TableSpec") -> str:
    return ROWS_WITH_HEADER if table.header else ROWS


def records_sql_expression(header: bool, text: str = "value") -> str:
    """Records of a file from its whole text, as the local reader makes them (lines with content,
    less the header)."""
    lines = (f"filter(split(regexp_replace({text}, '^\\\\uFEFF', ''), '\\\\r\\\\n|\\\\r|\\\\n', -1), "
             "l -> l RLIKE '[^\\\\x00-\\\\x20]')")
    return f"greatest(size({lines}) - 1, 0)" if header else f"size({lines})"


def records_sql(table: "TableSpec", folder: str, path_key: PathKey) -> str:
    return (f"SELECT {path_key('_metadata.file_path')} AS path_key, {records_sql_expression(table.header)} AS n "
            f"FROM read_files({folder}, format => 'text', wholetext => 'true', ignoreCorruptFiles => 'true')")


_LINE_END_BYTES = re.compile(rb"\r\n|\r|\n")
_CONTENT_BYTES = re.compile(rb"[^\x00-\x20]")


def _count(path: str | Path, header: bool) -> int | None:
    """Lines with content (a byte above 0x20; a UTF-8 BOM alone is none), less the header."""
    data = read_whole(path)
    if data is None:
        return None
    data = data.removeprefix(b"\xef\xbb\xbf")
    count = sum(1 for line in _LINE_END_BYTES.split(data) if _CONTENT_BYTES.search(line))
    return max(count - 1, 0) if header else count


COUNTERS: dict[str, Callable[[str | Path], int | None]] = {
    ROWS_WITH_HEADER: lambda path: _count(path, header=True),
    ROWS: lambda path: _count(path, header=False),
}

FORMAT = FileFormat("csv", reader_options, read_local, counter, records_sql)
