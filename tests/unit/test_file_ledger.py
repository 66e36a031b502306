"""What the runner keeps about landing files: lines with content counted without Spark (checked
against Spark's own text reader, which splits lines as the file source does), first commits over
every checkpoint, and files changed after they were ingested."""

from __future__ import annotations

import gzip
import os
from datetime import datetime, timezone

import pytest

from pipelines.local import checkpoints as C
from pipelines.local import file_ledger
from pipelines.local.file_ledger import FileLedger, count_content_lines
from pipelines.local.file_state import rows_for
from tests.unit.test_checkpoints import entry, landing_file, make_checkpoint

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
    monkeypatch.setattr(file_ledger, "_CHUNK", chunk)  # small chunks put line ends on chunk edges
    folder, counts = oracle
    assert count_content_lines(folder / f"{name}.json") == counts[name]


def test_gzip_is_counted_after_decompression_and_an_incomplete_one_is_not(spark, tmp_path):
    whole = tmp_path / "whole.json.gz"
    whole.write_bytes(gzip.compress(CASES["crlf"] + CASES["lf"]))
    assert count_content_lines(whole) == spark_count(spark, str(whole)) == 4
    cut = tmp_path / "cut.json.gz"
    cut.write_bytes(whole.read_bytes()[:-12])
    assert count_content_lines(cut) is None


def test_first_commit_survives_a_full_refresh(tmp_path):
    landing = tmp_path / "landing"
    f = landing_file(landing, "a.json", 10)
    root = tmp_path / "cp"
    old = make_checkpoint(tmp_path, committed=[0], offsets=[0])  # tmp/cp/0
    C_write = (old / "sources" / "0")
    C_write.mkdir(parents=True)
    (C_write / "0").write_text('v1\n{"path": "%s", "timestamp": 1700000000000, "batchId": 0}\n' % f.as_uri())
    new = root / "1"
    (new / "commits").mkdir(parents=True)
    (new / "commits" / "0").write_text("v1\n{}")
    (new / "sources" / "0").mkdir(parents=True)
    (new / "sources" / "0" / "0").write_text('v1\n{"path": "%s", "timestamp": 1700000000000, "batchId": 0}\n' % f.as_uri())
    os.utime(old / "commits" / "0", (1_700_000_100, 1_700_000_100))
    os.utime(new / "commits" / "0", (1_700_009_000, 1_700_009_000))
    assert C.first_commits(root)[str(f)] == datetime.fromtimestamp(1_700_000_100, timezone.utc)
    assert C.latest_checkpoint(root) == new


def test_a_file_appended_to_after_ingest_is_flagged_and_keeps_its_first_count(tmp_path):
    landing = tmp_path / "landing"
    path = landing / "a.json"
    landing.mkdir()
    path.write_bytes(b'{"a":1}\n{"a":2}\n')
    os.utime(path, (1_700_000_000, 1_700_000_000))
    cp = make_checkpoint(tmp_path, committed=[0], offsets=[0])
    (cp / "sources" / "0").mkdir(parents=True)
    (cp / "sources" / "0" / "0").write_text("v1\n" + __import__("json").dumps(entry(path, 0)) + "\n")
    ledger = FileLedger(tmp_path / "ledger.json")
    [first] = rows_for("t", "t_bronze", C.file_states(landing, cp), ledger, {})
    assert first[10] == 2 and first[13] is False  # lines, modified_after_ingest
    ledger.save()
    with path.open("ab") as f:
        f.write(b'{"a":3}\n')
    [after] = rows_for("t", "t_bronze", C.file_states(landing, cp), FileLedger(tmp_path / "ledger.json"), {})
    assert after[10] == 2 and after[11] == 16 and after[13] is True  # counted as committed; changed since


def test_a_file_redelivered_before_its_batch_committed_is_not_modified_after_ingest(tmp_path):
    """The demo's case: a batch saw a truncated upload and failed; the producer re-delivered the file;
    the batch re-ran (the source log keeps the first time it saw the file) and committed the whole
    file. Nothing changed after ingestion."""
    landing = tmp_path / "landing"
    path = landing_file(landing, "a.json", 0)
    path.write_bytes(b'{"a":1}\n{"a":2}\n{"a":3}\n')
    os.utime(path, (1_700_000_500, 1_700_000_500))  # re-delivered after the stream first saw it
    cp = make_checkpoint(tmp_path, committed=[0], offsets=[0])
    seen_first = {**entry(path, 0), "timestamp": 1_700_000_000_000}
    (cp / "sources" / "0").mkdir(parents=True)
    (cp / "sources" / "0" / "0").write_text("v1\n" + __import__("json").dumps(seen_first) + "\n")
    ledger = FileLedger(tmp_path / "ledger.json")
    [row] = rows_for("t", "t_bronze", C.file_states(landing, cp), ledger, {})
    assert row[4].timestamp() == 1_700_000_000  # create_time: when the stream first saw it
    assert row[10] == 3 and row[12].timestamp() == 1_700_000_500 and row[13] is False
    ledger.save()
    [again] = rows_for("t", "t_bronze", C.file_states(landing, cp), FileLedger(tmp_path / "ledger.json"), {})
    assert again[13] is False


def test_backlog_of_a_missing_landing_folder_is_unknown_not_zero(tmp_path):
    with pytest.raises(FileNotFoundError):
        C.backlog(tmp_path / "nowhere", None)


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
