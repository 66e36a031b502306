"""The update's query listener names a query's end from its progress events: Spark Connect does not
send a client the start events of queries the server started, and a termination event has no name.
The events are built as pyspark's Connect client builds them (`fromJson` of the server's JSON)."""

from __future__ import annotations

import uuid

from pyspark.sql.streaming.listener import QueryProgressEvent, QueryTerminatedEvent

from pipelines.local.capture import ProgressCollector

QUERY = str(uuid.uuid4())  # SDP keeps a flow's query id across retries: it is in the checkpoint
NAME = "`spark_catalog`.`lakewatch`.`orders_bronze`"


def progress(run_id: str, batch: int) -> QueryProgressEvent:
    return QueryProgressEvent.fromJson({"progress": {
        "id": QUERY, "runId": run_id, "name": NAME, "timestamp": "2026-12-03T15:23:19.000Z", "batchId": batch,
        "batchDuration": 120, "durationMs": {"addBatch": 80, "triggerExecution": 120}, "stateOperators": [],
        "sources": [{"description": "FileStreamSource[file:/l/orders]", "startOffset": None, "endOffset": None,
                     "latestOffset": None, "numInputRows": 3, "inputRowsPerSecond": 0.0,
                     "processedRowsPerSecond": 25.0}],
        "sink": {"description": "DeltaSink[file:/t]", "numOutputRows": -1}, "numInputRows": 3,
        "inputRowsPerSecond": 0.0, "processedRowsPerSecond": 25.0, "observedMetrics": {}}})


def terminated(run_id: str, exception: str | None) -> QueryTerminatedEvent:
    return QueryTerminatedEvent.fromJson({"id": QUERY, "runId": run_id, "exception": exception,
                                          "errorClassOnException": "STREAM_FAILED" if exception else None})


def test_a_query_end_is_named_from_its_progress_across_retries():
    ended: list[tuple[str, str | None]] = []
    collector = ProgressCollector(on_ended=lambda name, exception: ended.append((name, exception)))
    first, retry = str(uuid.uuid4()), str(uuid.uuid4())
    collector.onQueryTerminated(terminated(first, "java.io.EOFException"))  # failed before any progress
    assert ended == []
    collector.onQueryProgress(progress(first, 0))
    collector.onQueryTerminated(terminated(first, "[STREAM_FAILED] boom"))
    collector.onQueryTerminated(terminated(retry, None))  # the retry: a new run id, the same query id
    assert ended == [(NAME, "[STREAM_FAILED] boom"), (NAME, None)]
    assert [b.batch_id for b in collector.snapshot()] == [0] and collector.errors == []


def test_a_failing_callback_is_reported_not_raised_into_the_listener_bus():
    def boom(name: str, exception: str | None) -> None:
        raise RuntimeError("no")

    collector = ProgressCollector(on_ended=boom)
    collector.onQueryProgress(progress(str(uuid.uuid4()), 0))
    collector.onQueryTerminated(terminated(str(uuid.uuid4()), None))
    assert collector.errors == [f"after {NAME} ended: RuntimeError: no"]
