"""The rows of one Parquet landing file as Auto Loader's `rescue` mode gives them, with pyarrow.

This is the Python-worker half of `pipelines.formats.parquet` (its docstring has the rules): which
file column fills which declared column (`plan`), whether Spark's Parquet reader reads a file type
as a declared type without changing its values (`readable`), the typed values (`typed`), the
rescue text of the values that are not typed (`rescue_texts`) and the rows of each file
(`rescue_files`, an Arrow UDF over a binaryFile stream: a list of rows per file). It imports no
Spark: Python workers of the local engine run it.
"""

from __future__ import annotations

import base64
import functools
import json
from dataclasses import dataclass
from typing import Any, Callable, Iterator, Sequence

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from pipelines import sqltypes

RESCUED_DATA = "_rescued_data"
CORRUPT_RECORD = "_corrupt_record"
FILE_PATH_KEY = "_file_path"  # the key of the file's path in `_rescued_data`, as Auto Loader writes it
BATCH_ROWS = 10_000  # rows pyarrow decodes at a time (as Spark's spark.sql.execution.arrow.maxRecordsPerBatch)

Columns = tuple[tuple[str, str], ...]  # declared (name, Spark SQL type text)


class ParquetFileError(ValueError):
    """A landing file that is not readable Parquet: the stream fails, naming the file."""


# -- declared types ------------------------------------------------------------------------------
@functools.lru_cache(maxsize=64)
def declared_types(columns: Columns) -> tuple[sqltypes.SqlType, ...]:
    return tuple(sqltypes.parse_type(text) for _, text in columns)


_SIMPLE_ARROW = {
    "BOOLEAN": pa.bool_(), "TINYINT": pa.int8(), "SMALLINT": pa.int16(), "INT": pa.int32(),
    "BIGINT": pa.int64(), "FLOAT": pa.float32(), "DOUBLE": pa.float64(), "STRING": pa.string(),
    "BINARY": pa.binary(), "DATE": pa.date32(), "TIMESTAMP": pa.timestamp("us", tz="UTC"),
    "TIMESTAMP_LTZ": pa.timestamp("us", tz="UTC"), "TIMESTAMP_NTZ": pa.timestamp("us"),
    # pyspark tags the metadata field: that is how Spark tells a variant from a struct
    "VARIANT": pa.struct([pa.field("value", pa.binary(), nullable=False),
                          pa.field("metadata", pa.binary(), nullable=False, metadata={b"variant": b"true"})]),
}


def arrow_type(t: sqltypes.SqlType) -> pa.DataType:
    """The Arrow type Spark takes from a Python worker for a Spark type (pyspark's `to_arrow_type`,
    session time zone UTC); TIMESTAMP is TIMESTAMP_LTZ (Spark's default `spark.sql.timestampType`)."""
    if isinstance(t, sqltypes.Simple):
        return _SIMPLE_ARROW[t.name]
    if isinstance(t, sqltypes.Decimal):
        return pa.decimal128(t.precision, t.scale)
    if isinstance(t, sqltypes.Array):
        return pa.list_(pa.field("element", arrow_type(t.element)))
    if isinstance(t, sqltypes.Map):
        return pa.map_(arrow_type(t.key), arrow_type(t.value))
    if isinstance(t, sqltypes.Struct):
        return pa.struct([pa.field(f.name, arrow_type(f.type), metadata=_field_metadata(f)) for f in t.fields])
    raise TypeError(f"{t.sql()} is not a type a Parquet table can declare")


def _field_metadata(f: sqltypes.Field) -> dict[bytes, bytes] | None:
    """A field's COMMENT as pyspark passes StructField metadata to Arrow (Spark compares it)."""
    return None if f.comment is None else {b"SPARK::metadata::json": json.dumps({"comment": f.comment}).encode()}


def row_type(columns: Columns) -> pa.StructType:
    """A row of a file: the declared columns, `_rescued_data`, `_corrupt_record`."""
    declared = [pa.field(name, arrow_type(t)) for (name, _), t in zip(columns, declared_types(columns))]
    return pa.struct([*declared, pa.field(RESCUED_DATA, pa.string()), pa.field(CORRUPT_RECORD, pa.string())])


# -- file types ----------------------------------------------------------------------------------
def plain_type(t: pa.DataType) -> pa.DataType:
    """The file type without what pyarrow adds from the schema it stores in the file (extension,
    dictionary and duration types): the Parquet type Spark's reader sees."""
    while True:
        if isinstance(t, pa.BaseExtensionType):
            t = t.storage_type
        elif pa.types.is_dictionary(t):
            t = t.value_type
        elif pa.types.is_duration(t):
            t = pa.int64()
        else:
            return t


def plain(array: pa.Array) -> pa.Array:
    """`array` as values of its `plain_type`."""
    while True:
        if isinstance(array, pa.ExtensionArray):
            array = array.storage
        elif pa.types.is_dictionary(array.type):
            array = array.dictionary_decode()
        elif pa.types.is_duration(array.type):
            array = array.cast(pa.int64())
        else:
            return array


def _is_list(t: pa.DataType) -> bool:
    return pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t)


def _is_text(t: pa.DataType) -> bool:
    return pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_string_view(t)


def _is_bytes(t: pa.DataType) -> bool:
    return pa.types.is_binary(t) or pa.types.is_large_binary(t) or pa.types.is_binary_view(t)


_SIGNED = {pa.int8(): 8, pa.int16(): 16, pa.int32(): 32, pa.int64(): 64}
# Spark type -> integer file types Spark's reader widens to it without changing a value (measured).
_INTEGERS = {
    "TINYINT": {pa.int8()},
    "SMALLINT": {pa.int8(), pa.int16(), pa.uint8()},
    "INT": {pa.int8(), pa.int16(), pa.int32(), pa.uint8(), pa.uint16()},
    "BIGINT": {pa.int8(), pa.int16(), pa.int32(), pa.int64(), pa.uint8(), pa.uint16(), pa.uint32()},
    "DOUBLE": {pa.int8(), pa.int16(), pa.int32(), pa.uint8(), pa.uint16()},
}


def _decimal_readable(src: pa.DataType, precision: int, scale: int) -> bool:
    """Spark's reader: a decimal widens when neither its integer digits nor its scale shrink; a
    signed INT32 (8, 16 or 32 bits) needs 10 integer digits, INT64 20, UINT64 is DECIMAL(20,0)."""
    if pa.types.is_decimal(src):
        return scale >= src.scale and precision - scale >= src.precision - src.scale
    if src in _SIGNED:
        return precision - scale >= (20 if _SIGNED[src] == 64 else 10)
    return src == pa.uint64() and (precision, scale) == (20, 0)


def variant_kind(src: pa.DataType) -> str | None:
    """'plain' for a variant's storage (binary `value` and `metadata`), 'shredded' when it also has
    `typed_value`, None for anything else."""
    if not pa.types.is_struct(src):
        return None
    fields = {f.name: plain_type(f.type) for f in src}
    if not {"value", "metadata"} <= set(fields) or not all(_is_bytes(fields[k]) for k in ("value", "metadata")):
        return None
    rest = set(fields) - {"value", "metadata"}
    return "plain" if not rest else "shredded" if rest == {"typed_value"} else None


def _simple_readable(src: pa.DataType, name: str) -> bool:
    if name in _INTEGERS and src in _INTEGERS[name]:
        return True
    if name == "BOOLEAN":
        return pa.types.is_boolean(src)
    if name in ("FLOAT", "DOUBLE"):
        return pa.types.is_float32(src) or (name == "DOUBLE" and pa.types.is_float64(src))
    if name == "STRING":
        return _is_text(src) or _is_bytes(src)
    if name == "BINARY":
        return _is_text(src) or _is_bytes(src) or pa.types.is_fixed_size_binary(src)
    if name == "DATE":
        return pa.types.is_date(src)
    if name in ("TIMESTAMP", "TIMESTAMP_LTZ", "TIMESTAMP_NTZ"):
        timestamp = pa.types.is_timestamp(src) and src.unit != "ns"
        return timestamp or (name == "TIMESTAMP_NTZ" and pa.types.is_date(src))
    if name == "VARIANT":
        return variant_kind(src) == "plain"
    return False


def struct_match(src: pa.DataType, name: str) -> list[int]:
    """Indexes of the fields of struct type `src` named `name` in any case (Spark's reader matches
    nested fields so, with spark.sql.caseSensitive false)."""
    return [i for i, f in enumerate(src) if f.name.lower() == name.lower()]


def readable(src: pa.DataType, dst: sqltypes.SqlType) -> bool:
    """Whether Spark 4.2's Parquet reader reads file type `src` as `dst` with the file's values (the
    same type or a widening). Reads that Spark's vectorized reader accepts but that change values
    (INT32 into TINYINT wraps, DATE into INT gives day numbers, ...) are not readable here."""
    src = plain_type(src)
    if pa.types.is_null(src):
        return True
    if isinstance(dst, sqltypes.Simple):
        return _simple_readable(src, dst.name)
    if isinstance(dst, sqltypes.Decimal):
        return _decimal_readable(src, dst.precision, dst.scale)
    if isinstance(dst, sqltypes.Array):
        return _is_list(src) and readable(src.value_type, dst.element)
    if isinstance(dst, sqltypes.Map):
        return pa.types.is_map(src) and readable(src.key_type, dst.key) and readable(src.item_type, dst.value)
    if isinstance(dst, sqltypes.Struct):
        if not pa.types.is_struct(src):
            return False
        matches = [struct_match(src, f.name) for f in dst.fields]
        return all(len(m) <= 1 and all(readable(src.field(i).type, f.type) for i in m)
                   for m, f in zip(matches, dst.fields))
    return False


# -- typed values --------------------------------------------------------------------------------
def _micros(array: pa.Array) -> pa.Array:
    """A timestamp array's values as int64 microseconds (time zone dropped: the session is UTC)."""
    factor = {"s": 1_000_000, "ms": 1_000, "us": 1}[array.type.unit]
    return pc.multiply_checked(array.view(pa.int64()), factor) if factor != 1 else array.view(pa.int64())


def _typed_simple(array: pa.Array, name: str, target: pa.DataType) -> pa.Array:
    if name == "STRING" and not _is_text(array.type):
        return array.cast(pa.binary()).view(pa.string())  # Spark keeps the bytes as they are
    if name in ("TIMESTAMP", "TIMESTAMP_LTZ", "TIMESTAMP_NTZ") and pa.types.is_timestamp(array.type):
        return _micros(array).view(target)
    if name == "VARIANT":
        return _variant(array, target)
    return array.cast(target)


def _variant(array: pa.Array, target: pa.DataType) -> pa.Array:
    parts = [plain(array.field(array.type.get_field_index(k))).cast(pa.binary()).fill_null(b"")
             for k in ("value", "metadata")]
    return pa.StructArray.from_arrays(parts, fields=list(target), mask=array.is_null())


def _flat(array: pa.Array) -> tuple[pa.Array, int, int]:
    """A list or map array's offsets counted from 0 and the range of its child they cover: its
    offsets point into a child that may be longer than the slice the array is."""
    offsets = array.offsets
    if len(offsets) == 0:
        return pa.array([0], pa.int32()), 0, 0
    start, end = offsets[0].as_py(), offsets[-1].as_py()
    return pc.subtract(offsets, start).cast(pa.int32()), start, end


def typed(array: pa.Array, dst: sqltypes.SqlType) -> pa.Array:
    """The values of a file column that is `readable` as `dst`, as Spark's reader gives them."""
    array = plain(array)
    target = arrow_type(dst)
    if pa.types.is_null(array.type):
        return pa.nulls(len(array), target)
    if isinstance(dst, sqltypes.Simple):
        return _typed_simple(array, dst.name, target)
    if isinstance(dst, sqltypes.Decimal):
        return array.cast(target)
    if isinstance(dst, sqltypes.Array):
        if pa.types.is_fixed_size_list(array.type):
            array = array.cast(pa.list_(array.type.value_field))
        offsets, start, end = _flat(array)
        values = typed(array.values.slice(start, end - start), dst.element)
        return pa.ListArray.from_arrays(offsets, values, type=target, mask=array.is_null())
    if isinstance(dst, sqltypes.Map):
        offsets, start, end = _flat(array)
        keys = typed(array.keys.slice(start, end - start), dst.key)
        items = typed(array.items.slice(start, end - start), dst.value)
        return pa.MapArray.from_arrays(offsets, keys, items, type=target, mask=array.is_null())
    assert isinstance(dst, sqltypes.Struct)
    children = []
    for f, field in zip(dst.fields, target):
        match = struct_match(array.type, f.name)
        children.append(typed(array.field(match[0]), f.type) if match else pa.nulls(len(array), field.type))
    return pa.StructArray.from_arrays(children, fields=list(target), mask=array.is_null())


# -- rescued values ------------------------------------------------------------------------------
@dataclass(frozen=True)
class _Raw:
    """JSON text written as it is (a number)."""

    text: str


@dataclass(frozen=True)
class _Object:
    """A JSON object, its members in order (names may repeat: a Parquet map's keys can)."""

    members: tuple[tuple[str, Any], ...]


_FLOAT_WORDS = {"nan": "NaN", "inf": "Infinity", "-inf": "-Infinity"}


def _floats(array: pa.Array) -> list[Any]:
    """Arrow's text: the shortest that reads back as the same FLOAT or DOUBLE, a FLOAT16's exact value."""
    return [None if s is None else _FLOAT_WORDS.get(s) or _Raw(s) for s in array.cast(pa.string()).to_pylist()]


def _temporal(array: pa.Array) -> list[str | None]:
    """ISO 8601 text: dates YYYY-MM-DD, times HH:MM:SS[.f], timestamps YYYY-MM-DDTHH:MM:SS[.f] with
    the digits of the file's unit (3, 6 or 9) and `Z` when the file says the time is UTC."""
    if pa.types.is_timestamp(array.type) and array.type.tz is not None:
        array = array.cast(pa.timestamp(array.type.unit, tz="UTC"))
    text = array.cast(pa.string())
    if pa.types.is_timestamp(array.type):
        text = pc.replace_substring(text, " ", "T", max_replacements=1)
    return text.to_pylist()


def _strings(array: pa.Array) -> list[str | None]:
    try:
        return array.to_pylist()
    except UnicodeDecodeError:  # not UTF-8: U+FFFD stands for each bad byte sequence
        return [None if b is None else b.decode("utf-8", "replace") for b in array.cast(pa.binary()).to_pylist()]


def _nested(array: pa.Array, rows: list[Any]) -> list[Any]:
    """Per row of a list (or map) array, its `rows` (of the child range `_flat` gives)."""
    offsets = _flat(array)[0].to_pylist()
    valid = array.is_valid().to_pylist()
    return [rows[offsets[i]:offsets[i + 1]] if valid[i] else None for i in range(len(array))]


def _child(array: pa.Array, child: pa.Array) -> pa.Array:
    """The part of a list or map array's child its rows cover."""
    _, start, end = _flat(array)
    return child.slice(start, end - start)


def json_values(array: pa.Array) -> list[Any]:
    """Each value of `array` as a value for `dump`: strings, numbers, booleans, lists, `_Object`s."""
    array = plain(array)
    t = array.type
    if pa.types.is_null(t):
        return [None] * len(array)
    if pa.types.is_boolean(t) or pa.types.is_integer(t):
        return array.to_pylist()
    if pa.types.is_floating(t):
        return _floats(array)
    if pa.types.is_decimal(t):
        return [None if s is None else _Raw(s) for s in array.cast(pa.string()).to_pylist()]
    if _is_text(t):
        return _strings(array)
    if _is_bytes(t) or pa.types.is_fixed_size_binary(t):
        return [None if b is None else base64.b64encode(b).decode("ascii") for b in array.to_pylist()]
    if pa.types.is_temporal(t):
        return _temporal(array)
    if _is_list(t):
        if pa.types.is_fixed_size_list(t):
            array = array.cast(pa.list_(t.value_field))
        return _nested(array, json_values(_child(array, array.values)))
    if pa.types.is_map(t):
        keys, items = json_values(_child(array, array.keys)), json_values(_child(array, array.items))
        pairs = list(zip((_key(k) for k in keys), items))
        return [None if p is None else _Object(tuple(p)) for p in _nested(array, pairs)]
    if pa.types.is_struct(t):
        names = [f.name for f in t]
        children = [json_values(array.field(i)) for i in range(len(names))]
        valid = array.is_valid().to_pylist()
        return [_Object(tuple((n, c[r]) for n, c in zip(names, children))) if valid[r] else None
                for r in range(len(array))]
    return [None if v is None else str(v) for v in array.to_pylist()]  # intervals, unions: their text


def _key(value: Any) -> str:
    return value if isinstance(value, str) else dump(value)


def dump(value: Any) -> str:
    """Compact JSON text of a `json_values` value."""
    if value is None:
        return "null"
    if value is True or value is False:
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, _Raw):
        return value.text
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, list):
        return "[" + ",".join(dump(v) for v in value) + "]"
    assert isinstance(value, _Object)
    return "{" + ",".join(json.dumps(k, ensure_ascii=False) + ":" + dump(v) for k, v in value.members) + "}"


def rescue_texts(array: pa.Array) -> list[str | None]:
    """The `_rescued_data` text of each value: a string (also a date, timestamp or base64 binary)
    as its text, any other value as its JSON text; None for NULL (nothing to rescue)."""
    return [v if v is None or isinstance(v, str) else dump(v) for v in json_values(array)]


def rescued_json(columns: Sequence[tuple[str, list[str | None]]], row: int, path: str) -> str | None:
    """One row's `_rescued_data`: its non-null rescued values in file order, then `_file_path`."""
    members = [(name, texts[row]) for name, texts in columns if texts[row] is not None]
    if not members:
        return None
    members.append((FILE_PATH_KEY, path))
    return "{" + ",".join(json.dumps(k, ensure_ascii=False) + ":" + json.dumps(v, ensure_ascii=False)
                          for k, v in members) + "}"


# -- one file ------------------------------------------------------------------------------------
@dataclass(frozen=True)
class FilePlan:
    sources: tuple[int | None, ...]  # per declared column: the index of the file column typed into it
    rescued: tuple[int, ...]  # file columns whose values go to `_rescued_data`, in file order


def plan(schema: pa.Schema, columns: Columns, path: str) -> FilePlan:
    """Which file column fills which declared column. A declared column takes the one file column
    of exactly its name when Spark's reader reads its type as the declared one; every other file
    column (unknown, differing in case, of another type, a name that repeats) is rescued."""
    names = schema.names
    sources: list[int | None] = []
    for (name, _), t in zip(columns, declared_types(columns)):
        found = [i for i, n in enumerate(names) if n == name]
        fits = len(found) == 1 and readable(schema.field(found[0]).type, t)
        if len(found) == 1 and not fits and t == sqltypes.Simple("VARIANT") \
                and variant_kind(plain_type(schema.field(found[0]).type)) == "shredded":
            raise ParquetFileError(
                f"Landing file {path}: column '{name}' is a shredded VARIANT, which the local engine cannot "
                "read (Databricks can); write the file with spark.sql.variant.writeShredding.enabled=false")
        sources.append(found[0] if fits else None)
    typed_indexes = {i for i in sources if i is not None}
    rescued = tuple(i for i in range(len(names)) if i not in typed_indexes
                    and not pa.types.is_null(plain_type(schema.field(i).type)))
    return FilePlan(tuple(sources), rescued)


def file_batches(content: pa.Buffer, path: str) -> tuple[pa.Schema, Iterator[pa.RecordBatch]]:
    """The file's schema and its rows in batches; a file that is not Parquet raises
    ParquetFileError (reading starts here, so a bad footer fails before any row is produced)."""
    try:
        reader = pq.ParquetFile(pa.BufferReader(content), coerce_int96_timestamp_unit="us")
        schema = reader.schema_arrow
    except (pa.ArrowException, OSError, ValueError) as e:
        raise ParquetFileError(f"Landing file {path} is not a readable Parquet file: {e}") from None

    def batches() -> Iterator[pa.RecordBatch]:
        try:
            yield from reader.iter_batches(batch_size=BATCH_ROWS, use_threads=False)
        except (pa.ArrowException, OSError, ValueError) as e:
            raise ParquetFileError(f"Landing file {path} is not a readable Parquet file: {e}") from None

    return schema, batches()


def row_batch(batch: pa.RecordBatch, file_plan: FilePlan, columns: Columns, path: str) -> pa.StructArray:
    """One batch of a file's rows as `row_type` values."""
    n = batch.num_rows
    declared = [
        typed(batch.column(i), t) if i is not None else pa.nulls(n, arrow_type(t))
        for i, t in zip(file_plan.sources, declared_types(columns))
    ]
    rescued = [(batch.schema.field(i).name, rescue_texts(batch.column(i))) for i in file_plan.rescued]
    rescued_data = pa.array([rescued_json(rescued, r, path) for r in range(n)] if rescued else [None] * n,
                            pa.string())
    arrays = [*declared, rescued_data, pa.nulls(n, pa.string())]
    return pa.StructArray.from_arrays(arrays, fields=list(row_type(columns)))


def file_rows(content: pa.Buffer, path: str, columns: Columns) -> list[pa.StructArray]:
    """The rows of one landing file, in file order."""
    file_schema, batches = file_batches(content, path)
    file_plan = plan(file_schema, columns, path)
    return [row_batch(batch, file_plan, columns, path) for batch in batches]


def rescue_files(columns: Columns, contents: pa.Array, paths: pa.Array) -> pa.Array:
    """Arrow UDF: per landing file (its bytes and `_source_file`), the list of its rows."""
    parts: list[pa.StructArray] = []
    offsets = [0]
    for content, path in zip(contents, paths):
        rows = file_rows(content.as_buffer(), path.as_py(), columns)
        parts.extend(rows)
        offsets.append(offsets[-1] + sum(len(r) for r in rows))
    element = row_type(columns)
    values = pa.concat_arrays(parts) if parts else pa.array([], element)
    return pa.ListArray.from_arrays(pa.array(offsets, pa.int32()), values,
                                    type=pa.list_(pa.field("element", element)))


def file_rows_function(columns: Columns) -> Callable[[pa.Array, pa.Array], pa.Array]:
    """`rescue_files` for one table, with the type hints `arrow_udf` reads."""

    def rows(contents: pa.Array, paths: pa.Array) -> pa.Array:
        return rescue_files(columns, contents, paths)

    return rows
