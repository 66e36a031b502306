"""What the local runner learns about a landing file once, when the file is first committed, and keeps
across updates (the streaming checkpoint does not say it): the earliest commit time (a full refresh
re-commits every file at a new time), the records in the file, counted without Spark, and
the file's size and time on disk then (a file re-delivered after a failed batch first read it is
committed as re-delivered: the source log keeps the time it was first seen). Kept in `<home>/state/files/<pipeline>.json`.

The counts are the formats' (`pipelines.formats.count_records`: JSON lines, CSV rows, a JSON
document's objects, Parquet rows): a file that cannot be read whole (an incomplete upload) is not
counted (NULL), and counted once it can be.
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass
from datetime import datetime
from pathlib import Path

from pipelines.formats import count_records


@dataclass
class LedgerEntry:
    first_commit_time: str | None = None  # ISO time
    lines: int | None = None
    committed_size: int | None = None
    committed_modification_time: str | None = None  # ISO time, the file's time on disk then
    # clean_source DELETE: counted before the update (the stream may delete the file before the runner
    # sees it committed); taken as the committed count when the stream recorded the same time.
    seen_lines: int | None = None
    seen_size: int | None = None
    seen_modification_time: str | None = None  # ISO time


class FileLedger:
    """Per (flow, path) facts learned at first commit, loaded and saved as one JSON file."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.entries: dict[str, LedgerEntry] = {}
        try:
            raw = json.loads(path.read_text())
            self.entries = {k: LedgerEntry(**v) for k, v in raw.items()}
        except (OSError, ValueError, TypeError):
            self.entries = {}

    def entry(self, flow: str, path: str) -> LedgerEntry:
        return self.entries.setdefault(f"{flow}\t{path}", LedgerEntry())

    def record_commit(self, flow: str, path: str, first_commit: datetime | None, size: int | None,
                      modification_time: datetime | None = None, location: str | None = None,
                      recorded_modification_time: datetime | None = None,
                      counter: str | None = None) -> LedgerEntry:
        """Notes a committed file: its earliest commit, and (once) its size, time on disk and line
        count as the runner first sees it committed (after the update that committed it). `location` is
        where the file is now when cleanSource moved it; a file cleanSource deleted takes the count made
        before the update (`note_landing`) when the stream recorded the time it was counted at
        (`recorded_modification_time`, the source log's)."""
        e = self.entry(flow, path)
        if first_commit is not None:
            known = datetime.fromisoformat(e.first_commit_time) if e.first_commit_time else None
            if known is None or first_commit < known:
                e.first_commit_time = first_commit.isoformat()
        if e.lines is None and size is not None:
            e.lines = count_records(counter, location or path)
            e.committed_size = size
        elif (e.lines is None and size is None and e.seen_lines is not None and recorded_modification_time
              is not None and e.seen_modification_time == recorded_modification_time.isoformat()):
            e.lines, e.committed_size = e.seen_lines, e.seen_size
            modification_time = modification_time or recorded_modification_time
        if e.committed_modification_time is None and modification_time is not None:
            e.committed_modification_time = modification_time.isoformat()
        return e

    def note_landing(self, flow: str, path: str, size: int, modification_time: datetime,
                     counter: str | None = None) -> None:
        """Counts a landing file not committed yet, for a flow whose stream deletes committed files
        (clean_source DELETE): counted again when it changed since."""
        e = self.entry(flow, path)
        if e.lines is not None:
            return
        stamp = modification_time.isoformat()
        if e.seen_lines is None or e.seen_size != size or e.seen_modification_time != stamp:
            e.seen_lines, e.seen_size, e.seen_modification_time = count_records(counter, path), size, stamp

    def save(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_name(f".{self.path.name}.{os.getpid()}.tmp")
        tmp.write_text(json.dumps({k: asdict(v) for k, v in sorted(self.entries.items())}))
        tmp.replace(self.path)
