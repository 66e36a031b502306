"""Appends event rows to the event log Delta table (created with the exact published schema)."""

from __future__ import annotations

from typing import Any, Sequence

from pipelines.eventlog.events import to_row
from pipelines.eventlog.schema import EVENT_LOG_DDL, EVENT_LOG_SCHEMA

EVENT_LOG_COMMENT = (
    "Pipeline event log in the schema Databricks publishes through the pipeline event_log setting; "
    "written by the lakewatch local runner from measured run data."
)


class EventLogWriter:
    def __init__(self, spark: Any, table: str) -> None:
        self.spark = spark
        self.table = table

    def ensure_table(self) -> None:
        self.spark.sql(
            f"CREATE TABLE IF NOT EXISTS {self.table} ({EVENT_LOG_DDL}) USING DELTA "
            f"COMMENT '{EVENT_LOG_COMMENT}'"
        )

    def append(self, events: Sequence[dict[str, Any]]) -> None:
        if not events:
            return
        df = self.spark.createDataFrame([to_row(e) for e in events], EVENT_LOG_SCHEMA)
        df.write.format("delta").mode("append").saveAsTable(self.table)
