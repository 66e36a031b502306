"""SDP's COMPLETED events of streaming flows, held until the flow's query says how it ended.

Open-source SDP 4.2's `StreamListener.onQueryTerminated` records a streaming flow COMPLETED whether
or not its query ended with an exception, and its scheduler records the failure 10-20 ms before or
after (the event log of the demo's failing update: COMPLETED at .159, FAILED at .180, per attempt).
The events here are SDP's exact texts, read with the stream's own parser.
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

from pipelines.local.completion_gate import CompletionGate
from pipelines.local.sdp_events import SdpEvent, parse

BRONZE = "spark_catalog.lakewatch.orders_bronze"
VIEW = "spark_catalog.lakewatch.health_metrics"
T0 = datetime(2026, 12, 3, 15, 10, 9, tzinfo=timezone.utc)
STREAMING = {"orders_bronze", "orders_to_corrupt_records_sink"}


def sdp(message: str, ms: int = 0) -> SdpEvent:
    return parse(T0 + timedelta(milliseconds=ms), message)


def completed(flow: str = BRONZE, ms: int = 0) -> SdpEvent:
    return sdp(f"Flow {flow} has COMPLETED.", ms)


def failed(flow: str = BRONZE, ms: int = 21) -> SdpEvent:
    return sdp(f"Flow '{flow}' has FAILED.\nError: [STREAM_FAILED] Query terminated with exception", ms)


class Run:
    """Feeds a gate as the runner does and keeps each flow's last applied status."""

    def __init__(self) -> None:
        self.gate = CompletionGate(lambda flow: flow in STREAMING)
        self.applied: list[tuple[str, str]] = []

    def status(self, flow: str) -> str | None:
        return next((s for f, s in reversed(self.applied) if f == flow), None)

    def apply(self, events: list[SdpEvent]) -> None:
        self.applied += [(e.flow or "", e.status or "") for e in events]

    def stream(self, *events: SdpEvent) -> None:
        for event in events:
            self.apply(self.gate.offer(event, self.status(event.flow or "")))

    def query_ended(self, exception: str | None, flow: str = BRONZE) -> None:
        released = self.gate.query_terminated(f"`spark_catalog`.`lakewatch`.`{flow.split('.')[-1]}`", exception)
        self.apply([released] if released else [])


def test_a_failed_attempt_whose_completion_came_first_is_failed_only():
    run = Run()
    run.stream(sdp(f"Flow {BRONZE} is RUNNING."), completed(), failed())
    run.query_ended("[STREAM_FAILED] Query terminated with exception")
    assert run.applied == [(BRONZE, "RUNNING"), (BRONZE, "FAILED")]
    assert [(d.event.status, d.reason) for d in run.gate.dropped] == [("COMPLETED", "the flow FAILED")]


def test_a_failed_attempt_whose_completion_came_last_stays_failed():
    # The order that left the demo's failed flow COMPLETED: the listener's event after the scheduler's.
    run = Run()
    run.stream(sdp(f"Flow {BRONZE} is RUNNING."), failed(ms=0), completed(ms=15))
    run.query_ended("boom")
    assert run.status(BRONZE) == "FAILED"
    assert (BRONZE, "COMPLETED") not in run.applied


def test_a_completion_passes_when_the_query_ended_without_an_exception_before_or_after():
    before, after = Run(), Run()
    before.query_ended(None)
    before.stream(completed())
    after.stream(completed())
    assert after.applied == []  # held until the query's end is known
    after.query_ended(None)
    assert before.applied == after.applied == [(BRONZE, "COMPLETED")]


def test_a_query_that_ended_with_an_exception_drops_its_completion_even_without_the_failed_event():
    run = Run()
    run.query_ended("java.io.EOFException: Unexpected end of input stream")
    run.stream(completed())
    assert run.applied == [] and run.gate.ended_with_exception(BRONZE) is True


def test_a_retry_that_completes_ends_completed():
    run = Run()
    run.stream(completed(), failed())
    run.query_ended("first attempt failed")
    run.stream(sdp(f"Flow {BRONZE} is STARTING.", 5000), sdp(f"Flow {BRONZE} is RUNNING.", 5100), completed(ms=6000))
    run.query_ended(None)
    assert run.status(BRONZE) == "COMPLETED" and run.gate.ended_with_exception(BRONZE) is False


def test_batch_flows_and_other_statuses_pass_at_once():
    run = Run()
    run.stream(completed(VIEW), sdp("Flow 'x' SKIPPED due to upstream failure(s)."), sdp("Run is COMPLETED."))
    assert run.applied == [(VIEW, "COMPLETED"), ("x", "SKIPPED"), ("", "")]


def test_what_is_still_held_is_handed_over_once():
    run = Run()
    run.stream(completed(), completed("orders_to_corrupt_records_sink"))
    assert [e.flow for e in run.gate.take_held()] == [BRONZE, "orders_to_corrupt_records_sink"]
    assert run.gate.take_held() == [] and run.gate.ended_with_exception(BRONZE) is None
    run.query_ended(None)  # a late end finds nothing held
    assert run.applied == []
