"""Holds SDP's COMPLETED events of streaming flows until it is known how their query ended.

Open-source SDP 4.2 records a streaming flow COMPLETED from its `StreamListener` when the flow's
query terminates, also when it terminated with an exception (`onQueryTerminated` calls
`recordCompletion` whatever the event says); its scheduler then records the failure. Both events
reach the run's event stream 10-20 ms apart, in either order (the listener bus is asynchronous).
Taken at face value a failed attempt is a COMPLETED flow, and when the COMPLETED comes last the
failed flow ends COMPLETED: seen in a fresh-clone run on a slow machine, where the demo's failed
update had no failed flow.

So a streaming flow's COMPLETED passes only once its query's own termination event (the runner's
client-side listener) says it ended without an exception. A FAILED of the same attempt, before or
after it, drops it. What is still held when the run ends is settled by the runner
(`runner.Update.settle_held_completions`).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass

from pipelines.local.sdp_events import UNFINISHED, SdpEvent, short_name

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

    def offer(self, event: SdpEvent, status_before: str | None) -> list[SdpEvent]:
        """The events to apply now, in order, for one event of SDP's stream. `status_before`: the
        flow's last status applied."""
        if event.flow is None:
            return [event]
        flow = short_name(event.flow)
        with self._lock:
            if event.status == "COMPLETED" and self._is_streaming(flow):
                if flow in self._ended:
                    if self._ended[flow] is None:
                        return [event]
                    self.drop(event, "its query ended with an exception")
                    return []
                if status_before == "FAILED":
                    self.drop(event, "the flow had FAILED")
                    return []
                self._held[flow] = event
                return []
            held = self._held.pop(flow, None)
            if event.status == "FAILED":
                if held is not None:
                    self.drop(held, "the flow FAILED")
                return [event]
            if event.status in _RESTARTED:
                self._ended.pop(flow, None)  # a new attempt: its end is not known yet
            return [held, event] if held is not None else [event]

    def query_terminated(self, flow: str, exception: str | None) -> SdpEvent | None:
        """The client listener saw the flow's query end. Returns the held COMPLETED to apply now, if
        it ended without an exception."""
        flow = short_name(flow)
        with self._lock:
            self._ended[flow] = exception
            held = self._held.pop(flow, None)
            if held is not None and exception is not None:
                self.drop(held, "its query ended with an exception")
                return None
            return held

    def ended_with_exception(self, flow: str) -> bool | None:
        """Whether the flow's last query ended with an exception (None: its end was not seen)."""
        with self._lock:
            flow = short_name(flow)
            return None if flow not in self._ended else self._ended[flow] is not None

    def take_held(self) -> list[SdpEvent]:
        """The COMPLETED events still held (their query's end not seen), no longer held."""
        with self._lock:
            held, self._held = list(self._held.values()), {}
            return held

    def drop(self, event: SdpEvent, reason: str) -> None:
        """Leaves a COMPLETED event out, and says why."""
        self.dropped.append(Dropped(event, reason))
