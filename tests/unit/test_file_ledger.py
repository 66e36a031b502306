"""What the runner keeps about landing files: first commits over every checkpoint, the records counted
when a file is first committed, and files changed after they were ingested."""

from __future__ import annotations

import os
from datetime import datetime, timezone

import pytest

from pipelines.local import checkpoints
from pipelines.local.file_ledger import FileLedger
from pipelines.local.file_state import rows_for
from tests.sql.test_checkpoints import entry, landing_file, make_checkpoint


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
    assert checkpoints.first_commits(root)[str(f)] == datetime.fromtimestamp(1_700_000_100, timezone.utc)
    assert checkpoints.latest_checkpoint(root) == new


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
    [first] = rows_for("t", "t_bronze", checkpoints.file_states(landing, cp), ledger, {})
    assert first[10] == 2 and first[13] is False  # lines, modified_after_ingest
    ledger.save()
    with path.open("ab") as f:
        f.write(b'{"a":3}\n')
    [after] = rows_for("t", "t_bronze", checkpoints.file_states(landing, cp), FileLedger(tmp_path / "ledger.json"), {})
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
    [row] = rows_for("t", "t_bronze", checkpoints.file_states(landing, cp), ledger, {})
    assert row[4].timestamp() == 1_700_000_000  # create_time: when the stream first saw it
    assert row[10] == 3 and row[12].timestamp() == 1_700_000_500 and row[13] is False
    ledger.save()
    [again] = rows_for("t", "t_bronze", checkpoints.file_states(landing, cp), FileLedger(tmp_path / "ledger.json"), {})
    assert again[13] is False


def test_backlog_of_a_missing_landing_folder_is_unknown_not_zero(tmp_path):
    with pytest.raises(FileNotFoundError):
        checkpoints.backlog(tmp_path / "nowhere", None)
