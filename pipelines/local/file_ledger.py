"""What the local runner learns about a landing file once, when the file is first committed, and keeps
across updates (the streaming checkpoint does not say it): the earliest commit time (a full refresh
re-commits every file at a new time), the lines with content in the file, counted without Spark, and
the file's size and time on disk then (a file re-delivered after a failed batch first read it is
committed as re-delivered: the source log keeps the time it was first seen). Kept in `<home>/state/files/<pipeline>.json`.

Lines with content: a landing file is split into lines at CR, LF or CRLF (as Hadoop's line reader
does); a line counts when it holds anything but spaces and tabs (the only whitespace JSON allows on a
line besides the line ends). A line holding a JSON array of objects counts one per object, as Spark's
reader (and the local rescue) makes a row of each; any other line counts one (an empty array is one
corrupt row locally). Gzip and bzip2 files are counted after decompression; a file that cannot
be read whole (an incomplete upload) is not counted (NULL), and counted once it can be.

That is the count of JSON lines; the other formats count records their own way
(`pipelines.formats`: CSV rows, a JSON document's objects, Parquet rows), with the same NULL rule.
"""

from __future__ import annotations

import bz2
import gzip
import json
import os
import re
from dataclasses import asdict, dataclass
from datetime import datetime
from pathlib import Path
from typing import IO, Iterator

from pipelines.formats import count_records

_CONTENT_LINE = re.compile(rb"[^\r\n]*[^ \t\r\n][^\r\n]*")
_CHUNK = 8 << 20


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


def _open(path: Path) -> IO[bytes]:
    name = path.name.lower()
    if name.endswith(".gz"):
        return gzip.open(path, "rb")
    if name.endswith(".bz2"):
        return bz2.open(path, "rb")
    return path.open("rb")


def read_whole(path: str | Path) -> bytes | None:
    """The file's bytes, gzip and bzip2 decompressed; None when it cannot be read whole (an incomplete
    upload) or is compressed with a codec this does not read."""
    p = Path(path)
    if re.search(r"\.(deflate|lz4|snappy|zst|zstd|br)$", p.name.lower()):
        return None
    try:
        with _open(p) as stream:
            return stream.read()
    except (OSError, EOFError, ValueError):
        return None


def _chunks(stream: IO[bytes]) -> Iterator[bytes]:
    while True:
        chunk = stream.read(_CHUNK)
        if not chunk:
            return
        yield chunk


_BOM = b"\xef\xbb\xbf"
_DECODER = json.JSONDecoder()


def _body(line: bytes) -> bytes:
    """The line without the byte-order mark at its start, which Spark's reader skips when something
    follows it."""
    return line[len(_BOM):] if line.startswith(_BOM) and len(line) > len(_BOM) else line


def _records(lines: list[bytes]) -> int:
    """Rows the lines make: none for a byte-order mark and blanks, one each, but one per object for a
    line holding a JSON array of objects (text after the array is ignored, as Spark's reader ignores it)."""
    count = sum(1 for line in lines if _body(line).strip(b" \t"))
    for line in lines:
        text = _body(line).strip(b" \t")
        if not text.startswith(b"["):
            continue
        try:
            value, _ = _DECODER.raw_decode(text.decode("utf-8"))
        except ValueError:  # not JSON, or not UTF-8: one corrupt row
            continue
        if isinstance(value, list) and value and all(isinstance(v, dict) for v in value):
            count += len(value) - 1
    return count


def count_content_lines(path: str | Path) -> int | None:
    """Lines with content in the file (see the module docstring); None when it cannot be read whole
    or is compressed with a codec this count does not read."""
    p = Path(path)
    if re.search(r"\.(deflate|lz4|snappy|zst|zstd|br)$", p.name.lower()):
        return None
    count = 0
    carry = b""
    try:
        with _open(p) as stream:
            for chunk in _chunks(stream):
                data = carry + chunk
                cut = max(data.rfind(b"\n"), data.rfind(b"\r"))
                # A trailing CR may be the first half of CRLF: keep it with the rest of the line.
                if cut == len(data) - 1 and data.endswith(b"\r"):
                    cut = max(data.rfind(b"\n", 0, cut), data.rfind(b"\r", 0, cut))
                complete, carry = (data[:cut + 1], data[cut + 1:]) if cut >= 0 else (b"", data)
                count += _records(_CONTENT_LINE.findall(complete))
        count += _records(_CONTENT_LINE.findall(carry))
    except (OSError, EOFError, ValueError):
        return None
    return count


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
