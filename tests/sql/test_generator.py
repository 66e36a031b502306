"""The synthetic data generator: seeded, each bad kind classified by the rescue logic as the
manifest says, files written whole and recorded."""

from __future__ import annotations

import gzip
import json
import random
from pathlib import Path

import pytest

from pipelines.config import TablesConfig
from pipelines.errors import LakewatchError
from pipelines.generator import KINDS, Manifest, Mix, corrupt, generate_batch, good_rows, redeliver
from pipelines.rescue import rescue_json_lines
from tests.builders import orders_table

TABLE = orders_table()


def test_good_rows_are_deterministic_for_a_seed(spark):
    a = good_rows(spark, TABLE, 20, seed=3)
    b = good_rows(spark, TABLE, 20, seed=3)
    c = good_rows(spark, TABLE, 20, seed=4)
    assert a == b and a != c
    assert set(a[0]) == set(TABLE.column_names)


@pytest.mark.parametrize("kind, corrupt_lines, rescued_lines", [
    ("malformed", 1, 0), ("type_mismatch", 0, 1), ("unknown_field", 0, 1), ("case_variant", 0, 1),
])
def test_each_bad_kind_lands_where_the_manifest_says(spark, kind, corrupt_lines, rescued_lines):
    rnd = random.Random(1)
    records = good_rows(spark, TABLE, 30, seed=5)
    lines, nulled = [], []
    for record in records:
        text, column = corrupt(record, kind, TABLE, rnd)
        lines.append(text)
        nulled.append(column)
    df = spark.createDataFrame([(t, "f") for t in lines], "value STRING, _source_file STRING")
    out = rescue_json_lines(df, TABLE.columns, passthrough=["_source_file"]).collect()
    assert sum(r["_corrupt_record"] is not None for r in out) == corrupt_lines * len(lines)
    assert sum(r["_rescued_data"] is not None for r in out) == rescued_lines * len(lines)
    for row, column in zip(out, nulled):
        if column:
            assert row[column] is None  # the manifest's nulled column is NULL in bronze


def test_mix_parsing():
    assert Mix.parse("malformed=0.5,empty_file=0").malformed == 0.5
    for bad in ("nope=0.1", "malformed=x", "malformed=2", "malformed=0.6,type_mismatch=0.6"):
        with pytest.raises(LakewatchError) as info:
            Mix.parse(bad)
        assert info.value.error_class == "GENERATOR_INVALID_ARGUMENT"


def test_batches_files_manifest_and_redelivery(spark, tmp_path: Path):
    tables = TablesConfig("t.yml", (TABLE,))
    mix = Mix(malformed=0.1, type_mismatch=0.1, unknown_field=0.1, case_variant=0.1, empty_file=1.0)
    first = generate_batch(spark, tables, tmp_path, rows=40, seed=9, mix=mix, files_per_batch=2)
    second = generate_batch(spark, tables, tmp_path, rows=40, seed=9, mix=mix, incomplete_upload=["orders"])
    manifest = Manifest.load(tmp_path)
    assert {f["batch"] for f in manifest.files} == {0, 1}
    assert len(first) == 3 and any(f.bytes == 0 for f in first)  # two parts and an empty file
    for f in first:  # every line on disk is counted
        assert sum(f.lines.values()) == len(Path(f.path).read_text().splitlines())
    cut = next(f for f in second if not f.complete)
    assert cut.path.endswith(".json.gz")
    with pytest.raises(EOFError):
        gzip.decompress(Path(cut.path).read_bytes())
    assert manifest.totals("orders")["good"] < manifest.totals("orders", complete_only=False)["good"]
    assert redeliver(tmp_path) == [cut.path]
    assert len(gzip.decompress(Path(cut.path).read_bytes()).decode().splitlines()) == sum(cut.lines.values())
    assert all(f["complete"] for f in Manifest.load(tmp_path).files)
    assert set(json.loads((tmp_path / "_manifest.json").read_text())["files"][0]["lines"]) == set(KINDS)


def test_csv_batches_hold_what_the_manifest_says_by_sparks_reader(spark, tmp_path: Path):
    """CSV files: every row the manifest counts is a row of Spark's CSV reader; malformed rows are the
    ones Spark's reader (read as text) marks for their field count; drift and case variants come in
    files whose header differs from the schema, the rest in files whose header is the schema."""
    from pipelines.config import parse_table

    table = parse_table("t.yml", 0, {"name": "payments", "format": "csv", "landing": "payments", "schema": {
        "payment_id": "BIGINT", "paid_at": "TIMESTAMP", "amount": "DECIMAL(10,2)", "method": "STRING",
        "settled": "BOOLEAN"}})
    mix = Mix(malformed=0.1, type_mismatch=0.1, unknown_field=0.1, case_variant=0.1, empty_file=0.0)
    written = generate_batch(spark, TablesConfig("t.yml", (table,)), tmp_path, rows=200, seed=3, mix=mix)
    names = ",".join(table.column_names)
    for f in written:
        header = Path(f.path).read_text().splitlines()[0]
        # all text, one column per header name: Spark's reader marks a row only for its field count
        as_text = ", ".join(f"`f{i}` STRING" for i in range(len(header.split(","))))
        rows = spark.read.option("header", "true").schema(f"{as_text}, _corrupt_record STRING").csv(f.path).collect()
        assert len(rows) == sum(f.lines.values()), f.path
        assert sum(r["_corrupt_record"] is not None for r in rows) == f.lines["malformed"]
        assert (header != names) == bool(f.lines["unknown_field"] or f.lines["case_variant"])
        if f.lines["type_mismatch"]:
            typed = spark.read.option("header", "true").schema(f"{table.schema_ddl}, _corrupt_record STRING").csv(f.path)
            assert sum(r["_corrupt_record"] is not None for r in typed.collect()) == f.lines["malformed"] + f.lines["type_mismatch"]
    totals = Manifest.load(tmp_path).totals("payments")
    assert all(totals[k] > 0 for k in KINDS)


def _mixed(table, spark, tmp_path: Path):
    mix = Mix(malformed=0.1, type_mismatch=0.1, unknown_field=0.1, case_variant=0.1, empty_file=1.0)
    return generate_batch(spark, TablesConfig("t.yml", (table,)), tmp_path, rows=120, seed=4, mix=mix)


def test_json_document_batches_hold_what_the_manifest_says_by_sparks_reader(spark, tmp_path: Path):
    """multi_line: Spark's JSON reader (multiLine, PERMISSIVE) makes the manifest's records of each
    file, and a corrupt record of each malformed one."""
    from pipelines.config import parse_table

    table = parse_table("t.yml", 0, {"name": "events", "format": "json", "multi_line": True, "landing": "events",
                                     "schema": {"id": "BIGINT", "kind": "STRING", "at": "TIMESTAMP"}})
    written = _mixed(table, spark, tmp_path)
    as_text = ", ".join(f"`{c}` STRING" for c in table.column_names)  # a STRING column takes any JSON value
    for f in written:
        rows = (spark.read.option("multiLine", "true").schema(f"{as_text}, _corrupt_record STRING")
                .json(f.path).collect())
        assert len(rows) == sum(f.lines.values()), f.path
        assert sum(r["_corrupt_record"] is not None for r in rows) == f.lines["malformed"], f.path
    totals = Manifest.load(tmp_path).totals("events")
    assert all(totals[k] > 0 for k in KINDS)


def test_parquet_batches_hold_what_the_manifest_says_by_sparks_reader(spark, tmp_path: Path):
    """Parquet: Spark's parquet reader counts the manifest's rows per file; a type mismatch is a file
    whose nulled column is text, drift a file with a column more, a case variant a file that spells
    the nulled column otherwise; the empty file has no rows."""
    from pipelines.config import parse_table

    schema = {"id": "BIGINT", "amount": "DECIMAL(10,2)", "at": "TIMESTAMP", "day": "DATE", "ok": "BOOLEAN", "note": "STRING"}
    table = parse_table("t.yml", 0, {"name": "refunds", "format": "parquet", "landing": "refunds", "schema": schema})
    written = _mixed(table, spark, tmp_path)
    declared = {n: t.lower() for n, t in schema.items()}
    for f in written:
        df = spark.read.parquet(f.path)
        assert df.count() == sum(f.lines.values()), f.path
        found = {field.name: field.dataType.simpleString() for field in df.schema.fields}
        if f.lines["type_mismatch"]:
            [column] = f.nulled_columns
            assert found[column] == "string" != declared[column]
        elif f.lines["unknown_field"]:
            assert set(found) - set(declared) and set(declared) <= set(found)
        elif f.lines["case_variant"]:
            [column] = f.nulled_columns
            assert column not in found and column.lower() in {n.lower() for n in found}
        else:
            assert found == declared, f.path
    assert Manifest.load(tmp_path).totals("refunds")["malformed"] == 0
