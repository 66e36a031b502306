"""`format: json` with `multi_line: true` (pipelines/formats/json_document.py) against Spark's own reader.

Oracles, not mirrors: real files in one landing folder, read once by the local reader as a stream
(`read_documents` through the format registry, `trigger(availableNow=True)` into a memory sink) and
by Spark's JSON reader with `multiLine` in PERMISSIVE mode, then compared file by file:
(a) typed values equal those of Spark's reader with the declared schema where it parses every value;
(b) the corrupt records are those of Spark's reader with every column STRING (the whole file text);
(c) Python's `json` module lists each record's members: every non-null one is typed or in
    `_rescued_data` with its exact value, and nothing else is rescued;
(d) `count_document_records` and `DOCUMENT_RECORDS_SQL` (over `spark.read.text(..., wholetext=True)`)
    equal the rows of each file.

Known, deliberate differences from Spark's reader, asserted as such:
- an empty array `[]` is one corrupt record (Spark's reader makes none): nothing is silently lost, as
  with JSON lines; both counts say 1;
- a value that does not fit its column: Spark's reader types the rest and marks the whole record
  corrupt; ours types the rest and rescues the value (Auto Loader's rescue), so (a) compares the
  values we type only.
"""

from __future__ import annotations

import bz2
import gzip
import json
import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pyspark.sql import functions as F

from pipelines.config import CORRUPT_RECORD, RESCUED_DATA, SOURCE_FILE, SOURCE_FILE_MTIME, TableSpec
from pipelines.formats import count_records, file_format
from pipelines.formats.json import DOCUMENT
from pipelines.formats.json_document import DOCUMENT_RECORDS_SQL, count_document_records
from pipelines.rescue import DOCUMENTS, rescue_json_lines
from tests.sql.test_rescue import (HOSTILE, ORACLE_COLUMNS, Members, json_keys, json_values, lost, members,
                                    python_members, typed_values_differ)

TABLE = TableSpec(name="docs", format="json", columns=ORACLE_COLUMNS, landing="docs", multi_line=True)
GOOD = {"id": 1, "n": 2, "amount": 9.5, "ts": "2026-11-01T10:00:00Z", "note": "ok", "flag": True,
        "tags": [1, 2], "attrs": {"k": 1}, "point": {"x": 1, "y": 2}}
FILES_PER_TRIGGER = 12
BOM = "\ufeff"


def pretty(value: Any) -> str:
    return json.dumps(value, indent=2)


def good(**fields: Any) -> dict[str, Any]:
    return {**GOOD, **fields}


# Landing files: name -> (bytes, what Spark's reader makes of it: "rows", "corrupt" or "none").
# The kind checks the file is the case it claims to be, by the oracle; our rows are checked by (a)-(d).
FILES: dict[str, tuple[bytes, str]] = {
    "pretty.json": (pretty(good()).encode(), "rows"),
    "array.json": (pretty([good(id=i) for i in range(1, 6)]).encode(), "rows"),
    "unknown.json": (pretty(good(coupon="A1", nested={"x": [1, 2.50]}, empty=None)).encode(), "rows"),
    "case.json": (pretty({"ID": 3, "Note": "x", "POINT": {"x": 1}, "id": 4}).encode(), "rows"),
    "mismatch.json": (pretty(good(id="n/a", n=2**31, ts="yesterday", tags=[1, "x"], flag="yes")).encode(), "rows"),
    "array_mixed.json": (("[\n" + ",\n".join([
        pretty(good(id=7)), pretty(good(id="x", extra=[1.50])), members(("id", "1"), ("id", "2")), "{}",
        '{\n  "note": {\n    "a": [1, 2.50, 1e3]\n  },\n  "amount": 1.10\n}',
    ]) + "\n]\n").encode(), "rows"),
    "string_values.json": (('{\n  "note": {\n    "a" : [1,\n 2.50]\n  },\n  "id": 5\n}\n').encode(), "rows"),
    "duplicates.json": (members(("id", '"x"'), ("id", "2"), ("note", '"a"'), ("note", "{\n}")).encode(), "rows"),
    "malformed.json": (b'{\n  "id": 1,,\n  "note": "a"\n}\n', "corrupt"),
    "truncated.json": (pretty(good())[:40].encode(), "corrupt"),
    "truncated_array.json": (pretty([good(id=1), good(id=2)])[:-30].encode(), "corrupt"),
    "bare_number.json": (b"42\n", "corrupt"),
    "bare_string.json": (b'"just a string"', "corrupt"),
    "non_objects.json": (b'[\n  {"id": 1},\n  2\n]\n', "corrupt"),
    "nested_array.json": (b'[\n  [{"id": 1}]\n]', "corrupt"),
    "empty_array.json": (b"[\n]\n", "none"),  # ours: one corrupt record (see the module docstring)
    "empty.json": (b"", "none"),
    "blank.json": (b" \n\t\r\n  \n", "none"),
    "raw_newline.json": (b'{\n  "id": 1,\n  "note": "a\nb"\n}', "corrupt"),  # a line end inside a string
    "raw_newline_in_array.json": (b'[{"id": 1},\n {"id": 2, "note": "a\r\nb"}]', "corrupt"),
    "bom.json": ((BOM + pretty(good(id=8, extra="x"))).encode(), "rows"),
    "bom_line_end.json": ((BOM + "\r\n" + pretty([good(id=9)])).encode(), "rows"),
    "bom_only.json": (BOM.encode(), "corrupt"),  # Jackson skips a byte-order mark only when more follows
    "bom_blank.json": ((BOM + "\n").encode(), "none"),
    "two_boms.json": ((BOM * 2 + pretty(good())).encode(), "corrupt"),
    "crlf.json": (pretty([good(id=10), good(id=11, extra={"k": "v"})]).replace("\n", "\r\n").encode(), "rows"),
    "crlf_corrupt.json": (b'{\r\n  "id": 1,\r\n  oops\r\n}\r\n', "corrupt"),
    "trailing.json": (pretty(good(id=12)).encode() + b"\n" + json.dumps(good(id=13)).encode() + b"\n", "rows"),
    "control.json": (b'\x0b{\n  "id": 1\n}', "corrupt"),
    "line_separator.json": ("\u2028\n".encode(), "corrupt"),  # no JSON white space, though Java's `$` takes it
    "invalid_utf8.json": (b'[\n  {"id": 1, "note": "a\xff\xfeb"},\n  {"id": 2}\n]', "corrupt"),
    "docs.json.gz": (gzip.compress(pretty([good(id=14), good(id=15, extra=1)]).encode()), "rows"),
    "docs.json.bz2": (bz2.compress(pretty(good(id=16, Amount=3)).encode()), "rows"),
}


@dataclass
class File:
    text: str  # the whole text, decompressed (as the text source reads it)
    reader: list = field(default_factory=list)  # rows of Spark's reader, declared schema
    strings: list = field(default_factory=list)  # rows of Spark's reader, every column STRING
    ours: list = field(default_factory=list)  # rows of the local reader
    sql_count: int = 0  # DOCUMENT_RECORDS_SQL (no row for an empty file: 0)
    metadata: Any = None  # the text source's `_metadata`
    local_count: int | None = None  # count_document_records


@dataclass
class Landing:
    root: Path
    files: dict[str, File]
    columns: list[str]
    streaming: bool
    batches: int


# A document Spark's reader makes no row of, ours one corrupt row: an empty array.
EMPTY_ARRAY = re.compile("\ufeff?[ \t\r\n]*\\[[ \t\r\n]*\\]")


def spark_drops(f: File) -> bool:
    return not f.strings and EMPTY_ARRAY.match(f.text) is not None


def spark_reader(spark, path: str, data_type: str | None = None):
    """Spark's JSON reader, multiLine and PERMISSIVE, with the declared schema or every column `data_type`."""
    ddl = ", ".join(f"`{c.name}` {data_type or c.data_type}" for c in ORACLE_COLUMNS)
    return (spark.read.schema(f"{ddl}, `{CORRUPT_RECORD}` STRING").option("multiLine", "true")
            .option("mode", "PERMISSIVE").option("columnNameOfCorruptRecord", CORRUPT_RECORD).json(path))


def collect_by_file(df, files: dict[str, File], into: Callable[[File, Any], None], name: str = "_metadata.file_name"):
    for row in df.select("*", F.col(name).alias("__file")).collect():
        into(files[row["__file"].rsplit("/", 1)[-1]], row)


@pytest.fixture(scope="module")
def landing(spark, tmp_path_factory) -> Landing:
    """Every file in one folder, read once by each side: the local reader as a stream
    (`maxFilesPerTrigger` 12), Spark's reader twice, the SQL count once."""
    root = tmp_path_factory.mktemp("documents")
    for name, (data, _) in FILES.items():
        (root / name).write_bytes(data)
    folder = str(root)
    files = {name: File("") for name in FILES}  # an empty file has no row in the text source

    def whole_text(f: File, row: Any) -> None:
        f.text, f.metadata = row["value"], row["_metadata"]

    collect_by_file(spark.read.text(folder, wholetext=True).select("value", "_metadata"), files, whole_text)

    stream = file_format(TABLE).read_local(spark, TABLE, folder, {"maxFilesPerTrigger": str(FILES_PER_TRIGGER)})
    query = stream.writeStream.format("memory").queryName("json_documents").trigger(availableNow=True).start()
    query.awaitTermination()
    batches = len({p["batchId"] for p in query.recentProgress})
    collect_by_file(spark.table("json_documents"), files, lambda f, r: f.ours.append(r), SOURCE_FILE)

    collect_by_file(spark_reader(spark, folder), files, lambda f, r: f.reader.append(r))
    collect_by_file(spark_reader(spark, folder, "STRING"), files, lambda f, r: f.strings.append(r))
    counted = spark.read.text(folder, wholetext=True).selectExpr(f"{DOCUMENT_RECORDS_SQL} AS n")
    collect_by_file(counted, files, lambda f, r: setattr(f, "sql_count", r["n"]))
    return Landing(root, files, stream.columns, stream.isStreaming, batches)


def problems(files: dict[str, File], check: Callable[[File], Any]) -> str:
    return "\n".join(f"{name} {f.text[:60]!r}: {p}" for name, f in files.items() for p in check(f))


def test_the_files_are_the_cases_they_claim_to_be(landing):
    """By Spark's reader itself (guards the oracle against files that test nothing)."""
    def kind(f: File) -> str:
        if any(r[CORRUPT_RECORD] is not None for r in f.strings):
            return "corrupt"
        return "rows" if f.strings else "none"

    wrong = {name: kind(landing.files[name]) for name, (_, claimed) in FILES.items() if kind(landing.files[name]) != claimed}
    assert not wrong


def test_stream_has_the_declared_columns_then_rescue_and_metadata(landing):
    assert landing.streaming
    assert landing.columns == [c.name for c in ORACLE_COLUMNS] + [RESCUED_DATA, CORRUPT_RECORD, SOURCE_FILE, SOURCE_FILE_MTIME]


def test_rows_carry_their_files_path_and_modification_time(landing):
    wrong = [(name, r[SOURCE_FILE], r[SOURCE_FILE_MTIME]) for name, f in landing.files.items() for r in f.ours
             if (r[SOURCE_FILE], r[SOURCE_FILE_MTIME]) != (f.metadata.file_path, f.metadata.file_modification_time)]
    assert not wrong


def test_stream_honours_max_files_per_trigger(landing):
    assert landing.batches == math.ceil(len(FILES) / FILES_PER_TRIGGER)


def expected_rows(f: File) -> list[bool]:
    """Oracle (b): one flag per row, True for a corrupt record."""
    if any(r[CORRUPT_RECORD] is not None for r in f.strings) or spark_drops(f):
        return [True]
    return [False] * len(f.strings)


def corrupt_records_differ(f: File):
    """Oracle (b): the rows and their corrupt records are those of Spark's reader (the file's text)."""
    flags = [r[CORRUPT_RECORD] is not None for r in f.ours]
    if flags != expected_rows(f):
        yield f"rows (True = corrupt): ours {flags}, expected {expected_rows(f)}"
    for row in f.ours:
        if row[CORRUPT_RECORD] is None:
            continue
        typed = [c.name for c in ORACLE_COLUMNS if row[c.name] is not None]
        if typed or row[RESCUED_DATA] is not None:
            yield f"corrupt row also has {typed} {row[RESCUED_DATA]!r}"
        theirs = next((r[CORRUPT_RECORD] for r in f.strings if r[CORRUPT_RECORD]), f.text)
        if row[CORRUPT_RECORD] != theirs or theirs != f.text:
            yield f"_corrupt_record {row[CORRUPT_RECORD]!r}, Spark's reader {theirs!r}, file {f.text!r}"


def test_corrupt_records_are_those_of_sparks_reader(landing):
    found = problems(landing.files, corrupt_records_differ)
    assert not found, "\n" + found


def test_typed_values_are_those_of_sparks_reader(landing):
    found = problems(landing.files, typed_values_differ)
    assert not found, "\n" + found
    typed = sum(1 for f in landing.files.values() for r in f.ours if r[CORRUPT_RECORD] is None)
    assert typed >= 20  # the comparison compared something


def document_members(text: str) -> Any:
    """The document's records as Python's json module reads them (text after it ignored)."""
    return python_members(text.lstrip("\ufeff \t\r\n"))


def something_is_lost(f: File):
    """Oracle (c): every non-null member of every record is typed or rescued exactly."""
    if all(row[CORRUPT_RECORD] is not None for row in f.ours):
        return
    value = document_members(f.text)
    if value is None:  # beyond Python's json (single quotes, +INF): Spark's reader is the oracle
        return
    records = [value] if isinstance(value, Members) else value
    if len(records) != len(f.ours):
        yield f"{len(f.ours)} rows for {len(records)} records"
        return
    for row, pairs in zip(f.ours, records):
        yield from lost({**row.asDict(), "path": row[SOURCE_FILE]}, pairs)


def test_rescued_values_are_never_lost(landing):
    found = problems(landing.files, something_is_lost)
    assert not found, "\n" + found
    unread = [name for name, f in landing.files.items()
              if any(r[CORRUPT_RECORD] is None for r in f.ours) and document_members(f.text) is None]
    assert not unread  # every file with records is one this oracle reads
    assert sum(1 for f in landing.files.values() for r in f.ours if r[RESCUED_DATA]) >= 6


def counts_differ(f: File):
    """Oracle (d): the local count and the SQL count equal the rows of the local reader and of
    Spark's reader (bar the empty array, see above)."""
    counts = {"local": f.local_count, "sql": f.sql_count, "ours": len(f.ours), "spark": len(f.strings) + spark_drops(f)}
    if len(set(counts.values())) != 1:
        yield f"counts {counts}"


def test_record_counts_are_the_rows_of_each_file(landing):
    for name, f in landing.files.items():
        f.local_count = count_records(DOCUMENT, landing.root / name)  # through the format registry
    found = problems(landing.files, counts_differ)
    assert not found, "\n" + found


def test_unreadable_files_are_not_counted(tmp_path):
    (tmp_path / "cut.json.gz").write_bytes(gzip.compress(pretty([GOOD, GOOD]).encode())[:-12])
    (tmp_path / "odd.json.zst").write_bytes(b"{}")
    assert count_document_records(tmp_path / "cut.json.gz") is None
    assert count_document_records(tmp_path / "odd.json.zst") is None
    assert count_document_records(tmp_path / "missing.json") is None


# --- Documents read in a batch by the same expressions (cheaper than a stream) ---------------------


def agree_with_sparks_reader(spark, folder: Path, texts: dict[str, str]) -> str:
    """Problems of files `texts` (name -> text) in `folder`, read both ways, by oracles (a)-(c)."""
    files = {name: File(text) for name, text in texts.items()}
    for name, text in texts.items():
        (folder / name).write_bytes(text.encode())
    whole = spark.read.text(str(folder), wholetext=True).select("value", F.col("_metadata.file_path").alias(SOURCE_FILE))
    ours = rescue_json_lines(whole, ORACLE_COLUMNS, file_path=SOURCE_FILE, passthrough=[SOURCE_FILE], layout=DOCUMENTS)
    collect_by_file(ours, files, lambda f, r: f.ours.append(r), SOURCE_FILE)
    collect_by_file(spark_reader(spark, str(folder)), files, lambda f, r: f.reader.append(r))
    collect_by_file(spark_reader(spark, str(folder), "STRING"), files, lambda f, r: f.strings.append(r))
    counted = spark.read.text(str(folder), wholetext=True).selectExpr(f"{DOCUMENT_RECORDS_SQL} AS n")
    collect_by_file(counted, files, lambda f, r: setattr(f, "sql_count", r["n"]))
    for name, f in files.items():
        f.local_count = count_document_records(folder / name)
    checks = (corrupt_records_differ, typed_values_differ, something_is_lost, counts_differ)
    return "\n".join(found for found in (problems(files, check) for check in checks) if found)


def test_hostile_lines_as_documents_agree_with_sparks_reader(spark, tmp_path):
    """Every hostile line of test_rescue.py as a document of its own (ending in CRLF): the cases
    that pin the rescue semantics down, with CR and LF as white space."""
    found = agree_with_sparks_reader(spark, tmp_path, {f"hostile-{i:03d}.json": text + "\r\n" for i, text in enumerate(HOSTILE)})
    assert not found, "\n" + found


@st.composite
def documents(draw) -> str:
    """A pretty-printed object or array of objects: declared names in various cases, values of every
    JSON type over many lines, keys that repeat; LF or CRLF line ends."""
    def pretty_object() -> str:
        pairs = draw(st.lists(st.tuples(json_keys, json_values), max_size=6))
        return "{" + ",".join(f"\n  {json.dumps(key)}: {json.dumps(value, indent=2)}" for key, value in pairs) + "\n}"

    text = pretty_object() if draw(st.booleans()) else (
        "[\n" + ",\n".join(pretty_object() for _ in range(draw(st.integers(1, 4)))) + "\n]\n")
    return text.replace("\n", draw(st.sampled_from(["\n", "\r\n"])))


# Derandomized, as in test_rescue.py: the same examples on every run.
@settings(max_examples=3, deadline=None, database=None, derandomize=True, print_blob=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.data_too_large, HealthCheck.too_slow])
@given(texts=st.lists(documents(), min_size=1, max_size=12))
def test_generated_documents_agree_with_sparks_reader_and_lose_nothing(spark, tmp_path_factory, texts):
    folder = tmp_path_factory.mktemp("generated")
    found = agree_with_sparks_reader(spark, folder, {f"doc-{i:02d}.json": text for i, text in enumerate(texts)})
    assert not found, "\n" + found
