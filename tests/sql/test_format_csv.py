"""CSV landing files (pipelines/formats/csv.py) against Spark's own CSV reader, on files from disk.

The oracle is Spark's CSV reader (PERMISSIVE, `_corrupt_record`) run by the test on the same file:
with the table's schema where the header is the schema, and with a schema the test builds from the
file's own header line where it is not (Spark's reader maps by position, the local reader by name).
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import functions as F

from pipelines.config import CORRUPT_RECORD, RESCUED_DATA, SOURCE_FILE, TableSpec, parse_table
from pipelines.formats import count_records, file_format
from pipelines.formats.csv import records_sql_expression, rescue_csv_files
from pipelines.local.adapter import local_file_options

SCHEMA = {"id": "BIGINT", "name": "STRING", "day": "DATE", "amount": "DECIMAL(10,2)", "ok": "BOOLEAN",
          "ts": "TIMESTAMP"}
HEADER = ",".join(SCHEMA)


def csv_table(**options: Any) -> TableSpec:
    return parse_table("tables.yml", 0, {"name": "payments", "format": "csv", "landing": "payments",
                                         "schema": dict(options.pop("schema", SCHEMA)), **options})


def write(folder: Path, name: str, lines: list[str], end: str = "\n", bom: bool = False) -> Path:
    """A landing file of `lines` joined by `end` (gzip when the name ends in .gz)."""
    data = (("\ufeff" if bom else "") + end.join(lines) + end).encode()
    path = folder / name
    path.write_bytes(gzip.compress(data) if name.endswith(".gz") else data)
    return path


def ours(spark, table: TableSpec, path: Path) -> list[dict[str, Any]]:
    """The local reader's rows of one file, in file order."""
    files = spark.read.text(str(path), wholetext=True).select("value", F.input_file_name().alias(SOURCE_FILE))
    return [r.asDict() for r in rescue_csv_files(files, table, passthrough=(SOURCE_FILE,)).collect()]


def sparks(spark, path: Path, schema: str, **options: str) -> list[dict[str, Any]]:
    """Spark's CSV reader's rows of one file: PERMISSIVE, `schema` plus `_corrupt_record`."""
    reader = spark.read.schema(f"{schema}, {CORRUPT_RECORD} STRING").option("header", "true")
    for key, value in options.items():
        reader = reader.option(key, value)
    return [r.asDict() for r in reader.csv(str(path)).collect()]


def rescued_fields(row: dict[str, Any]) -> dict[str, Any]:
    if row[RESCUED_DATA] is None:
        return {}
    fields = json.loads(row[RESCUED_DATA])
    assert fields.pop("_file_path").endswith(Path(row[SOURCE_FILE]).name)
    return fields


SAME_HEADER_LINES = [
    HEADER,
    "1,ann,2026-11-01,9.50,true,2026-11-01 10:00:00",  # good
    '2,"smith, bob",2026-11-02,"1,5",false,2026-11-01T10:00:00Z',  # quoted delimiter; a misfit decimal
    '3,"say \\"hi\\"",,,,',  # escaped quotes, empty fields
    '4,"",2026-11-03,1e2,TRUE,',  # an empty quoted field; exponent decimal; upper-case boolean
    "x5,bob,not a day,12.345,maybe,yesterday",  # every typed field a misfit
    "6,short",  # fewer fields
    "7,long,2026-11-01,1.00,true,2026-11-01 10:00:00,extra",  # more fields
    '8,"left open,2026-11-01,1.00,true,',  # a quote never closed
    "   ",  # blank
    "",
    "\t\x0b",
    '9,a"b,2026-11-01,-0.5,false,2026-11-01 10:00:00',  # a quote inside an unquoted field
    '10,"a""b",2026-11-01,  7 ,false,2026-11-01 10:00:00',  # doubled quotes; spaces around a number
    "11, padded ,2026-02-30,99999999999,1,2026-11-01 25:00:00",  # impossible date, overflow, 1, bad hour
]


@pytest.mark.parametrize("name,end,bom", [
    ("lf.csv", "\n", False), ("crlf.csv", "\r\n", False), ("cr.csv", "\r", False), ("bom.csv", "\n", True),
    ("zipped.csv.gz", "\n", False),
])
def test_rows_agree_with_sparks_reader_and_misfits_are_rescued(spark, tmp_path, name, end, bom):
    table = csv_table()
    path = write(tmp_path, name, SAME_HEADER_LINES, end, bom)
    theirs = sparks(spark, path, table.schema_ddl)
    texts = sparks(spark, path, ", ".join(f"`{c}` STRING" for c in SCHEMA))
    mine = ours(spark, table, path)
    assert len(mine) == len(theirs) == 11
    for row, their, text in zip(mine, theirs, texts):
        for column in SCHEMA:
            assert row[column] == their[column], (column, their[CORRUPT_RECORD])
        if their[CORRUPT_RECORD] is None:
            assert row[CORRUPT_RECORD] is None and row[RESCUED_DATA] is None, their
        elif row[CORRUPT_RECORD] is not None:
            # a record with more or fewer fields: the raw line, as Spark's, and nothing rescued
            assert row[CORRUPT_RECORD] == their[CORRUPT_RECORD] and row[RESCUED_DATA] is None
        else:
            # Spark marks a line corrupt for a field that does not fit; here the field is rescued
            # with its text as Spark reads it, and the line is not corrupt
            misfits = {c: text[c] for c in SCHEMA if their[c] is None and text[c] is not None}
            assert misfits and rescued_fields(row) == misfits, their[CORRUPT_RECORD]
    corrupt = [r[CORRUPT_RECORD] for r in mine if r[CORRUPT_RECORD] is not None]
    assert corrupt == ["6,short", "7,long,2026-11-01,1.00,true,2026-11-01 10:00:00,extra",
                       '8,"left open,2026-11-01,1.00,true,']


@pytest.mark.parametrize("header", [
    "amount,id,name,ts,ok,day",  # another order
    "id,Name,day,amount,ok,ts",  # a name differing in case
    "id,name,day,amount,ok,ts,channel",  # an unknown column
    "id,day,amount,ts",  # missing columns
    "id,name,day,amount,id,ts",  # a name twice
    "id,,day,amount,ok,ts",  # an empty name
])
def test_fields_go_to_columns_by_header_name(spark, tmp_path, header):
    table = csv_table()
    names = header.split(",")
    values = {"id": "5", "name": "eve", "day": "2026-11-05", "amount": "3.25", "ok": "false",
              "ts": "2026-11-05 08:00:00", "Name": "EVE", "channel": "web", "": "blank"}
    lines = [header, ",".join(values[n] for n in names), ",".join("oops" if n == "amount" else values[n] for n in names)]
    path = write(tmp_path, "h.csv", lines)
    # Spark's reader by position, each field under its header name typed as declared (first occurrence)
    positional = [f"`f{i}` {SCHEMA[n] if n in SCHEMA and names.index(n) == i else 'STRING'}"
                  for i, n in enumerate(names)]
    theirs = sparks(spark, path, ", ".join(positional))
    mine = ours(spark, table, path)
    assert len(mine) == len(theirs) == 2
    for row, their in zip(mine, theirs):
        assert row[CORRUPT_RECORD] is None
        for column in SCHEMA:
            expected = their[f"f{names.index(column)}"] if column in names else None
            assert row[column] == expected, column
        wanted = {}
        for i, n in enumerate(names):
            key = n or f"_c{i}"
            typed_here = n in SCHEMA and names.index(n) == i and their[f"f{i}"] is not None
            if not typed_here and lines[1 + theirs.index(their)].split(",")[i]:
                wanted[key] = lines[1 + theirs.index(their)].split(",")[i]
        assert rescued_fields(row) == wanted


def test_without_a_header_fields_go_by_position(spark, tmp_path):
    table = csv_table(header=False)
    path = write(tmp_path, "nh.csv", ["1,ann,2026-11-01,9.50,true,2026-11-01 10:00:00", "2,bob,soon,1,no,",
                                      "3,cut"])
    theirs = [r.asDict() for r in spark.read.schema(f"{table.schema_ddl}, {CORRUPT_RECORD} STRING")
              .option("header", "false").csv(str(path)).collect()]
    mine = ours(spark, table, path)
    assert [{c: r[c] for c in SCHEMA} for r in mine] == [{c: r[c] for c in SCHEMA} for r in theirs]
    assert rescued_fields(mine[1]) == {"day": "soon", "ok": "no"}
    assert mine[2][CORRUPT_RECORD] == theirs[2][CORRUPT_RECORD] == "3,cut"


@pytest.mark.parametrize("options,lines", [
    ({"delimiter": ";", "quote": "'", "escape": "\\"},
     ["id;name;day", "1;'a;b';2026-11-01", "2;'it\\'s';x", "3;plain"]),
    ({"delimiter": "\t"}, ["id\tname\tday", '1\t"a\tb"\t2026-11-01', "2\tc,d\tnope"]),
    ({"delimiter": "|", "escape": "#"}, ["id|name|day", '1|"say #"hi#""|2026-11-01', "2|x|"]),
    ({"escape": '"'}, ["id,name,day", '1,"say ""hi""",2026-11-01', '2,"a,b",x', '3,"open ""x,2026-11-01',
                       '4,"""",', '5,a""b,2026-11-01']),  # RFC 4180: a doubled quote is one
])
def test_delimiter_quote_and_escape_are_spark_options(spark, tmp_path, options, lines):
    schema = {"id": "INT", "name": "STRING", "day": "DATE"}
    table = csv_table(schema=schema, **options)
    path = write(tmp_path, "o.csv", lines)
    spark_options = file_format(table).reader_options(table)  # what Auto Loader gets on Databricks
    theirs = sparks(spark, path, table.schema_ddl, **spark_options)
    texts = sparks(spark, path, "id STRING, name STRING, day STRING", **spark_options)
    mine = ours(spark, table, path)
    assert len(mine) == len(theirs) == len(lines) - 1
    for row, their, text in zip(mine, theirs, texts):
        assert {c: row[c] for c in schema} == {c: their[c] for c in schema}
        if row[CORRUPT_RECORD] is None:
            assert rescued_fields(row) == {c: text[c] for c in schema if their[c] is None and text[c] is not None}
        else:
            assert row[CORRUPT_RECORD] == their[CORRUPT_RECORD]


def test_record_counts_agree_with_sparks_reader(spark, tmp_path):
    files = {
        "a.csv": write(tmp_path, "a.csv", SAME_HEADER_LINES),
        "b.csv.gz": write(tmp_path, "b.csv.gz", SAME_HEADER_LINES, "\r\n"),
        "header_only.csv": write(tmp_path, "header_only.csv", [HEADER]),
        "blank.csv": write(tmp_path, "blank.csv", ["", "  ", ""]),
        "bom.csv": write(tmp_path, "bom.csv", [HEADER, "1,a,,,,"], bom=True),
        "bom_blank.csv": write(tmp_path, "bom_blank.csv", ["", HEADER, "1,a,,,,"], bom=True),
    }
    table = csv_table()
    counter = file_format(table).counter(table)
    by_sql = {Path(r.f).name: r.n for r in spark.read.text(str(tmp_path), wholetext=True)
              .selectExpr("input_file_name() AS f", f"{records_sql_expression(True)} AS n").collect()}
    for name, path in files.items():
        theirs = spark.read.schema(f"{table.schema_ddl}, {CORRUPT_RECORD} STRING").option("header", "true").csv(str(path)).count()
        assert count_records(counter, path) == theirs == by_sql[name], name
    truncated = tmp_path / "cut.csv.gz"
    truncated.write_bytes(gzip.compress(b"id,name\n1,a\n" * 100)[:40])
    assert count_records(counter, truncated) is None


def test_the_local_source_is_a_stream_of_the_landing_folder(spark, tmp_path):
    table = csv_table(max_files_per_trigger=1)
    landing = tmp_path / "payments"
    landing.mkdir()
    for i in range(3):
        write(landing, f"{i}.csv", [HEADER, f"{i},n{i},2026-11-0{i + 1},1.00,true,", f"{i}x,bad,,,,"])
    options, _ = local_file_options(table, str(tmp_path))
    stream = file_format(table).read_local(spark, table, str(landing), options)
    query = (stream.writeStream.format("memory").queryName("csv_stream").trigger(availableNow=True).start())
    query.awaitTermination()
    rows = spark.table("csv_stream").collect()
    batches = [p["batchId"] for p in query.recentProgress if p["numInputRows"] > 0]
    assert sorted(r["id"] for r in rows if r["id"] is not None) == [0, 1, 2]
    assert sorted(json.loads(r[RESCUED_DATA])["id"] for r in rows if r[RESCUED_DATA]) == ["0x", "1x", "2x"]
    assert all(r[SOURCE_FILE].endswith(".csv") and r["_source_file_modification_time"] for r in rows)
    assert len(batches) == 3


@pytest.mark.parametrize("escape", ["\\", '"'])
def test_random_hostile_lines_split_as_sparks_reader_splits_them(spark, tmp_path, escape):
    """Seeded random lines of delimiters, quotes, escapes, spaces, letters and digits: each line is
    corrupt exactly when Spark's reader marks it for its field count, and a line that is not corrupt
    has Spark's values, or its misfits rescued with Spark's text. (In a corrupt line, where a quote is
    followed by the escape character, the fields Spark's parser keeps can differ: the line is kept.)"""
    import random

    rnd = random.Random(20261201)
    alphabet = ["a", "1", ",", '"', "\\", " ", "x", "2", "\u2028", "\u0085"]
    lines = ["a,b,c"] + ["".join(rnd.choice(alphabet) for _ in range(rnd.randint(1, 12))) for _ in range(1200)]
    path = write(tmp_path, "fuzz.csv", lines)
    table = csv_table(schema={"a": "INT", "b": "STRING", "c": "STRING"}, escape=escape)
    options = file_format(table).reader_options(table)
    theirs = sparks(spark, path, table.schema_ddl, **options)
    texts = sparks(spark, path, "a STRING, b STRING, c STRING", **options)
    mine = ours(spark, table, path)
    assert len(mine) == len(theirs) > 1000
    for row, their, text in zip(mine, theirs, texts):
        # read as text, Spark's reader marks a line only for its field count
        assert (row[CORRUPT_RECORD] is None) == (text[CORRUPT_RECORD] is None), their
        misfit = their["a"] is None and text["a"] is not None
        if row[CORRUPT_RECORD] is None:
            assert (row["a"], row["b"], row["c"]) == (their["a"], their["b"], their["c"])
            assert rescued_fields(row) == ({"a": text["a"]} if misfit else {})
        else:
            assert row[CORRUPT_RECORD] == their[CORRUPT_RECORD]
