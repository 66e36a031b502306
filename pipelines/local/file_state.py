"""The local counterpart of Auto Loader's `cloud_files_state()`, as a table.

Same column names as `cloud_files_state` (path, size, create_time, discovery_time, commit_time),
plus the table and flow the file feeds, the batch and the state (committed, discovered, pending),
so `commit_time - create_time` is a file's ingestion latency on both engines. And what Auto Loader's
state does not keep but an observability product needs (see `file_ledger`): `first_commit_time`
(the earliest commit over every checkpoint, so a full refresh does not change a file's latency),
`lines` (lines with content, counted without Spark, for reconciliation), the file as the stream took
it (`committed_size`, `committed_modification_time`) and whether it changed since
(`modified_after_ingest`: Auto Loader with `cloudFiles.allowOverwrites=false`, the default, does not
read a changed file again, and neither does the local file stream). With `clean_source`, as
`cloud_files_state` has them: `archive_time`, `archive_mode` (MOVE, DELETE) and `move_location` of a
committed file the stream moved or deleted; such a file keeps the lines and size it was committed with
and is not taken as modified after ingest (a deleted file's time is not known: NULL).
"""

from __future__ import annotations

from datetime import datetime
from typing import Iterable

from pyspark.sql.types import BooleanType, LongType, StringType, StructField, StructType, TimestampType

from pipelines.local.checkpoints import FileState
from pipelines.local.file_ledger import FileLedger

FILE_STATE_SCHEMA = StructType(
    [
        StructField("table_name", StringType()),
        StructField("flow_name", StringType()),
        StructField("path", StringType()),
        StructField("size", LongType()),
        StructField("create_time", TimestampType()),
        StructField("discovery_time", TimestampType()),
        StructField("commit_time", TimestampType()),
        StructField("batch_id", LongType()),
        StructField("state", StringType()),
        StructField("first_commit_time", TimestampType()),
        StructField("lines", LongType()),
        StructField("committed_size", LongType()),
        StructField("committed_modification_time", TimestampType()),
        StructField("modified_after_ingest", BooleanType()),
        StructField("archive_time", TimestampType()),
        StructField("archive_mode", StringType()),
        StructField("move_location", StringType()),
    ]
)


def rows_for(table_name: str, flow_name: str, states: Iterable[FileState], ledger: FileLedger,
             earliest: dict[str, datetime], counter: str | None = None) -> list[tuple]:
    """File-state rows of one flow; committed files are noted in the ledger (first commit, lines)."""
    rows = []
    for s in states:
        first, lines, committed_size, committed_mtime, modified = None, None, None, None, None
        if s.state == "committed":
            commits = [t for t in (earliest.get(s.path), s.commit_time) if t is not None]
            entry = ledger.record_commit(flow_name, s.path, min(commits) if commits else None, s.size,
                                         s.disk_modification_time, location=s.move_location,
                                         recorded_modification_time=s.create_time, counter=counter)
            first = datetime.fromisoformat(entry.first_commit_time) if entry.first_commit_time else None
            lines, committed_size = entry.lines, entry.committed_size
            committed_mtime = (datetime.fromisoformat(entry.committed_modification_time)
                               if entry.committed_modification_time else None)
            if s.archive_mode == "DELETE":
                modified = None  # cleanSource deleted it: whether it changed before is not known
            elif s.size is None:
                modified = True  # deleted after it was ingested
            elif committed_size is not None and committed_mtime is not None and s.disk_modification_time is not None:
                modified = s.size != committed_size or s.disk_modification_time != committed_mtime
        size = s.size if s.size is not None or s.archive_mode is None else committed_size
        rows.append((table_name, flow_name, s.path, size, s.create_time, s.discovery_time, s.commit_time,
                     s.batch_id, s.state, first, lines, committed_size, committed_mtime, modified,
                     s.archive_time, s.archive_mode, s.move_location))
    return rows
