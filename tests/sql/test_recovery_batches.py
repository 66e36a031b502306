"""The recovery's count of the micro-batches a killed runner never reported, on a real stream into a
real Delta table and a real event log table. Oracle: the lines of the files the test wrote, and what
the table holds; each batch's rows are counted once, by the update whose run wrote them."""

from __future__ import annotations

import itertools
from pathlib import Path

from pipelines.eventlog import events
from pipelines.eventlog.writer import EventLogStream, EventLogWriter
from pipelines.local import checkpoints
from pipelines.local.home import LocalHome
from pipelines.local.inflight import FlowRecord
from pipelines.local.recovery import _record_missing_batches
from tests.builders import cut_commit_entry, landing_files, tagged_stream_batches

FLOW = "spark_catalog.lakewatch.lines_bronze"
LOGS = itertools.count(1)  # one event log table per recovery


def recovered_rows(spark, tmp_path: Path, flow: FlowRecord, update_id: str, logged: set[int],
                   cut: dict | None = None) -> dict[int, int | None]:
    """The batches (and their rows) the recovery of `update_id` records, read back from its event log;
    the batches it found cut go to `cut`."""
    log = f"lw_recovery_{next(LOGS)}"
    counter = itertools.count(1)
    stream = EventLogStream(EventLogWriter(spark, log), lambda n: next(counter), None)
    origin = events.Origin(pipeline_id="p", pipeline_name="lines", update_id=update_id)
    notes: list = []
    _, found = _record_missing_batches(spark, LocalHome(tmp_path / "home"), flow, origin, {(FLOW, b) for b in logged},
                                       stream, notes)
    if cut is not None:
        cut.update(found)
    stream.close()
    if not spark.catalog.tableExists(log):
        return {}
    return {r["batch"]: r["rows"] for r in spark.sql(
        "SELECT origin.batch_id AS batch, CAST(get_json_object(details, '$.flow_progress.metrics.num_output_rows') "
        f"AS BIGINT) AS rows FROM {log} WHERE level = 'METRICS'").collect()}


def test_a_cut_batch_is_counted_once_by_the_update_that_wrote_it_and_never_by_the_one_that_ran_it_again(spark, tmp_path):
    landing, table_dir, root = tmp_path / "landing", tmp_path / "bronze", tmp_path / "checkpoints"
    lines = [2, 3, 4]
    landing_files(landing, lines)
    checkpoint = root / "0"
    flow = FlowRecord(name="lines_bronze", sdp_name=FLOW, target="lines_bronze", is_sink=False, measured=True,
                      checkpoint_root=str(root), target_table=f"delta.`{table_dir}`")
    # u1 ran batches 0-2; its runner reported batch 0, then was killed as batch 2 had reached the table
    # but not the checkpoint's commit log.
    tagged_stream_batches(spark, landing, table_dir, checkpoint, "u1")
    cut_commit_entry(checkpoint, 2)
    cut: dict = {}
    assert recovered_rows(spark, tmp_path, flow, "u1", logged={0}, cut=cut) == {1: lines[1], 2: lines[2]}
    # The cut batch's file was committed when its rows reached the table (Delta's own commit time), not
    # left in the backlog; without the cut it would look discovered and waiting.
    [committed_at] = [r["timestamp"] for r in spark.sql(f"DESCRIBE HISTORY delta.`{table_dir}`").collect()
                      if r["operationParameters"].get("epochId") == "2"]
    assert list(cut) == [2] and cut[2] == committed_at.astimezone(cut[2].tzinfo)
    part2 = str(landing / "part-2.txt")
    states = {s.path: s for s in checkpoints.file_states(landing, checkpoint, cut=cut)}
    assert (states[part2].state, states[part2].commit_time) == ("committed", cut[2])
    assert {s.path: s for s in checkpoints.file_states(landing, checkpoint)}[part2].state == "discovered"
    assert (checkpoints.backlog(landing, checkpoint, cut).files, checkpoints.backlog(landing, checkpoint).files) == (0, 1)
    # Had u1's runner reported the cut batch before it died, the recovery would not report it again, and
    # its file would still be committed at the table's commit.
    again: dict = {}
    assert recovered_rows(spark, tmp_path, flow, "u1", logged={0, 1, 2}, cut=again) == {} and again == cut

    # u2 ran batch 2 again (Delta skipped its write) and was cut in turn, before its checkpoint's commit:
    # no rows of u2's, and the file still committed at u1's table commit.
    u2 = FlowRecord(**{**flow.__dict__, "checkpoint_before": str(checkpoint), "batch_before": 1})
    tagged_stream_batches(spark, landing, table_dir, checkpoint, "u2")
    cut_commit_entry(checkpoint, 2)
    held: dict = {}
    assert recovered_rows(spark, tmp_path, u2, "u2", logged=set(), cut=held) == {} and held == cut

    # u3 ran batch 2 again, committed it in the checkpoint, and was killed before it reported it.
    tagged_stream_batches(spark, landing, table_dir, checkpoint, "u3")
    assert spark.read.format("delta").load(str(table_dir)).count() == sum(lines)
    u3 = FlowRecord(**{**u2.__dict__})
    assert recovered_rows(spark, tmp_path, u3, "u3", logged=set()) == {2: 0}
