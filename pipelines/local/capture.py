"""Collects what an update's streaming flows report: a StreamingQueryListener on the Connect
session receives every micro-batch's progress (named after the flow), with the observed metrics the
local engine attaches (written rows, expectation counts)."""

from __future__ import annotations

import threading
import warnings
import weakref
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from typing import Any, Callable

from pyspark.sql.streaming import StreamingQueryListener


@dataclass(frozen=True)
class BatchProgress:
    flow: str  # the streaming query's name: SDP's flow display name
    batch_id: int
    started_at: datetime
    ended_at: datetime
    num_input_rows: int
    observed: dict[str, dict[str, Any]]
    sources: tuple[str, ...]
    sink: str | None
    ran: bool = True  # a micro-batch ran (Spark timed its `addBatch`); False: a trigger that found no new data
    extra: dict[str, Any] = field(default_factory=dict)  # measurements taken when it arrived


def _parse_time(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00")).astimezone(timezone.utc)


class ProgressCollector(StreamingQueryListener):
    """Thread-safe list of batch progress; `on_batch` runs in the listener thread when a batch ends,
    `on_ended` (query name, its exception or None) when a query terminates."""

    def __init__(self, on_batch: Callable[[BatchProgress], dict[str, Any]] | None = None,
                 on_ended: Callable[[str, str | None], None] | None = None) -> None:
        self._lock = threading.Lock()
        self.batches: list[BatchProgress] = []
        self.errors: list[str] = []
        self._on_batch = on_batch
        self._on_ended = on_ended
        # Query id -> name: a termination event has no name. Spark Connect sends a client only the
        # progress, idle and termination events of queries the server started, so the name comes from
        # a progress event (a query that failed before its first one ends unnamed, and SDP's FAILED
        # says the rest). SDP keeps a flow's query id across retries (it is in the checkpoint).
        self._names: dict[str, str] = {}

    def onQueryStarted(self, event: Any) -> None:  # noqa: N802 (Spark's listener API)
        with self._lock:
            self._names[str(event.id)] = event.name or ""

    def onQueryProgress(self, event: Any) -> None:  # noqa: N802
        try:
            p = event.progress
            started = _parse_time(p.timestamp)
            durations = p.durationMs or {}
            duration_ms = int(durations.get("triggerExecution", 0))
            observed = {name: row.asDict() for name, row in (p.observedMetrics or {}).items()}
            with self._lock:
                self._names[str(p.id)] = p.name or ""
            batch = BatchProgress(
                flow=p.name or "",
                batch_id=int(p.batchId),
                started_at=started,
                ended_at=started + timedelta(milliseconds=duration_ms),
                num_input_rows=int(p.numInputRows),
                observed=observed,
                sources=tuple(s.description for s in p.sources),
                sink=p.sink.description if p.sink is not None else None,
                ran="addBatch" in durations,
            )
        except Exception as e:  # noqa: BLE001 (a listener must not kill the listener bus)
            with self._lock:
                self.errors.append(f"{type(e).__name__}: {e}")
            return
        if self._on_batch is not None:
            try:
                batch.extra.update(self._on_batch(batch))
            except Exception as e:  # noqa: BLE001 (the batch is kept; only the extra measurement is missing)
                with self._lock:
                    self.errors.append(f"measuring after batch {batch.batch_id} of {batch.flow}: {type(e).__name__}: {e}")
        with self._lock:
            self.batches.append(batch)

    def onQueryIdle(self, event: Any) -> None:  # noqa: N802
        pass

    def onQueryTerminated(self, event: Any) -> None:  # noqa: N802
        with self._lock:
            name = self._names.get(str(event.id))
        if name is None or self._on_ended is None:
            return
        try:
            self._on_ended(name, event.exception)
        except Exception as e:  # noqa: BLE001 (a listener must not kill the listener bus)
            with self._lock:
                self.errors.append(f"after {name} ended: {type(e).__name__}: {e}")

    def snapshot(self) -> list[BatchProgress]:
        with self._lock:
            return list(self.batches)


class ListenerRelay(StreamingQueryListener):
    """The one listener a Connect session registers, for its whole life: it forwards each event to the
    update's collector while one is attached, and drops it otherwise.

    Why not add and remove a listener per update: pyspark's Connect `removeListener` holds the listener
    bus's lock while it waits for the event thread to end, and that thread takes the same lock to deliver
    an event. A progress event that arrives during the removal deadlocks the client for good (pyspark
    4.2.0; seen in CI, and reproduced on the first try with a stream that reports every 20 ms). Detaching
    here takes only this relay's own lock, which pyspark never holds."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._target: StreamingQueryListener | None = None

    def attach(self, target: StreamingQueryListener) -> None:
        with self._lock:
            self._target = target

    def detach(self) -> None:
        """After this returns, no event reaches the collector that was attached."""
        with self._lock:
            self._target = None

    def _forward(self, method: str, event: Any) -> None:
        with self._lock:  # held while the collector runs, so `detach` waits out an event in delivery
            if self._target is not None:
                getattr(self._target, method)(event)

    def onQueryStarted(self, event: Any) -> None:  # noqa: N802 (Spark's listener API)
        self._forward("onQueryStarted", event)

    def onQueryProgress(self, event: Any) -> None:  # noqa: N802
        self._forward("onQueryProgress", event)

    def onQueryIdle(self, event: Any) -> None:  # noqa: N802
        self._forward("onQueryIdle", event)

    def onQueryTerminated(self, event: Any) -> None:  # noqa: N802
        self._forward("onQueryTerminated", event)


# When a stopped session is collected, pyspark tries to remove its listeners over the closed connection
# and warns that it could not; the relay ends with the session by design.
warnings.filterwarnings("ignore", message="Failed to remove the listener", category=UserWarning)
# When the session closes while events are still arriving, pyspark's event thread tries to release
# them through the client's thread pool, which the close has shut down, and warns that the thread ended
# ("cannot schedule new futures after shutdown"): after 3 of 7 empty ingest updates and 2 of 2
# refreshes on one day. Only a closed client says it; a lost server is reported otherwise (`LocalSpark.lost`).
warnings.filterwarnings("ignore", message=r"StreamingQueryListenerBus Handler thread received exception.*"
                        r"cannot schedule new futures after shutdown", category=UserWarning)

_RELAYS: "weakref.WeakKeyDictionary[Any, ListenerRelay]" = weakref.WeakKeyDictionary()
_RELAYS_LOCK = threading.Lock()


def session_relay(spark: Any) -> ListenerRelay:
    """The session's relay, registered with `spark.streams` on first use and never removed: it goes
    away with the session (closing the connection ends pyspark's event thread)."""
    with _RELAYS_LOCK:
        relay = _RELAYS.get(spark)
        if relay is None:
            relay = ListenerRelay()
            spark.streams.addListener(relay)
            _RELAYS[spark] = relay
        return relay
