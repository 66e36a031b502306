"""Parsing the one-line events open-source SDP streams (exact texts seen in runs)."""

from __future__ import annotations

from datetime import datetime, timezone

import pytest

from pipelines.local.sdp_events import error_class, parse, short_name

T = datetime(2026, 11, 29, tzinfo=timezone.utc)


@pytest.mark.parametrize(
    "message, flow, status",
    [
        ("Flow spark_catalog.lakewatch.orders_bronze is QUEUED.", "spark_catalog.lakewatch.orders_bronze", "QUEUED"),
        ("Flow spark_catalog.lakewatch.orders is PLANNING.", "spark_catalog.lakewatch.orders", "PLANNING"),
        ("Flow 'orders_to_corrupt_records_sink' is RUNNING.", "orders_to_corrupt_records_sink", "RUNNING"),
        ("Flow spark_catalog.lakewatch.orders has COMPLETED.", "spark_catalog.lakewatch.orders", "COMPLETED"),
        ("Flow 'x' SKIPPED due to upstream failure(s).", "x", "SKIPPED"),
        ("Flow 'x' is EXCLUDED.", "x", "EXCLUDED"),
        ("Flow 'x' is IDLE, waiting for new data.", "x", "IDLE"),
    ],
)
def test_flow_status_messages(message, flow, status):
    event = parse(T, message)
    assert (event.flow, event.status, event.error) == (flow, status, None)


def test_failure_carries_error_text_and_retry_finality():
    first = parse(T, "Flow 'orders_bronze' has FAILED.\nError: [STREAM_FAILED] Query terminated")
    final = parse(T, "Flow 'orders_bronze' has FAILED more than 1 times and will not be restarted.\nError: boom")
    assert (first.status, first.error, first.final) == ("FAILED", "[STREAM_FAILED] Query terminated", False)
    assert (final.status, final.error, final.final) == ("FAILED", "boom", True)


def test_resolution_failure():
    event = parse(T, "Failed to resolve flow: 'spark_catalog.lakewatch.orders'.\nError: [UNRESOLVED_COLUMN] x")
    assert event.status == "FAILED" and event.resolution_failure and event.short_flow == "orders"


def test_run_status_and_unknown_text():
    assert parse(T, "Run is COMPLETED.").run_status == "COMPLETED"
    other = parse(T, "Something else happened.")
    assert other.flow is None and other.status is None


def test_helpers():
    assert short_name("spark_catalog.lakewatch.`orders`") == "orders"
    assert error_class("[FAILED_READ_FILE.NO_HINT] Encountered error") == "FAILED_READ_FILE.NO_HINT"
    assert error_class("no class here") is None
