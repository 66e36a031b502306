"""The records of a JSON-lines landing file counted without Spark (`formats.json_lines`), checked
against Spark's own text and JSON readers (which split lines as the file source does), and the same
count in SQL for Databricks (`formats.json.LINE_RECORDS_SQL`)."""

from __future__ import annotations

import gzip

import pytest

from pipelines.formats import json_lines
from pipelines.formats.json_lines import count_content_lines

CASES = {
    "lf": b'{"a":1}\n{"a":2}\n',
    "crlf": b'{"a":1}\r\n{"a":2}\r\n\r\n',
    "cr_only": b'{"a":1}\r{"a":2}\r',
    "no_final_newline": b'{"a":1}\n{"a":2}',
    "blank_and_spaces": b'\n   \n\t\n{"a":1}\n \t \n',
    "vertical_tab_and_form_feed": b'\x0b\n\x0c\n{"a":1}\n',
    "junk_and_long": b"not json\n" + b"x" * 100_000 + b"\n\n",
    "mixed_endings": b"a\r\nb\rc\nd",
    "empty": b"",
}


def spark_count(spark, path: str) -> int:
    """Lines with content as Spark's text reader splits them (the oracle)."""
    return spark.read.text(path).where(r"value RLIKE '[^ \t]'").count()


@pytest.fixture(scope="module")
def oracle(spark, tmp_path_factory) -> tuple:
    """Every case written to one folder and counted by Spark in one job: (folder, {name: count})."""
    folder = tmp_path_factory.mktemp("lines")
    for name, data in CASES.items():
        (folder / f"{name}.json").write_bytes(data)
    rows = (spark.read.text(str(folder)).where(r"value RLIKE '[^ \t]'")
            .selectExpr("input_file_name() AS f").groupBy("f").count().collect())
    counts = {name: 0 for name in CASES}
    counts.update({r["f"].rsplit("/", 1)[-1].removesuffix(".json"): r["count"] for r in rows})
    return folder, counts


@pytest.mark.parametrize("name", CASES)
@pytest.mark.parametrize("chunk", [7, 8 << 20])
def test_line_count_equals_spark_text_reader(oracle, monkeypatch, name, chunk):
    monkeypatch.setattr(json_lines, "_CHUNK", chunk)  # small chunks put line ends on chunk edges
    folder, counts = oracle
    assert count_content_lines(folder / f"{name}.json") == counts[name]


def test_gzip_is_counted_after_decompression_and_an_incomplete_one_is_not(spark, tmp_path):
    whole = tmp_path / "whole.json.gz"
    whole.write_bytes(gzip.compress(CASES["crlf"] + CASES["lf"]))
    assert count_content_lines(whole) == spark_count(spark, str(whole)) == 4
    cut = tmp_path / "cut.json.gz"
    cut.write_bytes(whole.read_bytes()[:-12])
    assert count_content_lines(cut) is None


def test_a_line_holding_an_array_of_objects_counts_a_row_per_object_as_sparks_reader(spark, tmp_path):
    """Spark's JSON reader (the oracle) makes a row of each object of a top-level array; anything else on
    a line is one row (an array of scalars, a broken array: corrupt). Spark drops an empty array, which
    lakewatch keeps as one corrupt row: counted one more."""
    path = tmp_path / "arrays.json"
    path.write_bytes(b'[{"a":1},{"a":2}]\n  [{"a":3}] trailing\n[1,2]\n{"a":4}\n[{}]\n[{"a":\n'
                     b'\xef\xbb\xbf[{"a":5},{"a":6},{"a":7}]\n[{"a":"\xff"}]\n'
                     # a byte-order mark is skipped at the start of a line only, and only before something
                     b'\xef\xbb\xbf [{"a":8},{"a":9}]\n \xef\xbb\xbf[{"a":10},{"a":11}]\n\xef\xbb\xbf \t\n')
    sparks_rows = spark.read.schema("a INT, _corrupt_record STRING").json(str(path)).count()
    assert count_content_lines(path) == sparks_rows
    with path.open("ab") as f:
        f.write(b"[]\n")
    assert count_content_lines(path) == sparks_rows + 1


def test_databricks_counts_the_rows_of_a_file_as_the_local_count(spark, tmp_path):
    """The reconciliation count on Databricks (`read_files` text lines, LINE_RECORDS_SQL) agrees with
    the local one on every case, arrays of objects included."""
    from pipelines.formats.json import LINE_RECORDS_SQL

    cases = {**CASES, "arrays": b'[{"a":1},{"a":2}]\n \xef\xbb\xbf[{"a":3}] x\n[1]\n[]\n[{"a":\n{"a":4}\n',
             "marks": b'\xef\xbb\xbf [{"a":8},{"a":9}]\n \xef\xbb\xbf[{"a":10},{"a":11}]\n\xef\xbb\xbf \t\n\xef\xbb\xbf\n'}
    for name, data in cases.items():
        (tmp_path / f"{name}.json").write_bytes(data)
    rows = (spark.read.text(str(tmp_path)).selectExpr("input_file_name() AS f", f"{LINE_RECORDS_SQL} AS n")
            .groupBy("f").sum("n").collect())  # one job for every case
    counted = {name: 0 for name in cases}
    counted.update({r["f"].rsplit("/", 1)[-1].removesuffix(".json"): r["sum(n)"] for r in rows})
    for name in cases:
        assert counted[name] == count_content_lines(tmp_path / f"{name}.json"), name
