"""A table entry for conf/tables.yml inferred from sample files (`lakewatch add-table`).

The schema comes from Spark's own readers on the samples, as Auto Loader infers one: with
`cloudFiles.inferColumnTypes` (the default here) JSON and CSV columns get the types Spark's JSON
reader (with `inferTimestamp`) and CSV reader (`inferSchema`) infer; with `all_strings` every JSON
and CSV column is STRING, Auto Loader's default (nested JSON fields too, as `primitivesAsString`
gives them). Parquet files carry their types, used as they are. Each type is then checked as
conf/tables.yml checks it (`config.parse_column_type`); one it refuses becomes STRING with a note.

Suggestions come from the samples' statistics, computed on the engine in one aggregation: a column
never NULL that looks like a key (its name is `id`, ends in `_id` or `Id`, or its values are unique in
the samples, for an integer or STRING column) gets a `drop` expectation `<column> IS NOT NULL`; other findings (never negative, a few
distinct values, always NULL) are written as YAML comments next to the column, for the user to turn
into expectations or not. The pure part (`suggest`, `guess_format`, `sample_files`) needs no Spark.
"""

from __future__ import annotations

import csv
import gzip
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Iterable, Sequence

from pipelines.config import COLUMN_NAME_PATTERN, RESERVED_COLUMNS, SUPPORTED_FORMATS, parse_column_type
from pipelines.errors import ConfigError, LakewatchError, engine_message
from pipelines.tables_file import NewTable, SuggestedExpectation

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

# file name endings of each format (a compression suffix is taken off first)
FORMAT_SUFFIXES = {".json": "json", ".jsonl": "json", ".ndjson": "json", ".csv": "csv", ".tsv": "csv",
                   ".parquet": "parquet", ".pq": "parquet"}
COMPRESSION_SUFFIXES = (".gz", ".bz2", ".deflate", ".lz4", ".snappy", ".zst")
NUMERIC_TYPES = ("TINYINT", "SMALLINT", "INT", "BIGINT", "FLOAT", "DOUBLE", "DECIMAL")
KEY_TYPES = ("TINYINT", "SMALLINT", "INT", "BIGINT", "STRING")  # the types a key found by uniqueness has
ATOMIC_PREFIXES = (*NUMERIC_TYPES, "STRING", "DATE", "TIMESTAMP", "BOOLEAN")
FEW_VALUES = 5  # a STRING column with at most this many distinct values suggests an IN (...) expectation
FEW_VALUES_MIN_ROWS = 10  # ... when the samples hold at least this many non-NULL values
CSV_DELIMITERS = ",;\t|"
CORRUPT_COLUMN = "_corrupt_record"


@dataclass(frozen=True)
class ColumnStats:
    """What the samples say about one column."""

    name: str
    data_type: str  # as conf/tables.yml declares it
    nulls: int
    distinct: int | None = None  # None for STRUCT, ARRAY and MAP columns
    minimum: float | None = None  # numeric columns only
    values: tuple[str, ...] = ()  # the distinct values of a STRING column with few of them


@dataclass
class Inferred:
    """The inferred entry, with what the samples held."""

    table: NewTable
    rows: int
    files: tuple[Path, ...]
    notes: list[str] = field(default_factory=list)  # printed, and written above the entry


def sample_files(paths: Iterable[Path]) -> list[Path]:
    """The files of `paths` (a folder stands for the files under it, hidden and `_`-prefixed ones left
    out, as Spark's readers leave them out); raises SAMPLES_NOT_FOUND when there are none."""
    given = list(paths)
    files: list[Path] = []
    for path in given:
        if path.is_file():
            files.append(path.resolve())
        elif path.is_dir():
            files += sorted(p.resolve() for p in path.rglob("*") if p.is_file() and not any(
                part.startswith((".", "_")) for part in p.relative_to(path).parts))
    if not files:
        raise LakewatchError("SAMPLES_NOT_FOUND", {"paths": ", ".join(str(p) for p in given)})
    return files


def file_format(path: Path) -> str | None:
    """The format a file's name says (`orders.json.gz` is json), or None."""
    suffixes = [s.lower() for s in path.suffixes]
    while suffixes and suffixes[-1] in COMPRESSION_SUFFIXES:
        suffixes.pop()
    return FORMAT_SUFFIXES.get(suffixes[-1]) if suffixes else None


def guess_format(files: Sequence[Path], given: str | None = None) -> str:
    """The samples' one format: `given`, else the one their names say. Raises SAMPLES_MIXED_FORMATS when
    the names say more than one, SAMPLES_UNKNOWN_FORMAT when they say none."""
    found = {f: file_format(f) for f in files}
    known = sorted({fmt for fmt in found.values() if fmt is not None})
    if given is not None:
        if given not in SUPPORTED_FORMATS:
            raise LakewatchError("CLI_INVALID_ARGUMENT", {
                "reason": f"--format {given}: one of {', '.join(SUPPORTED_FORMATS)}"})
        others = [fmt for fmt in known if fmt != given]
        if others:
            raise LakewatchError("SAMPLES_MIXED_FORMATS", {"found": ", ".join([given, *others])})
        return given
    if len(known) > 1:
        kinds = ", ".join(f"{fmt}: {next(str(f) for f, v in found.items() if v == fmt)}" for fmt in known)
        raise LakewatchError("SAMPLES_MIXED_FORMATS", {"found": kinds})
    if not known or any(fmt is None for fmt in found.values()):
        unknown = [str(f) for f, fmt in found.items() if fmt is None] or [str(f) for f in files]
        raise LakewatchError("SAMPLES_UNKNOWN_FORMAT", {"paths": ", ".join(unknown[:3])})
    return known[0]


def _head(path: Path, size: int = 8192) -> bytes:
    opener = gzip.open if path.suffix.lower() == ".gz" else open
    try:
        with opener(path, "rb") as f:
            return f.read(size)
    except OSError:
        return b""


def csv_delimiter(files: Sequence[Path]) -> str:
    """The delimiter of the first sample's first lines, among , ; tab and |; ',' when unclear."""
    text = _head(files[0]).decode("utf-8", errors="replace")
    lines = "\n".join(text.splitlines()[:20])
    try:
        return csv.Sniffer().sniff(lines, delimiters=CSV_DELIMITERS).delimiter
    except csv.Error:
        return ","


def json_documents(files: Sequence[Path]) -> bool:
    """Whether the JSON samples are whole documents (a file starting with '['), not JSON lines."""
    return _head(files[0], 256).lstrip(b"\xef\xbb\xbf \t\r\n").startswith(b"[")


def looks_like_key(name: str) -> bool:
    """A key by its name: `id`, `..._id` or `...Id`."""
    return name.lower() == "id" or name.lower().endswith("_id") or name.endswith("Id")


def _atomic(data_type: str) -> bool:
    return data_type.startswith(ATOMIC_PREFIXES)


def suggest(stats: Sequence[ColumnStats], rows: int) -> tuple[list[SuggestedExpectation], dict[str, str]]:
    """(expectations to write, column -> a suggestion comment) from the samples' statistics."""
    expectations: list[SuggestedExpectation] = []
    notes: dict[str, str] = {}
    for c in stats:
        if rows == 0:
            break
        unique = (c.distinct is not None and c.distinct == rows and rows > 1
                  and c.data_type in KEY_TYPES)  # a unique DOUBLE or TIMESTAMP is no key
        if c.nulls == rows:
            notes[c.name] = "always NULL in the samples: its type is a guess, declare the one it has"
            continue
        if c.nulls == 0 and _atomic(c.data_type) and (looks_like_key(c.name) or unique):
            expectations.append(SuggestedExpectation(f"has_{c.name}", f"{c.name} IS NOT NULL", "drop"))
            if unique:
                notes[c.name] = f"unique in the {rows} sample rows: a key? (ingestion does not deduplicate)"
            continue
        if c.minimum is not None and c.minimum >= 0 and c.data_type.startswith(NUMERIC_TYPES):
            notes[c.name] = f"never negative in the samples; an expectation? {c.name} >= 0"
        elif c.values and rows - c.nulls >= FEW_VALUES_MIN_ROWS and len(c.values) <= FEW_VALUES:
            listed = ", ".join("'" + v.replace("'", "''") + "'" for v in c.values)
            notes[c.name] = f"{len(c.values)} values in the samples; an expectation? {c.name} IN ({listed})"
        elif c.nulls == 0 and rows > 1:
            notes[c.name] = f"never NULL in the samples; an expectation? {c.name} IS NOT NULL"
    return expectations, notes


# -- with Spark ---------------------------------------------------------------------------------
def _reader_options(fmt: str, files: Sequence[Path], all_strings: bool) -> tuple[dict[str, str], dict[str, object]]:
    """(Spark reader options, the entry's format options) for the samples."""
    if fmt == "json":
        documents = json_documents(files)
        options = {"multiLine": str(documents).lower()}
        options.update({"primitivesAsString": "true"} if all_strings else {"inferTimestamp": "true"})
        return options, ({"multi_line": True} if documents else {})
    if fmt == "csv":
        delimiter = csv_delimiter(files)
        options = {"header": "true", "sep": delimiter, "inferSchema": str(not all_strings).lower()}
        return options, ({"header": True} if delimiter == "," else {"header": True, "delimiter": delimiter})
    return {}, {}


def read_samples(spark: SparkSession, fmt: str, files: Sequence[Path], options: dict[str, str]) -> DataFrame:
    reader = spark.read.format(fmt).options(**options)
    return reader.load([str(f) for f in files])


def declared_type(table: str, column: str, spark_type: str) -> tuple[str, str | None]:
    """(the type conf/tables.yml declares for a type Spark inferred, a note when it had to differ)."""
    if spark_type in ("void", "null"):
        return "STRING", None
    try:
        return parse_column_type(table, column, spark_type), None
    except ConfigError as e:
        return "STRING", f"Spark inferred {spark_type.upper()}, which lakewatch cannot declare ({e.error_class}): STRING"


def column_stats(df: DataFrame, types: dict[str, str]) -> tuple[int, int, list[ColumnStats]]:
    """(rows, rows that are not JSON objects, each column's statistics), in one aggregation."""
    from pyspark.sql import functions as F

    names = [n for n in types]
    corrupt = CORRUPT_COLUMN in df.columns
    aggregates = [F.count(F.lit(1)).alias("rows")]
    if corrupt:
        aggregates.append(F.count(F.col(CORRUPT_COLUMN)).alias("corrupt"))
    for i, name in enumerate(names):
        column, data_type = F.col(f"`{name}`"), types[name]
        aggregates.append(F.count(column).alias(f"n{i}"))
        if _atomic(data_type):
            aggregates.append(F.count_distinct(column).alias(f"d{i}"))
        if data_type.startswith(NUMERIC_TYPES):
            aggregates.append(F.min(column).cast("double").alias(f"m{i}"))
        if data_type == "STRING":
            few = F.slice(F.array_sort(F.collect_set(column)), 1, FEW_VALUES + 1)
            aggregates.append(few.alias(f"v{i}"))
    row = df.agg(*aggregates).collect()[0].asDict()
    rows = int(row["rows"])
    stats = []
    for i, name in enumerate(names):
        values = tuple(str(v) for v in row.get(f"v{i}") or ())
        stats.append(ColumnStats(
            name=name, data_type=types[name], nulls=rows - int(row[f"n{i}"]),
            distinct=row.get(f"d{i}"), minimum=row.get(f"m{i}"),
            values=values if len(values) <= FEW_VALUES else ()))
    return rows, int(row.get("corrupt") or 0), stats


def infer_table(spark: SparkSession, name: str, paths: Sequence[Path], fmt: str | None, landing: str,
                all_strings: bool = False) -> Inferred:
    """The entry for table `name` from the sample files or folders `paths`. Raises SAMPLES_* errors for
    missing, mixed, empty or unreadable samples and columns conf/tables.yml cannot declare."""
    files = sample_files(paths)
    fmt = guess_format(files, fmt)
    reader_options, entry_options = _reader_options(fmt, files, all_strings)
    shown = ", ".join(str(f) for f in files[:3]) + (f" and {len(files) - 3} more" if len(files) > 3 else "")
    try:
        df = read_samples(spark, fmt, files, reader_options)
        fields = [(f.name, f.dataType.simpleString()) for f in df.schema.fields]
    except Exception as e:  # noqa: BLE001 (the reader's own message says what it could not read)
        raise LakewatchError("SAMPLES_UNREADABLE", {
            "format": fmt, "paths": shown, "reason": " ".join(engine_message(e).split())}) from e
    notes: list[str] = []
    column_notes: dict[str, str] = {}
    types: dict[str, str] = {}
    for column, spark_type in fields:
        if column == CORRUPT_COLUMN and fmt == "json":
            continue
        if not COLUMN_NAME_PATTERN.match(column):
            raise LakewatchError("SAMPLES_UNSUPPORTED_COLUMN", {
                "column": column, "reason": "a column name is letters, digits and underscores; rename it "
                                            "where the files are written"})
        if column in RESERVED_COLUMNS:
            raise LakewatchError("SAMPLES_UNSUPPORTED_COLUMN", {
                "column": column, "reason": "lakewatch adds a column of that name to every bronze table"})
        types[column], note = declared_type(name, column, spark_type)
        if note:
            column_notes[column] = note
    if not types:
        raise LakewatchError("SAMPLES_UNREADABLE", {
            "format": fmt, "paths": shown, "reason": "no record of the samples is a JSON object"})
    try:
        rows, corrupt, stats = column_stats(df, types)
    except Exception as e:  # noqa: BLE001
        raise LakewatchError("SAMPLES_UNREADABLE", {
            "format": fmt, "paths": shown, "reason": " ".join(engine_message(e).split())}) from e
    if rows == 0 or rows == corrupt:
        raise LakewatchError("SAMPLES_EMPTY", {"paths": shown})
    if corrupt:
        notes.append(f"{corrupt} of the {rows} sample records are not JSON objects: they will go to "
                     "_corrupt_record and corrupt_records_sink")
    expectations, suggestions = suggest(stats, rows - corrupt)
    column_notes = {**suggestions, **column_notes}
    how = ("all STRING (Auto Loader's default)" if all_strings and fmt != "parquet"
           else "types inferred by Spark's reader (cloudFiles.inferColumnTypes)")
    notes.insert(0, f"inferred by `lakewatch add-table` from {len(files)} {fmt} file(s), {rows} records; {how}")
    table = NewTable(name=name, format=fmt, landing=landing, columns=list(types.items()),
                     expectations=expectations, options=entry_options, column_notes=column_notes,
                     header_note="\n".join(notes))
    return Inferred(table=table, rows=rows, files=tuple(files), notes=notes)


def landing_for(name: str, paths: Sequence[Path], landing_root: Path, given: str | None) -> str:
    """The entry's `landing`: `given`, else the samples' one folder (the folder given, or the folder of
    the files given) when it lies under the landing root, so the files are read where they are; else
    the table's name."""
    if given:
        return given.strip("/")
    folders = {(p if p.is_dir() else p.parent).resolve() for p in paths}
    root = landing_root.resolve()
    if len(folders) == 1:
        folder = next(iter(folders))
        if folder != root and folder.is_relative_to(root):
            return folder.relative_to(root).as_posix()
    return name
