"""Parsing the one-line events open-source SDP streams (exact texts seen in runs)."""

from __future__ import annotations

from datetime import datetime, timezone

import pytest

from pipelines.local.sdp_events import error_class, lost_completions, parse, short_name

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


LOGGED = datetime(2026, 11, 29, 0, 0, 5, tzinfo=timezone.utc)
RUN_ENDED = datetime(2026, 11, 29, 0, 0, 6, tzinfo=timezone.utc)


def test_a_completed_run_completes_each_flow_still_seen_unfinished():
    statuses = {"spark_catalog.lakewatch.orders": "RUNNING", "orders_to_corrupt_records_sink": "STARTING",
                "spark_catalog.lakewatch.orders_bronze": "COMPLETED", "x": "EXCLUDED", "y": "SKIPPED"}
    events = lost_completions(statuses, "COMPLETED", {"orders": LOGGED}, RUN_ENDED)
    assert [(e.flow, e.status, e.timestamp) for e in events] == [
        ("spark_catalog.lakewatch.orders", "COMPLETED", LOGGED),  # when the engine logged it
        ("orders_to_corrupt_records_sink", "COMPLETED", RUN_ENDED),  # not logged: when the run ended
    ]
    # The event is one the stream's own parser reads back as the same completion.
    assert (parse(T, events[0].message).flow, parse(T, events[0].message).status) == (
        "spark_catalog.lakewatch.orders", "COMPLETED")


@pytest.mark.parametrize("run_status", ["FAILED", "CANCELED", None])
def test_a_run_that_did_not_complete_completes_only_the_flows_the_engine_logged_complete(run_status):
    statuses = {"spark_catalog.lakewatch.orders": "RUNNING", "health_metrics": "RUNNING"}
    events = lost_completions(statuses, run_status, {"orders": LOGGED}, RUN_ENDED)
    assert [(e.flow, e.timestamp) for e in events] == [("spark_catalog.lakewatch.orders", LOGGED)]
