"""Parquet landing files (pipelines/formats/parquet.py) against Spark's own Parquet reader.

Files are written with pyarrow to a landing folder and read with the local reader as a stream
(`read_local`, `trigger(availableNow=True)` into a memory sink). The oracles:
- Spark's Parquet reader (`spark.read.schema(<declared>).parquet(file)`), per file and per column:
  a typed value equals what it reads; where it raises, the column is NULL and the value rescued;
  where it reads values that are not the file's (a wrapping or reinterpreting read), the column is
  NULL and the value rescued (the case says which, Spark confirms it);
- pyarrow's read of the file, made here: every non-null value of a column that is not typed is in
  `_rescued_data` and its text reads back as that value ("nothing lost");
- Spark's count of a file, for `count_rows`; the query's progress, for `maxFilesPerTrigger`.
"""

from __future__ import annotations

import base64
import datetime as dt
import json
import math
import uuid
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pyspark.sql.pandas.types import to_arrow_type
from pyspark.sql.types import VariantVal
from pyspark.sql.variant_utils import VariantUtils

from pipelines import sqltypes
from pipelines.local.adapter import local_file_options
from pipelines.config import CORRUPT_RECORD, RESCUED_DATA, SOURCE_FILE, SOURCE_FILE_MTIME, Column, TableSpec
from pipelines.formats import count_records, file_format
from pipelines.formats.parquet import ROWS, count_rows, read_local, spark_type
from pipelines.formats.parquet_rows import FILE_PATH_KEY, arrow_type, rescue_texts, typed

ID = "id"  # every test file has it (INT32 0..n-1): rows are matched by (file, id)
TYPED, RAISES, CHANGES = "typed", "raises", "changes"
TS = dt.datetime(2026, 1, 2, 3, 4, 5, 123456)
D = Decimal


# -- writing, reading ------------------------------------------------------------------------------
def write(folder: Path, name: str, columns: dict[str, pa.Array], **options: Any) -> Path:
    """A Parquet file `name`.parquet with an `id` column and `columns`, written by pyarrow."""
    n = len(next(iter(columns.values()))) if columns else 1
    path = folder / f"{name}.parquet"
    pq.write_table(pa.table({ID: pa.array(range(n), pa.int32()), **columns}), path, **options)
    return path


def spec(columns: dict[str, str], **options: Any) -> TableSpec:
    declared = (Column(ID, "INT"), *(Column(n, sqltypes.normalize(t)) for n, t in columns.items()))
    return TableSpec(name="t", format="parquet", columns=declared, landing="landing", **options)


@dataclass
class Run:
    rows: dict[tuple[str, int], dict[str, Any]]  # (file name, id) -> output row
    columns: list[str]
    progress: list[dict[str, Any]] = field(default_factory=list)

    def of(self, path: Path) -> list[dict[str, Any]]:
        return [r for (name, _), r in sorted(self.rows.items()) if name == path.name]


def stream(spark, table: TableSpec, folder: Path, tmp_path: Path, options: dict[str, str] | None = None) -> Run:
    """The local reader's rows of every file in `folder`, from one availableNow stream."""
    name = f"parquet_{uuid.uuid4().hex[:10]}"
    df = read_local(spark, table, str(folder), options or {})
    query = (df.writeStream.format("memory").queryName(name)
             .option("checkpointLocation", str(tmp_path / f"checkpoint_{name}"))
             .trigger(availableNow=True).start())
    query.awaitTermination()
    out = [r.asDict() for r in spark.table(name).collect()]
    rows = {(Path(r[SOURCE_FILE]).name, r[ID]): r for r in out}
    assert len(rows) == len(out), "every (file, id) comes out once"
    return Run(rows, spark.table(name).columns, [json.loads(p.json) for p in query.recentProgress])


def sparks(spark, path: Path, column: str, data_type: str) -> list[Any] | Exception:
    """Spark's Parquet reader's values of one column of one file (by id), or what it raised. Top-level
    names are matched exactly (as Auto Loader does) when the file has names differing only in case."""
    names = pq.read_schema(path).names
    exact = len({n.lower() for n in names}) < len(names)
    spark.conf.set("spark.sql.caseSensitive", str(exact).lower())
    try:
        schema = f"`{ID}` INT" + ("" if column == ID else f", `{column}` {data_type}")
        rows = spark.read.schema(schema).parquet(str(path)).orderBy(ID).collect()
        return [r[column] for r in rows]
    except Exception as e:  # noqa: BLE001 (the oracle's refusal is a result)
        return e
    finally:
        spark.conf.unset("spark.sql.caseSensitive")


def file_values(path: Path) -> dict[str, list[Any]]:
    table = pq.read_table(path)
    return {n: table.column(i).to_pylist() for i, n in enumerate(table.column_names)}


def rescued(row: dict[str, Any]) -> dict[str, str]:
    """The row's `_rescued_data` (names are unique in these tests), checking its `_file_path`."""
    if row[RESCUED_DATA] is None:
        return {}
    members = json.loads(row[RESCUED_DATA], object_pairs_hook=list)
    assert members[-1] == (FILE_PATH_KEY, row[SOURCE_FILE])
    return dict(members[:-1])


def same(a: Any, b: Any) -> bool:
    """Equality with NaN equal to NaN, through rows and lists; variants by their bytes."""
    if isinstance(a, VariantVal) and isinstance(b, VariantVal):
        return (a.value, a.metadata) == (b.value, b.metadata)
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    return type(a) is type(b) and a == b if isinstance(a, (bool, int)) else a == b


# -- "nothing lost": a rescued text reads back as the file's value -----------------------------------
_WORDS = {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf}


def storage(t: pa.DataType) -> pa.DataType:
    while isinstance(t, pa.BaseExtensionType) or pa.types.is_dictionary(t):
        t = t.storage_type if isinstance(t, pa.BaseExtensionType) else t.value_type
    return t


def _is_text(t: pa.DataType) -> bool:
    return (pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_binary(t)
            or pa.types.is_large_binary(t) or pa.types.is_fixed_size_binary(t) or pa.types.is_temporal(t))


def reads_back(j: Any, v: Any, t: pa.DataType) -> bool:
    """Whether JSON value `j` (a rescued text, or a part of one) stands for the pyarrow value `v`."""
    t = storage(t)
    if v is None:
        return j is None
    if pa.types.is_struct(t):
        return [k for k, _ in j] == [f.name for f in t] and all(
            reads_back(jv, v[f.name], f.type) for (_, jv), f in zip(j, t))
    if pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t):
        return len(j) == len(v) and all(reads_back(a, b, t.value_type) for a, b in zip(j, v))
    if pa.types.is_map(t):
        def key(k: str) -> Any:
            return k if pa.types.is_string(t.key_type) else json.loads(k, parse_float=Decimal)
        return len(j) == len(v) and all(reads_back(key(jk), vk, t.key_type) and reads_back(jv, vv, t.item_type)
                                        for (jk, jv), (vk, vv) in zip(j, v))
    if pa.types.is_floating(t):
        number = _WORDS[j] if isinstance(j, str) else float(str(j))
        width = {16: np.float16, 32: np.float32, 64: np.float64}[t.bit_width]
        return same(float(width(number)), float(v)) and (not isinstance(j, str) or not math.isfinite(float(v)))
    if pa.types.is_decimal(t):
        return Decimal(str(j)) == v and max(0, -Decimal(str(j)).as_tuple().exponent) == t.scale
    if pa.types.is_binary(t) or pa.types.is_large_binary(t) or pa.types.is_fixed_size_binary(t):
        return base64.b64decode(j) == v
    if pa.types.is_timestamp(t):
        digits = {"s": 0, "ms": 3, "us": 6, "ns": 9}[t.unit]
        fraction = j.rstrip("Z").partition(".")[2]
        return (pd.Timestamp(j) == pd.Timestamp(v) and j.endswith("Z") == (t.tz is not None)
                and len(fraction) == digits and j[10] == "T")
    if pa.types.is_date(t):
        return dt.date.fromisoformat(j) == v
    if pa.types.is_time(t):
        return dt.time.fromisoformat(j) == v
    return type(j) is type(v) and j == v  # strings, booleans, integers


def assert_nothing_lost(run: Run, path: Path, declared: set[str]) -> None:
    """Every non-null value of a file column that is not typed is rescued in its row, and reads back."""
    schema = pq.read_schema(path)
    values = file_values(path)
    rows = {r[ID]: r for r in run.of(path)}
    assert sorted(rows) == list(range(len(values[ID]))), "one output row per file row"
    for i, name in enumerate(schema.names):
        column_type = schema.field(i).type
        rescues = [name in rescued(rows[k]) for k in sorted(rows)]
        if name in declared and not any(rescues):  # typed: a value never turns NULL silently
            assert all((v is None) == (rows[k][name] is None) for k, v in enumerate(values[name])), name
            continue
        for k, v in enumerate(values[name]):
            text = rescued(rows[k]).get(name)
            if v is None:
                assert text is None, (name, k)
                continue
            assert text is not None, f"{path.name}: value {v!r} of {name} (row {k}) is lost"
            if name in declared:
                assert rows[k][name] is None
            j = text if _is_text(storage(column_type)) or text in _WORDS else json.loads(
                text, parse_float=Decimal, object_pairs_hook=list)
            assert reads_back(j, v, column_type), (path.name, name, text, v)


def assert_as_spark_reads(spark, run: Run, path: Path, table: TableSpec) -> None:
    """Per declared column: Spark's values where its reader reads the file, else NULL and rescued."""
    names = pq.read_schema(path).names
    rows = run.of(path)
    for c in table.columns:
        ours = [r[c.name] for r in rows]
        if c.name not in names:
            assert ours == [None] * len(rows), (path.name, c.name)
            continue
        theirs = sparks(spark, path, c.name, c.data_type)
        if isinstance(theirs, Exception):
            assert ours == [None] * len(rows), (path.name, c.name)
            values = file_values(path)[c.name]
            assert all((v is None) == (c.name not in rescued(r)) for v, r in zip(values, rows)), (path.name, c.name)
        else:
            assert same(ours, theirs), (path.name, c.name, ours, theirs)


# -- each kind of file column against each declared type --------------------------------------------
@dataclass(frozen=True)
class Case:
    id: str
    values: pa.Array
    declared: str
    verdict: str  # TYPED, RAISES (Spark's reader refuses) or CHANGES (it reads other values)
    options: tuple[tuple[str, Any], ...] = ()

    @property
    def column(self) -> str:
        return f"c_{self.id}"


def _variant(text: str) -> dict[str, bytes]:
    value, metadata = VariantUtils.parse_json(text)
    return {"value": value, "metadata": metadata}


INT96 = (("use_deprecated_int96_timestamps", True),)
AS_INTEGER = (("store_decimal_as_integer", True),)
VARIANT_STORAGE = pa.struct([("value", pa.binary()), ("metadata", pa.binary())])

CASES = [
    # the same type
    Case("bool", pa.array([True, False, None]), "BOOLEAN", TYPED),
    Case("int8", pa.array([-128, 127, None], pa.int8()), "TINYINT", TYPED),
    Case("int16", pa.array([-300, 300, None], pa.int16()), "SMALLINT", TYPED),
    Case("int32", pa.array([-2**31, 2**31 - 1, None], pa.int32()), "INT", TYPED),
    Case("int64", pa.array([-2**63, 2**63 - 1, None], pa.int64()), "BIGINT", TYPED),
    Case("float", pa.array([0.1, math.nan, -math.inf], pa.float32()), "FLOAT", TYPED),
    Case("double", pa.array([1e300, -0.0, math.nan], pa.float64()), "DOUBLE", TYPED),
    Case("decimal", pa.array([D("123.45"), D("-0.01"), None], pa.decimal128(5, 2)), "DECIMAL(5,2)", TYPED),
    Case("string", pa.array(["héllo", "", None]), "STRING", TYPED),
    Case("large_string", pa.array(["a", None], pa.large_string()), "STRING", TYPED),
    Case("dictionary", pa.array(["a", "b", "a"]).dictionary_encode(), "STRING", TYPED),
    Case("json", pa.array(['{"a":1}'], pa.json_()), "STRING", TYPED),
    Case("binary", pa.array([b"\x00\xff", b"", None]), "BINARY", TYPED),
    Case("date", pa.array([dt.date(2026, 1, 2), dt.date(1000, 1, 1), None]), "DATE", TYPED),
    Case("ts_us_utc", pa.array([TS, None], pa.timestamp("us", tz="UTC")), "TIMESTAMP", TYPED),
    Case("ts_us_local", pa.array([TS], pa.timestamp("us")), "TIMESTAMP_NTZ", TYPED),
    Case("null", pa.nulls(2), "INT", TYPED),
    Case("list", pa.array([[1, None], None, []], pa.list_(pa.int32())), "ARRAY<INT>", TYPED),
    Case("map", pa.array([[("k", 1), ("k", 2)], None], pa.map_(pa.string(), pa.int32())), "MAP<STRING, INT>", TYPED),
    Case("variant", pa.array([_variant('{"a":[1,2.5,"x"]}'), None], VARIANT_STORAGE), "VARIANT", TYPED),
    # widenings Spark's reader makes
    Case("int8_smallint", pa.array([-128, 127], pa.int8()), "SMALLINT", TYPED),
    Case("int8_double", pa.array([-128, 127], pa.int8()), "DOUBLE", TYPED),
    Case("int16_int", pa.array([-32768, 32767], pa.int16()), "INT", TYPED),
    Case("int32_bigint", pa.array([-2**31, 2**31 - 1, None], pa.int32()), "BIGINT", TYPED),
    Case("int32_double", pa.array([-2**31, 2**31 - 1], pa.int32()), "DOUBLE", TYPED),
    Case("int32_decimal", pa.array([-2**31, 2**31 - 1], pa.int32()), "DECIMAL(12,2)", TYPED),
    Case("int64_decimal", pa.array([-2**63, 2**63 - 1], pa.int64()), "DECIMAL(20,0)", TYPED),
    Case("uint8_smallint", pa.array([255, 0], pa.uint8()), "SMALLINT", TYPED),
    Case("uint16_int", pa.array([65535, 0], pa.uint16()), "INT", TYPED),
    Case("uint32_bigint", pa.array([2**32 - 1, 0], pa.uint32()), "BIGINT", TYPED),
    Case("uint64_decimal", pa.array([2**64 - 1, 0], pa.uint64()), "DECIMAL(20,0)", TYPED),
    Case("float_double", pa.array([0.1, math.nan], pa.float32()), "DOUBLE", TYPED),
    Case("decimal_wider", pa.array([D("123.45"), D("-999.99")], pa.decimal128(5, 2)), "DECIMAL(7,3)", TYPED),
    Case("decimal_int32_wider", pa.array([D("123.45")], pa.decimal128(5, 2)), "DECIMAL(38,10)", TYPED, AS_INTEGER),
    Case("decimal_int64_wider", pa.array([D("1234567890123.45")], pa.decimal128(15, 2)), "DECIMAL(30,5)", TYPED,
         AS_INTEGER),
    Case("date_ntz", pa.array([dt.date(2026, 1, 2), None]), "TIMESTAMP_NTZ", TYPED),
    Case("ts_ms_local", pa.array([TS.replace(microsecond=123000)], pa.timestamp("ms")), "TIMESTAMP", TYPED),
    Case("ts_us_utc_ntz", pa.array([TS], pa.timestamp("us", tz="UTC")), "TIMESTAMP_NTZ", TYPED),
    Case("ts_old", pa.array([dt.datetime(1000, 1, 1, 0, 0, 1)], pa.timestamp("us", tz="UTC")), "TIMESTAMP", TYPED),
    Case("int96", pa.array([TS, dt.datetime(3000, 1, 1), dt.datetime(1800, 1, 1)], pa.timestamp("us")),
         "TIMESTAMP", TYPED, INT96),
    Case("string_binary", pa.array(["héllo", None]), "BINARY", TYPED),
    Case("binary_string", pa.array([b"abc", b"\xff\xfe", None]), "STRING", TYPED),
    Case("fixed_binary", pa.array([b"abc", None], pa.binary(3)), "BINARY", TYPED),
    Case("uuid_binary", pa.array([uuid.UUID(int=1).bytes], pa.uuid()), "BINARY", TYPED),
    Case("list_widened", pa.array([[1, 2], None], pa.list_(pa.int32())), "ARRAY<BIGINT>", TYPED),
    Case("large_list", pa.array([[1, 2]], pa.large_list(pa.int16())), "ARRAY<INT>", TYPED),
    Case("map_widened", pa.array([[("k", 1.5)]], pa.map_(pa.string(), pa.float32())), "MAP<STRING, DOUBLE>", TYPED),
    Case("struct_fields",
         pa.array([{"A": 1, "b": "x", "z": 2.5}, None, {"A": None, "b": None, "z": None}],
                  pa.struct([("A", pa.int32()), ("b", pa.string()), ("z", pa.float64())])),
         "STRUCT<a: BIGINT, b: STRING, c: DATE>", TYPED),  # any case, extra dropped, missing NULL
    Case("struct_comment", pa.array([{"a": 1}], pa.struct([("a", pa.int32())])),
         "STRUCT<a: BIGINT COMMENT 'a note'>", TYPED),
    Case("list_of_struct", pa.array([[{"a": 1}], [None]], pa.list_(pa.struct([("a", pa.int32())]))),
         "ARRAY<STRUCT<a: BIGINT>>", TYPED),
    # Spark's reader refuses
    Case("string_bigint", pa.array(["12", "n/a", None]), "BIGINT", RAISES),
    Case("double_date", pa.array([1.5, None]), "DATE", RAISES),
    Case("int64_int", pa.array([5], pa.int64()), "INT", RAISES),
    Case("int64_double", pa.array([2**53 + 1], pa.int64()), "DOUBLE", RAISES),
    Case("double_float", pa.array([0.1]), "FLOAT", RAISES),
    Case("float_decimal", pa.array([1.5], pa.float32()), "DECIMAL(10,2)", RAISES),
    Case("bool_int", pa.array([True]), "INT", RAISES),
    Case("string_boolean", pa.array(["true"]), "BOOLEAN", RAISES),
    Case("decimal_narrower", pa.array([D("12345678.90")], pa.decimal128(10, 2)), "DECIMAL(9,2)", RAISES),
    Case("decimal_less_scale", pa.array([D("1.25")], pa.decimal128(5, 2)), "DECIMAL(6,1)", RAISES),
    Case("decimal_bigint", pa.array([D("1.25")], pa.decimal128(5, 2)), "BIGINT", RAISES),
    Case("decimal_wide", pa.array([D("1" * 38)], pa.decimal128(38, 0)), "DECIMAL(20,0)", RAISES),
    Case("int32_decimal9", pa.array([123456789], pa.int32()), "DECIMAL(9,0)", RAISES),
    Case("int64_decimal19", pa.array([1], pa.int64()), "DECIMAL(19,0)", RAISES),
    Case("uint64_bigint", pa.array([2**64 - 1], pa.uint64()), "BIGINT", RAISES),
    Case("uint64_decimal21", pa.array([2**64 - 1], pa.uint64()), "DECIMAL(21,0)", RAISES),
    Case("uint32_int", pa.array([2**32 - 1], pa.uint32()), "INT", RAISES),
    Case("ts_ns", pa.array([pd.Timestamp("2026-01-02T03:04:05.123456789Z")], pa.timestamp("ns", tz="UTC")),
         "TIMESTAMP", RAISES),
    Case("ts_ns_local", pa.array([pd.Timestamp("2026-01-02T03:04:05.000000001")], pa.timestamp("ns")),
         "TIMESTAMP_NTZ", RAISES),
    Case("date_ltz", pa.array([dt.date(2026, 1, 2)]), "TIMESTAMP", RAISES),
    Case("timestamp_date", pa.array([TS], pa.timestamp("us")), "DATE", RAISES),
    Case("time_string", pa.array([dt.time(1, 2, 3, 4)], pa.time64("us")), "STRING", RAISES),
    Case("fixed_string", pa.array([b"abc"], pa.binary(3)), "STRING", RAISES),
    Case("float16_double", pa.array(np.array([0.1, -2.5], np.float16)), "DOUBLE", RAISES),
    Case("list_of_strings", pa.array([["1", "x"]]), "ARRAY<INT>", RAISES),
    Case("string_array", pa.array(["[1]"]), "ARRAY<STRING>", RAISES),
    Case("struct_string", pa.array([{"a": 1, "b": [D("1.50")]}],
                                   pa.struct([("a", pa.int32()), ("b", pa.list_(pa.decimal128(3, 2)))])),
         "STRING", RAISES),
    Case("struct_field_type", pa.array([{"a": "x"}], pa.struct([("a", pa.string())])), "STRUCT<a: INT>", RAISES),
    Case("struct_ambiguous", pa.array([{"a": 1, "A": 2}], pa.struct([("a", pa.int32()), ("A", pa.int32())])),
         "STRUCT<a: INT>", RAISES),
    Case("map_key_type", pa.array([[(1, "v"), (1, "w")]], pa.map_(pa.int32(), pa.string())),
         "MAP<STRING, STRING>", RAISES),
    Case("nested_rescued",
         pa.array([{"t": TS.replace(microsecond=123000), "d": dt.date(2026, 1, 2), "b": b"\x01",
                    "f": [0.1, math.inf], "m": [("x", None)]}],
                  pa.struct([("t", pa.timestamp("ms", tz="UTC")), ("d", pa.date32()), ("b", pa.binary()),
                             ("f", pa.list_(pa.float32())), ("m", pa.map_(pa.string(), pa.int64()))])),
         "BIGINT", RAISES),
    Case("variant_string", pa.array([_variant('{"a":1}')], VARIANT_STORAGE), "STRING", RAISES),
    Case("int_struct", pa.array([1], pa.int32()), "STRUCT<a: INT>", RAISES),
    # Spark's vectorized reader reads these, but not as the file's values: rescued instead
    Case("int32_tinyint", pa.array([300, 1], pa.int32()), "TINYINT", CHANGES),
    Case("int32_smallint", pa.array([70000], pa.int32()), "SMALLINT", CHANGES),
    Case("int16_tinyint", pa.array([300], pa.int16()), "TINYINT", CHANGES),
    Case("uint8_tinyint", pa.array([200], pa.uint8()), "TINYINT", CHANGES),
    Case("uint16_smallint", pa.array([60000], pa.uint16()), "SMALLINT", CHANGES),
    Case("uint32_double", pa.array([4_000_000_000], pa.uint32()), "DOUBLE", CHANGES),
    Case("date_int", pa.array([dt.date(2026, 1, 2)]), "INT", CHANGES),
    Case("int_date", pa.array([20455], pa.int32()), "DATE", CHANGES),
    Case("decimal_int32_int", pa.array([D("123.45")], pa.decimal128(5, 2)), "INT", CHANGES, AS_INTEGER),
    Case("timestamp_bigint", pa.array([TS], pa.timestamp("us", tz="UTC")), "BIGINT", CHANGES),
    Case("ts_ns_bigint", pa.array([TS], pa.timestamp("ns")), "BIGINT", CHANGES),
    Case("time_int", pa.array([dt.time(1, 2, 3, 4000)], pa.time32("ms")), "INT", CHANGES),
    Case("decimal_binary", pa.array([D("1.25")], pa.decimal128(5, 2)), "BINARY", CHANGES),
    Case("float16_binary", pa.array(np.array([0.1], np.float16)), "BINARY", CHANGES),
]


@pytest.fixture(scope="module")
def matrix(spark, tmp_path_factory) -> tuple[Run, TableSpec, dict[str, Path]]:
    """One file per case (its `id` and its column), all read by one stream of one table."""
    folder = tmp_path_factory.mktemp("matrix")
    paths = {c.id: write(folder, c.id, {c.column: c.values}, **dict(c.options)) for c in CASES}
    table = spec({c.column: c.declared for c in CASES})
    return stream(spark, table, folder, tmp_path_factory.mktemp("matrix_stream")), table, paths


def test_cases_are_distinct():
    assert len({c.id for c in CASES}) == len(CASES)


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_each_file_type_against_each_declared_type(spark, matrix, case):
    run, table, paths = matrix
    path = paths[case.id]
    ours = [r[case.column] for r in run.of(path)]
    theirs = sparks(spark, path, case.column, case.declared)
    file_column = file_values(path)[case.column]
    if case.verdict == TYPED:
        assert not isinstance(theirs, Exception), theirs
        assert same(ours, theirs), (ours, theirs)
        assert all(rescued(r) == {} for r in run.of(path))
    else:
        if case.verdict == RAISES:
            assert isinstance(theirs, Exception), f"Spark's reader reads it: {theirs}"
        else:  # CHANGES: Spark's reader gives values that are not the file's
            assert not isinstance(theirs, Exception), theirs
            assert any(not same(s, f) for s, f in zip(theirs, file_column) if f is not None), theirs
        assert ours == [None] * len(ours)
    assert_nothing_lost(run, path, {c.name for c in table.columns})


def test_rescued_texts_follow_the_documented_rules(matrix):
    run, _, paths = matrix

    def texts(case_id: str) -> list[str | None]:
        return [rescued(r).get(f"c_{case_id}") for r in run.of(paths[case_id])]

    assert texts("string_bigint") == ["12", "n/a", None]
    assert texts("ts_ns") == ["2026-01-02T03:04:05.123456789Z"]
    assert texts("ts_ns_local") == ["2026-01-02T03:04:05.000000001"]
    assert texts("double_float") == ["0.1"]
    assert texts("decimal_less_scale") == ["1.25"]
    assert texts("fixed_string") == [base64.b64encode(b"abc").decode()]
    assert texts("time_string") == ["01:02:03.000004"]
    assert texts("date_ltz") == ["2026-01-02"]
    assert texts("struct_string") == ['{"a":1,"b":[1.50]}']
    assert texts("map_key_type") == ['{"1":"v","1":"w"}']
    assert texts("float16_double") == ["0.0999755859375", "-2.5"]
    assert texts("nested_rescued") == [
        '{"t":"2026-01-02T03:04:05.123Z","d":"2026-01-02","b":"AQ==","f":[0.1,"Infinity"],"m":{"x":null}}']


# -- a landing folder of files with different schemas ------------------------------------------------
ORDERS = {"order_id": "BIGINT", "amount": "DECIMAL(10,2)", "order_ts": "TIMESTAMP", "order_date": "DATE",
          "note": "STRING", "tags": "ARRAY<STRING>", "payload": "BINARY"}


def orders_files(folder: Path) -> dict[str, Path]:
    ts = pa.timestamp("us", tz="UTC")
    return {
        "good": write(folder, "good", {
            "order_id": pa.array([1, 2, None], pa.int64()),
            "amount": pa.array([D("9.50"), None, D("-1.00")], pa.decimal128(10, 2)),
            "order_ts": pa.array([TS, TS, None], ts),
            "order_date": pa.array([dt.date(2026, 1, 2), None, dt.date(2026, 1, 3)]),
            "note": pa.array(["ok", None, ""]),
            "tags": pa.array([["a", "b"], [], None]),
            "payload": pa.array([b"\x00", None, b"xy"]),
        }),
        "widened": write(folder, "widened", {  # Spark's reader widens each of these
            "order_id": pa.array([3, None], pa.int32()),
            "amount": pa.array([D("12.5"), None], pa.decimal128(6, 1)),
            "order_ts": pa.array([TS.replace(microsecond=5000), None], pa.timestamp("ms")),
            "order_date": pa.array([dt.date(2026, 2, 1), None]),
            "note": pa.array(["w", "w"]).dictionary_encode(),
            "payload": pa.array(["text as bytes", None]),
        }),
        "mismatched": write(folder, "mismatched", {  # none of these fits its column
            "order_id": pa.array(["12", "n/a", None]),
            "amount": pa.array([9.5, math.nan, None]),
            "order_ts": pa.array([pd.Timestamp("2026-01-02T03:04:05.123456789Z")] * 3, pa.timestamp("ns", tz="UTC")),
            "order_date": pa.array([1.5, None, 2.0]),
            "tags": pa.array([[1, 2], None, []], pa.list_(pa.int32())),
        }),
        "extra": write(folder, "extra", {  # unknown columns, names differing in case, missing columns
            "order_id": pa.array([7, 8], pa.int64()),
            "Amount": pa.array([D("1.10"), None], pa.decimal128(4, 2)),
            "NOTE": pa.array(["hi", "there"]),
            "coupon": pa.array(["A1", None]),
            "meta": pa.array([{"x": 1, "y": [D("1.50")]}, None],
                             pa.struct([("x", pa.int32()), ("y", pa.list_(pa.decimal128(3, 2)))])),
            "blob": pa.array([b"\x00\x01", None]),
            "when": pa.array([TS, None], pa.timestamp("ns")),
            "_file_path": pa.array(["mine", None]),
        }),
        "nulls": write(folder, "nulls", {  # every value NULL, one column of Parquet's NULL type
            "order_id": pa.array([None, None], pa.int64()),
            "note": pa.nulls(2),
            "unknown": pa.nulls(2),
            "tags": pa.array([None, None], pa.list_(pa.string())),
        }),
    }


@pytest.fixture(scope="module")
def orders(spark, tmp_path_factory) -> tuple[Run, TableSpec, dict[str, Path]]:
    folder = tmp_path_factory.mktemp("orders")
    files = orders_files(folder)
    table = spec(ORDERS)
    return stream(spark, table, folder, tmp_path_factory.mktemp("orders_stream")), table, files


def test_output_columns_are_the_declared_then_rescue_and_metadata_columns(spark, orders, tmp_path):
    run, table, _ = orders
    assert run.columns == [*table.column_names, RESCUED_DATA, CORRUPT_RECORD, SOURCE_FILE, SOURCE_FILE_MTIME]
    df = read_local(spark, table, str(tmp_path), {})
    assert df.isStreaming
    expected = spark.createDataFrame([], f"{table.schema_ddl}, `{RESCUED_DATA}` STRING, `{CORRUPT_RECORD}` STRING, "
                                         f"`{SOURCE_FILE}` STRING, `{SOURCE_FILE_MTIME}` TIMESTAMP").schema
    assert [(f.name, f.dataType) for f in df.schema] == [(f.name, f.dataType) for f in expected]


@pytest.mark.parametrize("name", ["good", "widened", "mismatched", "extra", "nulls"])
def test_each_file_as_sparks_reader_reads_it_and_nothing_lost(spark, orders, name):
    run, table, files = orders
    assert_as_spark_reads(spark, run, files[name], table)
    assert_nothing_lost(run, files[name], set(table.column_names))


def test_corrupt_record_is_always_null_and_source_file_is_the_metadata_path(spark, orders):
    run, _, files = orders
    assert all(r[CORRUPT_RECORD] is None for r in run.rows.values())
    for name, path in files.items():
        listed = spark.read.format("binaryFile").load(str(path)).selectExpr("_metadata.*").first()
        assert {(r[SOURCE_FILE], r[SOURCE_FILE_MTIME]) for r in run.of(path)} == {
            (listed.file_path, listed.file_modification_time)}


def test_rescued_data_of_a_row(orders):
    run, _, files = orders
    extra = run.of(files["extra"])
    assert extra[0][RESCUED_DATA] == (  # the file's own `_file_path` column is kept too
        '{"Amount":"1.10","NOTE":"hi","coupon":"A1","meta":"{\\"x\\":1,\\"y\\":[1.50]}","blob":"AAE=",'
        '"when":"2026-01-02T03:04:05.123456000","_file_path":"mine","_file_path":' + json.dumps(extra[0][SOURCE_FILE])
        + "}")
    assert extra[1][RESCUED_DATA] == json.dumps({"NOTE": "there", FILE_PATH_KEY: extra[1][SOURCE_FILE]},
                                                separators=(",", ":"))
    assert (extra[0]["order_id"], extra[0]["amount"], extra[0]["note"]) == (7, None, None)
    mismatched = run.of(files["mismatched"])
    assert rescued(mismatched[1]) == {"order_id": "n/a", "amount": "NaN", "order_ts": "2026-01-02T03:04:05.123456789Z"}
    assert all(r[RESCUED_DATA] is None for r in run.of(files["nulls"]) + run.of(files["good"]))


# -- files, batches, counts ------------------------------------------------------------------------
def test_a_file_that_is_not_parquet_fails_the_stream_naming_it(spark, tmp_path):
    folder = tmp_path / "landing"
    folder.mkdir()
    write(folder, "good", {"x": pa.array([1])})
    (folder / "broken.parquet").write_text("order_id,amount\n1,9.5\n")
    query = (read_local(spark, spec({"x": "INT"}), str(folder), {}).writeStream.format("memory")
             .queryName("parquet_broken").option("checkpointLocation", str(tmp_path / "checkpoint"))
             .trigger(availableNow=True).start())
    with pytest.raises(Exception, match=r"broken\.parquet is not a readable Parquet file"):
        query.awaitTermination()
    assert spark.table("parquet_broken").count() == 0  # the batch failed whole: the good file's rows wait too


def test_a_truncated_parquet_file_fails_the_stream_naming_it(spark, tmp_path):
    folder = tmp_path / "landing"
    folder.mkdir()
    good = write(tmp_path, "whole", {"x": pa.array(range(1000))})
    (folder / "cut.parquet").write_bytes(good.read_bytes()[: good.stat().st_size // 2])
    with pytest.raises(Exception, match=r"cut\.parquet is not a readable Parquet file"):
        stream(spark, spec({"x": "INT"}), folder, tmp_path)


def test_a_shredded_variant_fails_the_stream_naming_the_file_and_column(spark, tmp_path):
    folder = tmp_path / "landing"
    spark.sql("""SELECT 0 AS id, parse_json('{"a":1}') AS v""").coalesce(1).write.parquet(str(folder))
    assert "typed_value" in str(pq.read_schema(next(folder.glob("*.parquet"))))  # Spark 4.2 shreds by default
    with pytest.raises(Exception, match=r"column 'v' is a shredded VARIANT"):
        stream(spark, spec({"v": "VARIANT"}), folder, tmp_path)


def test_count_rows_is_sparks_count_of_the_file(spark, tmp_path):
    paths = [
        write(tmp_path, "one_group", {"x": pa.array(range(5))}),
        write(tmp_path, "groups", {"x": pa.array(range(25_000))}, row_group_size=4_000),
        write(tmp_path, "empty", {"x": pa.array([], pa.int64())}),
    ]
    for path in paths:
        assert count_rows(path) == spark.read.parquet(str(path)).count()
        assert count_records(ROWS, path) == count_rows(path)
    (tmp_path / "text.parquet").write_text("not parquet")
    assert count_rows(tmp_path / "text.parquet") is None
    assert count_rows(tmp_path / "missing.parquet") is None
    assert file_format(spec({})).counter(spec({})) == ROWS


def test_a_file_of_many_batches_comes_out_whole(spark, tmp_path):
    folder = tmp_path / "landing"
    folder.mkdir()
    n = 25_000  # more than one output batch of 10,000 rows, several row groups
    path = write(folder, "big", {"x": pa.array([i if i % 7 else None for i in range(n)], pa.int32()),
                                 "y": pa.array([str(i) for i in range(n)])}, row_group_size=6_000)
    run = stream(spark, spec({"x": "BIGINT"}), folder, tmp_path)
    assert len(run.rows) == n == count_rows(path)
    assert all(r["x"] == (i if i % 7 else None) for (_, i), r in run.rows.items())
    assert all(rescued(r) == {"y": str(i)} for (_, i), r in run.rows.items())


def test_max_files_per_trigger_one_makes_a_batch_per_file(spark, tmp_path):
    folder = tmp_path / "landing"
    folder.mkdir()
    for i in range(3):
        write(folder, f"f{i}", {"x": pa.array([i, i])})
    table = spec({"x": "BIGINT"}, max_files_per_trigger=1)
    options, _ = local_file_options(table, str(tmp_path))
    assert options == {"recursiveFileLookup": "true", "maxFilesPerTrigger": "1"}
    run = stream(spark, table, folder, tmp_path, options)
    batches = [(p["batchId"], p["numInputRows"]) for p in run.progress if p["numInputRows"]]
    assert batches == [(0, 1), (1, 1), (2, 1)]  # one file (one binaryFile row) per micro-batch
    assert sorted((name, r["x"]) for (name, _), r in run.rows.items()) == [
        (f"f{i}.parquet", i) for i in range(3) for _ in range(2)]


@pytest.mark.parametrize("text", ["BOOLEAN", "TINYINT", "SMALLINT", "INT", "BIGINT", "FLOAT", "DOUBLE", "STRING",
                                  "BINARY", "DATE", "TIMESTAMP", "TIMESTAMP_NTZ", "DECIMAL(38,10)", "VARIANT",
                                  "ARRAY<MAP<STRING, STRUCT<a: INT COMMENT 'it''s', `b c`: ARRAY<TIMESTAMP>>>>"])
def test_types_built_without_spark_are_the_ones_spark_parses(spark, text):
    parsed = spark.createDataFrame([], f"c {text}").schema["c"].dataType  # Spark's own DDL parser
    assert spark_type(sqltypes.parse_type(text)) == parsed
    assert arrow_type(sqltypes.parse_type(text)).equals(to_arrow_type(parsed, timezone="UTC"), check_metadata=True)


def test_values_do_not_depend_on_where_an_array_is_sliced():
    """Nested children of a sliced batch start where the slice does (offsets into a longer child)."""
    t = pa.struct([("l", pa.list_(pa.int32())), ("m", pa.map_(pa.string(), pa.int16())),
                   ("s", pa.struct([("X", pa.int8())]))])
    values = [{"l": [i, None], "m": [(str(i), i)], "s": {"X": i}} if i % 3 else None for i in range(9)]
    whole = pa.array(values, t)
    declared = sqltypes.parse_type("STRUCT<l: ARRAY<BIGINT>, m: MAP<STRING, INT>, s: STRUCT<x: INT>>")
    for start in range(1, 5):
        part = whole.slice(start, 4)
        assert typed(part, declared).to_pylist() == typed(whole, declared).to_pylist()[start:start + 4]
        assert rescue_texts(part) == rescue_texts(whole)[start:start + 4]
        assert typed(part.field(0), declared.fields[0].type).to_pylist() == [
            None if v is None else [int(i) if i is not None else None for i in v] for v in part.field(0).to_pylist()]
