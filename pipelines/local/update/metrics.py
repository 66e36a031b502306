"""An update's flow metrics as plain functions: from the micro-batches the listener reported, the Delta
commits the update made, and the graph the definitions registered, to the figures and the METRICS
events of the event log. No session is needed: what must be read from the engine is read by the caller
(`measurements.Measurements`) and passed in.

A figure not measured stays None (NULL in the event log); 0 is written only where it was measured."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from datetime import datetime
from typing import Any

from pipelines import adapter, expectations
from pipelines.local import adapter as local_adapter
from pipelines.eventlog import events
from pipelines.local.capture import BatchProgress
from pipelines.local.measure import BatchCommit, UpdateCommits
from pipelines.local.sdp_events import short_name

Event = dict[str, Any]


def written_rows(batch: BatchProgress, flow: str) -> int | None:
    """The rows the micro-batch of `flow` (short name) wrote, by the count the local engine observes
    on its output (`adapter.output_metric_name`); None when not observed."""
    return batch.observed.get(adapter.output_metric_name(flow), {}).get("num_output_rows")


def expectation_results(rules: local_adapter.DatasetExpectations, counts: Mapping[str, Any],
                        dataset: str) -> list[dict[str, Any]]:
    """The `data_quality.expectations` of a METRICS event: passed and failed records per expectation."""
    results = []
    for rule in rules.expectations:
        passed, failed = expectations.metric_names(rule)
        results.append(events.expectation_result(rule.name, dataset, int(counts.get(passed) or 0),
                                                 int(counts.get(failed) or 0)))
    return results


def quality(rules: local_adapter.DatasetExpectations | None, counts: Mapping[str, Any] | None,
            dataset: str) -> tuple[list[dict[str, Any]] | None, int | None]:
    """(expectation results, dropped records) of a dataset from its counts; (None, None) when the dataset
    has no expectations or its counts were not measured."""
    if rules is None or counts is None:
        return None, None
    return expectation_results(rules, counts, dataset), counts.get(expectations.DROPPED_METRIC)


def batch_metrics_event(origin: events.Origin, flow: str, target: str | None, batch: BatchProgress,
                        graph: local_adapter.LocalGraph, backlog: Mapping[str, Any],
                        qualified: Callable[[str], str]) -> Event:
    """The METRICS event of one streaming micro-batch of `flow` (short name) into `target`: rows written,
    the backlog left when it ended, and the target's expectation counts (observed in the batch)."""
    rules = graph.expectations.get(short_name(target)) if target else None
    counts = batch.observed.get(adapter.dq_metric_name(rules.dataset)) if rules is not None else None
    results, dropped = quality(rules, counts, qualified(rules.dataset)) if rules is not None else (None, None)
    return events.flow_metrics(
        origin, batch.ended_at,
        num_output_rows=written_rows(batch, flow), backlog_bytes=backlog.get("backlog_bytes"),
        backlog_files=backlog.get("backlog_files"), dropped_records=dropped, expectations=results,
    )


def streaming_rows(batches: Iterable[BatchProgress], cut: Mapping[str, Mapping[int, BatchCommit]],
                   completed: Iterable[str]) -> dict[str, int | None]:
    """Rows each streaming flow (short name) wrote in the update: the observed counts of its reported
    micro-batches, plus the rows of the commits of its micro-batches a stop cut (a cut batch without a
    row count makes the flow's count unknown); a flow of `completed` (completed, measured flows) without
    any figure wrote 0. Flows with nothing reported are left out, except those of `completed`."""
    rows: dict[str, int | None] = {}
    for batch in batches:
        flow = short_name(batch.flow)
        written = written_rows(batch, flow)
        if written is not None:
            rows[flow] = (rows.get(flow) or 0) + int(written)
    for flow, commits in cut.items():
        counts = [commit.rows for commit in commits.values()]
        rows[flow] = None if None in counts else (rows.get(flow) or 0) + sum(c for c in counts if c is not None)
    for flow in completed:
        if rows.get(flow) is None:
            rows[flow] = 0
    return rows


def batches_that_wrote(batches: Iterable[BatchProgress], cut: Mapping[str, Mapping[int, BatchCommit]]
                      ) -> tuple[dict[str, list[int]], dict[str, datetime]]:
    """Per streaming flow (short name) that ran: its reported micro-batches that wrote rows (or an unknown
    count), whose commits hold the bytes it wrote, and when its last micro-batch (or cut commit) ended.
    A trigger that found nothing new committed nothing; a micro-batch that wrote no rows added no file."""
    ids: dict[str, list[int]] = {}
    ended: dict[str, datetime] = {}
    for batch in batches:
        if not batch.ran:
            continue
        flow = short_name(batch.flow)
        ids.setdefault(flow, [])
        if written_rows(batch, flow) != 0:
            ids[flow].append(batch.batch_id)
        ended[flow] = max(ended.get(flow, batch.ended_at), batch.ended_at)
    for flow, commits in cut.items():  # their bytes are their own commits'
        ids.setdefault(flow, [])
        ended[flow] = max([c.at for c in commits.values()] + ([ended[flow]] if flow in ended else []))
    return ids, ended


def bytes_written(batch_ids: Iterable[int], per_batch: Mapping[int, int],
                  cut: Mapping[int, BatchCommit]) -> int | None:
    """Bytes a streaming flow wrote: its micro-batches' `numOutputBytes` (`per_batch`, from their Delta
    commits) and its cut batches' own; None when one of them carries no byte count."""
    wanted = list(batch_ids)
    cut_bytes = [commit.bytes for commit in cut.values()]
    if not all(b in per_batch for b in wanted) or None in cut_bytes:
        return None
    return sum(per_batch[b] for b in wanted) + sum(c for c in cut_bytes if c is not None)


def cut_batch_events(origin_of: Callable[[int], events.Origin], cut: Mapping[int, BatchCommit]) -> list[Event]:
    """One METRICS event per micro-batch a stop cut, with the rows of its Delta commit, in batch order."""
    return [events.flow_metrics(origin_of(batch), commit.at, num_output_rows=commit.rows)
            for batch, commit in sorted(cut.items())]


def idle_flows(completed: set[str], batches: Iterable[BatchProgress],
               committed: set[tuple[str, str, int]]) -> list[str]:
    """The completed streaming flows (short names) that ran no micro-batch in the update: none reported
    by the listener (`ran`) and none committed in their checkpoints during the update (a batch whose
    progress event was lost still counts as run, so its rows stay unmeasured, not 0)."""
    ran = {short_name(b.flow) for b in batches if b.ran}
    written = {flow for flow, _, _ in committed}
    return sorted(completed - ran - written)


def view_metrics_event(origin: events.Origin, at: datetime, commits: UpdateCommits,
                       rules: local_adapter.DatasetExpectations | None, counts: Mapping[str, Any] | None,
                       qualified: Callable[[str], str]) -> Event:
    """The METRICS event of a completed materialized view refresh. The refresh overwrites the view in
    one commit, which counts its rows; Delta commits no write that changes nothing (a query of no rows
    into an empty or truncated view), so a refresh whose commits hold no write wrote 0; when the history
    could not be read, or a write lacks the metric, the figure is not known. The expectation counts
    are those of the view's expectations over the input the refresh read (`counts`)."""
    results, dropped = quality(rules, counts, qualified(rules.dataset)) if rules is not None else (None, None)
    return events.flow_metrics(origin, at, num_output_rows=commits.written("numOutputRows"),
                               dropped_records=dropped, expectations=results, status="COMPLETED", streaming=False,
                               num_output_bytes=commits.written("numOutputBytes"))
