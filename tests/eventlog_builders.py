"""Builders for hand-made event logs: a few lines describe an update; the rows are the ones the
local runner writes (same builders in pipelines/eventlog/events.py), in Databricks' schema."""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta, timezone
from typing import Any, Iterable, Sequence

from pipelines.eventlog import events as E
from pipelines.eventlog.schema import EVENT_LOG_SCHEMA
from pipelines.observability.tables import TABLES

PIPELINE = "lakewatch_ingest"
CATALOG_SCHEMA = "main.lakewatch"
_seq = itertools.count(1)


def utc(*args: int) -> datetime:
    return datetime(*args, tzinfo=timezone.utc)


def today_at(hour: int, minute: int = 0) -> datetime:
    d = date.today()
    return datetime(d.year, d.month, d.day, hour, minute, tzinfo=timezone.utc)


def qualified(flow: str) -> str:
    """Flows named after their table are qualified in the event log, as SDP and Databricks do."""
    return flow if flow.endswith("_to_corrupt_records_sink") else f"{CATALOG_SCHEMA}.{flow}"


@dataclass
class Update:
    """Events of one update. Times are seconds after `start`."""

    update_id: str
    start: datetime
    cause: str = "USER_ACTION"
    full_refresh: bool = False
    events: list[dict[str, Any]] = field(default_factory=list)

    def __post_init__(self) -> None:
        o = self.origin()
        self.events.append(E.create_update(o, self.start, cause=self.cause, full_refresh=self.full_refresh,
                                           control_plane_seq_no=next(_seq)))
        self.events.append(E.user_action(o, self.start, user_name="ana@example.com", control_plane_seq_no=next(_seq)))
        self.state("INITIALIZING", 0.5)

    def origin(self, flow: str | None = None, batch_id: int | None = None) -> E.Origin:
        o = E.Origin(pipeline_id="p-1", pipeline_name=PIPELINE, update_id=self.update_id)
        if flow is None:
            return o
        sink = flow.endswith("_to_corrupt_records_sink")
        return o.replace(flow_name=qualified(flow), flow_id=f"f-{flow}", batch_id=batch_id,
                         dataset_name=None if sink else qualified(flow),
                         sink_name="corrupt_records_sink" if sink else None)

    def at(self, seconds: float) -> datetime:
        return self.start + timedelta(seconds=seconds)

    def state(self, state: str, at: float, error: tuple[str, str] | None = None) -> "Update":
        err = E.error([E.ExceptionInfo(*error)], fatal=True) if error else None
        self.events.append(E.update_progress(self.origin(), self.at(at), state, error_struct=err,
                                             control_plane_seq_no=next(_seq)))
        return self

    def flow(self, name: str, status: str, at: float, error: Sequence[tuple[str, str]] = ()) -> "Update":
        err = E.error([E.ExceptionInfo(c, m) for c, m in error], fatal=True) if error else None
        self.events.append(E.flow_progress(self.origin(name), self.at(at), status, error_struct=err,
                                           data_plane_seq_no=next(_seq), data_plane_instance="test"))
        return self

    def metrics(self, name: str, at: float, rows: int | None = None, backlog_files: int | None = None,
                backlog_bytes: int | None = None, dropped: int | None = None,
                expectations: Iterable[tuple[str, int, int]] | None = None, batch_id: int | None = None) -> "Update":
        results = None
        if expectations is not None:
            results = [E.expectation_result(n, qualified(name), p, f) for n, p, f in expectations]
        self.events.append(E.flow_metrics(
            self.origin(name, batch_id), self.at(at), num_output_rows=rows, backlog_bytes=backlog_bytes,
            backlog_files=backlog_files, dropped_records=dropped, expectations=results,
            data_plane_seq_no=next(_seq), data_plane_instance="test",
        ))
        return self

    def ran(self, name: str, start: float, end: float, rows: int | None, status: str = "COMPLETED",
            **metrics: Any) -> "Update":
        """A flow's usual life: QUEUED, RUNNING, one metrics event (when rows given), final status."""
        self.flow(name, "QUEUED", start - 0.2).flow(name, "RUNNING", start)
        if rows is not None or metrics:
            self.metrics(name, end - 0.1, rows=rows, **metrics)
        return self.flow(name, status, end)

    def completed(self, at: float) -> "Update":
        return self.state("RUNNING", 1).state("COMPLETED", at)


def completed_update(update_id: str, start: datetime, duration: float = 60.0, rows: int = 100,
                     quarantined: int = 0, rescued: int = 0, backlog_files: int = 0,
                     clean_failed: int | None = None, final_state: str = "COMPLETED") -> Update:
    """An ingest update: bronze, its quarantine flow and (when `clean_failed` is given) the clean view."""
    u = Update(update_id, start)
    u.state("RUNNING", 1)
    u.ran("orders_bronze", 2, duration / 2, rows, backlog_files=backlog_files, backlog_bytes=backlog_files * 1000,
          expectations=[("no_rescued_data", rows - rescued, rescued), ("no_corrupt_record", rows - quarantined, quarantined)])
    u.ran("orders_to_corrupt_records_sink", duration / 2 + 1, duration - 2, quarantined)
    if clean_failed is not None:
        clean = rows - quarantined
        u.ran("orders", duration / 2 + 1, duration - 3, clean,
              expectations=[("non_negative_amount", clean - clean_failed, clean_failed)])
    return u.state(final_state, duration)


def event_rows(*updates: Update) -> list[tuple]:
    return [E.to_row(e) for u in updates for e in u.events]


def needed_for(names: Sequence[str]) -> set[str]:
    """The tables `names` read, directly or through other tables (and themselves)."""
    needed = set(names)
    for table in reversed(TABLES):
        if table.name in needed:
            needed |= {t.name for t in TABLES if t.name != table.name and f" {t.name}" in " ".join(table.sql.split())}
    return needed


def observability_views(spark: Any, updates: Sequence[Update], file_state: Sequence[tuple] = (),
                        sink: Sequence[tuple] = (), bronze: Sequence[tuple] = (),
                        only: Sequence[str] | None = None) -> dict[str, str]:
    """Registers the sources and the observability tables (all, or those `only` needs) as temporary
    views; returns the sources."""
    spark.createDataFrame(event_rows(*updates), EVENT_LOG_SCHEMA).createOrReplaceTempView("t_event_log")
    spark.createDataFrame(
        list(file_state),
        "table_name STRING, flow_name STRING, path STRING, size BIGINT, create_time TIMESTAMP, "
        "discovery_time TIMESTAMP, commit_time TIMESTAMP, batch_id BIGINT, state STRING",
    ).createOrReplaceTempView("t_file_state")
    spark.createDataFrame(
        list(sink),
        "source_table STRING, _corrupt_record STRING, _record_hash STRING, _source_file STRING, "
        "_source_file_modification_time TIMESTAMP, _ingested_at TIMESTAMP, _quarantined_at TIMESTAMP",
    ).createOrReplaceTempView("t_sink")
    spark.createDataFrame(
        list(bronze), "table_name STRING, _rescued_data STRING, _source_file STRING, _ingested_at TIMESTAMP"
    ).createOrReplaceTempView("t_bronze")
    sources = {"event_log": "t_event_log", "file_state": "t_file_state", "sink": "t_sink", "bronze_union": "t_bronze"}
    wanted = needed_for(only) if only else {t.name for t in TABLES}
    for table in (t for t in TABLES if t.name in wanted):
        # Materialized once, as the pipeline does, so later tables do not recompute earlier ones.
        spark.sql(table.render(sources)).localCheckpoint().createOrReplaceTempView(table.name)
    return sources
