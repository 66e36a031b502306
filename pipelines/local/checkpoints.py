"""Reads a streaming flow's checkpoint: which landing files it has seen and committed, and when.

Layout written by SDP and Structured Streaming (see ../shared/reference/local-engine.md):
    <storage>/_checkpoints/<catalog>/<schema>/<table>/<flow>/<N>/   (sinks: <storage>/_checkpoints/<sink>/<flow>/<N>/)
        sources/0/<batch>           "v1" then one JSON line per file: {"path", "timestamp", "batchId"}
        sources/0/<batch>.compact   every 10 batches, all entries up to that batch
        offsets/<batch>             "v1", then {"batchTimestampMs": ...}, ...
        commits/<batch>             present once the batch is committed (its mtime = commit time)
`N` grows with every full refresh; the newest one is the live checkpoint.

This is the local counterpart of Auto Loader's `cloud_files_state()` and of its backlog metrics.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Mapping
from urllib.parse import unquote, urlparse


def _numbered(folder: Path) -> dict[int, Path]:
    result: dict[int, Path] = {}
    if folder.is_dir():
        for p in folder.iterdir():
            if p.name.isdigit():
                result[int(p.name)] = p
    return result


def latest_checkpoint(flow_root: Path) -> Path | None:
    """The newest numbered checkpoint folder under a flow's checkpoint root."""
    numbered = _numbered(flow_root)
    return numbered[max(numbered)] if numbered else None


def flow_checkpoint_root(storage: Path, flow: str, target: str, catalog: str | None, schema: str | None,
                         target_is_sink: bool) -> Path:
    if target_is_sink:
        return storage / "_checkpoints" / target / flow
    return storage / "_checkpoints" / (catalog or "spark_catalog") / (schema or "default") / target / flow


def to_local_path(uri: str) -> str:
    """`file:///a/b%20c.json` or `file:/a/b.json` -> `/a/b c.json`."""
    parsed = urlparse(uri)
    return os.path.normpath(unquote(parsed.path if parsed.scheme else uri))


def _log_lines(path: Path) -> list[dict]:
    entries = []
    for line in path.read_text().splitlines()[1:]:  # first line is the log version
        line = line.strip()
        if line:
            entries.append(json.loads(line))
    return entries


@dataclass(frozen=True)
class SourceFile:
    path: str
    modification_ms: int
    batch_id: int


def source_log(checkpoint: Path, source_id: int = 0) -> list[SourceFile]:
    """Every file the file source has recorded, reading the newest compacted log plus later batches."""
    folder = checkpoint / "sources" / str(source_id)
    if not folder.is_dir():
        return []
    compacts: dict[int, Path] = {}
    plain: dict[int, Path] = {}
    for p in folder.iterdir():
        if p.name.endswith(".compact") and p.name[: -len(".compact")].isdigit():
            compacts[int(p.name[: -len(".compact")])] = p
        elif p.name.isdigit():
            plain[int(p.name)] = p
    entries: list[dict] = []
    start = -1
    if compacts:
        start = max(compacts)
        entries.extend(_log_lines(compacts[start]))
    for batch in sorted(b for b in plain if b > start):
        entries.extend(_log_lines(plain[batch]))
    seen: dict[str, SourceFile] = {}
    for e in entries:
        path = to_local_path(e["path"])
        seen.setdefault(path, SourceFile(path, int(e.get("timestamp", 0)), int(e.get("batchId", -1))))
    return list(seen.values())


def committed_batches(checkpoint: Path) -> dict[int, datetime]:
    """Committed batch id -> commit time (the commit file's modification time, UTC)."""
    return {
        batch: datetime.fromtimestamp(p.stat().st_mtime, timezone.utc)
        for batch, p in _numbered(checkpoint / "commits").items()
    }


def uncommitted_batches(checkpoint: Path) -> list[int]:
    """Micro-batches the stream planned (an offsets entry) after its last committed one: a stream
    stopped or killed mid-batch leaves one, which its next run executes again."""
    last = max(_numbered(checkpoint / "commits"), default=-1)
    return sorted(b for b in _numbered(checkpoint / "offsets") if b > last)


def batch_timestamps(checkpoint: Path) -> dict[int, datetime]:
    """Batch id -> the batch's start time (`batchTimestampMs` of its offsets entry, UTC)."""
    result = {}
    for batch, p in _numbered(checkpoint / "offsets").items():
        lines = p.read_text().splitlines()
        if len(lines) > 1:
            try:
                millis = json.loads(lines[1]).get("batchTimestampMs")
            except json.JSONDecodeError:
                continue
            if millis is not None:
                result[batch] = datetime.fromtimestamp(millis / 1000, timezone.utc)
    return result


@dataclass(frozen=True)
class LandingFile:
    path: str
    size: int
    modification_time: datetime


def list_landing(folder: str | Path) -> list[LandingFile]:
    """Files a file source would read: recursively, skipping names that start with `.` or `_`."""
    root = Path(to_local_path(str(folder)))
    files = []
    if not root.is_dir():
        return files
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = [d for d in dirnames if not d.startswith((".", "_"))]
        for name in filenames:
            if name.startswith((".", "_")):
                continue
            p = Path(dirpath) / name
            try:
                st = p.stat()
            except FileNotFoundError:  # removed while listing: not there any more
                continue
            # Milliseconds, as Hadoop's file status (and so the stream's source log) reports it: a
            # finer disk time would never equal the time the stream recorded.
            millis = st.st_mtime_ns // 1_000_000
            files.append(LandingFile(os.path.normpath(str(p)), st.st_size,
                                     datetime.fromtimestamp(millis / 1000, timezone.utc)))
    return sorted(files, key=lambda f: f.path)


@dataclass(frozen=True)
class Backlog:
    files: int
    bytes: int


@dataclass(frozen=True)
class FileState:
    """One row of the local `cloud_files_state()`."""

    path: str
    size: int | None
    create_time: datetime | None
    discovery_time: datetime | None
    commit_time: datetime | None
    batch_id: int | None
    state: str  # committed | discovered | pending
    disk_modification_time: datetime | None = None  # the file's mtime now (None when it is gone)
    archive_time: datetime | None = None  # when cleanSource moved it (None: not archived, or not known)
    archive_mode: str | None = None  # MOVE or DELETE: cleanSource took it out of the landing folder
    move_location: str | None = None  # where MOVE put it


def archived_path(archive_dir: str | Path, path: str) -> Path:
    """Where Spark's file source archives `path` (cleanSource=archive): under the archive folder with
    the file's full path (FileStreamSource.SourceFileArchiver: archive dir + the path's URI path)."""
    return Path(to_local_path(str(archive_dir)) + "/" + path.lstrip("/"))


def _archived(path: str, clean_source: str | None, archive_dir: str | None) -> FileState | None:
    """How cleanSource took a committed file that is no longer in the landing folder, or None.

    MOVE: the file is at its archive path; its size and modification time are the file's (a rename keeps
    them), the archive time is the moved file's status change time (the rename sets it). DELETE: the file
    is gone; cleanSource deletes only files of committed batches, so a committed file gone from the landing
    folder is taken as deleted by it (its time is not known)."""
    if clean_source == "MOVE" and archive_dir:
        moved = archived_path(archive_dir, path)
        try:
            st = moved.stat()
        except OSError:
            return None
        millis = st.st_mtime_ns // 1_000_000
        return FileState(path, st.st_size, None, None, None, None, "committed",
                         disk_modification_time=datetime.fromtimestamp(millis / 1000, timezone.utc),
                         archive_time=datetime.fromtimestamp(st.st_ctime, timezone.utc),
                         archive_mode="MOVE", move_location=os.path.normpath(str(moved)))
    if clean_source == "DELETE":
        return FileState(path, None, None, None, None, None, "committed", archive_mode="DELETE")
    return None


def file_states(landing: str | Path, checkpoint: Path | None, clean_source: str | None = None,
                archive_dir: str | None = None, cut: Mapping[int, datetime] | None = None) -> list[FileState]:
    """Every landing file and every file the checkpoint recorded, with its ingestion state; with the
    flow's cleanSource mode (MOVE with its archive folder, or DELETE), a committed file no longer in the
    landing folder shows how cleanSource took it (`archive_mode`, `move_location`, `archive_time`).
    `cut`: batches the table holds though the checkpoint does not (`measure.cut_batches`), with the
    time of their table commit: their files are committed then."""
    recorded = {f.path: f for f in source_log(checkpoint)} if checkpoint else {}
    commits = committed_batches(checkpoint) if checkpoint else {}
    commits |= {batch: at for batch, at in (cut or {}).items() if batch not in commits}
    # Streaming keeps only the newest commit files (minBatchesToRetain); earlier batches committed too.
    last_commit = max(commits) if commits else -1
    starts = batch_timestamps(checkpoint) if checkpoint else {}
    on_disk = {f.path: f for f in list_landing(landing)}
    rows = []
    for path in sorted(set(recorded) | set(on_disk)):
        disk = on_disk.get(path)
        seen = recorded.get(path)
        batch = seen.batch_id if seen else None
        commit = commits.get(batch) if batch is not None else None
        committed = batch is not None and batch <= last_commit
        state = "committed" if committed else ("discovered" if seen else "pending")
        # The time the stream saw the file, when it did: a later overwrite is not re-read.
        create = (datetime.fromtimestamp(seen.modification_ms / 1000, timezone.utc) if seen
                  else disk.modification_time if disk else None)
        archived = _archived(path, clean_source, archive_dir) if committed and disk is None else None
        rows.append(FileState(
            path=path,
            size=disk.size if disk else archived.size if archived else None,
            create_time=create,
            discovery_time=starts.get(batch) if batch is not None else None,
            commit_time=commit,
            batch_id=batch,
            state=state,
            disk_modification_time=(disk.modification_time if disk
                                    else archived.disk_modification_time if archived else None),
            archive_time=archived.archive_time if archived else None,
            archive_mode=archived.archive_mode if archived else None,
            move_location=archived.move_location if archived else None,
        ))
    return rows


def first_commits(flow_root: Path) -> dict[str, datetime]:
    """Path -> the earliest time a batch holding the file committed, over every checkpoint the flow
    had (a full refresh starts a new numbered checkpoint and re-commits every file)."""
    found: dict[str, datetime] = {}
    for checkpoint in _numbered(flow_root).values():
        commits = committed_batches(checkpoint)
        for f in source_log(checkpoint):
            at = commits.get(f.batch_id)
            if at is not None and (f.path not in found or at < found[f.path]):
                found[f.path] = at
    return found


def backlog(landing: str | Path, checkpoint: Path | None, cut: Mapping[int, datetime] | None = None) -> Backlog:
    """Landing files not yet committed by the flow (never seen, or seen in an uncommitted batch; `cut`
    as in `file_states`). Raises FileNotFoundError when the landing folder is not there (the backlog
    is then unknown)."""
    folder = Path(to_local_path(str(landing)))
    if not folder.is_dir():
        raise FileNotFoundError(f"landing folder {folder} does not exist")
    pending = [s for s in file_states(landing, checkpoint, cut=cut) if s.state != "committed" and s.size is not None]
    return Backlog(files=len(pending), bytes=sum(s.size or 0 for s in pending))
