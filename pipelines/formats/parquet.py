"""Parquet landing files, read locally with Auto Loader's `rescue` semantics.

Databricks (Auto Loader, `cloudFiles.format=parquet`, the declared schema, `schemaEvolutionMode=rescue`)
matches file columns to declared columns by exact name; a file column of a type that does not fit,
a column the schema does not declare and one whose name differs from a declared one only in case
go to `_rescued_data`, and the declared column is NULL. Open-source Spark's Parquet stream takes one
schema for every file and fails on a type it cannot read, so it cannot rescue. Locally each landing
file is read whole (`binaryFile` stream, with the table's file-source options) and turned into rows
by pyarrow in an Arrow UDF (`parquet_rows`): each file with its own schema.

Columns: the declared ones (typed), `_rescued_data`, `_corrupt_record` (always NULL: Parquet has no
malformed records), `_source_file` (`_metadata.file_path`) and `_source_file_modification_time`.

- Matching: a declared column takes the one file column of exactly its name. Inside a STRUCT, fields
  match in any case, and a declared field the file lacks is NULL, as Spark's reader does (its
  default `spark.sql.caseSensitive=false`); fields the struct does not declare are dropped, as
  Spark's reader drops them (not rescued).
- Types, with Spark 4.2's Parquet reader as the oracle (tests/sql/test_format_parquet.py reads
  the same files with it): a file column is typed when that reader reads its type as the declared
  type and gives the file's values: the same type, or one of these widenings (measured):
  INT8 -> SMALLINT, INT, BIGINT, DOUBLE; INT16 -> INT, BIGINT, DOUBLE; INT32 -> BIGINT, DOUBLE;
  UINT8 -> SMALLINT, INT, BIGINT, DOUBLE; UINT16 -> INT, BIGINT, DOUBLE; UINT32 -> BIGINT;
  UINT64 -> DECIMAL(20,0); FLOAT -> DOUBLE; signed integers into DECIMAL(p,s) with p-s >= 10
  (INT8/16/32) or >= 20 (INT64); DECIMAL(p,s) into DECIMAL(p',s') with s' >= s and p'-s' >= p-s;
  DATE -> TIMESTAMP_NTZ (midnight); timestamps in ms or us, UTC-adjusted or not, and INT96 ->
  TIMESTAMP and TIMESTAMP_NTZ (the microseconds as they are: the session time zone is UTC);
  STRING <-> BINARY (the bytes as they are), fixed-length binary (also UUID) -> BINARY; lists,
  maps and structs whose parts are readable; a VARIANT's storage (binary `value` and `metadata`)
  -> VARIANT. An all-NULL column (Parquet's NULL type) is NULL in any declared type.
  Everything else is rescued, including what Spark's vectorized reader accepts but reads as other
  values: INT32 or INT64 into a narrower integer (it wraps), DATE, TIME, decimals or timestamps
  into integers (day numbers, unscaled values, raw ticks), UINT32 into DOUBLE (wrong sign), decimals
  or FLOAT16 into BINARY (raw bytes). Timestamps in nanoseconds are rescued: Spark's reader reads them
  only as BIGINT (pandas writes them by default: write `coerce_timestamps="us"`).
- `_rescued_data`: a JSON object of file column name -> text of each non-null value not typed, in
  file order, then `"_file_path": <_source_file>`; NULL when there is none. Texts: a string is its
  content; a date YYYY-MM-DD; a time HH:MM:SS[.f]; a timestamp YYYY-MM-DDTHH:MM:SS[.f] with the
  digits of the file's unit (3, 6 or 9; 6 for INT96) and `Z` when UTC-adjusted; binary
  (also fixed-length, UUID) base64; any other value its compact JSON text: booleans, integers,
  decimals with their scale's digits (`1.10`), floats as the shortest text that reads back as the
  same value of the file's width (`0.1` for FLOAT 0.1; FLOAT16 its exact value), NaN and
  infinities as the strings "NaN", "Infinity", "-Infinity"; lists as arrays, structs as objects
  (fields in file order), maps as objects of key text -> value (in file order, a repeated key
  kept), nested values by the same rules (strings, dates, timestamps and binary as JSON strings).
  A string that is not UTF-8 has U+FFFD for each bad byte sequence. A rescued VARIANT column is
  its storage struct (base64 binaries).
- A file that is not readable Parquet fails the stream with an error naming the file, as Auto Loader
  without `ignoreCorruptFiles` fails: no row of it is written, nothing is skipped silently. Empty
  (0-byte) files are no rows: Spark's file source lists them out, as its Parquet reader does.

Known differences from Databricks: a shredded VARIANT column (what Spark 4.2 writes by default)
declared VARIANT fails the stream locally (the local engine cannot reassemble it; Databricks reads
it); whether Databricks rescues the reads its own reader widens differently (e.g. INT32 into
TINYINT), rescues nested fields, or writes timestamps, floats and binary in `_rescued_data` as
above is not verified. TIMESTAMP is read as TIMESTAMP_LTZ with the session time zone UTC.

Cost: `binaryFile` reads each file whole into memory: a Spark task holds the files of its split
(up to `spark.sql.files.maxPartitionBytes`, 128 MB by default, or one larger file; binaryFile
fails on a file over 2 GB), and the Arrow UDF returns the decoded rows of the files of its input
batch at once (one list per file), so files of several GB belong on Databricks. Typed columns are
converted by Arrow casts; rescued columns are formatted in Python, value by value.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Callable, Mapping

from pipelines import sqltypes
from pipelines.formats.base import FileFormat, PathKey
from pipelines.formats.files import metadata_columns

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.types import DataType, StructType

    from pipelines.config import TableSpec

ROWS = "parquet:rows"
BINARY_FILE_SCHEMA = "path STRING, modificationTime TIMESTAMP, length BIGINT, content BINARY"


def reader_options(table: "TableSpec") -> dict[str, str]:
    return {}


def spark_type(t: "sqltypes.SqlType") -> "DataType":
    """The pyspark type of a parsed column type, built without Spark: in a pipeline query function
    a DDL string would be parsed by the server, an analysis SDP refuses there. TIMESTAMP is
    TIMESTAMP_LTZ (Spark's default `spark.sql.timestampType`)."""
    from pyspark.sql import types as T

    simple = {
        "BOOLEAN": T.BooleanType, "TINYINT": T.ByteType, "SMALLINT": T.ShortType, "INT": T.IntegerType,
        "BIGINT": T.LongType, "FLOAT": T.FloatType, "DOUBLE": T.DoubleType, "STRING": T.StringType,
        "BINARY": T.BinaryType, "DATE": T.DateType, "TIMESTAMP": T.TimestampType,
        "TIMESTAMP_LTZ": T.TimestampType, "TIMESTAMP_NTZ": T.TimestampNTZType, "VARIANT": T.VariantType,
    }
    if isinstance(t, sqltypes.Simple):
        return simple[t.name]()
    if isinstance(t, sqltypes.Decimal):
        return T.DecimalType(t.precision, t.scale)
    if isinstance(t, sqltypes.Array):
        return T.ArrayType(spark_type(t.element))
    if isinstance(t, sqltypes.Map):
        return T.MapType(spark_type(t.key), spark_type(t.value))
    if isinstance(t, sqltypes.Struct):
        return T.StructType([T.StructField(f.name, spark_type(f.type), f.nullable,
                                           {"comment": f.comment} if f.comment is not None else None)
                             for f in t.fields])
    raise TypeError(f"{t.sql()} is not a type a Parquet table can declare")


def row_type(table: "TableSpec") -> "StructType":
    """A row of a landing file: the declared columns, `_rescued_data`, `_corrupt_record`."""
    from pyspark.sql import types as T

    from pipelines.config import CORRUPT_RECORD, RESCUED_DATA

    declared = [T.StructField(c.name, spark_type(sqltypes.parse_type(c.data_type))) for c in table.columns]
    return T.StructType([*declared, T.StructField(RESCUED_DATA, T.StringType()),
                         T.StructField(CORRUPT_RECORD, T.StringType())])


def read_local(spark: "SparkSession", table: "TableSpec", path: str, options: Mapping[str, str]) -> "DataFrame":
    """The landing folder's files as a stream of their rows (see the module docstring): an Arrow
    UDF turns each file into the list of its rows, `inline` makes them rows. No analysis: it runs
    in pipeline query functions through Spark Connect."""
    from pyspark.sql import functions as F
    from pyspark.sql import types as T

    from pipelines.config import CORRUPT_RECORD, RESCUED_DATA, SOURCE_FILE, SOURCE_FILE_MTIME
    from pipelines.formats.parquet_rows import file_rows_function

    reader = spark.readStream.format("binaryFile").schema(BINARY_FILE_SCHEMA)
    for key, value in options.items():
        reader = reader.option(key, value)
    files = reader.load(path).select("content", *metadata_columns())
    rows = F.arrow_udf(file_rows_function(tuple((c.name, c.data_type) for c in table.columns)),
                       T.ArrayType(row_type(table)))
    # Cast to the type texts (parsed by the server, not the client): through Spark Connect a pyspark
    # StringType arrives as `STRING COLLATE UTF8_BINARY`, which bronze would then declare.
    typed = [F.col(c.name).cast(c.data_type).alias(c.name) for c in table.columns]
    extra = [F.col(c).cast("STRING").alias(c) for c in (RESCUED_DATA, CORRUPT_RECORD)]
    return (files.select(F.inline(rows("content", SOURCE_FILE)), SOURCE_FILE, SOURCE_FILE_MTIME)
            .select(*typed, *extra, SOURCE_FILE, SOURCE_FILE_MTIME))


def counter(table: "TableSpec") -> str:
    return ROWS


def records_sql(table: "TableSpec", folder: str, path_key: PathKey) -> str:
    """Rows per file from the Parquet footers. The declared schema spares `read_files` inferring
    one from the files (which differ: that is what rescue is for); `count(*)` reads no column."""
    return (f"SELECT {path_key('_metadata.file_path')} AS path_key, count(*) AS n "
            f"FROM read_files({folder}, format => 'parquet', schema => {sqltypes.quote_string(table.schema_ddl)}, "
            f"ignoreCorruptFiles => 'true') GROUP BY 1")


def count_rows(path: str | Path) -> int | None:
    """The file's rows from its Parquet footer; None when it is not readable Parquet."""
    import pyarrow.parquet as pq

    try:
        return pq.read_metadata(path).num_rows
    except Exception:  # noqa: BLE001 (not Parquet, truncated, gone: not counted)
        return None


COUNTERS: dict[str, Callable[[str | Path], int | None]] = {ROWS: count_rows}

FORMAT = FileFormat("parquet", reader_options, read_local, counter, records_sql)
