"""SDP's COMPLETED events of streaming flows, held until the flow's query says how it ended.

Open-source SDP 4.2's `StreamListener.onQueryTerminated` records a streaming flow COMPLETED whether
or not its query ended with an exception, and its scheduler records the failure 10-20 ms before or
after (the event log of the demo's failing update: COMPLETED at .159, FAILED at .180, per attempt).
The events here are SDP's exact texts, read with the stream's own parser.
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

from pipelines.local.completion_gate import CompletionGate
from pipelines.local.jvm_log import JvmException, LoggedOutcome
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
    assert [(d.event.status, d.reason) for d in run.gate.dropped] == [("COMPLETED", "the flow was FAILED after it")]


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


def test_an_end_with_an_exception_holds_the_completion_for_the_failed_event_to_drop():
    run = Run()
    run.query_ended("java.io.EOFException: Unexpected end of input stream")
    run.stream(completed())
    assert run.applied == []
    run.stream(failed())
    assert run.applied == [(BRONZE, "FAILED")] and [d.event.status for d in run.gate.dropped] == ["COMPLETED"]


def test_a_retry_that_completes_ends_completed():
    run = Run()
    run.stream(completed(), failed())
    run.query_ended("first attempt failed")
    run.stream(sdp(f"Flow {BRONZE} is STARTING.", 5000), sdp(f"Flow {BRONZE} is RUNNING.", 5100), completed(ms=6000))
    run.query_ended(None)
    assert run.status(BRONZE) == "COMPLETED"


def test_a_failed_attempts_end_seen_after_the_retry_started_does_not_drop_the_retrys_completion():
    run = Run()
    run.stream(sdp(f"Flow {BRONZE} is RUNNING."), completed(), failed(),
               sdp(f"Flow {BRONZE} is STARTING.", 5000), sdp(f"Flow {BRONZE} is RUNNING.", 5100))
    run.query_ended("first attempt failed")  # late: the listener thread was busy measuring
    run.stream(completed(ms=6000))
    run.query_ended(None)
    assert run.status(BRONZE) == "COMPLETED"


def test_a_held_completion_is_dropped_when_the_flow_stops_or_restarts():
    for then in (f"Flow {BRONZE} has STOPPED.", f"Flow {BRONZE} is QUEUED."):
        run = Run()
        run.stream(completed(), sdp(then, 30))
        assert run.applied == [(BRONZE, parse(T0, then).status)]
        assert run.gate.dropped[0].event.status == "COMPLETED"


def test_batch_flows_and_other_statuses_pass_at_once():
    run = Run()
    run.stream(completed(VIEW), sdp("Flow 'x' SKIPPED due to upstream failure(s)."), sdp("Run is COMPLETED."))
    assert run.applied == [(VIEW, "COMPLETED"), ("x", "SKIPPED"), ("", "")]


SINK = "orders_to_corrupt_records_sink"
SEEN = {BRONZE: T0 - timedelta(seconds=2), SINK: T0 - timedelta(seconds=2)}


def settled(run: Run, logged: dict[str, LoggedOutcome]) -> list[tuple[str, str]]:
    return [(e.flow or "", e.status or "") for e in run.gate.settle(logged, SEEN)]


def held_run(*ends: tuple[str, str | None]) -> Run:
    run = Run()
    run.stream(completed(), completed(SINK))
    for flow, exception in ends:
        run.query_ended(exception, flow)
    return run


def test_at_the_runs_end_the_engine_logs_outcome_of_this_attempt_decides():
    eof = (JvmException("java.io.EOFException", "Unexpected end of input stream"),)
    run = held_run((BRONZE, "an end with an exception, perhaps an earlier attempt's"))
    logged = {"orders_bronze": LoggedOutcome("COMPLETED", T0), SINK: LoggedOutcome("FAILED", T0, eof)}
    assert settled(run, logged) == [(BRONZE, "COMPLETED")]
    assert [(d.event.flow, d.reason) for d in run.gate.dropped] == [(SINK, "the flow failed (engine log)")]


def test_at_the_runs_end_without_a_log_line_the_querys_end_decides_else_sdps_completion_stands():
    run = held_run((BRONZE, "java.io.EOFException"))
    stale = {SINK: LoggedOutcome("FAILED", T0 - timedelta(seconds=5))}  # before the flow's last event
    assert settled(run, stale) == [(SINK, "COMPLETED")]  # no end seen, no line of this attempt
    assert [(d.event.flow, d.reason) for d in run.gate.dropped] == [(BRONZE, "the flow failed (its query's end)")]
    assert run.gate.settle({}, SEEN) == []  # handed over once
    run.query_ended(None)  # a late end finds nothing held
    assert run.applied == []


def test_a_stopped_streams_completion_from_its_query_end_is_left_out():
    """A canceled update: SDP records the flow STOPPED, then stopping its query makes SDP's listener
    record it COMPLETED, and the query ends without an exception. The flow did not process what was
    there to read: it stays STOPPED."""
    run = Run()
    run.stream(sdp(f"Flow {BRONZE} is RUNNING."), sdp(f"Flow '{BRONZE}' has STOPPED.", 5), completed(ms=9))
    run.query_ended(None)
    assert run.status(BRONZE) == "STOPPED"
    assert [d.reason for d in run.gate.dropped] == ["the flow had STOPPED"]

