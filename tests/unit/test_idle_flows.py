"""Which completed streaming flows get a METRICS event of 0 rows (pipelines/local/update/metrics.py idle_flows)."""

from __future__ import annotations

from datetime import datetime, timezone

from pipelines.local.capture import BatchProgress
from pipelines.local.update.metrics import idle_flows

AT = datetime(2026, 12, 2, tzinfo=timezone.utc)
COMPLETED = {"orders_bronze", "orders", "orders_to_corrupt_records_sink"}


def progress(flow: str, batch_id: int, ran: bool) -> BatchProgress:
    """A listener report as SDP names the flow (qualified for a table, bare for a sink)."""
    return BatchProgress(flow=flow, batch_id=batch_id, started_at=AT, ended_at=AT, num_input_rows=0,
                         observed={}, sources=(), sink=None, ran=ran)


def test_flows_that_ran_no_batch_are_idle():
    assert idle_flows(COMPLETED, [], set()) == sorted(COMPLETED)


def test_a_reported_batch_makes_a_flow_not_idle_and_a_trigger_without_one_does_not():
    batches = [progress("spark_catalog.lakewatch.orders", 4, ran=True),
               progress("spark_catalog.lakewatch.orders_bronze", 7, ran=False)]
    assert idle_flows(COMPLETED, batches, set()) == ["orders_bronze", "orders_to_corrupt_records_sink"]


def test_a_batch_committed_without_a_progress_event_is_not_called_idle():
    """Its rows are unknown (the listener never said), not 0."""
    committed = {("orders_to_corrupt_records_sink", "/storage/_checkpoints/sink/orders", 12)}
    assert idle_flows(COMPLETED, [], committed) == ["orders", "orders_bronze"]
