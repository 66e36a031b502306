"""Parsing the one-line events open-source SDP streams (exact texts seen in runs)."""

from __future__ import annotations

from datetime import datetime, timezone

import pytest

from pipelines.local.jvm_log import JvmException, LoggedOutcome
from pipelines.local.sdp_events import FlowSeen, error_class, lost_outcomes, parse, short_name

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


STARTED = datetime(2026, 11, 29, 0, 0, 1, tzinfo=timezone.utc)
LOGGED = datetime(2026, 11, 29, 0, 0, 5, tzinfo=timezone.utc)
RUN_ENDED = datetime(2026, 11, 29, 0, 0, 6, tzinfo=timezone.utc)
EOF_CHAIN = (JvmException("org.apache.spark.sql.streaming.StreamingQueryException", "[STREAM_FAILED] Query terminated"),
             JvmException("java.io.EOFException", "Unexpected end of input stream"))


def seen(**flows: str) -> dict[str, FlowSeen]:
    """Flows (SDP name -> last status), each last seen when the update started."""
    return {name.replace("__", "."): FlowSeen(status, STARTED) for name, status in flows.items()}


def completed(at: datetime = LOGGED) -> LoggedOutcome:
    return LoggedOutcome("COMPLETED", at)


def test_a_completed_run_completes_each_flow_still_seen_unfinished():
    flows = seen(spark_catalog__lakewatch__orders="RUNNING", orders_to_corrupt_records_sink="STARTING",
                 spark_catalog__lakewatch__orders_bronze="COMPLETED", x="EXCLUDED", y="SKIPPED")
    events = lost_outcomes(flows, "COMPLETED", {"orders": completed()}, RUN_ENDED)
    assert [(e.flow, e.status, e.timestamp) for e in events] == [
        ("spark_catalog.lakewatch.orders", "COMPLETED", LOGGED),  # when the engine logged it
        ("orders_to_corrupt_records_sink", "COMPLETED", RUN_ENDED),  # not logged: when the run ended
    ]
    # The event is one the stream's own parser reads back as the same completion.
    assert (parse(T, events[0].message).flow, parse(T, events[0].message).status) == (
        "spark_catalog.lakewatch.orders", "COMPLETED")


@pytest.mark.parametrize("run_status", ["FAILED", "CANCELED", None])
def test_a_run_that_did_not_complete_completes_only_the_flows_the_engine_logged_complete(run_status):
    flows = seen(spark_catalog__lakewatch__orders="RUNNING", health_metrics="RUNNING")
    events = lost_outcomes(flows, run_status, {"orders": completed()}, RUN_ENDED)
    assert [(e.flow, e.timestamp) for e in events] == [("spark_catalog.lakewatch.orders", LOGGED)]


def test_a_flow_whose_last_failure_was_lost_is_failed_from_the_log_with_the_logged_exception():
    # The demo's failing update: the bronze flow failed, was retried, failed for good, and that last
    # FAILED event ended the run before the stream sent it: the flow was last seen RUNNING (a retry).
    retried = datetime(2026, 11, 29, 0, 0, 4, tzinfo=timezone.utc)
    flows = {"spark_catalog.lakewatch.orders_bronze": FlowSeen("RUNNING", retried)}
    logged = {"orders_bronze": LoggedOutcome("FAILED", LOGGED, EOF_CHAIN)}
    [event] = lost_outcomes(flows, None, logged, RUN_ENDED)
    assert (event.flow, event.status, event.timestamp, event.final) == (
        "spark_catalog.lakewatch.orders_bronze", "FAILED", LOGGED, True)
    assert event.error == "[STREAM_FAILED] Query terminated"
    assert parse(T, event.message).status == "FAILED"


def test_an_outcome_logged_before_the_flow_restarted_is_not_its_outcome():
    restarted = datetime(2026, 11, 29, 0, 0, 5, 400000, tzinfo=timezone.utc)
    flows = {"spark_catalog.lakewatch.orders_bronze": FlowSeen("RUNNING", restarted)}
    for line in (LoggedOutcome("FAILED", LOGGED, EOF_CHAIN), completed()):
        assert lost_outcomes(flows, None, {"orders_bronze": line}, RUN_ENDED) == []
    # The log keeps milliseconds: a line in the same millisecond as the flow's last event is after it.
    same_ms = {"spark_catalog.lakewatch.orders_bronze": FlowSeen("RUNNING", LOGGED.replace(microsecond=700))}
    assert [e.status for e in lost_outcomes(same_ms, None, {"orders_bronze": completed()}, RUN_ENDED)] == ["COMPLETED"]


def test_a_flow_the_stream_saw_end_is_never_changed_by_the_log():
    flows = seen(spark_catalog__lakewatch__orders_bronze="FAILED", spark_catalog__lakewatch__orders="SKIPPED")
    logged = {"orders_bronze": completed(), "orders": completed()}
    assert lost_outcomes(flows, "COMPLETED", logged, RUN_ENDED) == []
