"""The live event log: routine events wait for the flush interval (each flush is a Delta commit);
an error (a failed flow or update) is written at once. Read back from the Delta table."""

from __future__ import annotations

import time
from datetime import datetime, timezone
from itertools import count

from pipelines.eventlog import events as event_builders
from pipelines.eventlog.writer import EventLogStream, EventLogWriter

ORIGIN = event_builders.Origin(pipeline_id="p1", pipeline_name="stream_test", update_id="u1", flow_name="orders_bronze")
AT = datetime(2026, 6, 15, 12, 0, tzinfo=timezone.utc)


def rows_within(spark, table: str, want: int, seconds: float) -> int:
    """Rows of `table` once it holds `want` of them, or after `seconds`."""
    deadline = time.monotonic() + seconds
    while True:
        n = spark.table(table).count()
        if n >= want or time.monotonic() > deadline:
            return n
        time.sleep(0.2)


def stream(spark, table: str) -> EventLogStream:
    writer = EventLogWriter(spark, table)
    writer.ensure_table()
    numbers = count(1)
    return EventLogStream(writer, lambda n: next(numbers) if n else 0, "test", interval=120).start()


def test_routine_events_wait_for_the_interval_and_an_error_goes_at_once(spark):
    table = "stream_error_at_once"
    s = stream(spark, table)
    try:
        s.add(event_builders.flow_progress(ORIGIN, AT, "RUNNING"))
        s.add(event_builders.flow_metrics(ORIGIN.replace(batch_id=0), AT, num_output_rows=3))
        time.sleep(1.5)
        assert spark.table(table).count() == 0  # nothing urgent yet: the interval is two minutes
        cut = event_builders.ExceptionInfo("java.io.EOFException", "cut")
        s.add(event_builders.flow_progress(ORIGIN, AT, "FAILED", error_struct=event_builders.error([cut], fatal=True)))
        assert rows_within(spark, table, 3, seconds=30) == 3  # the error took the routine events along
        assert spark.table(table).where("level = 'ERROR'").count() == 1
    finally:
        s.close()


def test_a_failed_update_goes_at_once_and_close_writes_the_rest_once(spark):
    table = "stream_failed_update_at_once"
    s = stream(spark, table)
    try:
        s.add(event_builders.update_progress(ORIGIN.replace(flow_name=None), AT, "RUNNING"))
        s.add(event_builders.update_progress(ORIGIN.replace(flow_name=None), AT, "FAILED"))
        assert rows_within(spark, table, 2, seconds=30) == 2
        # not urgent: written by close
        s.add(event_builders.update_progress(ORIGIN.replace(flow_name=None), AT, "CANCELED"))
    finally:
        s.close()
    assert spark.table(table).count() == 3


class CommitsThenFails(EventLogWriter):
    """A connection lost after the server committed: the append lands, the caller gets an error (once)."""

    def __init__(self, spark, table: str) -> None:
        super().__init__(spark, table)
        self.failures = 1

    def append(self, events) -> None:
        super().append(events)
        if self.failures:
            self.failures -= 1
            raise ConnectionError("connection lost after the commit")


def test_a_write_that_failed_after_its_commit_is_not_written_again(spark):
    table = "stream_retry_after_commit"
    writer = CommitsThenFails(spark, table)
    writer.ensure_table()
    numbers = count(1)
    errors: list[str] = []
    s = EventLogStream(writer, lambda n: next(numbers) if n else 0, "test", interval=120, on_error=errors.append)
    s.add(event_builders.flow_progress(ORIGIN, AT, "RUNNING"))
    s.add(event_builders.flow_metrics(ORIGIN.replace(batch_id=0), AT, num_output_rows=3))
    s.flush(final=False)  # committed, but reported failed: kept for the next flush
    assert errors and spark.table(table).count() == 2
    s.add(event_builders.flow_progress(ORIGIN, AT, "COMPLETED"))
    s.close()
    ids = [r["id"] for r in spark.table(table).collect()]
    assert len(ids) == 3 and len(set(ids)) == 3
    assert s.written == 1  # the retry wrote only the event the table did not hold
