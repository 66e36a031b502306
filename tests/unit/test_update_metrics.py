"""An update's flow metrics from listener reports, Delta commits and the registered graph
(pipelines/local/update/metrics.py), without a session: each expected figure is computed here from
the same inputs, independently of the code under test."""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone
from typing import Any

from pipelines import adapter
from pipelines.local import adapter as local_adapter
from pipelines import expectations
from pipelines.eventlog import events as event_builders
from pipelines.local.capture import BatchProgress
from pipelines.local.measure import BatchCommit, UpdateCommits
from pipelines.local.update import metrics

AT = datetime(2026, 12, 2, 10, 0, tzinfo=timezone.utc)
ORIGIN = event_builders.Origin(pipeline_id="p", pipeline_name="ingest", update_id="u1", flow_name="orders_bronze")
RULES = (expectations.warn("has_id", "id IS NOT NULL"), expectations.drop("positive", "amount > 0"))


def qualified(name: str) -> str:
    return f"spark_catalog.lakewatch.{name}"


def batch(flow: str, batch_id: int, rows: int | None, ran: bool = True, seconds: int = 0,
          quality: dict[str, Any] | None = None) -> BatchProgress:
    """A listener report of `flow` as SDP names it, with the rows the local engine observed written."""
    short = flow.rsplit(".", 1)[-1]
    observed: dict[str, dict[str, Any]] = {}
    if rows is not None:
        observed[adapter.output_metric_name(short)] = {"num_output_rows": rows}
    if quality is not None:
        observed[adapter.dq_metric_name(short)] = quality
    ended = AT + timedelta(seconds=seconds)
    return BatchProgress(flow=flow, batch_id=batch_id, started_at=ended, ended_at=ended,
                         num_input_rows=rows or 0, observed=observed, sources=(), sink=None, ran=ran)


def details(event: dict[str, Any]) -> dict[str, Any]:
    return json.loads(event["details"])["flow_progress"]


def a_graph(dataset: str) -> local_adapter.LocalGraph:
    graph = local_adapter.LocalGraph()
    graph.expectations[dataset] = local_adapter.DatasetExpectations(dataset, RULES, True, lambda: None)  # type: ignore[arg-type,return-value]
    graph.measured_flows.add(dataset)
    return graph


def test_rows_per_flow_add_reported_batches_and_cut_commits_and_completed_idle_flows_wrote_zero():
    reported = [batch("spark_catalog.lakewatch.orders_bronze", 0, 40), batch("spark_catalog.lakewatch.orders_bronze", 1, 2),
                batch("orders_to_corrupt_records_sink", 0, 3), batch("spark_catalog.lakewatch.orders", 0, None)]
    cut = {"orders_to_corrupt_records_sink": {1: BatchCommit(5, 100, AT), 2: BatchCommit(7, 90, AT)},
           "customers_bronze": {4: BatchCommit(None, None, AT)}}
    rows = metrics.streaming_rows(reported, cut, completed=["orders", "payments_bronze", "orders_bronze"])
    assert rows == {
        "orders_bronze": 40 + 2,
        "orders_to_corrupt_records_sink": 3 + 5 + 7,
        "customers_bronze": None,  # a cut batch without a row count: the flow's count is not known
        "orders": 0,  # completed, no figure observed: wrote nothing
        "payments_bronze": 0,
    }


def test_the_batches_whose_commits_hold_a_flows_bytes_leave_out_empty_ones_and_triggers_that_did_not_run():
    reported = [batch("spark_catalog.lakewatch.orders_bronze", 3, 10, seconds=1),
                batch("spark_catalog.lakewatch.orders_bronze", 4, 0, seconds=5),  # ran, wrote no file
                batch("spark_catalog.lakewatch.orders_bronze", 5, None, seconds=3),  # count unknown: looked up
                batch("spark_catalog.lakewatch.orders", 9, 8, ran=False, seconds=9)]  # a trigger with no batch
    cut = {"orders_to_corrupt_records_sink": {2: BatchCommit(1, 10, AT + timedelta(seconds=7)),
                                              3: BatchCommit(1, 10, AT + timedelta(seconds=2))}}
    ids, ended = metrics.batches_that_wrote(reported, cut)
    assert ids == {"orders_bronze": [3, 5], "orders_to_corrupt_records_sink": []}
    assert ended == {"orders_bronze": AT + timedelta(seconds=5), "orders_to_corrupt_records_sink": AT + timedelta(seconds=7)}


def test_bytes_written_are_the_batches_and_cut_commits_sum_or_unknown_when_one_is_missing():
    per_batch = {3: 1_000, 5: 2_500, 8: 40}
    cut = {6: BatchCommit(2, 300, AT), 7: BatchCommit(1, 20, AT)}
    assert metrics.bytes_written([3, 5], per_batch, cut) == 1_000 + 2_500 + 300 + 20
    assert metrics.bytes_written([], {}, {}) == 0  # a flow whose batches wrote no rows added no file
    assert metrics.bytes_written([3, 4], per_batch, cut) is None  # batch 4's commit carries no byte count
    assert metrics.bytes_written([3], per_batch, {6: BatchCommit(2, None, AT)}) is None


def test_a_batch_metrics_event_holds_rows_backlog_and_the_targets_expectation_counts():
    counts = {"passed__has_id": 9, "failed__has_id": 1, "passed__positive": 7, "failed__positive": 3,
              expectations.DROPPED_METRIC: 3}
    reported = batch("spark_catalog.lakewatch.orders_bronze", 2, 7, quality=counts)
    event = metrics.batch_metrics_event(ORIGIN.replace(batch_id=2), "orders_bronze", "orders_bronze", reported,
                                        a_graph("orders_bronze"), {"backlog_files": 4, "backlog_bytes": 512},
                                        qualified)
    assert event["level"] == "METRICS" and event["origin"]["batch_id"] == 2 and event["timestamp"] == AT
    progress = details(event)
    assert progress["metrics"] == {"num_output_rows": 7, "backlog_files": 4, "backlog_bytes": 512}
    assert progress["data_quality"] == {"dropped_records": 3, "expectations": [
        {"name": rule.name, "dataset": qualified("orders_bronze"), "passed_records": counts[f"passed__{rule.name}"],
         "failed_records": counts[f"failed__{rule.name}"]} for rule in RULES]}


def test_a_batch_without_expectation_counts_or_rules_has_no_data_quality():
    reported = batch("orders_to_corrupt_records_sink", 0, 5)
    unobserved = metrics.batch_metrics_event(ORIGIN, "orders_bronze", "orders_bronze", reported,
                                             a_graph("orders_bronze"), {}, qualified)
    no_rules = metrics.batch_metrics_event(ORIGIN, "orders_to_corrupt_records_sink", "corrupt_records_sink",
                                           reported, a_graph("orders_bronze"), {}, qualified)
    for event in (unobserved, no_rules):
        assert "data_quality" not in details(event)
    assert details(no_rules)["metrics"] == {"num_output_rows": 5}


def test_a_view_refresh_event_counts_its_writes_and_its_expectations():
    commits = UpdateCommits([(AT, {"numOutputRows": "12", "numOutputBytes": "900"}), (AT, {})], before=3,
                            operations=("WRITE", "TRUNCATE"))
    counts = {"passed__has_id": 12, "failed__has_id": 0, "passed__positive": 11, "failed__positive": 1,
              expectations.DROPPED_METRIC: 1}
    rules = a_graph("daily").expectations["daily"]
    event = metrics.view_metrics_event(ORIGIN, AT, commits, rules, counts, qualified)
    progress = details(event)
    assert progress["status"] == "COMPLETED" and event["message"].startswith("Completed a batch update")
    assert progress["metrics"] == {"num_output_rows": 12, "num_output_bytes": 900}
    assert progress["data_quality"]["dropped_records"] == 1
    assert [(e["passed_records"], e["failed_records"]) for e in progress["data_quality"]["expectations"]] == [
        (counts["passed__has_id"], counts["failed__has_id"]), (counts["passed__positive"], counts["failed__positive"])]
    unread = metrics.view_metrics_event(ORIGIN, AT, UpdateCommits([], None, read=False), None, None, qualified)
    assert details(unread)["metrics"] == {} and "data_quality" not in details(unread)  # not measured: NULL
    nothing = metrics.view_metrics_event(ORIGIN, AT, UpdateCommits([], 3), None, None, qualified)
    assert details(nothing)["metrics"] == {"num_output_rows": 0, "num_output_bytes": 0}  # no write: 0


def test_cut_batches_get_one_event_each_in_batch_order_with_their_commits_rows():
    cut = {7: BatchCommit(4, 80, AT + timedelta(seconds=2)), 6: BatchCommit(None, None, AT)}
    events = metrics.cut_batch_events(lambda batch_id: ORIGIN.replace(batch_id=batch_id), cut)
    assert [(e["origin"]["batch_id"], e["timestamp"], details(e)["metrics"]) for e in events] == [
        (6, AT, {}), (7, AT + timedelta(seconds=2), {"num_output_rows": 4})]
