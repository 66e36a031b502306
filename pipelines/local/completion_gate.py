"""Holds SDP's COMPLETED events of streaming flows until it is known how their query ended.

Open-source SDP 4.2 records a streaming flow COMPLETED from its `StreamListener` when the flow's
query terminates, also when it terminated with an exception (`onQueryTerminated` calls
`recordCompletion` whatever the event says); its scheduler then records the failure. Both events
reach the run's event stream 10-20 ms apart, in either order (the listener bus is asynchronous).
Taken at face value a failed attempt is a COMPLETED flow, and when the COMPLETED comes last the
failed flow ends COMPLETED: seen in a fresh-clone run on a slow machine, where the demo's failed
update had no failed flow.

So a streaming flow's COMPLETED passes only once its query's own termination event (the runner's
client-side listener) says it ended without an exception. A FAILED or STOPPED (a stopped update: the
stop ended the query) before it drops it, and so does
any later status of the flow (FAILED, STOPPED, or a retry starting). What is still held when the run
ends is settled by the runner (`update.flow_events.FlowEvents.settle_held_completions`).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime

from pipelines.local.jvm_log import LoggedOutcome
from pipelines.local.sdp_events import UNFINISHED, SdpEvent, outcome_is_older, short_name

# Statuses after which a flow runs again (a retry of a failed attempt).
_RESTARTED = UNFINISHED


@dataclass(frozen=True)
class Dropped:
    """A COMPLETED event that was not the flow's outcome, and why."""
    event: SdpEvent
    reason: str


class CompletionGate:
    """Thread-safe: SDP's events come from the run's thread, query events from the listener thread."""

    def __init__(self, is_streaming: Callable[[str], bool]) -> None:
        self._is_streaming = is_streaming  # by a flow's last name part
        self._lock = threading.Lock()
        self._held: dict[str, SdpEvent] = {}  # flow's last name part -> its COMPLETED, held
        self._ended: dict[str, str | None] = {}  # flow -> its query's exception (None: ended without one)
        self.dropped: list[Dropped] = []
        self._drops_lock = threading.Lock()

    def offer(self, event: SdpEvent, status_before: str | None) -> list[SdpEvent]:
        """The events to apply now, in order, for one event of SDP's stream. `status_before`: the
        flow's last status applied."""
        if event.flow is None:
            return [event]
        flow = short_name(event.flow)
        with self._lock:
            if event.status == "COMPLETED" and self._is_streaming(flow):
                if status_before in ("FAILED", "STOPPED"):  # its query ended because the flow failed or was stopped
                    self.drop(event, f"the flow had {status_before}")
                    return []
                if flow in self._ended and self._ended[flow] is None:
                    return [event]
                # Held, also after an end with an exception: that end may be an earlier attempt's,
                # seen late. SDP's FAILED drops it, or the run's end settles it.
                self._held[flow] = event
                return []
            held = self._held.pop(flow, None)
            if held is not None:
                # Any other status of the flow after a COMPLETED: that attempt did not complete
                # (FAILED; STOPPED; QUEUED..RUNNING, a retry).
                self.drop(held, f"the flow was {event.status or 'reported again'} after it")
            if event.status in _RESTARTED:
                self._ended.pop(flow, None)  # a new attempt: its end is not known yet
            return [event]

    def query_terminated(self, flow: str, exception: str | None) -> SdpEvent | None:
        """The client listener saw the flow's query end. Returns the held COMPLETED to apply now, if
        it ended without an exception (an end with one leaves it held: see `offer`)."""
        flow = short_name(flow)
        with self._lock:
            self._ended[flow] = exception
            return self._held.pop(flow, None) if exception is None else None

    def settle(self, logged: Mapping[str, LoggedOutcome], seen_at: Mapping[str, datetime | None]) -> list[SdpEvent]:
        """At the run's end: the COMPLETED events still held (their query's end never reached the
        listener, or it had an exception) that are the flow's outcome, no longer held. The engine log's
        last outcome of the flow in this update decides (`logged`, by last name part; not one older
        than the flow's last event, `seen_at` by SDP name); without one, the query's last end seen;
        without that, SDP's COMPLETED stands."""
        with self._lock:
            held, self._held = list(self._held.values()), {}
            ended = dict(self._ended)
        outcomes = []
        for event in held:
            flow = short_name(event.flow or "")
            line = logged.get(flow)
            if line is not None and outcome_is_older(line, seen_at.get(event.flow or "")):
                line = None
            failed = line.status == "FAILED" if line is not None else ended.get(flow) is not None
            if failed:
                self.drop(event, "the flow failed" + (" (engine log)" if line is not None else " (its query's end)"))
            else:
                outcomes.append(event)
        return outcomes

    def drop(self, event: SdpEvent, reason: str) -> None:
        """Leaves a COMPLETED event out, and says why."""
        with self._drops_lock:
            self.dropped.append(Dropped(event, reason))
