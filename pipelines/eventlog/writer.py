"""Appends event rows to the event log Delta table (created with the exact published schema),
at once or as an update goes (`EventLogStream`)."""

from __future__ import annotations

import json
import threading
import time
from datetime import datetime
from pathlib import Path
from typing import Any, Callable, Sequence

from pipelines.adapter import CHECKPOINT_INTERVAL, LOCAL_CHECKPOINT_INTERVAL
from pipelines.eventlog import schema
from pipelines.eventlog.events import to_row
from pipelines.eventlog.schema import EVENT_LOG_DDL, EVENT_LOG_SCHEMA

CONTROL_PLANE_EVENTS = (schema.CREATE_UPDATE, schema.USER_ACTION, schema.UPDATE_PROGRESS)
# Key of a FAILED flow event whose exception chain is filled in (from the engine log) before it is written.
PENDING_ERROR = "_lakewatch_pending_error"

EVENT_LOG_COMMENT = (
    "Pipeline event log in the schema Databricks publishes through the pipeline event_log setting; "
    "written by the lakewatch local runner from measured run data."
)


class EventLogWriter:
    def __init__(self, spark: Any, table: str) -> None:
        self.spark = spark
        self.table = table

    def ensure_table(self) -> None:
        """Creates the table with a Delta checkpoint every `LOCAL_CHECKPOINT_INTERVAL` commits instead of
        Delta's 10: the log takes a commit every few seconds of an update (`EventLogStream`), so with
        the default most refreshes would write a checkpoint of every file the log ever had. A table created before gets the property once; a value its owner set is kept."""
        setting = f"'{CHECKPOINT_INTERVAL}' = '{LOCAL_CHECKPOINT_INTERVAL}'"
        self.spark.sql(
            f"CREATE TABLE IF NOT EXISTS {self.table} ({EVENT_LOG_DDL}) USING DELTA "
            f"COMMENT '{EVENT_LOG_COMMENT}' TBLPROPERTIES ({setting})"
        )
        declared = {r["key"] for r in self.spark.sql(f"SHOW TBLPROPERTIES {self.table}").collect()}
        if CHECKPOINT_INTERVAL not in declared:
            self.spark.sql(f"ALTER TABLE {self.table} SET TBLPROPERTIES ({setting})")

    def written_ids(self, ids: Sequence[str]) -> set[str]:
        """Which of the event `ids` the table holds."""
        if not ids:
            return set()
        listed = ", ".join("'" + i.replace("'", "''") + "'" for i in ids)
        return {r["id"] for r in self.spark.sql(f"SELECT id FROM {self.table} WHERE id IN ({listed})").collect()}

    def append(self, events: Sequence[dict[str, Any]]) -> None:
        if not events:
            return
        df = self.spark.createDataFrame([to_row(e) for e in events], EVENT_LOG_SCHEMA)
        df.write.format("delta").mode("append").saveAsTable(self.table)


class EventLogStream:
    """Writes an update's events to the event log as the update goes, in small batches.

    Events are numbered in time order within each flushed batch (control-plane events take
    `control_plane_seq_no`, the others `data_plane_id.seq_no`) from one counter per pipeline, kept
    across runs. A background thread flushes every `interval` seconds (each flush is one Delta
    commit, about a second of engine CPU on this machine), and at once when an urgent event arrives
    (`urgent`: by default an ERROR event), so a failure reaches the table
    without waiting for the interval; `flush()` writes what is pending at once. An event
    can be held back (`prepare` returns False) until what it needs is known, at most `max_hold`
    seconds; a write that fails is retried at the next flush and reported through `on_error`.

    With a `journal`, every event is also appended to that file the moment it is added (one JSON
    object per line): what a killed runner had not written to the table yet is still on disk, and
    `replay_journal` writes it when the update is closed.

    A write that failed may have committed all the same (the connection lost after the server's
    commit): before its events are written again, those the table already holds are left out, so a
    retry never writes an event twice (the observability tables sum METRICS events).
    """

    def __init__(self, writer: EventLogWriter, next_sequence: Callable[[int], int], instance: str | None,
                 interval: float = 5.0, on_error: Callable[[str], None] | None = None,
                 prepare: Callable[[dict[str, Any], bool], bool] | None = None,
                 journal: Path | None = None,
                 urgent: Callable[[dict[str, Any]], bool] | None = None) -> None:
        self.writer = writer
        self.next_sequence = next_sequence
        self.instance = instance
        self.interval = interval
        self.on_error = on_error or (lambda text: None)
        self.prepare = prepare  # (event, final) -> ready to write; may complete the event in place
        self.written = 0
        self._pending: list[tuple[float, dict[str, Any]]] = []
        self._lock = threading.Lock()
        self._write_lock = threading.Lock()
        self._stop = threading.Event()
        self._wake = threading.Event()
        self.urgent = urgent or is_urgent
        self._thread: threading.Thread | None = None
        self.max_hold = 3.0
        self.journal = journal.open("a", encoding="utf-8") if journal is not None else None
        self._unsure: set[str] = set()  # ids of events whose write failed, which may have committed

    def start(self) -> "EventLogStream":
        if self._thread is None:
            self._thread = threading.Thread(target=self._loop, name="lakewatch-event-log", daemon=True)
            self._thread.start()
        return self

    def add(self, event: dict[str, Any]) -> None:
        with self._lock:
            self._pending.append((time.monotonic(), event))
            if self.journal is not None:
                self.journal.write(json.dumps(event, default=_jsonable) + "\n")
                self.journal.flush()
        if self.urgent(event):
            self._wake.set()

    def flush_soon(self) -> None:
        """Has the background thread write what is pending now, without waiting for the interval."""
        self._wake.set()

    def _loop(self) -> None:
        while not self._stop.is_set():
            self._wake.wait(self.interval)
            self._wake.clear()
            if self._stop.is_set():
                return
            self.flush(final=False)

    def flush(self, final: bool = True) -> None:
        """Writes pending events; with `final`, also those still held back."""
        with self._write_lock:
            now = time.monotonic()
            with self._lock:
                taken, kept = [], []
                for added, event in self._pending:
                    ready = self.prepare is None or self.prepare(event, final or now - added >= self.max_hold)
                    (taken if ready else kept).append((added, event))
                self._pending = kept
            if not taken:
                return
            batch = sorted((e for _, e in taken), key=lambda e: e["timestamp"])
            if self._unsure & {e["id"] for e in batch}:
                try:
                    present = self.writer.written_ids([e["id"] for e in batch if e["id"] in self._unsure])
                except Exception as e:  # noqa: BLE001 (kept and retried, as a failed write)
                    self._keep(batch, now, e, final)
                    return
                self._unsure -= present
                batch = [e for e in batch if e["id"] not in present]
                if not batch:
                    return
            first = self.next_sequence(len(batch))
            for offset, event in enumerate(batch):
                seq = first + offset
                if event["event_type"] in CONTROL_PLANE_EVENTS:
                    event["sequence"] = {"data_plane_id": None, "control_plane_seq_no": seq}
                else:
                    event["sequence"] = {"data_plane_id": {"instance": self.instance, "seq_no": seq},
                                         "control_plane_seq_no": None}
            try:
                self.writer.append(batch)
            except Exception as e:  # noqa: BLE001 (kept and retried; the update goes on)
                self._unsure |= {ev["id"] for ev in batch}
                self._keep(batch, now, e, final)
                return
            self._unsure -= {ev["id"] for ev in batch}
            self.written += len(batch)

    def _keep(self, batch: list[dict[str, Any]], now: float, error: Exception, final: bool) -> None:
        """Puts a batch that could not be written back in front of the pending events, says why, and
        raises on the final flush."""
        with self._lock:
            self._pending = [(now, ev) for ev in batch] + self._pending
        self.on_error(f"{type(error).__name__}: {' '.join(str(error).split())[:300]}")
        if final:
            raise error

    def abandon(self) -> None:
        """Stops the background thread and closes the journal without writing: the table is out of
        reach (its engine is gone), and the journal keeps every event for the command that closes the
        update."""
        self._end(write=False)

    def close(self) -> None:
        """Stops the background thread and writes everything still pending."""
        self._end(write=True)

    def _end(self, write: bool) -> None:
        self._stop.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join(timeout=30)
            self._thread = None
        if write:
            self.flush(final=True)
        if self.journal is not None:
            self.journal.close()
            self.journal = None


def is_urgent(event: dict[str, Any]) -> bool:
    """An event a reader of the live event log should not wait for: an error (a failed flow or update)."""
    return event.get("level") == "ERROR"


def _jsonable(value: Any) -> Any:
    if isinstance(value, datetime):
        return {"__datetime__": value.isoformat()}
    raise TypeError(f"not JSON serializable: {type(value).__name__}")


def _revive(data: dict[str, Any]) -> Any:
    return datetime.fromisoformat(data["__datetime__"]) if set(data) == {"__datetime__"} else data


def read_journal(path: Path) -> list[dict[str, Any]]:
    """The events a journal holds (a line cut short by a kill is skipped)."""
    events = []
    if not path.is_file():
        return events
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            events.append(json.loads(line, object_hook=_revive))
        except ValueError:
            continue
    return events
