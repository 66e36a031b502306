"""Builders for hand-made event logs: a few lines describe an update; the rows are the ones the
local runner writes (same builders in pipelines/eventlog/events.py), in Databricks' schema."""

from __future__ import annotations

import itertools
import json
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta, timezone
from typing import Any, Iterable, Mapping, Sequence

from pipelines import insights
from pipelines.eventlog import events as event_builders
from pipelines.eventlog.schema import EVENT_LOG_SCHEMA
from pipelines.observability.catalog import CLOCK, TABLES
from pipelines.config import TableSpec
from pipelines.table_sizes import empty_sizes_sql, ingest_tables_sql

NO_INGEST_TABLES = ("(SELECT CAST(NULL AS STRING) AS table_name, CAST(NULL AS STRING) AS table_kind, "
                    "CAST(NULL AS STRING) AS source_table, CAST(NULL AS DOUBLE) AS max_hours_without_rows WHERE false)")


def ingest_tables_of(limits: Mapping[str, float | None]) -> str:
    """The ingest tables of a configuration with these tables (name -> max_hours_without_rows), as the
    observability pipeline is given them (`table_sizes.ingest_tables_sql`)."""
    if not limits:
        return NO_INGEST_TABLES
    specs = [TableSpec(name=n, format="json", columns=(), landing=n, max_hours_without_rows=h) for n, h in limits.items()]
    return ingest_tables_sql(specs)

PIPELINE, PIPELINE_ID = "lakewatch_ingest", "p-1"
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
    """Events of one update. Times are seconds after `start`.

    `validate_only` / `explore_only` go into the create_update details; `maintenance_id` into the
    origin of every event (internal updates, as Databricks marks them). A full refresh (`full_refresh`
    or a `full_refresh_selection`) goes through the RESETTING state after INITIALIZING, as the local
    runner and Databricks log it. With `documented_create_update` the create_update details hold only
    the keys Databricks documents (`run_as`, `cause`): no `full_refresh*`, `validate_only`,
    `explore_only` (those are observed in real logs, not documented)."""

    update_id: str
    start: datetime
    cause: str = "USER_ACTION"
    full_refresh: bool = False
    full_refresh_selection: Sequence[str] = ()
    validate_only: bool = False
    explore_only: bool = False
    maintenance_id: str | None = None
    documented_create_update: bool = False
    events: list[dict[str, Any]] = field(default_factory=list)

    def __post_init__(self) -> None:
        o = self.origin()
        created = event_builders.create_update(o, self.start, cause=self.cause, full_refresh=self.full_refresh,
                                               full_refresh_selection=self.full_refresh_selection,
                                               control_plane_seq_no=next(_seq))
        details = json.loads(created["details"])
        details["create_update"].update(validate_only=self.validate_only, explore_only=self.explore_only)
        if self.documented_create_update:
            details["create_update"] = {k: details["create_update"][k] for k in ("run_as", "cause")}
        created["details"] = json.dumps(details, separators=(",", ":"))
        self.add(created)
        self.add(event_builders.user_action(o, self.start, user_name="ana@example.com", control_plane_seq_no=next(_seq)))
        self.state("INITIALIZING", 0.5)
        if self.full_refresh or self.full_refresh_selection:
            self.state("RESETTING", 0.7)

    def add(self, event: dict[str, Any]) -> "Update":
        if self.maintenance_id is not None:
            event["origin"]["maintenance_id"] = self.maintenance_id
        self.events.append(event)
        return self

    def origin(self, flow: str | None = None, batch_id: int | None = None) -> event_builders.Origin:
        o = event_builders.Origin(pipeline_id=PIPELINE_ID, pipeline_name=PIPELINE, update_id=self.update_id)
        if flow is None:
            return o
        sink = flow.endswith("_to_corrupt_records_sink")
        return o.replace(flow_name=qualified(flow), flow_id=f"f-{flow}", batch_id=batch_id,
                         dataset_name=None if sink else qualified(flow),
                         sink_name="corrupt_records_sink" if sink else None)

    def at(self, seconds: float) -> datetime:
        return self.start + timedelta(seconds=seconds)

    def state(self, state: str, at: float, error: tuple[str, str] | None = None,
              chain: Sequence[tuple[str, str]] = ()) -> "Update":
        """The update's state event; `error` puts one exception on it, `chain` a whole exception chain
        (outermost first), as the local runner writes a failed update's error (the first failed flow's
        chain)."""
        err = event_builders.error([event_builders.ExceptionInfo(*error)], fatal=True) if error else None
        if chain:
            err = event_builders.error([event_builders.ExceptionInfo(c, m) for c, m in chain], fatal=True)
        return self.add(event_builders.update_progress(self.origin(), self.at(at), state, error_struct=err,
                                                       control_plane_seq_no=next(_seq)))

    def flow(self, name: str, status: str, at: float, error: Sequence[tuple[str, str]] = (),
             rows: int | None = None, fatal: bool = True) -> "Update":
        """A flow's status event; `rows` puts `num_output_rows` on it, as a materialized view's terminal
        event may on Databricks. `fatal` False: an error the flow is retried after (`error.fatal`)."""
        err = event_builders.error([event_builders.ExceptionInfo(c, m) for c, m in error], fatal=fatal) if error else None
        event = event_builders.flow_progress(self.origin(name), self.at(at), status, error_struct=err,
                                             data_plane_seq_no=next(_seq), data_plane_instance="test")
        if rows is not None:
            details = json.loads(event["details"])
            details["flow_progress"]["metrics"] = {"num_output_rows": rows}
            event["details"] = json.dumps(details, separators=(",", ":"))
        return self.add(event)

    def metrics(self, name: str, at: float, rows: int | None = None, backlog_files: int | None = None,
                backlog_bytes: int | None = None, dropped: int | None = None,
                expectations: Iterable[tuple[str, int, int]] | None = None, batch_id: int | None = None,
                status: str = "RUNNING", streaming: bool = True, output_bytes: int | None = None) -> "Update":
        results = None
        if expectations is not None:
            results = [event_builders.expectation_result(n, qualified(name), p, f) for n, p, f in expectations]
        return self.add(event_builders.flow_metrics(
            self.origin(name, batch_id), self.at(at), num_output_rows=rows, backlog_bytes=backlog_bytes,
            backlog_files=backlog_files, dropped_records=dropped, expectations=results, status=status,
            streaming=streaming, num_output_bytes=output_bytes, data_plane_seq_no=next(_seq), data_plane_instance="test",
        ))

    def warn(self, measurement: str, reason: str, at: float, flow: str | None = None) -> "Update":
        """lakewatch's WARN event for a figure that could not be measured."""
        return self.add(event_builders.measurement_warning(self.origin(flow), self.at(at), measurement, reason,
                                                           data_plane_seq_no=next(_seq), data_plane_instance="test"))

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
                     quarantined: int = 0, rescued: int = 0, backlog_files: int | None = 0,
                     clean_failed: int | None = None, final_state: str = "COMPLETED",
                     full_refresh: bool = False, documented_create_update: bool = False) -> Update:
    """An ingest update: bronze, its quarantine flow and (when `clean_failed` is given) the clean table,
    each with one micro-batch. `backlog_files` None: the backlog could not be measured (the landing
    folder could not be listed), so bronze's metrics carry no backlog and lakewatch's WARN event says
    why, as pipelines/local/measure.py writes them."""
    u = Update(update_id, start, full_refresh=full_refresh, documented_create_update=documented_create_update)
    u.state("RUNNING", 1)
    backlog_bytes = None if backlog_files is None else backlog_files * 1000
    u.ran("orders_bronze", 2, duration / 2, rows, backlog_files=backlog_files, backlog_bytes=backlog_bytes,
          expectations=[("no_rescued_data", rows - rescued, rescued), ("no_corrupt_record", rows - quarantined, quarantined)],
          batch_id=0)
    if backlog_files is None:
        u.warn("backlog", "landing folder not readable: listing failed", duration / 2, flow="orders_bronze")
    u.ran("orders_to_corrupt_records_sink", duration / 2 + 1, duration - 2, quarantined, batch_id=0)
    if clean_failed is not None:
        clean = rows - quarantined
        u.ran("orders", duration / 2 + 1, duration - 3, clean,
              expectations=[("non_negative_amount", clean - clean_failed, clean_failed)], batch_id=0)
    return u.state(final_state, duration)


def event_rows(*updates: Update) -> list[tuple]:
    return [event_builders.to_row(e) for u in updates for e in u.events]


def needed_for(names: Sequence[str]) -> set[str]:
    """The tables `names` read, directly or through other tables (and themselves)."""
    needed = set(names)
    for table in reversed(TABLES):
        if table.name in needed:
            needed |= {t.name for t in TABLES if t.name != table.name and f" {t.name}" in " ".join(table.sql.split())}
    return needed


FILE_STATE_DDL = (
    "table_name STRING, flow_name STRING, path STRING, size BIGINT, create_time TIMESTAMP, "
    "discovery_time TIMESTAMP, commit_time TIMESTAMP, batch_id BIGINT, state STRING, "
    "first_commit_time TIMESTAMP, lines BIGINT, committed_size BIGINT, committed_modification_time TIMESTAMP, "
    "modified_after_ingest BOOLEAN, archive_time TIMESTAMP, archive_mode STRING, move_location STRING"
)
BRONZE_DDL = (
    "table_name STRING, bronze_table STRING, _rescued_data STRING, _is_corrupt BOOLEAN, _source_file STRING, "
    "_source_file_modification_time TIMESTAMP, _ingested_at TIMESTAMP, _content_hash STRING"
)
SINK_DDL = (
    "source_table STRING, _corrupt_record STRING, _record_hash STRING, _source_file STRING, "
    "_source_file_modification_time TIMESTAMP, _ingested_at TIMESTAMP, _quarantined_at TIMESTAMP"
)


def file_row(path: str, created: datetime, committed: datetime | None = None, *, table: str = "orders_bronze",
             first_commit: datetime | None | str = "same", lines: int | None = None, size: int = 10,
             modified: bool | None = False, batch_id: int | None = 0, state: str | None = None,
             archive_mode: str | None = None, archived: datetime | None = None,
             move_location: str | None = None) -> tuple:
    """One file-state row (the local `lakewatch_file_state` columns). `first_commit` defaults to the
    commit (as on Databricks, or a file committed once); `state` to committed/pending; `archive_mode`
    (MOVE, DELETE), `archived` and `move_location` describe a file cleanSource took away."""
    first = committed if first_commit == "same" else first_commit
    state = state or ("committed" if committed is not None else "pending")
    done = state == "committed"
    return (f"main.lakewatch.{table}", table, path, size, created, committed, committed,
            batch_id if done else None, state, first, lines, size if done else None,
            created if done else None, modified if done else None, archived, archive_mode, move_location)


def bronze_rows(path: str, n: int, arrived: datetime, ingested: datetime, *, table: str = "orders",
                rescued: Sequence[str | None] = (), corrupt: int = 0, contents: Sequence[str] = (),
                source_file: str | None = None) -> list[tuple]:
    """`n` bronze rows of one file: the first ones with the given `_rescued_data`, the last `corrupt`
    ones corrupt; each row's content (its hash) from `contents`, else one of its own. `source_file` is
    the `_source_file` (Spark's `_metadata.file_path`, a URI); by default `file:` + `path`, which is
    that URI only for a name without characters a URI escapes."""
    rows = []
    for i in range(n):
        data = rescued[i] if i < len(rescued) else None
        content = contents[i] if i < len(contents) else f"{path}#{i}"
        rows.append((table, f"{table}_bronze", data, i >= n - corrupt, source_file or f"file:{path}", arrived,
                     ingested, content))
    return rows


def sink_row(path: str, line_hash: str, arrived: datetime, ingested: datetime, *, table: str = "orders",
             source_file: str | None = None) -> tuple:
    """A quarantined line of one file; `source_file` as in `bronze_rows`."""
    return (table, "not json", line_hash, source_file or f"file:{path}", arrived, ingested, ingested)


TINY_DATA_CONF = {
    "spark.sql.codegen.wholeStage": "false",
    "spark.sql.adaptive.enabled": "false",
    "spark.sql.shuffle.partitions": "1",
}


def clock_sql(now: datetime | None) -> str:
    """The health metrics' clock: the pipeline's own (`CLOCK`), or the fixed instant `now`."""
    return CLOCK if now is None else f"TIMESTAMP '{now.astimezone(timezone.utc):%Y-%m-%d %H:%M:%S.%f}'"


def in_pipeline(update: Update, pipeline_id: str, pipeline_name: str) -> Update:
    """`update` as an update of another pipeline: every event's origin names that pipeline."""
    for event in update.events:
        event["origin"]["pipeline_id"] = pipeline_id
        event["origin"]["pipeline_name"] = pipeline_name
    return update


OTHER_LOG, OTHER_ID, OTHER_NAME = "t_orders_daily_log", "p-2", "orders_daily"
NOT_FOUND = "[TABLE_OR_VIEW_NOT_FOUND] The table or view `main`.`lakewatch`.`orders` cannot be found."


def plain_pipeline_update(update_id: str, start: datetime, state: str, failed: int = 0) -> Update:
    """An update of another observed pipeline written with plain pyspark.pipelines (the bundle's
    orders_daily): its materialized view with two expectations (`failed` rows failing the second), or
    its analysis failing on a missing table."""
    u = in_pipeline(Update(update_id, start), OTHER_ID, OTHER_NAME)
    u.state("RUNNING", 1)
    if state == "FAILED":
        error = ("org.apache.spark.sql.AnalysisException", NOT_FOUND)
        u.flow("orders_daily", "FAILED", 3, error=[error])
        u.state("FAILED", 4, error=error)
    else:
        u.flow("orders_daily", "RUNNING", 2)
        u.metrics("orders_daily", 5, rows=10, status="COMPLETED", streaming=False,
                  expectations=[("has_orders", 10, 0), ("known_currency", 10 - failed, failed)])
        u.flow("orders_daily", "COMPLETED", 5)
        u.state("COMPLETED", 6)
    return in_pipeline(u, OTHER_ID, OTHER_NAME)


def observability_views(spark: Any, updates: Sequence[Update], file_state: Sequence[tuple] = (),
                        sink: Sequence[tuple] = (), bronze: Sequence[tuple] = (),
                        only: Sequence[str] | None = None, now: datetime | None = None,
                        limits: Mapping[str, float | None] | None = None,
                        observed: Mapping[str, Sequence[Update]] | None = None,
                        unread: Sequence[str] = ()) -> dict[str, str]:
    """Registers the sources and the observability tables (all, or those `only` needs) as temporary
    views; returns the sources. The health metrics read the clock at `now` when given (a scenario
    placed around a fixed instant reads the same on any day, at any hour). Tunes the session for tiny
    inputs, which runs these views faster: no whole-stage code generation, no adaptive execution, one
    shuffle partition.

    `observed` maps the event logs of other observed pipelines (temporary view names) to their
    updates: `events` then reads each as the pipeline's flow per event log does (its query over that
    log, unioned); `unread` names configured event logs that do not exist."""
    for key, value in TINY_DATA_CONF.items():
        spark.conf.set(key, value)
    observed = dict(observed or {})
    for log, logged in observed.items():
        spark.createDataFrame(event_rows(*logged), EVENT_LOG_SCHEMA).createOrReplaceTempView(log)
    observed_rows = ["('t_event_log', true, CAST(NULL AS STRING))"]
    observed_rows += [f"('{log}', false, CAST(NULL AS STRING))" for log in observed]
    observed_rows += [f"('{log}', false, 'the event log table does not exist')" for log in unread]
    spark.createDataFrame(event_rows(*updates), EVENT_LOG_SCHEMA).createOrReplaceTempView("t_event_log")
    spark.createDataFrame(list(file_state), FILE_STATE_DDL).createOrReplaceTempView("t_file_state")
    spark.createDataFrame(list(sink), SINK_DDL).createOrReplaceTempView("t_sink")
    spark.createDataFrame(list(bronze), BRONZE_DDL).createOrReplaceTempView("t_bronze")
    sources = {"event_log": "t_event_log", "file_state": "t_file_state", "sink": "t_sink", "bronze_union": "t_bronze",
               # no size snapshots, no ingest tables expected (tests/sql/test_table_sizes.py has its own)
               "table_sizes": empty_sizes_sql(), "ingest_tables": ingest_tables_of(limits or {}), "now": clock_sql(now),
               "insight_rules": f"({insights.rules_sql()})",
               "observed_event_logs": "(SELECT * FROM VALUES " + ", ".join(observed_rows)
                                      + " AS o(event_log, follows_lakewatch_pattern, not_read_reason))",
               "event_log_errors": "(" + " UNION ALL ".join(f"SELECT id, error, `timestamp` FROM {log}"
                                                            for log in ["t_event_log", *observed]) + ")"}
    wanted = needed_for(only) if only else {t.name for t in TABLES}
    for table in (t for t in TABLES if t.name in wanted):
        query = table.render(sources)
        if table.name == "events":
            query = " UNION ALL ".join([query, *(table.render({**sources, "event_log": log}) for log in observed)])
        # Materialized once, as the pipeline does, so later tables do not recompute earlier ones.
        spark.sql(query).localCheckpoint().createOrReplaceTempView(table.name)
    return sources


@dataclass
class Inputs:
    """Everything the observability tables read: event log, file state, bronze rows, sink rows."""

    updates: list[Update]
    file_state: list[tuple] = field(default_factory=list)
    bronze: list[tuple] = field(default_factory=list)
    sink: list[tuple] = field(default_factory=list)
    limits: dict[str, float | None] = field(default_factory=dict)  # configured tables: max_hours_without_rows
    observed: dict[str, list[Update]] = field(default_factory=dict)  # other pipelines' event logs: their updates

    def views(self, spark: Any, only: Sequence[str] | None = None, now: datetime | None = None) -> dict[str, str]:
        return observability_views(spark, self.updates, file_state=self.file_state, sink=self.sink,
                                   bronze=self.bronze, only=only, now=now, limits=self.limits,
                                   observed=self.observed)


def full_refresh_story(now: datetime, databricks: bool = False,
                       documented_create_update: bool = False) -> tuple[Inputs, Inputs]:
    """A healthy pipeline before and after a healthy full refresh.

    Two days ago `u1` ingested f1 (4 lines: 2 with rescued data, 1 corrupt); today `u2` and `u3`
    ingested f2 and f3 (3 clean lines each); then `fr`, a full refresh, read all three files again:
    bronze re-read (new `_ingested_at`, same file times), the corrupt line quarantined a second time,
    every file committed again. Locally the file state keeps each file's first commit; with
    `databricks`, as `cloud_files_state()` does, only the new commit is known. With
    `documented_create_update` every create_update holds only the keys Databricks documents, so the
    full refresh shows only in its RESETTING state."""
    day0 = now - timedelta(days=2)
    doc = documented_create_update
    u1 = completed_update("u1", day0, rows=4, quarantined=1, rescued=2, clean_failed=0, documented_create_update=doc)
    u2 = completed_update("u2", now - timedelta(minutes=50), rows=3, clean_failed=0, documented_create_update=doc)
    u3 = completed_update("u3", now - timedelta(minutes=30), rows=3, clean_failed=0, documented_create_update=doc)
    fr = completed_update("fr", now - timedelta(minutes=10), duration=200, rows=10, quarantined=1, rescued=2,
                          clean_failed=0, full_refresh=True, documented_create_update=doc)
    files = [("/l/f1.json", u1, 4), ("/l/f2.json", u2, 3), ("/l/f3.json", u3, 3)]
    recommit = fr.at(5)

    def state(after: bool) -> list[tuple]:
        rows = []
        for path, u, lines in files:
            created, first = u.start - timedelta(seconds=60), u.at(30)
            commit = recommit if after else first
            rows.append(file_row(path, created, commit, first_commit=commit if databricks else first, lines=lines))
        return rows

    def bronze(after: bool) -> list[tuple]:
        rows = []
        for path, u, lines in files:
            rescued = ['{"coupon":"A"}', '{"Amount":"1"}'] if path.endswith("f1.json") else []
            rows += bronze_rows(path, lines, u.start - timedelta(seconds=60), recommit if after else u.at(30),
                                rescued=rescued, corrupt=1 if path.endswith("f1.json") else 0)
        return rows

    first_sink = [sink_row("/l/f1.json", "h1", day0 - timedelta(seconds=60), u1.at(30))]
    before = Inputs([u1, u2, u3], state(False), bronze(False), first_sink)
    after = Inputs([u1, u2, u3, fr], state(True), bronze(True),
                   first_sink + [sink_row("/l/f1.json", "h1", day0 - timedelta(seconds=60), recommit)])
    return before, after
