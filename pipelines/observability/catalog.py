"""The observability datasets, read from their definition files: one `.sql` file per dataset in
transformations/observability/ (name, kind, comment, columns with comments, partition columns, table
properties, query), which both engines run as they are.

Alerts and the dashboard only read the resulting tables. The SQL is written in the dialect both
Databricks SQL and Spark SQL accept (`get_json_object`, `from_json`, `try_cast`, `max_by`, aggregate
`FILTER`, `percentile`), never the `details:path` colon syntax on the STRING column, which only
Databricks accepts.

What differs per engine or deployment is read through views that the observability pipeline's Python
definition file (transformations/observability/sources.py) declares, and through the pipeline
configuration: `${lakewatch.event_log}` (the ingest pipeline's event log table, substituted by both
engines from the configuration), `landing_file_state` (one row per landing file: the local file-state
table, or `cloud_files_state()` on Databricks, with the columns listed under `landing_files`),
`quarantine_sink` (the quarantine sink, or no rows before it exists), `bronze_union` (rows of every
bronze table, `bronze_union_sql`), `table_size_snapshots` (the job's snapshots of the ingest tables'
sizes, pipelines/table_sizes.py, or no rows before the first), `ingest_tables` (the ingest tables a
snapshot should hold: `table_sizes.ingest_tables_sql`), `clock` (the instant of the refresh) and
`insight_rules` (pipelines/insights.py). Other datasets are referred to by their bare names (`events`,
`update_status`, ...), so the same text runs in the pipeline and, in tests, over temporary views
(`ObservabilityTable.render` puts relations in the place of those views).

Kinds of table, and what is incremental where
---------------------------------------------
- `events` and `errors` are STREAMING tables: `events` reads the event log as a stream (the event log is append-only Delta; `skipChangeCommits`
  lets a retention delete on Databricks pass), `errors` reads `events` the same way. Their SQL is
  one SELECT list over `STREAM(...) WITH ('skipChangeCommits' = 'true')` and one WHERE clause
  (`StreamSpec`), which the history flow applies to its own stream and tests run as plain SQL. Each event is parsed once, in the
  update after it was written, on both engines. `events` has a second flow, `events_from_history`,
  when the event log's history table exists (the job's archive task, jobs/archive_event_log.sql,
  fills it): the history read as a stream without the ids the live log still holds, so an event the
  live log no longer has (retention, or gone before a full refresh) comes in once
  (`pipeline.history_query`).
- Every other published table is a MATERIALIZED VIEW. Open-source SDP recomputes materialized views
  in full at every update (locally one overwrite per view, pipelines/local/sdp_classes.py), so
  locally they cost what their inputs cost.
  On Databricks a materialized view can be refreshed incrementally when its query is deterministic
  and its Delta inputs have change data feed and row tracking: every table another view reads is
  published with `delta.enableChangeDataFeed` and `delta.enableRowTracking`, no view reads the
  clock except `health_metrics` (it is about now, and is recomputed at every refresh; its clock is
  the view `clock`, `CLOCK` in both engines, a fixed instant in tests), and "last N days"
  windows are bounded by the data (`flow_bottlenecks`: the 7 days up to the latest flow run).
  Eligible for incremental refresh (group-by aggregates and joins over Delta): `update_status`, `flow_throughput`, `flow_throughput_daily`, `backlog`, `expectation_results`,
  `expectation_results_daily`, `dropped_records`, `error_classes`, `schema_drift`, `file_latency`,
  `measurement_gaps`. Recomputed in full on Databricks too: views with window functions, percentiles,
  ranks, collect_set/ORDER BY ... LIMIT or non-Delta inputs (`landing_files` reads `cloud_files_state`
  and the landing files, so it and `reconciliation` are recomputed; `update_status_daily`,
  `ingestion_latency_hourly`, `ingestion_latency_by_update`, `expectation_results_weekly`,
  `flow_bottlenecks`, `quarantine_daily`, `anomalies`, `table_growth`, `table_freshness` (max_by, and
  `ingest_tables` is a VALUES list), `health_metrics`). Which technique a refresh used is in the
  observability pipeline's own event log (`planning_information` events).
- `quarantine_deliveries` is a pipeline-private temporary view (the sink is small: corrupt lines only).

Trust rules the SQL follows
---------------------------
- Internal updates are left out from `update_status` on: a `create_update` with `validate_only` or
  `explore_only`, or events with an `origin.maintenance_id`, as Databricks' own monitoring does.
  `events` and `errors` keep every event; everything else keeps only updates in `update_status`.
- NULL stays NULL: a figure no event carried is NULL, never 0; `health_metrics.reason` says why a
  metric is NULL. A zero is written only where it is measured (a count of rows found, a flow that
  completed without running a micro-batch wrote nothing).
- A full refresh is an update whose create_update says so or that went through the RESETTING state
  (the documented sign), derived once, in `update_status` (its definition file says how).
- A full refresh is not new data: file latency is measured from a file's first commit ever
  (`first_commit_time`); drift and quarantine are counted on the day the file arrived (its
  modification time); a line the sink already quarantined from the same file is a re-delivery; the
  "last update" health metrics that a full refresh would set off read the last incremental update or
  only first deliveries; expectation counts of a dataset fully refreshed in an update are kept per
  update but left out of the daily and weekly tables (they count history again).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Mapping, Sequence

from pipelines import sqldefs
from pipelines.dataset_names import OBSERVABILITY_DEFINITIONS

STREAMING_TABLE = "streaming_table"
MATERIALIZED_VIEW = "materialized_view"
TEMPORARY_VIEW = "temporary_view"
_KINDS = {sqldefs.STREAMING_TABLE: STREAMING_TABLE, sqldefs.MATERIALIZED_VIEW: MATERIALIZED_VIEW,
          sqldefs.TEMPORARY_VIEW: TEMPORARY_VIEW}

# Bronze's own expectations; rescued and corrupt rows have their own metrics (drift, quarantine).
BRONZE_EXPECTATIONS = "('no_rescued_data', 'no_corrupt_record')"
# Delta properties of tables other materialized views read (Databricks' incremental refresh needs them).
INCREMENTAL_SOURCE_PROPERTIES = {"delta.enableChangeDataFeed": "true", "delta.enableRowTracking": "true"}
# The instant the health metrics are computed at (the view `clock`), in both engines.
CLOCK = "current_timestamp()"
# Published for other tables to read, not shown on the dashboard.
INTERMEDIATE = ("events", "landing_files")

# What the SQL reads in place of each source, and the source's key in `render`'s mapping.
EVENT_LOG = "${lakewatch.event_log}"
CLOCK_READ = "(SELECT now FROM clock)"
SOURCE_VIEWS = {
    "file_state": "landing_file_state",
    "sink": "quarantine_sink",
    "bronze_union": "bronze_union",
    "table_sizes": "table_size_snapshots",
    "ingest_tables": "ingest_tables",
    "insight_rules": "insight_rules",
    "observed_event_logs": "observed_event_logs",
    "event_log_errors": "event_log_errors",
}
_STREAM_READ = re.compile(r"STREAM\s*\(\s*([^)\s]+)\s*\)\s*WITH\s*\(\s*'skipChangeCommits'\s*=\s*'true'\s*\)",
                          re.IGNORECASE)


@dataclass(frozen=True)
class StreamSpec:
    """A streaming table's query: `source` (the event log or a dataset) read as a stream, filtered by
    `where`, projected by `select`."""

    source: str
    select: tuple[str, ...]
    where: str


@dataclass(frozen=True)
class ObservabilityTable:
    name: str
    comment: str
    columns: tuple[tuple[str, str, str], ...]  # (name, type, comment)
    sql: str  # the query of its definition file
    partition_cols: tuple[str, ...] = ()
    kind: str = MATERIALIZED_VIEW
    stream: StreamSpec | None = None
    intermediate: bool = False
    properties: Mapping[str, str] = field(default_factory=dict)  # its TBLPROPERTIES, as declared

    @property
    def temporary(self) -> bool:
        """A pipeline-private view (no table is published)."""
        return self.kind == TEMPORARY_VIEW

    @property
    def streaming(self) -> bool:
        return self.kind == STREAMING_TABLE

    @property
    def schema_ddl(self) -> str:
        """Column list with comments, as `CREATE ... (...)` and `dp.table(schema=...)` take it."""
        return ", ".join(f"`{name}` {data_type} COMMENT {sqldefs.literal(comment)}"
                         for name, data_type, comment in self.columns)

    @property
    def column_names(self) -> tuple[str, ...]:
        return tuple(c[0] for c in self.columns)

    def render(self, sources: Mapping[str, str]) -> str:
        """The query as plain batch SQL, each source named in `sources` (keys of `SOURCE_VIEWS`, and
        `event_log`, `now`) replaced by the relation given; a stream read becomes a batch read."""
        text = _STREAM_READ.sub(r"\1", self.sql)
        if "event_log" in sources:
            text = text.replace(EVENT_LOG, sources["event_log"])
        if "now" in sources:
            text = text.replace(CLOCK_READ, sources["now"])
        for key, view in SOURCE_VIEWS.items():
            if key in sources:
                text = re.sub(rf"(?<![\w.]){view}(?![\w.])", lambda _: sources[key], text)
        return text


def _stream_spec(query: str) -> StreamSpec:
    m = re.match(r"SELECT\s+(?P<select>.*?)\nFROM\s+" + _STREAM_READ.pattern + r"\s*\nWHERE\s+(?P<where>.*)$",
                 query, re.DOTALL | re.IGNORECASE)
    if not m:
        raise ValueError(f"a streaming table's query is not SELECT ... FROM STREAM(...) WITH (...) WHERE ...: {query[:80]}")
    select = tuple(" ".join(e.split()) for e in sqldefs.split_top_level(m.group("select")))
    return StreamSpec(m.group(2), select, " ".join(m.group("where").split()))


def _temporary_columns(text: str) -> tuple[tuple[str, str, str], ...]:
    """A temporary view's columns, from its file's `--   name TYPE: comment` lines (a view declares no types)."""
    return tuple((m.group(1), m.group(2), m.group(3))
                 for m in re.finditer(r"^--\s+(\w+) ([^:\n]+): (.*)$", text, re.MULTILINE))


def load(name: str) -> ObservabilityTable:
    """The dataset of `transformations/observability/<name>.sql`."""
    text = (OBSERVABILITY_DEFINITIONS / f"{name}.sql").read_text()
    [definition] = sqldefs.parse_file(text)
    assert definition.name == name, (name, definition.name)
    kind = _KINDS[definition.kind]
    return ObservabilityTable(
        name=name,
        comment=definition.comment or "",
        columns=_temporary_columns(text) if kind == TEMPORARY_VIEW else definition.columns,
        sql=definition.query.rstrip(";").rstrip(),
        partition_cols=definition.partition_cols,
        kind=kind,
        stream=_stream_spec(definition.query) if kind == STREAMING_TABLE else None,
        intermediate=name in INTERMEDIATE,
        properties=dict(definition.properties),
    )


def reads(table: ObservabilityTable, other: str) -> bool:
    """Whether `table`'s SQL reads the dataset named `other`."""
    text = " ".join(re.sub(r"\bSTREAM\b", " ", table.sql).replace("(", " ").replace(")", " ").split())
    return f"FROM {other} " in text + " " or f"JOIN {other} " in text + " "


def _in_dependency_order(tables: Sequence[ObservabilityTable]) -> tuple[ObservabilityTable, ...]:
    """Each table after the tables it reads; otherwise by name."""
    remaining = sorted(tables, key=lambda t: t.name)
    ordered: list[ObservabilityTable] = []
    while remaining:
        ready = next(t for t in remaining
                     if not any(reads(t, o.name) for o in remaining if o.name != t.name))
        ordered.append(ready)
        remaining.remove(ready)
    return tuple(ordered)


TABLES: tuple[ObservabilityTable, ...] = _in_dependency_order(
    [load(p.stem) for p in OBSERVABILITY_DEFINITIONS.glob("*.sql")])
PUBLISHED: tuple[ObservabilityTable, ...] = tuple(t for t in TABLES if not t.temporary)
# The tables for people (dashboard) rather than for other tables.
REPORTED: tuple[ObservabilityTable, ...] = tuple(t for t in PUBLISHED if not t.intermediate)

HEALTH_METRIC_NAMES = (
    "errors_last_24h", "failed_updates_last_24h", "last_update_failed", "last_update_duration_seconds",
    "last_update_duration_vs_median", "rows_last_update", "hours_since_rows_ingested", "lowest_pass_rate_last_24h", "backlog_files",
    "backlog_bytes", "backlog_growth_streak", "duration_week_over_week_change", "hours_since_last_success", "quarantined_rows_last_update", "rescued_rows_last_update",
    "ingestion_latency_p95_seconds_24h", "anomalies_last_update", "tables_without_rows", "metrics_missing",
    "files_not_reconciled", "rejected_rows_not_reconciled", "tables_files_late", "open_incidents", "pipelines_failing",
)


def read_by_views(name: str) -> bool:
    """Whether another observability table reads `name` (it then needs the incremental-source properties)."""
    return any(reads(t, name) for t in TABLES if t.name != name)


def table_properties(table: ObservabilityTable) -> dict[str, str]:
    """The properties a table's definition declares: `quality` gold, and the incremental-source
    properties when another view reads it."""
    properties = {"quality": "gold"}
    if read_by_views(table.name):
        properties.update(INCREMENTAL_SOURCE_PROPERTIES)
    return properties


def by_name(name: str) -> ObservabilityTable:
    for t in TABLES:
        if t.name == name:
            return t
    raise KeyError(name)


def content_hash_sql(columns: Sequence[str]) -> str:
    """SHA-256 of a bronze row's content: its data columns, rescued data and corrupt record, without
    the file, time and ingestion columns, so the same record landing from two files hashes alike."""
    fields = [f"'{c}', `{c}`" for c in (*columns, "_rescued_data", "_corrupt_record")]
    return f"sha2(to_json(named_struct({', '.join(fields)})), 256)"


def bronze_union_sql(tables: Sequence[tuple[str, str, Sequence[str]]]) -> str:
    """`(SELECT '<table>' AS table_name, ... FROM <bronze> UNION ALL ...)`: the bronze columns the drift,
    reconciliation and duplicate tables read, for (configured table name, qualified bronze table, data
    columns) triples."""
    parts = [
        f"SELECT '{name}' AS table_name, '{bronze.rsplit('.', 1)[-1].strip('`')}' AS bronze_table, "
        "_rescued_data, _corrupt_record IS NOT NULL AS _is_corrupt, _source_file, "
        f"_source_file_modification_time, _ingested_at, {content_hash_sql(columns)} AS _content_hash FROM {bronze}"
        for name, bronze, columns in tables
    ]
    return "(" + " UNION ALL ".join(parts) + ")"
