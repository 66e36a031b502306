"""Collects what an update's streaming flows report: a StreamingQueryListener on the Connect
session receives every micro-batch's progress (named after the flow), with the observed metrics the
local engine attaches (written rows, expectation counts)."""

from __future__ import annotations

import threading
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
    """Thread-safe list of batch progress; `on_batch` runs in the listener thread when a batch ends."""

    def __init__(self, on_batch: Callable[[BatchProgress], dict[str, Any]] | None = None) -> None:
        self._lock = threading.Lock()
        self.batches: list[BatchProgress] = []
        self.errors: list[str] = []
        self._on_batch = on_batch

    def onQueryStarted(self, event: Any) -> None:  # noqa: N802 (Spark's listener API)
        pass

    def onQueryProgress(self, event: Any) -> None:  # noqa: N802
        try:
            p = event.progress
            started = _parse_time(p.timestamp)
            durations = p.durationMs or {}
            duration_ms = int(durations.get("triggerExecution", 0))
            observed = {name: row.asDict() for name, row in (p.observedMetrics or {}).items()}
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
        pass

    def snapshot(self) -> list[BatchProgress]:
        with self._lock:
            return list(self.batches)
