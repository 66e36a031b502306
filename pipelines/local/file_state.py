"""The local counterpart of Auto Loader's `cloud_files_state()`, as a table.

Same column names as `cloud_files_state` (path, size, create_time, discovery_time, commit_time),
plus the table and flow the file feeds, the batch and the state (committed, discovered, pending),
so `commit_time - create_time` is a file's ingestion latency on both engines.
"""

from __future__ import annotations

from typing import Iterable

from pyspark.sql.types import LongType, StringType, StructField, StructType, TimestampType

from pipelines.local.checkpoints import FileState

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
    ]
)


def rows_for(table_name: str, flow_name: str, states: Iterable[FileState]) -> list[tuple]:
    return [
        (table_name, flow_name, s.path, s.size, s.create_time, s.discovery_time, s.commit_time, s.batch_id, s.state)
        for s in states
    ]
