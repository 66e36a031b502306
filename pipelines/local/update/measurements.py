"""What an update measures on the engine: each micro-batch's backlog as it ends (listener thread), and
at the close the rows, bytes, expectation counts and backlog of every flow, from Delta commits and
streaming checkpoints, written as METRICS events (`metrics` builds them), plus the file state table.
Also the close's restore of a materialized view whose refresh did not complete."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime
from typing import Any, TypeVar

from pipelines import adapter, expectations
from pipelines.local import adapter as local_adapter
from pipelines.eventlog import events
from pipelines.local import checkpoints
from pipelines.local import inflight, measure
from pipelines.local.capture import BatchProgress, ProgressCollector
from pipelines.local.registry import RecordedFlow
from pipelines.local.sdp_events import short_name
from pipelines.local.update import metrics
from pipelines.local.update.context import UpdateContext
from pipelines.local.update.messages import error_text, one_line
from pipelines.local.update.types import now

FILE_STATE_TABLE = adapter.FILE_STATE_TABLE
Item = TypeVar("Item")
Value = TypeVar("Value")


class Measurements:
    """One update's measurements. `collector` is set by the main thread before the run and filled by the
    listener thread (under its own lock); `committed_before`, `cut` and `cut_commits` are the main
    thread's alone."""

    def __init__(self, ctx: UpdateContext) -> None:
        self.ctx = ctx
        self.collector: ProgressCollector | None = None
        self.committed_before: set[tuple[str, str, int]] = set()
        self.cut: dict[str, dict[int, measure.BatchCommit]] = {}  # flow -> its micro-batches a stop cut
        self.cut_commits: dict[str, dict[int, datetime]] = {}  # flow -> every cut batch the table holds -> its commit time

    # -- during the run ------------------------------------------------------------------------
    def record_batch(self, batch: BatchProgress) -> dict[str, Any]:
        """Runs in the listener thread as each micro-batch ends: measures the backlog left at that
        moment and writes the batch's METRICS event (rows, backlog, expectation counts)."""
        ctx = self.ctx
        flow = short_name(batch.flow)
        extra: dict[str, Any] = {}
        landing = ctx.graph.file_sources.get(flow)
        if landing is not None:
            try:
                left = checkpoints.backlog(landing, ctx.checkpoint(flow))
                extra = {"backlog_files": left.files, "backlog_bytes": left.bytes}
            except OSError as e:
                ctx.add(events.measurement_warning(ctx.flow_origin(flow, batch.batch_id), batch.ended_at, "backlog",
                                                   f"landing folder not readable: {e}"))
        if flow in ctx.graph.measured_flows:
            target, _ = ctx.flow_target(flow)
            ctx.add(metrics.batch_metrics_event(ctx.flow_origin(flow, batch.batch_id), flow, target, batch,
                                                ctx.graph, extra, ctx.qualified))
        return extra

    def committed_now(self) -> set[tuple[str, str, int]]:
        """(flow, checkpoint, batch) of every committed batch of the measured flows."""
        found = set()
        for flow in self.ctx.graph.measured_flows:
            cp = self.ctx.checkpoint(flow)
            if cp is not None:
                found |= {(flow, str(cp), batch) for batch in checkpoints.committed_batches(cp)}
        return found

    def wait_for_progress(self, timeout: float = 15.0) -> None:
        """Waits until the listener has reported every batch this update committed."""
        assert self.collector is not None
        deadline = time.monotonic() + timeout
        while True:
            expected = {(flow, batch) for flow, _, batch in self.committed_now() - self.committed_before}
            seen = {(short_name(b.flow), b.batch_id) for b in self.collector.snapshot()}
            if expected <= seen:
                return
            if time.monotonic() >= deadline:
                missing = ", ".join(f"{f} batch {b}" for f, b in sorted(expected - seen))
                self.ctx.say(f"  warning: no progress event arrived for {missing}; their metrics are NULL")
                return
            time.sleep(0.1)

    # -- the close -----------------------------------------------------------------------------
    def keep_unrefreshed_views(self) -> None:
        """Gives back a materialized view's previous contents when its refresh did not complete.

        On Databricks such a view keeps its last contents. With lakewatch's rewrite of SDP
        (pipelines/local/sdp_classes.py) a view is replaced in one commit when its flow completes, so
        a view whose flow failed or was skipped was never touched. Without it (another Spark, or a
        `--remote` endpoint running open-source SDP), SDP truncates every view while it sets up tables
        and refills it when the flow runs, so the runner restores the view: to the version before
        this update's first commit (every commit of the update carries its id).
        """
        ctx = self.ctx
        flow_status = ctx.state.flow_status
        unrefreshed = [name for name in ctx.materialized_views()
                       if getattr(flow_status.get(ctx.sdp_flow_name(name)), "status", None) != "COMPLETED"]
        history = in_parallel(lambda name: measure.update_commits(ctx.spark, ctx.qualified(name), ctx.update_id,
                                                                  table_dir=ctx.local_table_dir(name)), unrefreshed)
        for name in unrefreshed:
            result = flow_status.get(ctx.sdp_flow_name(name))
            status = result.status if result is not None else "not run"
            found = history[name]
            if found.wrote():  # a write is a whole refresh, whatever status the flow was last seen in
                ctx.say(f"    {name}: refresh {status}, but its write landed: kept its new contents")
            elif found.before is not None:
                ctx.spark.sql(f"RESTORE TABLE {ctx.qualified(name)} TO VERSION AS OF {found.before}")
                ctx.say(f"    {name}: refresh {status}; kept its previous contents (version {found.before})")
            elif found.read and not found.commits:
                ctx.say(f"    {name}: refresh {status}; kept its previous contents (this update did not write it)")

    def add_cut_batches(self) -> None:
        """A micro-batch whose rows reached its table while the stop (or a failure) came before the
        stream recorded it in its checkpoint has no progress event (`measure.cut_batches`): a METRICS
        event each, with the rows of its Delta commit; its expectation counts were not measured (a WARN
        event says so), and the next update, which runs the batch again, writes none of its rows."""
        ctx = self.ctx
        # Without a run (registration failed) no batch is this update's, but an earlier one's cut is still held.
        reported = {(short_name(b.flow), b.batch_id) for b in self.collector.snapshot()} if self.collector else set()
        for flow in ctx.graph.measured_flows:
            record, checkpoint = ctx.flow_records.get(flow), ctx.checkpoint(flow)
            if record is None or not record.target_table or checkpoint is None:
                continue
            try:
                held = measure.cut_batches(
                    ctx.spark, record.target_table, checkpoint,
                    ctx.local_table_dir(record.target_table, record.target if record.is_sink else None))
            except Exception as e:  # noqa: BLE001 (one flow's lookup failing must not skip the others)
                ctx.warn("micro-batches cut by the stop", one_line(error_text(e)), flow)
                continue
            if held:  # their files were committed then, whichever update wrote them (an earlier one's cut)
                self.cut_commits[flow] = {batch: commit.at for batch, commit in held.items()}
            cut = {batch: commit for batch, commit in held.items()
                   if commit.update_id == ctx.update_id and (flow, batch) not in reported}
            if not cut:
                continue
            self.cut[flow] = cut
            for event in metrics.cut_batch_events(lambda batch: ctx.flow_origin(flow, batch), cut):
                ctx.add(event)
            ctx.warn("expectation counts", f"micro-batch(es) {', '.join(map(str, sorted(cut)))} of {flow} wrote "
                     "their rows before the stream could record them in its checkpoint (it was stopped between "
                     "the two); their rows come from the table's Delta commits", flow)

    def tally_streaming_rows(self) -> None:
        """Rows each streaming flow wrote in the update (for the summary; 0 when it committed nothing)."""
        if self.collector is None:  # the pipeline never started (registration failed): no flow ran
            return
        ctx = self.ctx
        completed = [flow for flow in ctx.graph.measured_flows
                     if getattr(ctx.flow_result(flow), "status", None) == "COMPLETED"]
        for flow, rows in metrics.streaming_rows(self.collector.snapshot(), self.cut, completed).items():
            result = ctx.flow_result(flow)
            if result is not None:
                result.rows_written = rows

    def add_streaming_bytes(self) -> None:
        """Bytes each streaming flow wrote in the update, from the `numOutputBytes` of the Delta commits of
        its micro-batches: one METRICS event per flow, without a batch id (so it adds no micro-batch and
        no row count). A flow with a micro-batch whose commit carries no byte count gets none (NULL).
        A micro-batch that wrote no rows (its observed count) added no file: 0 bytes, without a lookup."""
        if self.collector is None:  # the pipeline never started (registration failed): no flow ran
            return
        ctx = self.ctx
        batches, ended = metrics.batches_that_wrote(self.collector.snapshot(), self.cut)
        measured = [f for f in batches if f in ctx.graph.measured_flows
                    and ctx.flow_records.get(f) is not None and ctx.flow_records[f].target_table
                    and ctx.checkpoint(f) is not None]

        def bytes_of(flow: str) -> dict[int, int]:  # no lookup for a flow with no batch left to look up
            record, checkpoint = ctx.flow_records[flow], ctx.checkpoint(flow)
            assert record.target_table is not None and checkpoint is not None
            # From the Delta log where it is on this machine, rather than DESCRIBE HISTORY.
            return measure.rows_per_batch(
                ctx.spark, record.target_table, checkpoint, batches[flow], "numOutputBytes",
                last_commits=2 * len(batches[flow]) + 10,
                table_dir=ctx.local_table_dir(record.target_table, record.target if record.is_sink else None),
                update_id=ctx.update_id)

        found = in_parallel(bytes_of, measured)
        for flow in measured:
            written = metrics.bytes_written(batches[flow], found[flow], self.cut.get(flow, {}))
            if written is not None:
                ctx.add(events.flow_metrics(ctx.flow_origin(flow), ended[flow], num_output_bytes=written))

    def add_idle_flow_metrics(self) -> None:
        """A streaming flow that completed without a micro-batch (nothing new upstream) wrote 0 rows and
        0 bytes: one METRICS event without a batch id says so, so its rows in flow_throughput are 0
        instead of NULL (not measured). Only when its checkpoint committed no batch in this update
        either, so a batch whose progress event never arrived stays unmeasured."""
        if self.collector is None:  # the pipeline never started (registration failed): no flow ran
            return
        ctx = self.ctx
        completed = {flow for flow in ctx.graph.measured_flows if ctx.checkpoint(flow) is not None
                     and getattr(ctx.flow_result(flow), "status", None) == "COMPLETED"}
        completed -= set(self.cut)  # a batch of theirs reached the table (add_cut_batches)
        for flow in metrics.idle_flows(completed, self.collector.snapshot(),
                                       self.committed_now() - self.committed_before):
            result = ctx.flow_result(flow)
            assert result is not None  # completed above
            ctx.add(events.flow_metrics(ctx.flow_origin(flow), result.ended_at or now(),
                                        num_output_rows=0, num_output_bytes=0))

    def add_batch_view_metrics(self) -> None:
        """Materialized views: rows from Delta commit metrics, expectation counts by evaluating the
        view's expectations over the same input it read in this update."""
        ctx = self.ctx
        assert ctx.registry is not None
        flow_status = ctx.state.flow_status
        refreshed: list[RecordedFlow] = []
        for flow in ctx.registry.flows.values():
            output = ctx.registry.outputs.get(flow.target)
            result = flow_status.get(ctx.sdp_flow_name(flow.name))
            if output is not None and output.dataset_type == "MATERIALIZED_VIEW" and result is not None \
                    and result.status == "COMPLETED":
                if flow.target in ctx.unchanged_views:  # not recomputed: nothing written, nothing evaluated
                    ctx.add(events.flow_metrics(ctx.flow_origin(flow.name), result.ended_at or now(), num_output_rows=0,
                                                num_output_bytes=0, status="COMPLETED", streaming=False))
                    result.rows_written = 0
                    continue
                refreshed.append(flow)
        # From the Delta logs where they are on this machine, rather than DESCRIBE HISTORY of each view.
        history = in_parallel(lambda f: measure.update_commits(ctx.spark, ctx.qualified(f.target), ctx.update_id,
                                                               table_dir=ctx.local_table_dir(f.target)),
                              refreshed, key=lambda f: f.name)
        for flow in refreshed:
            result = flow_status[ctx.sdp_flow_name(flow.name)]
            found = history[flow.name]
            at = result.ended_at or max((t for t, _ in found.commits), default=now())
            rules = ctx.graph.expectations.get(flow.target)
            counts = self.count_expectations(rules) if rules is not None else None
            ctx.add(metrics.view_metrics_event(ctx.flow_origin(flow.name), at, found, rules, counts, ctx.qualified))
            result.rows_written = found.written("numOutputRows")

    def count_expectations(self, rules: local_adapter.DatasetExpectations) -> dict[str, Any] | None:
        from pyspark.sql import functions as F

        ctx = self.ctx
        try:
            ctx.spark.sql(f"USE {ctx.catalog}.{ctx.schema}")
            row = rules.query().agg(
                *expectations.count_columns(rules.expectations),
                F.count_if(~expectations.all_pass(rules.expectations, expectations.Action.DROP))
                .alias(expectations.DROPPED_METRIC),
            ).collect()[0]
            return row.asDict()
        except Exception as e:  # noqa: BLE001 (then the counts were not measured: NULL)
            ctx.say(f"  warning: expectation counts of {rules.dataset} not measured: {one_line(str(e))}")
            return None

    def add_backlog_at_end(self) -> None:
        """Backlog of each file-reading flow when the update ends (also for failed and idle flows)."""
        ctx = self.ctx
        for event in measure.backlog_events(ctx.origin, ctx.flow_records.values(), now(), self.cut_commits):
            ctx.add(event)

    def write_file_state(self) -> None:
        ctx = self.ctx
        measure.write_file_state(ctx.spark, ctx.qualified(FILE_STATE_TABLE), ctx.flow_records.values(),
                                 inflight.ledger_path(ctx.home, ctx.pipeline.name), self.cut_commits)


def in_parallel(function: Callable[[Item], Value], items: Sequence[Item],
                key: Callable[[Item], Any] = lambda x: x, workers: int = 4) -> dict[Any, Value]:
    """`{key(item): function(item)}`, calls made concurrently (small catalog requests to the engine)."""
    if not items:
        return {}
    with ThreadPoolExecutor(max_workers=min(workers, len(items))) as pool:
        return dict(zip((key(i) for i in items), pool.map(function, items)))
