"""Auto Loader's `rescue` semantics for JSON lines (and JSON documents), as plain Spark expressions.

Open-source Spark ignores `rescuedDataColumn`, so the local engine reads each line as text and
derives the typed columns, `_rescued_data` and `_corrupt_record` itself. Spark's own JSON reader
(the parser Auto Loader builds on) is the reference; tests/sql/test_rescue.py compares with it
line by line, and with Python's `json` module for "nothing lost".

- Layouts. `LINES` (the default): a row per line, where JSON white space is space and tab.
  `DOCUMENTS`: a row per file holding one JSON document (`format: json` with `multi_line`,
  pipelines/formats/json_document.py), where CR and LF are white space too and a byte-order mark
  followed by a line end is skipped; all else below holds for both, a document taking a line's place
  (tests/sql/test_format_json_document.py compares documents with Spark's `multiLine` reader).
- Records. A line of JSON white space (space, tab) is no record. One UTF-8 byte-order mark at the
  start of a line is skipped, as Spark's reader does. A top-level array of objects is one record
  per object, each typed and rescued as if it were a line of its own (Spark's reader does the
  same). Anything else that is not a JSON object (malformed or truncated text, a bare value, an
  array holding anything but objects, a line of other control characters such as \\x0B or \\f)
  is one row with every typed column NULL and the raw line in `_corrupt_record`.
- Typed values: Spark's JSON conversion of the declared type (the same converters as the reader),
  so a value that does not fit nulls only its own column. A STRING column takes any JSON value; a
  non-string value keeps its exact JSON text, as Spark's reader gives it (`1.10`, not `1.1`).
- A key that occurs more than once: the column takes the last occurrence that fits its type (what
  Spark's reader keeps); every other non-null occurrence is rescued.
- STRUCT, ARRAY and MAP columns: a value of which any part does not fit is rescued whole and the
  column is NULL (Spark's reader would keep the parts that fit; Auto Loader rescues the field).
- `_rescued_data`: every non-null value that was not typed (unknown fields, fields that differ from
  a column only in case, values that do not fit) as a JSON object of field name to value, strings
  as their content and other values as their exact JSON text, in line order, then `_file_path`.
  Duplicate names are written out as they are (also a record's own `_file_path`): nothing is lost.
- JSON null is no value: never rescued.

Known, deliberate differences from Spark's reader and Databricks: an empty array `[]` is one
corrupt row (Spark's reader drops the line: here nothing is silently lost); an object of an array
nested deeper than `_NESTING` brackets makes the whole array fall back to Jackson's compact text
of each object (numbers as Jackson prints them, NaN as a string); fields inside a STRUCT
that the struct type does not declare are dropped as Spark's reader drops them (not rescued); text
after the first JSON value of a line is ignored, as Spark's reader ignores it; lines that are not
UTF-8 (UTF-16/32) are corrupt. A line whose top-level values nest deeper than `_NESTING` brackets,
or holding NaN/Infinity where the keys cannot be read exactly, falls back to Jackson's view: each
key's last value only, rescued as Jackson's compact text, complex columns typed in part. Whether
Databricks orders `_rescued_data` keys or formats numbers the same way is not verified.

Files from disk (tests/sql/test_rescue.py reads the same files with the text source the local
engine uses and with Spark's JSON reader): both split lines at \\n, \\r\\n and \\r alike; both read
gzip files by their extension; a UTF-8 byte-order mark at the start of a file is skipped by both;
lines of several MB, 100 levels of nesting, NaN/Infinity (also +INF), single-quoted strings and
control characters give the same rows, typed values and corrupt records. A line with bytes that
are not UTF-8 is one corrupt record on both sides, its raw bytes in `_corrupt_record`.

Cost: every line is parsed twice (typed, and its keys). Only lines with something to rescue, a
duplicate key, or a STRING column holding a non-string value take the slow way: a regular
expression finds each top-level value's exact text and each value is converted alone. A row holding
an array is split after its objects are found, and only their texts pass the split: a document of
n objects costs in proportion to its size, not n times it. No UDFs, no actions, no `.columns`: it
runs on streaming DataFrames inside pipeline query functions.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from pipelines.config import CORRUPT_RECORD, RESCUED_DATA
from pipelines.config import Column as SchemaColumn

_P = "__rescue_"  # prefix of intermediate columns
_OPTIONS = {"columnNameOfCorruptRecord": CORRUPT_RECORD}

# JSON values with Jackson's grammar as Spark configures it (single-quoted strings and NaN/Infinity
# allowed). Possessive quantifiers only: linear time.
_STRING = r'''"(?:[^"\\]++|\\.)*+"|'(?:[^'\\]++|\\.)*+\''''
_NESTING = 24


def _bracketed(depth: int) -> str:
    """A `{...}` or `[...]` with brackets nested up to `depth` levels; strings skipped whole."""
    group = r'''[{\[](?:%s|[^"'{}\[\]]++)*+[}\]]''' % _STRING
    for _ in range(depth - 1):
        group = r'''[{\[](?:%s|[^"'{}\[\]]++|%s)*+[}\]]''' % (_STRING, group)
    return group


@dataclass(frozen=True)
class Layout:
    """The regular expressions for one layout of the rows to rescue, which sets JSON's white space
    between tokens: within a line (space, tab) or within a whole document (also CR and LF)."""

    bom: str  # one leading byte-order mark, which Jackson skips when something follows it
    blank: str  # a row that is no record: white space only
    array: str  # a row holding a top-level array
    members: str  # one top-level member of an object: (key, value) texts
    elements: str  # one element of a top-level array (its objects are the row's records): its text


def _layout(white_space: str, any_char: str, end: str) -> Layout:
    """The patterns for the white-space class body `white_space`; `any_char` and `end` are the
    regex's any character and end of text: `(?s:.)` and `\\z`, since Java's `.` and `$` treat U+2028
    and U+0085 as line ends (a line of one of them is a corrupt record in Spark's reader, not a blank)."""
    ws = f"[{white_space}]*+"
    scalar = f'''[^"'{{}}\\[\\],:{white_space}]++'''
    value = f"{_STRING}|{_bracketed(_NESTING)}|{scalar}"
    return Layout(
        bom=f"^\ufeff(?={any_char})",
        blank=f"^{ws}{end}",
        array=f"^{ws}\\[",
        members=f"\\G{ws}[{{,]{ws}({_STRING}){ws}:{ws}((?:{value}))",
        elements=f"\\G{ws}[\\[,]{ws}({value})",
    )


LINES = _layout(" \\t", any_char="(?s:.)", end="\\z")  # JSON lines: a row per line
DOCUMENTS = _layout(" \\t\\r\\n", any_char="(?s:.)", end="\\z")  # a row per file: one JSON document

# A STRING column's value as from_json renders it may not be the exact text of the JSON value:
# objects, arrays, numbers, NaN/Infinity (rendered quoted). A string that looks so is harmless.
_MAY_DIFFER = r'^(?:[\[{"]|-?(?:0|[1-9][0-9]*+)(?:\.[0-9]++)?(?:[eE][+-]?[0-9]++)?$)'


def _ddl(columns: Sequence[SchemaColumn]) -> str:
    return ", ".join(f"`{c.name}` {c.data_type}" for c in columns)


def _is_string(c: SchemaColumn) -> bool:
    return c.data_type.strip().upper() == "STRING"


def declared_once(names: Column, columns: Sequence[SchemaColumn]) -> Column:
    """Every name in the array `names` is a declared column's, and none occurs twice: as many names
    as declared columns among them (array_contains compiles; array_distinct/array_except are
    interpreted set operations)."""
    present = sum((F.array_contains(names, c.name).cast("int") for c in columns), F.lit(0))
    return F.size(names) == present


def _json_string(text: Column) -> Column:
    """`text` as a JSON string literal (quoted and escaped)."""
    return F.regexp_replace(F.to_json(F.array(text)), r"^\[|\]$", "")


def _by_key(key: Column, values: dict[str, Column], otherwise: Column) -> Column:
    """CASE key WHEN <name> THEN values[name] ... ELSE otherwise END."""
    result: Column | None = None
    for name, value in values.items():
        result = F.when(key == name, value) if result is None else result.when(key == name, value)
    return otherwise if result is None else result.otherwise(otherwise)


def _alone(text: Column, data_type: str) -> Column:
    """One JSON value (its text) converted alone: STRUCT<v, _corrupt_record>."""
    return F.from_json(F.concat(F.lit('{"v":'), text, F.lit("}")), f"v {data_type}, `{CORRUPT_RECORD}` STRING", _OPTIONS)


def _entries(keys: Column, found: Column, columns: Sequence[SchemaColumn]) -> Column:
    """ARRAY<STRUCT<key, value, is_null, c0, c1, ...>> of an object's top-level members in line
    order, from `found` (their exact JSON texts, see `Layout.members`): `value` is the rescue text (a
    string's content, else the exact text); `c<k>` is column k's conversion of the member when the
    member is column k's, else NULL: the text itself for a STRING column, else `_alone`'s
    STRUCT<v, _corrupt_record> (see `_converts` and `_fits`). Each member is converted once, for its
    own column only: a lambda's subexpressions are not shared, so flags computed here from the
    conversion would each convert it again.
    """

    def entry(key: Column, i: Column) -> Column:
        text = F.get(found, i)
        is_null = text == "null"
        quoted = F.substring(text, 1, 1).isin('"', "'")
        content = F.when(quoted, F.from_json(F.concat(F.lit('{"v":'), text, F.lit("}")), "v STRING")["v"]).otherwise(text)
        converted = {
            f"c{k}": F.when((key == c.name) & ~is_null, content) if _is_string(c)
            else F.when(key == c.name, _alone(text, c.data_type))
            for k, c in enumerate(columns)
        }
        return F.struct(key.alias("key"), content.alias("value"), is_null.alias("is_null"),
                        *[v.alias(name) for name, v in converted.items()])

    return F.transform(keys, entry)


def _value(e: Column, k: int, c: SchemaColumn) -> Column:
    """Column k's value of member `e` (NULL unless the member is column k's and converts)."""
    return e[f"c{k}"] if _is_string(c) else e[f"c{k}"]["v"]


def _converts(e: Column, k: int, c: SchemaColumn) -> Column:
    """Member `e` is column k's and converts at least in part (Spark's reader would keep it)."""
    return (e["key"] == c.name) & ~e["is_null"] & _value(e, k, c).isNotNull()


def _fits(e: Column, k: int, c: SchemaColumn) -> Column:
    """Member `e` is column k's and converts whole."""
    whole = F.lit(True) if _is_string(c) else e[f"c{k}"][CORRUPT_RECORD].isNull()
    return _converts(e, k, c) & whole


def _compact_entries(body: Column, keys: Column, compact: Column) -> Column:
    """The fallback of `_entries` for a line `Layout.members` cannot follow (nesting deeper than
    `_NESTING`) or `json_object_keys` refuses (NaN): Jackson's text of each distinct key's last
    value, from `compact` (the line as MAP<STRING,STRING>, parsed here if NULL)."""
    compact = F.coalesce(compact, F.from_json(body, "MAP<STRING,STRING>"))
    return F.transform(F.coalesce(F.array_distinct(keys), F.map_keys(compact)), lambda key: F.struct(
        key.alias("key"), F.element_at(compact, key).alias("value"),
        F.element_at(compact, key).isNull().alias("is_null"),
    ))


def _reader_occurrence(entries: Column, k: int, c: SchemaColumn) -> Column:
    """0-based index of the member of column k whose value Spark's reader keeps (the last one that
    converts at least in part), -1 if none."""
    marked = F.transform(entries, lambda e, i: F.when(_converts(e, k, c), i))
    return F.aggregate(marked, F.lit(-1), lambda acc, i: F.coalesce(i, acc))


def _array_objects(body: Column, layout: Layout) -> Column:
    """The exact texts of the objects of a top-level JSON array of objects (Jackson's compact text
    where `Layout.elements` cannot follow them), NULL if `body` is not such an array or the array is empty."""
    parsed = F.from_json(body, "ARRAY<STRING>")
    found = F.regexp_extract_all(body, F.lit(layout.elements), 1)
    objects = F.forall(parsed, lambda e: F.coalesce(e.startswith("{"), F.lit(False)))
    return F.when((F.size(parsed) > 0) & objects, F.when(F.size(found) == F.size(parsed), found).otherwise(parsed))


def rescued_json(fields: Column, file_path: Column) -> Column:
    """JSON object text of ARRAY<STRUCT<key, value>> plus `_file_path`, NULL when it is empty.

    Written entry by entry (not via a map), so duplicate names, including a record's own
    `_file_path`, are all kept.
    """
    pairs = F.transform(fields, lambda f: F.concat(_json_string(f["key"]), F.lit(":"), _json_string(f["value"])))
    path = F.concat(F.lit('"_file_path":'), _json_string(file_path))
    body = F.array_join(F.concat(pairs, F.array(path)), ",")
    return F.when(F.size(fields) > 0, F.concat(F.lit("{"), body, F.lit("}")))


def rescue_json_lines(
    df: DataFrame,
    columns: Sequence[SchemaColumn],
    line: str = "value",
    file_path: str = "_source_file",
    passthrough: Sequence[str] = (),
    layout: Layout = LINES,
) -> DataFrame:
    """Typed columns, `_rescued_data`, `_corrupt_record`, then the `passthrough` columns.

    `df` has one raw line per row in column `line` (with `layout=DOCUMENTS`, one whole JSON
    document, where CR and LF are white space too); rows of JSON white space are dropped (not
    records). Separate projections compute each shared expression once per line.
    """
    keep = [F.col(c) for c in dict.fromkeys([file_path, *passthrough])]
    raw = F.col(line)
    # Spark's reader hands Jackson bytes, which skips one UTF-8 byte-order mark (4 bytes or more).
    body = F.regexp_replace(raw, layout.bom, "")
    # Bytes that are not UTF-8 make the line corrupt, as Jackson refuses them in Spark's reader
    # (string functions would read them as U+FFFD): the raw bytes stay in `_corrupt_record`.
    text = df.where(~body.rlike(layout.blank)).select(
        raw.alias(f"{_P}raw"), body.alias(f"{_P}body"), F.is_valid_utf8(raw).alias(f"{_P}utf8"), *keep
    )
    raw, body, utf8 = F.col(f"{_P}raw"), F.col(f"{_P}body"), F.col(f"{_P}utf8")
    # A line holding an array of objects is one record per object, as in Spark's reader. Any other
    # line (an object, or an array that is empty or holds anything but objects) stays one row.
    # The raw text goes into the generator only, and only for a row that is not split: carried past
    # it, a document of n objects would be copied n times. (An object of an array that parsed is
    # never corrupt; were one, its own text would be its `_corrupt_record`.)
    objects = F.when(utf8 & body.rlike(layout.array), _array_objects(body, layout))
    records = F.coalesce(
        F.transform(objects, lambda o: F.struct(o.alias(f"{_P}body"), F.lit(None).cast("string").alias(f"{_P}raw"))),
        F.array(F.struct(body.alias(f"{_P}body"), raw.alias(f"{_P}raw"))),
    )
    lines = text.select(*keep, utf8, F.inline(records))

    parsed = lines.select(
        "*",
        F.json_object_keys(body).alias(f"{_P}keys"),
        F.from_json(body, f"{_ddl(columns)}, `{CORRUPT_RECORD}` STRING", _OPTIONS).alias(f"{_P}typed"),
    )
    keys, typed = F.col(f"{_P}keys"), F.col(f"{_P}typed")
    # Each flag below is a column of its own, computed once per line: written inline, Spark's
    # optimizer would copy it into every expression that reads it (the key checks of `plain` would run
    # once per typed column, a large share of a large ingest's CPU).
    # `json_object_keys` parses with other options than Spark's reader (it refuses NaN, accepts raw
    # control characters in strings), so a line it refuses or that does not fit is parsed once more
    # the reader's way (a MAP of every value as text) to tell whether it is a corrupt record.
    flagged = parsed.select(
        "*", (keys.isNull() | typed.isNull() | typed[CORRUPT_RECORD].isNotNull()).alias(f"{_P}suspicious"))
    suspicious = F.col(f"{_P}suspicious")
    checked = flagged.select(
        "*", F.when(suspicious, F.from_json(body, "MAP<STRING,STRING>")).alias(f"{_P}map"),
    )
    compact = F.col(f"{_P}map")
    string_may_differ = F.lit(False)
    for c in columns:
        if _is_string(c):
            string_may_differ = string_may_differ | F.coalesce(typed[c.name].rlike(_MAY_DIFFER), F.lit(False))
    corrupt_now = ~F.col(f"{_P}utf8") | body.rlike(layout.array) | (suspicious & compact.isNull())
    marked = checked.select("*", corrupt_now.alias(f"{_P}corrupt"))
    corrupt = F.col(f"{_P}corrupt")
    # Nothing to rescue: every key declared, once, every value fits, no STRING text to restore.
    marked = marked.select("*", (
        corrupt | (~suspicious & declared_once(keys, columns) & ~string_may_differ)
    ).alias(f"{_P}plain"))
    plain = F.col(f"{_P}plain")
    # The slow way, only for lines that are not plain.
    # Keys as Jackson reads them; where json_object_keys refused the line (NaN), the pattern's keys
    # decoded by Spark's parser, trusted if they are all the keys the MAP parse saw (each
    # occurrence: the MAP keeps a repeated key's every value).
    found = marked.select(
        "*",
        F.when(~plain, F.regexp_extract_all(body, F.lit(layout.members), 2)).alias(f"{_P}found"),
        F.when(~plain & keys.isNull(), F.from_json(F.concat(
            F.lit("["), F.array_join(F.regexp_extract_all(body, F.lit(layout.members), 1), ","), F.lit("]")),
            "ARRAY<STRING>")).alias(f"{_P}found_keys"),
    )
    found_keys = F.col(f"{_P}found_keys")
    keys = F.coalesce(keys, found_keys)
    exact = F.coalesce(
        (F.size(F.col(f"{_P}found")) == F.size(keys))
        & (F.col(f"{_P}keys").isNotNull() | (F.size(found_keys) == F.size(compact))),
        F.lit(False),
    )
    slow = found.select(
        "*",
        exact.alias(f"{_P}exact"),
        F.when(~plain & exact, _entries(keys, F.col(f"{_P}found"), columns)).alias(f"{_P}entries"),
        F.when(~plain & ~exact, _compact_entries(body, F.col(f"{_P}keys"), compact)).alias(f"{_P}compact"),
    )
    exact, entries, compact = F.col(f"{_P}exact"), F.col(f"{_P}entries"), F.col(f"{_P}compact")
    at = slow.select("*", F.array(*[_reader_occurrence(entries, k, c) for k, c in enumerate(columns)]).alias(f"{_P}at"))
    at_col = F.col(f"{_P}at")

    def rescued(e: Column, i: Column) -> Column:
        typed_here = _by_key(e["key"], {c.name: (i == F.get(at_col, k)) & _fits(e, k, c) for k, c in enumerate(columns)}, F.lit(False))
        return ~e["is_null"] & ~typed_here

    def rescued_compact(e: Column) -> Column:
        unfit = _by_key(e["key"], {c.name: typed[c.name].isNull() for c in columns}, F.lit(True))
        return ~e["is_null"] & unfit

    def pairs(fields: Column) -> Column:
        return F.transform(fields, lambda e: F.struct(e["key"].alias("key"), e["value"].alias("value")))

    fields = F.when(exact, pairs(F.filter(entries, rescued))).otherwise(pairs(F.filter(compact, rescued_compact)))
    # The member each column keeps, and the rescued fields, are columns of their own: each is read
    # several times below, and an expression written out at every use is analysed (in every update,
    # twice by SDP) and, inside lambdas, evaluated at every use.
    kept = at.select(
        "*", *[F.get(entries, F.get(at_col, k)).alias(f"{_P}kept{k}") for k in range(len(columns))],
        F.when(~plain, fields).alias(f"{_P}fields"),
    )

    def typed_column(k: int, c: SchemaColumn) -> Column:
        member = F.col(f"{_P}kept{k}")
        value = F.when(plain | ~exact, typed[c.name]).otherwise(F.when(_fits(member, k, c), _value(member, k, c)))
        return F.when(~corrupt, value).alias(c.name)

    return kept.select(
        *[typed_column(k, c) for k, c in enumerate(columns)],
        F.when(~plain, rescued_json(F.col(f"{_P}fields"), F.col(file_path))).alias(RESCUED_DATA),
        F.when(corrupt, F.coalesce(raw, body)).alias(CORRUPT_RECORD),
        *[F.col(c) for c in passthrough],
    )
