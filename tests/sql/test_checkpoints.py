"""Reading streaming checkpoints: source logs (with compaction), commits, backlog, file state."""

from __future__ import annotations

import json
import os
from pathlib import Path

from pipelines.local import checkpoints


def write_log(folder: Path, name: str, entries: list[dict]) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).write_text("v1\n" + "\n".join(json.dumps(e) for e in entries) + "\n")


def landing_file(folder: Path, name: str, size: int, mtime: float = 1_700_000_000) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_bytes(b"x" * size)
    os.utime(path, (mtime, mtime))
    return path


def entry(path: Path, batch: int) -> dict:
    return {"path": path.as_uri(), "timestamp": 1_700_000_000_000, "batchId": batch}


def make_checkpoint(tmp_path: Path, committed: list[int], offsets: list[int]) -> Path:
    cp = tmp_path / "cp" / "0"
    for b in committed:
        (cp / "commits").mkdir(parents=True, exist_ok=True)
        (cp / "commits" / str(b)).write_text('v1\n{"nextBatchWatermarkMs":0}')
    for b in offsets:
        (cp / "offsets").mkdir(parents=True, exist_ok=True)
        (cp / "offsets" / str(b)).write_text('v1\n{"batchWatermarkMs":0,"batchTimestampMs":1700000100000}\n{}')
    return cp


def test_source_log_reads_newest_compact_and_later_batches(tmp_path):
    landing = tmp_path / "landing"
    files = [landing_file(landing, f"f{i}.json", 10) for i in range(13)]
    sources = tmp_path / "cp" / "0" / "sources" / "0"
    for b in range(10):  # plain logs that compaction superseded (may be deleted or kept)
        write_log(sources, str(b), [entry(files[b], b)])
    write_log(sources, "9.compact", [entry(files[b], b) for b in range(10)])
    write_log(sources, "10", [entry(files[10], 10)])
    write_log(sources, "11", [entry(files[11], 11), entry(files[12], 11)])
    recorded = checkpoints.source_log(tmp_path / "cp" / "0")
    assert sorted(f.path for f in recorded) == sorted(str(f) for f in files)
    assert {f.batch_id for f in recorded if f.path == str(files[12])} == {11}


def test_backlog_counts_unseen_and_uncommitted_files(tmp_path):
    landing = tmp_path / "landing"
    done = landing_file(landing, "a.json", 100)
    planned = landing_file(landing, "b.json", 200)  # in batch 1, which never committed
    landing_file(landing, "c.json", 300)  # not seen yet
    landing_file(landing, ".hidden.tmp", 999)  # being written: not visible to the source
    cp = make_checkpoint(tmp_path, committed=[0], offsets=[0, 1])
    write_log(cp / "sources" / "0", "0", [entry(done, 0)])
    write_log(cp / "sources" / "0", "1", [entry(planned, 1)])
    assert checkpoints.backlog(landing, cp) == checkpoints.Backlog(files=2, bytes=500)
    states = {Path(s.path).name: s for s in checkpoints.file_states(landing, cp)}
    assert states["a.json"].state == "committed" and states["a.json"].commit_time is not None
    assert states["b.json"].state == "discovered" and states["b.json"].discovery_time is not None
    assert states["c.json"].state == "pending" and states["c.json"].discovery_time is None
    assert ".hidden.tmp" not in states


def test_no_checkpoint_means_everything_is_backlog(tmp_path):
    landing = tmp_path / "landing"
    landing_file(landing, "a.json", 7)
    assert checkpoints.backlog(landing, None) == checkpoints.Backlog(files=1, bytes=7)
    assert checkpoints.latest_checkpoint(tmp_path / "missing") is None


def test_latest_checkpoint_is_the_highest_generation(tmp_path):
    root = tmp_path / "flow"
    for n in ("0", "1", "10"):
        (root / n).mkdir(parents=True)
    assert checkpoints.latest_checkpoint(root) == root / "10"


def test_uri_forms_are_normalized(tmp_path):
    assert checkpoints.to_local_path("file:///tmp/a%20b.json") == "/tmp/a b.json"
    assert checkpoints.to_local_path("file:/tmp/x.json") == "/tmp/x.json"


def test_batches_whose_commit_files_were_purged_still_count_as_committed(tmp_path):
    landing = tmp_path / "landing"
    old = landing_file(landing, "old.json", 10)
    new = landing_file(landing, "new.json", 20)
    cp = make_checkpoint(tmp_path, committed=[150, 151], offsets=[150, 151])  # commits 0..149 purged
    write_log(cp / "sources" / "0", "149.compact", [entry(old, 3)])
    write_log(cp / "sources" / "0", "151", [entry(new, 151)])
    states = {Path(s.path).name: s for s in checkpoints.file_states(landing, cp)}
    assert states["old.json"].state == "committed" and states["old.json"].commit_time is None
    assert states["new.json"].commit_time is not None
    assert checkpoints.backlog(landing, cp) == checkpoints.Backlog(files=0, bytes=0)


def test_create_time_is_when_the_stream_saw_the_file(tmp_path):
    landing = tmp_path / "landing"
    path = landing_file(landing, "a.json", 10, mtime=1_700_000_000)
    cp = make_checkpoint(tmp_path, committed=[0], offsets=[0])
    write_log(cp / "sources" / "0", "0", [{"path": path.as_uri(), "timestamp": 1_600_000_000_000, "batchId": 0}])
    [state] = checkpoints.file_states(landing, cp)
    assert state.create_time.timestamp() == 1_600_000_000  # the overwrite later did not change it



def test_disk_time_has_the_millisecond_precision_of_spark_file_status(tmp_path, spark):
    """A file untouched since the stream took it is not 'modified': its disk time must equal the time
    the source log recorded, which is Hadoop's file status in milliseconds (Spark's `_metadata` says
    what that is)."""
    landing = tmp_path / "landing"
    path = landing_file(landing, "a.json", 0)
    path.write_text('{"a": 1}\n')
    os.utime(path, ns=(1_700_000_000_123_456_789, 1_700_000_000_123_456_789))
    [seen] = (spark.read.json(str(landing))
              .selectExpr("unix_millis(_metadata.file_modification_time) AS ms").collect())
    [listed] = checkpoints.list_landing(landing)
    assert round(listed.modification_time.timestamp() * 1000) == seen.ms
    cp = make_checkpoint(tmp_path, committed=[0], offsets=[0])
    write_log(cp / "sources" / "0", "0", [{"path": path.as_uri(), "timestamp": seen.ms, "batchId": 0}])
    [state] = checkpoints.file_states(landing, cp)
    assert state.disk_modification_time == state.create_time
