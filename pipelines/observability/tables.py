"""The observability tables: one definition per table (name, kind, comment, columns with comments, SQL).

This module is the single source of the SQL that the observability pipeline materializes; alerts and
the dashboard only read the resulting tables. The SQL is written in the dialect both Databricks SQL
and Spark SQL accept (`get_json_object`, `from_json`, `try_cast`, `max_by`, aggregate `FILTER`,
`percentile`), never the `details:path` colon syntax on the STRING column, which only Databricks accepts.

Placeholders: `{event_log}` (the ingest pipeline's event log table), `{file_state}` (one row per
landing file: the local file-state table, or `cloud_files_state()` on Databricks, with the columns
listed under `landing_files`), `{sink}` (the quarantine sink table), `{bronze_union}` (rows of every
bronze table, see `bronze_union_sql`), `{table_sizes}` (the job's snapshots of the ingest tables'
sizes, pipelines/table_sizes.py, or no rows before the first) and `{ingest_tables}` (the ingest tables
a snapshot should hold: `table_sizes.ingest_tables_sql`). Other datasets are referred to by their bare names (`events`,
`update_status`, ...), so the same text runs in the pipeline and, in tests, over temporary views.

Kinds of table, and what is incremental where
---------------------------------------------
- `events` and `errors` are STREAMING tables: `events` reads the event log with
  `spark.readStream.table(<event log>)` (the event log is append-only Delta; `skipChangeCommits`
  lets a retention delete on Databricks pass), `errors` reads `events` the same way. Their SQL is
  one SELECT list and one WHERE clause (`StreamSpec`), applied to the stream with `selectExpr` and
  `where` in the pipeline and composed into plain SQL for tests. Each event is parsed once, in the
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
  the `{now}` placeholder, `CLOCK` in both engines, a fixed instant in tests), and "last N days"
  windows are bounded by the data (`flow_bottlenecks`: the 7 days up to the latest flow run).
  Eligible for incremental refresh (group-by aggregates and joins over Delta): `update_status`, `flow_throughput`, `flow_throughput_daily`, `backlog`, `expectation_results`,
  `expectation_results_daily`, `dropped_records`, `error_classes`, `schema_drift`, `file_latency`,
  `measurement_gaps`. Recomputed in full on Databricks too: views with window functions, percentiles,
  ranks, collect_set/ORDER BY ... LIMIT or non-Delta inputs (`landing_files` reads `cloud_files_state`
  and the landing files, so it and `reconciliation` are recomputed; `update_status_daily`,
  `ingestion_latency_hourly`, `ingestion_latency_by_update`, `expectation_results_weekly`,
  `flow_bottlenecks`, `quarantine_daily`, `anomalies`, `table_growth`, `table_freshness` (max_by, and
  `{ingest_tables}` is a VALUES list), `health_metrics`). Which technique a refresh used is in the
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
  (the documented sign; `FULL_REFRESH_AGGREGATES`), derived once, in `update_status`.
- A full refresh is not new data: file latency is measured from a file's first commit ever
  (`first_commit_time`); drift and quarantine are counted on the day the file arrived (its
  modification time); a line the sink already quarantined from the same file is a re-delivery; the
  "last update" health metrics that a full refresh would set off read the last incremental update or
  only first deliveries; expectation counts of a dataset fully refreshed in an update are kept per
  update but left out of the daily and weekly tables (they count history again).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping, Sequence

from pipelines import anomalies as A
from pipelines import insights as I
from pipelines.eventlog.schema import TERMINAL_FLOW_STATES, TERMINAL_UPDATE_STATES
from pipelines.table_sizes import BRONZE


def sql_list(values: Sequence[str]) -> str:
    """`('A', 'B')`: string literals for an `IN` list."""
    return "(" + ", ".join(f"'{v}'" for v in values) + ")"


TERMINAL_UPDATE = sql_list(TERMINAL_UPDATE_STATES)
TERMINAL_FLOW = sql_list(TERMINAL_FLOW_STATES)
# Bronze's own expectations; rescued and corrupt rows have their own metrics (drift, quarantine).
BRONZE_EXPECTATIONS = "('no_rescued_data', 'no_corrupt_record')"
EXPECTATIONS_TYPE = "ARRAY<STRUCT<name: STRING, dataset: STRING, passed_records: BIGINT, failed_records: BIGINT>>"
# operation_progress.type of lakewatch's "not measured" WARN events (pipelines/eventlog/events.py).
MEASUREMENT_OPERATION = "LAKEWATCH_MEASUREMENT"
# Problems reconciliation reports (its `status` values that count in `files_not_reconciled`).
NOT_RECONCILED = "('missing_rows', 'extra_rows', 'modified_after_ingest')"

STREAMING_TABLE = "streaming_table"
MATERIALIZED_VIEW = "materialized_view"
TEMPORARY_VIEW = "temporary_view"

# Delta properties of tables other materialized views read (Databricks' incremental refresh needs them).
INCREMENTAL_SOURCE_PROPERTIES = {"delta.enableChangeDataFeed": "true", "delta.enableRowTracking": "true"}


def short(expr: str) -> str:
    """The last part of a qualified (possibly backquoted) name."""
    return f"regexp_extract({expr}, '([^.`]+)`?$', 1)"


def error_class(expr: str) -> str:
    """`[ERROR_CLASS]` at the start of an error message, else NULL."""
    return rf"nullif(regexp_extract({expr}, '^\\[([A-Za-z0-9_.:]+)\\]', 1), '')"


_URI_SCHEME = "^[A-Za-z][A-Za-z0-9+.-]*:/"


def path_key(expr: str) -> str:
    """A file path as the file's real name, whatever wrote it, so the file state, bronze's and the sink's
    `_source_file` and the Databricks line counts join on it.

    A path with a URI scheme (`file:/`, `dbfs:/`, `s3://bucket/`, ...) is a URI, percent-encoded as
    Hadoop's `Path.toUri` writes it: Spark's `_metadata.file_path` (bronze and sink `_source_file`: a
    file named `p%41ct.json` is `.../p%2541ct.json`, a space `%20`, `#` `%23`; `+` and unicode stay as
    they are), and on Databricks `cloud_files_state`'s paths, which carry the scheme too. Its scheme goes
    (`s3://bucket` keeps the bucket as the first segment) and it is decoded, `+` kept as `+` (in a URI
    path it is not a space, as `url_decode`'s form decoding would read it); one that does not decode
    is kept as it is. A path without a scheme is a file-system path, the real name already (the local
    file state writes `os.path` paths, pipelines/local/checkpoints.py): kept as it is, since a `%41`
    in it is part of the name. Decoding it too made `p%41ct.json` `pAct.json`, another file."""
    stripped = f"regexp_replace({expr}, '{_URI_SCHEME}+', '/')"
    decoded = f"try_url_decode(replace({stripped}, '+', '%2B'))"
    return f"CASE WHEN {expr} RLIKE '{_URI_SCHEME}' THEN coalesce({decoded}, {stripped}) ELSE {expr} END"


def seconds_between(start: str, end: str) -> str:
    return f"CAST((unix_millis({end}) - unix_millis({start})) / 1000.0 AS DOUBLE)"


# Whether an update is a full refresh: the one place it is derived from the events (update_status);
# every other table reads update_status.full_refresh / full_refresh_selection (`full_refresh_of` per
# dataset, `full_refresh IS NOT TRUE` for an incremental update). Two signals, either is enough:
# - create_update's `full_refresh` / `full_refresh_selection`: observed in real event logs, but
#   Databricks documents only `run_as` and `cause` there (shared/reference/databricks.md §1.6);
# - the documented one: the update went through the RESETTING state ("resetting datasets/checkpoints
#   (full refresh)", §1.7), which the local runner logs too.
# RESETTING does not say which datasets were reset (the local runner logs it for a selection as for
# everything). So an update that logged RESETTING while its create_update names no tables counts as a
# full refresh of every table (full_refresh_selection empty): a dataset that was in fact left alone
# then has its counts left out of the daily figures and its files' new commits read as re-commits
# (no latency, with the reason), rather than a refreshed dataset's history counted as new. With
# neither signal (no keys, no RESETTING), full_refresh is NULL: not known.
FULL_REFRESH_AGGREGATES = """bool_or(full_refresh) AS full_refresh_all,
    max_by(full_refresh_selection, struct(event_time, seq)) FILTER (WHERE event_type = 'create_update') AS selection,
    count_if(event_type = 'update_progress' AND update_state = 'RESETTING') > 0 AS reset"""


def full_refresh_columns(run: str) -> str:
    """update_status' `full_refresh` and `full_refresh_selection` from row `run` holding
    `FULL_REFRESH_AGGREGATES` (over one update's events)."""
    return (f"""CASE WHEN {run}.full_refresh_all OR coalesce(size({run}.selection), 0) > 0 OR {run}.reset THEN true
       WHEN {run}.full_refresh_all IS NULL AND {run}.selection IS NULL THEN CAST(NULL AS BOOLEAN)
       ELSE false END AS full_refresh,
  coalesce({run}.selection, CAST(array() AS ARRAY<STRING>)) AS full_refresh_selection""")


def full_refresh_of(update: str, dataset: str) -> str:
    """Whether update row `update` (of update_status) fully refreshed `dataset` (a short name); an empty
    selection is every table (see `FULL_REFRESH_AGGREGATES`)."""
    return (f"({update}.full_refresh IS TRUE AND (coalesce(size({update}.full_refresh_selection), 0) = 0 "
            f"OR exists({update}.full_refresh_selection, s -> {short('s')} = {dataset})))")


@dataclass(frozen=True)
class StreamSpec:
    """A streaming table's query: `source` (a placeholder such as `{event_log}`, or a dataset name)
    read as a stream, filtered by `where`, projected by `select`."""

    source: str
    select: tuple[str, ...]
    where: str

    def sql(self) -> str:
        columns = ",\n  ".join(self.select)
        return f"SELECT\n  {columns}\nFROM {self.source}\nWHERE {self.where}"


@dataclass(frozen=True)
class ObservabilityTable:
    name: str
    comment: str
    columns: tuple[tuple[str, str, str], ...]  # (name, type, comment)
    sql: str
    partition_cols: tuple[str, ...] = ()
    kind: str = MATERIALIZED_VIEW
    stream: StreamSpec | None = None
    intermediate: bool = False  # published for other tables to read, not shown on the dashboard

    @property
    def temporary(self) -> bool:
        """A pipeline-private view (no table is published)."""
        return self.kind == TEMPORARY_VIEW

    @property
    def streaming(self) -> bool:
        return self.kind == STREAMING_TABLE

    @property
    def schema_ddl(self) -> str:
        """Column list with comments, as `dp.materialized_view(schema=...)` and `dp.table` take it."""
        return ", ".join(
            f"`{name}` {data_type} COMMENT '{comment.replace(chr(39), chr(39) * 2)}'"
            for name, data_type, comment in self.columns
        )

    @property
    def column_names(self) -> tuple[str, ...]:
        return tuple(c[0] for c in self.columns)

    def render(self, sources: Mapping[str, str]) -> str:
        return self.sql.format(**sources)


def _table(name: str, comment: str, columns: Sequence[tuple[str, str, str]], sql: str,
           partition_cols: Sequence[str] = (), kind: str = MATERIALIZED_VIEW,
           intermediate: bool = False) -> ObservabilityTable:
    return ObservabilityTable(name, comment, tuple(columns), sql.strip(), tuple(partition_cols), kind,
                              None, intermediate)


def _streaming_table(name: str, comment: str, columns: Sequence[tuple[str, str, str, str]], source: str,
                     where: str, partition_cols: Sequence[str] = (), intermediate: bool = False) -> ObservabilityTable:
    """A streaming table: each column is (name, type, comment, expression over the source's row)."""
    stream = StreamSpec(source, tuple(f"{expr} AS {n}" for n, _, _, expr in columns), " ".join(where.split()))
    return ObservabilityTable(name, comment, tuple((n, t, c) for n, t, c, _ in columns), stream.sql(),
                              tuple(partition_cols), STREAMING_TABLE, stream, intermediate)


def _json(path: str) -> str:
    return f"get_json_object(details, '$.{path}')"


EVENTS = _streaming_table(
    "events",
    "The ingest pipeline's event log with the JSON details parsed once per event (streaming: each event "
    "is read once). Every event of every update, internal ones included; other tables filter. Events the "
    "live log no longer holds come from its history table, each once.",
    [
        ("event_id", "STRING", "Event id", "id"),
        ("pipeline_id", "STRING", "Pipeline id", "origin.pipeline_id"),
        ("pipeline_name", "STRING", "Pipeline name", "origin.pipeline_name"),
        ("update_id", "STRING", "Update (run) id; for a maintenance run without one, its maintenance id",
         "coalesce(origin.update_id, origin.maintenance_id)"),
        ("maintenance_id", "STRING", "Set on the events of a maintenance run (an internal run)", "origin.maintenance_id"),
        ("flow_name_full", "STRING", "Flow name as logged (often qualified)", "origin.flow_name"),
        ("flow_name", "STRING", "Flow name (last part of the qualified name)", short("origin.flow_name")),
        ("dataset", "STRING", "Target dataset or sink (last part of the name)",
         short("coalesce(origin.dataset_name, origin.sink_name)")),
        ("batch_id", "BIGINT", "Micro-batch id (METRICS events of streaming flows)", "origin.batch_id"),
        ("event_time", "TIMESTAMP", "Event time (UTC)", "`timestamp`"),
        ("seq", "BIGINT", "Sequence number (tie-break for events at the same time)",
         "coalesce(sequence.data_plane_id.seq_no, sequence.control_plane_seq_no)"),
        ("event_type", "STRING", "Event type (create_update, update_progress, flow_progress, ...)", "event_type"),
        ("level", "STRING", "INFO, WARN, ERROR or METRICS", "level"),
        ("message", "STRING", "Event message", "message"),
        ("has_error", "BOOLEAN", "Whether the event carries an error", "error IS NOT NULL"),
        ("error_fatal", "BOOLEAN", "Whether the error was unrecoverable", "error.fatal"),
        # try_element_at: an empty exceptions list is NULL, not an error under ANSI mode
        ("exception_class", "STRING", "Outermost exception class", "try_element_at(error.exceptions, 1).class_name"),
        ("exception_message", "STRING", "Outermost exception message", "try_element_at(error.exceptions, 1).message"),
        ("root_cause_class", "STRING", "Innermost exception class", "try_element_at(error.exceptions, -1).class_name"),
        ("root_cause_message", "STRING", "Innermost exception message", "try_element_at(error.exceptions, -1).message"),
        ("cause", "STRING", "create_update: what started the update", _json("create_update.cause")),
        ("full_refresh", "BOOLEAN", "create_update: full refresh of every table (as create_update says it; "
                                    "update_status also reads the RESETTING state)",
         f"try_cast({_json('create_update.full_refresh')} AS BOOLEAN)"),
        ("full_refresh_selection", "ARRAY<STRING>", "create_update: tables selected for a full refresh",
         f"from_json({_json('create_update.full_refresh_selection')}, 'ARRAY<STRING>')"),
        ("validate_only", "BOOLEAN", "create_update: a validate-only update (internal)",
         f"try_cast({_json('create_update.validate_only')} AS BOOLEAN)"),
        ("explore_only", "BOOLEAN", "create_update: an explore-only update (internal)",
         f"try_cast({_json('create_update.explore_only')} AS BOOLEAN)"),
        ("update_state", "STRING", "update_progress: the update's state", _json("update_progress.state")),
        ("flow_status", "STRING", "flow_progress: the flow's status", _json("flow_progress.status")),
        ("num_output_rows", "BIGINT", "flow_progress: rows written (NULL when the event does not say)",
         f"try_cast({_json('flow_progress.metrics.num_output_rows')} AS BIGINT)"),
        ("num_output_bytes", "BIGINT", "flow_progress: bytes written (NULL when the event does not say)",
         f"try_cast({_json('flow_progress.metrics.num_output_bytes')} AS BIGINT)"),
        ("backlog_bytes", "BIGINT", "flow_progress: bytes waiting in the source",
         f"try_cast({_json('flow_progress.metrics.backlog_bytes')} AS BIGINT)"),
        ("backlog_files", "BIGINT", "flow_progress: files waiting in the source",
         f"try_cast({_json('flow_progress.metrics.backlog_files')} AS BIGINT)"),
        ("dropped_records", "BIGINT", "flow_progress: rows removed by drop expectations",
         f"try_cast({_json('flow_progress.data_quality.dropped_records')} AS BIGINT)"),
        ("expectations", EXPECTATIONS_TYPE, "flow_progress: rows passing and failing each expectation",
         f"from_json({_json('flow_progress.data_quality.expectations')}, '{EXPECTATIONS_TYPE}')"),
        ("measurement", "STRING", "A figure the run could not measure (lakewatch WARN event), else NULL",
         f"CASE WHEN {_json('operation_progress.type')} = '{MEASUREMENT_OPERATION}' "
         f"THEN coalesce({_json('operation_progress.measurement')}, 'unnamed measurement') END"),
        ("measurement_reason", "STRING", "Why that figure was not measured",
         f"CASE WHEN {_json('operation_progress.type')} = '{MEASUREMENT_OPERATION}' "
         f"THEN {_json('operation_progress.reason')} END"),
        ("definition_file", "STRING", "flow_definition: the file that declared the flow (the local engine "
         "records it; Databricks' documented event does not, so NULL there)",
         _json("flow_definition.source_code_location.file_name")),
        ("definition_line", "BIGINT", "flow_definition: the line that declared the flow (as definition_file)",
         f"try_cast({_json('flow_definition.source_code_location.line_number')} AS BIGINT)"),
        ("event_date", "DATE", "Date (UTC) of the event", "to_date(`timestamp`)"),
    ],
    "{event_log}",
    """(origin.update_id IS NOT NULL OR origin.maintenance_id IS NOT NULL)
       AND coalesce(origin.flow_name, '') <> 'pipelines.flowTimeMetrics.missingFlowName'""",
    partition_cols=("event_date",),
    intermediate=True,
)

UPDATE_STATUS = _table(
    "update_status",
    "One row per pipeline update: cause, full refresh, start, end, duration, final state, failed and skipped "
    "flows, first error. Internal updates (validate-only, explore-only, maintenance) are left out, as "
    "Databricks' own monitoring does: they neither fail nor succeed an ingestion.",
    [
        ("pipeline_id", "STRING", "Pipeline id"),
        ("pipeline_name", "STRING", "Pipeline name"),
        ("update_id", "STRING", "Pipeline update (run) id"),
        ("cause", "STRING", "What started the update (USER_ACTION, JOB_TASK, ...)"),
        ("full_refresh", "BOOLEAN", "Whether the update fully refreshed every table, or the tables in "
                                    "full_refresh_selection: its create_update event says so, or it went "
                                    "through the RESETTING state (NULL when neither says)"),
        ("full_refresh_selection", "ARRAY<STRING>", "Tables selected for a full refresh (empty: none, or all; "
                                                    "a RESETTING state without a selection counts as all)"),
        ("start_time", "TIMESTAMP", "When the update was created"),
        ("end_time", "TIMESTAMP", "When the update reached COMPLETED, FAILED or CANCELED (NULL while running)"),
        ("duration_seconds", "DOUBLE", "Seconds from start to end"),
        ("final_state", "STRING", "Last state of the update"),
        ("failed_flows", "BIGINT", "Flows whose last status in the update is FAILED"),
        ("skipped_flows", "BIGINT", "Flows whose last status in the update is SKIPPED"),
        ("first_error_message", "STRING", "Message of the update's first error event"),
        ("first_error_class", "STRING", "Error class ([ERROR_CLASS]) or exception class of the first error"),
        ("start_hour", "INT", "Hour of the day (UTC, 0-23) the update started: failures by hour of day"),
        ("update_date", "DATE", "Date (UTC) the update started"),
    ],
    f"""
WITH runs AS (
  SELECT
    update_id,
    max(pipeline_id) AS pipeline_id,
    max(pipeline_name) AS pipeline_name,
    max(cause) AS cause,
    {FULL_REFRESH_AGGREGATES},
    bool_or(coalesce(validate_only, false) OR coalesce(explore_only, false) OR maintenance_id IS NOT NULL) AS internal,
    min(event_time) AS start_time,
    max(event_time) FILTER (WHERE event_type = 'update_progress' AND update_state IN {TERMINAL_UPDATE}) AS end_time,
    max_by(update_state, struct(event_time, seq)) FILTER (WHERE event_type = 'update_progress') AS final_state,
    min_by(exception_message, struct(event_time, seq)) FILTER (WHERE has_error) AS first_error_message,
    min_by(coalesce({error_class('exception_message')}, root_cause_class),
           struct(event_time, seq)) FILTER (WHERE has_error) AS first_error_class
  FROM events
  GROUP BY update_id
),
flow_states AS (
  SELECT update_id, flow_name, max_by(flow_status, struct(event_time, seq)) AS final_status
  FROM events
  WHERE event_type = 'flow_progress' AND level <> 'METRICS' AND flow_status IS NOT NULL AND flow_name <> ''
  GROUP BY update_id, flow_name
),
flow_counts AS (
  SELECT update_id, count_if(final_status = 'FAILED') AS failed_flows, count_if(final_status = 'SKIPPED') AS skipped_flows
  FROM flow_states GROUP BY update_id
)
SELECT
  r.pipeline_id, r.pipeline_name, r.update_id, r.cause,
  {full_refresh_columns('r')},
  r.start_time, r.end_time,
  {seconds_between('r.start_time', 'r.end_time')} AS duration_seconds,
  r.final_state,
  coalesce(f.failed_flows, 0) AS failed_flows,
  coalesce(f.skipped_flows, 0) AS skipped_flows,
  r.first_error_message, r.first_error_class,
  hour(r.start_time) AS start_hour,
  to_date(r.start_time) AS update_date
FROM runs r LEFT JOIN flow_counts f ON r.update_id = f.update_id
WHERE NOT r.internal
""",
    partition_cols=("update_date",),
)

FLOW_THROUGHPUT = _table(
    "flow_throughput",
    "One row per update and flow: rows written, micro-batches, time from RUNNING to the flow's last status, "
    "rows per second. Rows come from whichever events carry them, never twice: the METRICS events "
    "(per micro-batch for streaming flows) when any carries a count, else the flow's terminal event "
    "(materialized views may report there).",
    [
        ("update_id", "STRING", "Pipeline update (run) id"),
        ("pipeline_name", "STRING", "Pipeline name"),
        ("flow_name", "STRING", "Flow name (last part of the qualified name)"),
        ("dataset", "STRING", "Target dataset or sink of the flow"),
        ("final_status", "STRING", "Last status of the flow in the update (COMPLETED, FAILED, SKIPPED, ...)"),
        ("rows_written", "BIGINT", "Rows the flow wrote in the update; NULL when no event carried a count, or "
                                   "when a micro-batch's count is missing (see unmeasured_batches)"),
        ("rows_source", "STRING", "Where rows_written comes from: metrics (METRICS events) or terminal_event"),
        ("bytes_written", "BIGINT", "Bytes the flow wrote in the update (its METRICS events' num_output_bytes; NULL "
                                    "when none carried a byte count)"),
        ("batches", "BIGINT", "Micro-batches reported (METRICS events with a batch id)"),
        ("unmeasured_batches", "BIGINT", "Micro-batches reported without a row count"),
        ("batches_without_expectation_counts", "BIGINT",
         "Micro-batches reported without expectation counts (matters for datasets with expectations)"),
        ("started_at", "TIMESTAMP", "First time the flow was RUNNING in the update"),
        ("ended_at", "TIMESTAMP", "Time of the flow's last terminal status in the update"),
        ("duration_seconds", "DOUBLE", "Seconds from RUNNING to the terminal status"),
        ("rows_per_second", "DOUBLE", "rows_written / duration_seconds"),
        ("update_date", "DATE", "Date (UTC) the flow started"),
    ],
    f"""
WITH per_flow AS (
  SELECT
    update_id,
    max(pipeline_name) AS pipeline_name,
    flow_name,
    max(dataset) AS dataset,
    max_by(flow_status, struct(event_time, seq)) FILTER (WHERE level <> 'METRICS' AND flow_status IS NOT NULL) AS final_status,
    sum(num_output_rows) FILTER (WHERE level = 'METRICS') AS metrics_rows,
    sum(num_output_bytes) FILTER (WHERE level = 'METRICS') AS bytes_written,
    count_if(level = 'METRICS' AND num_output_rows IS NOT NULL) AS metrics_with_rows,
    max_by(num_output_rows, struct(event_time, seq)) FILTER (
      WHERE level <> 'METRICS' AND flow_status IN {TERMINAL_FLOW} AND num_output_rows IS NOT NULL) AS terminal_rows,
    count_if(level = 'METRICS' AND batch_id IS NOT NULL) AS batches,
    count_if(level = 'METRICS' AND batch_id IS NOT NULL AND num_output_rows IS NULL) AS unmeasured_batches,
    count_if(level = 'METRICS' AND batch_id IS NOT NULL AND expectations IS NULL) AS batches_without_expectation_counts,
    min(event_time) FILTER (WHERE level <> 'METRICS' AND flow_status = 'RUNNING') AS started_at,
    max(event_time) FILTER (WHERE level <> 'METRICS' AND flow_status IN {TERMINAL_FLOW}) AS ended_at,
    min(event_time) AS first_seen
  FROM events
  WHERE event_type = 'flow_progress' AND flow_name IS NOT NULL AND flow_name <> ''
    AND update_id IN (SELECT update_id FROM update_status)
  GROUP BY update_id, flow_name
),
counted AS (
  SELECT *,
    CASE WHEN unmeasured_batches > 0 THEN CAST(NULL AS BIGINT)
         WHEN metrics_with_rows > 0 THEN metrics_rows
         ELSE terminal_rows END AS rows_written,
    CASE WHEN unmeasured_batches > 0 THEN CAST(NULL AS STRING)
         WHEN metrics_with_rows > 0 THEN 'metrics'
         WHEN terminal_rows IS NOT NULL THEN 'terminal_event' END AS rows_source
  FROM per_flow
)
SELECT
  update_id, pipeline_name, flow_name, dataset, final_status, rows_written, rows_source, bytes_written,
  batches, unmeasured_batches, batches_without_expectation_counts, started_at, ended_at,
  {seconds_between('started_at', 'ended_at')} AS duration_seconds,
  CASE WHEN {seconds_between('started_at', 'ended_at')} > 0
       THEN rows_written / {seconds_between('started_at', 'ended_at')} END AS rows_per_second,
  to_date(coalesce(started_at, first_seen)) AS update_date
FROM counted
""",
    partition_cols=("update_date",),
)

UPDATE_STATUS_DAILY = _table(
    "update_status_daily",
    "Per pipeline and day: updates, failures, success rate, average and 95th percentile duration (internal updates excluded).",
    [
        ("update_date", "DATE", "Day (UTC) the updates started"),
        ("pipeline_name", "STRING", "Pipeline name"),
        ("updates", "BIGINT", "Updates started that day"),
        ("completed", "BIGINT", "Updates that COMPLETED"),
        ("failed", "BIGINT", "Updates that FAILED"),
        ("canceled", "BIGINT", "Updates that were CANCELED"),
        ("success_rate", "DOUBLE", "completed / finished updates (0..1; NULL when none finished)"),
        ("avg_duration_seconds", "DOUBLE", "Average duration of finished updates"),
        ("p95_duration_seconds", "DOUBLE", "95th percentile duration of finished updates"),
        ("max_duration_seconds", "DOUBLE", "Longest finished update"),
    ],
    f"""
SELECT
  update_date, pipeline_name,
  count(*) AS updates,
  count_if(final_state = 'COMPLETED') AS completed,
  count_if(final_state = 'FAILED') AS failed,
  count_if(final_state = 'CANCELED') AS canceled,
  CAST(count_if(final_state = 'COMPLETED') AS DOUBLE) / nullif(count_if(final_state IN {TERMINAL_UPDATE}), 0) AS success_rate,
  avg(duration_seconds) AS avg_duration_seconds,
  CAST(percentile(duration_seconds, 0.95) AS DOUBLE) AS p95_duration_seconds,
  max(duration_seconds) AS max_duration_seconds
FROM update_status
GROUP BY update_date, pipeline_name
""",
)

UPDATE_STATUS_WEEKLY = _table(
    "update_status_weekly",
    "Per pipeline and week (starting Monday): completed incremental updates (full refreshes and failures left "
    "out: they are not comparable), their average, 95th percentile and longest duration, and the change of "
    "the average against the week before (the week-over-week duration trend).",
    [
        ("week_start", "DATE", "Monday (UTC) of the week"),
        ("pipeline_name", "STRING", "Pipeline name"),
        ("updates", "BIGINT", "Completed incremental updates that week"),
        ("avg_duration_seconds", "DOUBLE", "Average duration"),
        ("p95_duration_seconds", "DOUBLE", "95th percentile duration"),
        ("max_duration_seconds", "DOUBLE", "Longest update"),
        ("previous_week_avg_duration_seconds", "DOUBLE", "Average duration the week before (NULL: no update then)"),
        ("avg_duration_change", "DOUBLE", "avg / previous week's avg - 1 (0.05 = 5% slower)"),
    ],
    """
WITH weekly AS (
  SELECT CAST(date_trunc('WEEK', update_date) AS DATE) AS week_start, pipeline_name,
         count(*) AS updates,
         avg(duration_seconds) AS avg_duration_seconds,
         CAST(percentile(duration_seconds, 0.95) AS DOUBLE) AS p95_duration_seconds,
         max(duration_seconds) AS max_duration_seconds
  FROM update_status
  WHERE final_state = 'COMPLETED' AND full_refresh IS NOT TRUE AND duration_seconds IS NOT NULL
  GROUP BY CAST(date_trunc('WEEK', update_date) AS DATE), pipeline_name
)
SELECT w.week_start, w.pipeline_name, w.updates, w.avg_duration_seconds, w.p95_duration_seconds,
       w.max_duration_seconds, p.avg_duration_seconds AS previous_week_avg_duration_seconds,
       w.avg_duration_seconds / nullif(p.avg_duration_seconds, 0) - 1 AS avg_duration_change
FROM weekly w
LEFT JOIN weekly p ON p.pipeline_name = w.pipeline_name AND p.week_start = date_sub(w.week_start, 7)
""",
)

FLOW_THROUGHPUT_DAILY = _table(
    "flow_throughput_daily",
    "Per flow and day: updates, rows written, time spent, rows per second.",
    [
        ("update_date", "DATE", "Day (UTC)"),
        ("flow_name", "STRING", "Flow name"),
        ("updates", "BIGINT", "Updates in which the flow ran"),
        ("rows_written", "BIGINT", "Rows written that day (NULL when a micro-batch's count is missing, or none was reported)"),
        ("unmeasured_batches", "BIGINT", "Micro-batches of the day without a row count"),
        ("bytes_written", "BIGINT", "Bytes written that day (updates without a byte count left out)"),
        ("total_duration_seconds", "DOUBLE", "Seconds the flow ran that day"),
        ("avg_duration_seconds", "DOUBLE", "Average seconds per update"),
        ("rows_per_second", "DOUBLE", "rows_written / total_duration_seconds"),
    ],
    """
SELECT
  update_date, flow_name,
  count(*) AS updates,
  CASE WHEN sum(unmeasured_batches) > 0 THEN CAST(NULL AS BIGINT) ELSE sum(rows_written) END AS rows_written,
  sum(unmeasured_batches) AS unmeasured_batches,
  sum(bytes_written) AS bytes_written,
  sum(duration_seconds) AS total_duration_seconds,
  avg(duration_seconds) AS avg_duration_seconds,
  CASE WHEN sum(duration_seconds) > 0 AND sum(unmeasured_batches) = 0
       THEN sum(rows_written) / sum(duration_seconds) END AS rows_per_second
FROM flow_throughput
WHERE started_at IS NOT NULL
GROUP BY update_date, flow_name
""",
    partition_cols=("update_date",),
)

FLOW_BOTTLENECKS = _table(
    "flow_bottlenecks",
    "The slowest flows over the 7 days up to the latest flow run (bounded by the data, not the clock): "
    "average and longest duration, average rows, rank by average duration.",
    [
        ("flow_name", "STRING", "Flow name"),
        ("updates", "BIGINT", "Updates in those 7 days in which the flow ran"),
        ("avg_duration_seconds", "DOUBLE", "Average seconds per update"),
        ("max_duration_seconds", "DOUBLE", "Longest run in seconds"),
        ("avg_rows_written", "DOUBLE", "Average rows written per update that reported them"),
        ("duration_rank", "INT", "1 = the slowest flow on average"),
    ],
    """
SELECT
  flow_name,
  count(*) AS updates,
  avg(duration_seconds) AS avg_duration_seconds,
  max(duration_seconds) AS max_duration_seconds,
  avg(rows_written) AS avg_rows_written,
  CAST(rank() OVER (ORDER BY avg(duration_seconds) DESC) AS INT) AS duration_rank
FROM flow_throughput
WHERE started_at >= (SELECT max(started_at) FROM flow_throughput) - INTERVAL 7 DAYS AND duration_seconds IS NOT NULL
GROUP BY flow_name
""",
)

LANDING_FILES = _table(
    "landing_files",
    "One row per landing file: the engine's file state (cloud_files_state() on Databricks, the local "
    "runner's file state locally) joined by path with what bronze holds from the file.",
    [
        ("table_name", "STRING", "Bronze table the file feeds"),
        ("flow_name", "STRING", "Flow reading the file"),
        ("path", "STRING", "File path as the file state gives it"),
        ("path_key", "STRING", "The file's real path, without scheme: a URI decoded, a file-system path as it is "
                               "(joins file state, bronze and sink)"),
        ("size_bytes", "BIGINT", "File size (NULL when the file state does not know it)"),
        ("create_time", "TIMESTAMP", "File modification time when the stream took it"),
        ("discovery_time", "TIMESTAMP", "When the stream planned the file into a batch"),
        ("commit_time", "TIMESTAMP", "Commit of the file in the live checkpoint (a full refresh commits it again)"),
        ("first_commit_time", "TIMESTAMP", "The file's earliest commit over every checkpoint the flow had "
                                           "(on Databricks: commit_time, see file_latency)"),
        ("state", "STRING", "committed, discovered, pending, or not_in_file_state (only bronze knows it)"),
        ("lines", "BIGINT", "Records in the file as its format counts them (JSON lines: lines with content, an array "
                  "of objects one per object; CSV: less the header; a JSON document: its objects; Parquet: its "
                  "rows), counted without the ingest's reader (NULL: not counted)"),
        ("committed_size", "BIGINT", "Size of the file as the stream took it"),
        ("committed_modification_time", "TIMESTAMP", "Modification time of the file as the stream took it"),
        ("modified_after_ingest", "BOOLEAN", "Size or modification time changed after the stream took the file "
                                             "(NULL where not known, e.g. on Databricks)"),
        ("archive_time", "TIMESTAMP", "When cleanSource moved or deleted the committed file (NULL: not archived, "
                                      "or not known)"),
        ("archive_mode", "STRING", "MOVE or DELETE when cleanSource took the committed file out of the landing folder"),
        ("move_location", "STRING", "Where cleanSource MOVE put the file"),
        ("bronze_rows", "BIGINT", "Bronze rows from the file (corrupt lines included)"),
        ("corrupt_rows", "BIGINT", "Bronze rows from the file with _corrupt_record"),
        ("rescued_rows", "BIGINT", "Bronze rows from the file with _rescued_data"),
        ("first_ingested_at", "TIMESTAMP", "Earliest _ingested_at of the file's bronze rows"),
        ("landed", "BOOLEAN", "Committed by the stream, or rows from it are in bronze"),
        ("create_date", "DATE", "Date (UTC) of create_time"),
    ],
    f"""
WITH state AS (
  SELECT {short('table_name')} AS table_name, flow_name, path, {path_key('path')} AS path_key,
         CAST(size AS BIGINT) AS size_bytes, create_time, discovery_time, commit_time, first_commit_time,
         state, CAST(lines AS BIGINT) AS lines, CAST(committed_size AS BIGINT) AS committed_size,
         committed_modification_time, modified_after_ingest, archive_time, archive_mode, move_location
  FROM {{file_state}}
),
bronze AS (
  SELECT {path_key('_source_file')} AS path_key,
         max(bronze_table) AS bronze_table,
         max(_source_file) AS source_file,
         count(*) AS bronze_rows,
         count_if(_is_corrupt) AS corrupt_rows,
         count_if(_rescued_data IS NOT NULL) AS rescued_rows,
         min(_ingested_at) AS first_ingested_at,
         max(_source_file_modification_time) AS source_modification_time
  FROM {{bronze_union}}
  GROUP BY {path_key('_source_file')}
)
SELECT
  coalesce(s.table_name, b.bronze_table) AS table_name,
  s.flow_name,
  coalesce(s.path, b.source_file) AS path,
  coalesce(s.path_key, b.path_key) AS path_key,
  s.size_bytes, s.create_time, s.discovery_time, s.commit_time, s.first_commit_time,
  coalesce(s.state, 'not_in_file_state') AS state,
  s.lines, s.committed_size, s.committed_modification_time, s.modified_after_ingest,
  s.archive_time, s.archive_mode, s.move_location,
  -- no row from the file in bronze is a measured zero (bronze is read whole)
  coalesce(b.bronze_rows, 0) AS bronze_rows,
  coalesce(b.corrupt_rows, 0) AS corrupt_rows,
  coalesce(b.rescued_rows, 0) AS rescued_rows,
  b.first_ingested_at,
  (coalesce(s.state, '') = 'committed' OR coalesce(b.bronze_rows, 0) > 0) AS landed,
  to_date(coalesce(s.create_time, b.source_modification_time)) AS create_date
FROM state s FULL OUTER JOIN bronze b ON s.path_key = b.path_key
""",
    partition_cols=("create_date",),
    intermediate=True,
)

_FULL_REFRESH_WINDOWS = f"""
  SELECT f.path_key, min(u.update_id) AS update_id
  FROM landing_files f
  JOIN update_status u
    ON f.commit_time >= u.start_time AND (u.end_time IS NULL OR f.commit_time <= u.end_time)
   AND {full_refresh_of('u', 'f.table_name')}
  WHERE f.first_commit_time = f.commit_time
  GROUP BY f.path_key"""

FILE_LATENCY = _table(
    "file_latency",
    "One row per landing file: when it was created and first committed, and the ingestion latency in between. "
    "A full refresh commits every file again: latency is measured from the file's first commit, and where "
    "the file state cannot tell (Databricks keeps only the live checkpoint, so first_commit_time = "
    "commit_time), a file whose only known commit is in a full-refresh update of its table has no latency "
    "(status recommitted_by_full_refresh) instead of a new one.",
    [
        ("table_name", "STRING", "Bronze table the file feeds"),
        ("path", "STRING", "File path"),
        ("size_bytes", "BIGINT", "File size"),
        ("create_time", "TIMESTAMP", "File modification time when the stream took it"),
        ("discovery_time", "TIMESTAMP", "When the stream planned the file into a batch"),
        ("commit_time", "TIMESTAMP", "Commit in the live checkpoint (NULL while pending or when not known)"),
        ("first_commit_time", "TIMESTAMP", "The file's earliest commit over every checkpoint"),
        ("latency_seconds", "DOUBLE", "first_commit_time - create_time (NULL unless latency_status is measured)"),
        ("discovery_to_commit_seconds", "DOUBLE", "commit_time - discovery_time in the live checkpoint: how long the "
                                                  "stream took from planning the file to committing it (slow "
                                                  "discovery or processing; NULL when either time is unknown)"),
        ("latency_status", "STRING", "measured, pending (not committed yet), no_commit_time (landed, but the file "
                                     "state has no commit time: cloud_files_state below DBR 18.2 without "
                                     "cleanSource), recommitted_by_full_refresh"),
        ("full_refresh_update_id", "STRING", "The full-refresh update that committed the file again (recommitted files)"),
        ("state", "STRING", "committed, discovered, pending or not_in_file_state"),
        ("first_ingested_at", "TIMESTAMP", "Earliest _ingested_at of the file's bronze rows"),
        ("create_date", "DATE", "Date (UTC) of create_time"),
    ],
    f"""
WITH recommitted AS ({_FULL_REFRESH_WINDOWS}
),
classified AS (
  SELECT f.*, r.update_id AS full_refresh_update_id,
    CASE WHEN r.update_id IS NOT NULL THEN 'recommitted_by_full_refresh'
         WHEN f.first_commit_time IS NOT NULL THEN 'measured'
         WHEN f.landed THEN 'no_commit_time'
         ELSE 'pending' END AS latency_status
  FROM landing_files f LEFT JOIN recommitted r ON f.path_key = r.path_key
)
SELECT
  table_name, path, size_bytes, create_time, discovery_time, commit_time, first_commit_time,
  CASE WHEN latency_status = 'measured' THEN {seconds_between('create_time', 'first_commit_time')} END AS latency_seconds,
  {seconds_between('discovery_time', 'commit_time')} AS discovery_to_commit_seconds,
  latency_status, full_refresh_update_id, state, first_ingested_at, create_date
FROM classified
""",
    partition_cols=("create_date",),
)

FILE_BATCHES = _table(
    "file_batches",
    "One row per micro-batch of a bronze flow, as the file state shows it (the files committed together, at "
    "one commit time): files and bytes, from the first file's discovery to the commit, files and bytes per "
    "second. Only files with both times (cloud_files_state fills commit_time on DBR 18.2+ or with "
    "cloudFiles.cleanSource); a full refresh's re-commit counts as the batch it is.",
    [
        ("table_name", "STRING", "Bronze table"),
        ("commit_time", "TIMESTAMP", "When the batch was committed"),
        ("files", "BIGINT", "Files in the batch"),
        ("bytes", "BIGINT", "Their size"),
        ("first_discovery_time", "TIMESTAMP", "When the stream planned the batch's first file"),
        ("seconds", "DOUBLE", "commit_time - first_discovery_time"),
        ("files_per_second", "DOUBLE", "files / seconds (NULL when seconds is 0)"),
        ("bytes_per_second", "DOUBLE", "bytes / seconds (NULL when seconds is 0)"),
        ("commit_date", "DATE", "Date (UTC) of the commit"),
    ],
    f"""
SELECT
  table_name, commit_time,
  count(*) AS files,
  sum(size_bytes) AS bytes,
  min(discovery_time) AS first_discovery_time,
  {seconds_between('min(discovery_time)', 'commit_time')} AS seconds,
  count(*) / nullif({seconds_between('min(discovery_time)', 'commit_time')}, 0) AS files_per_second,
  sum(size_bytes) / nullif({seconds_between('min(discovery_time)', 'commit_time')}, 0) AS bytes_per_second,
  to_date(commit_time) AS commit_date
FROM landing_files
WHERE commit_time IS NOT NULL AND discovery_time IS NOT NULL
GROUP BY table_name, commit_time
""",
    partition_cols=("commit_date",),
)

INGESTION_LATENCY_HOURLY = _table(
    "ingestion_latency_hourly",
    "Per table and hour of first commit: files first committed and their create-to-commit latency (p50, p95, max). "
    "Files committed again by a full refresh are not new files.",
    [
        ("commit_hour", "TIMESTAMP", "Hour (UTC) the files were first committed"),
        ("table_name", "STRING", "Bronze table"),
        ("files", "BIGINT", "Files first committed in the hour"),
        ("p50_latency_seconds", "DOUBLE", "Median create-to-commit latency"),
        ("p95_latency_seconds", "DOUBLE", "95th percentile latency"),
        ("max_latency_seconds", "DOUBLE", "Largest latency"),
    ],
    """
SELECT
  date_trunc('HOUR', first_commit_time) AS commit_hour,
  table_name,
  count(*) AS files,
  CAST(percentile(latency_seconds, 0.5) AS DOUBLE) AS p50_latency_seconds,
  CAST(percentile(latency_seconds, 0.95) AS DOUBLE) AS p95_latency_seconds,
  max(latency_seconds) AS max_latency_seconds
FROM file_latency
WHERE latency_status = 'measured'
GROUP BY date_trunc('HOUR', first_commit_time), table_name
""",
)

INGESTION_LATENCY_BY_UPDATE = _table(
    "ingestion_latency_by_update",
    "Per ingest update and table: files first committed during the update and their create-to-commit latency.",
    [
        ("update_id", "STRING", "Pipeline update (run) id"),
        ("table_name", "STRING", "Bronze table"),
        ("files", "BIGINT", "Files first committed during the update"),
        ("p50_latency_seconds", "DOUBLE", "Median create-to-commit latency"),
        ("p95_latency_seconds", "DOUBLE", "95th percentile latency"),
        ("max_latency_seconds", "DOUBLE", "Largest latency"),
        ("update_date", "DATE", "Date (UTC) the update started"),
    ],
    """
SELECT
  u.update_id, f.table_name,
  count(*) AS files,
  CAST(percentile(f.latency_seconds, 0.5) AS DOUBLE) AS p50_latency_seconds,
  CAST(percentile(f.latency_seconds, 0.95) AS DOUBLE) AS p95_latency_seconds,
  max(f.latency_seconds) AS max_latency_seconds,
  max(u.update_date) AS update_date
FROM file_latency f
JOIN (
  -- an update that never ended is bounded by the next update's start (the last one: open)
  SELECT update_id, update_date, start_time,
         coalesce(end_time, lead(start_time) OVER (PARTITION BY pipeline_id ORDER BY start_time)) AS window_end
  FROM update_status
) u
  ON f.first_commit_time >= u.start_time AND (u.window_end IS NULL OR f.first_commit_time <= u.window_end)
WHERE f.latency_status = 'measured'
GROUP BY u.update_id, f.table_name
""",
    partition_cols=("update_date",),
)

BACKLOG = _table(
    "backlog",
    "Per update and flow reading files: the backlog (files and bytes not yet ingested) of the update's last "
    "measurement. When a measurement failed after it (a WARN event), the backlog is NULL and reason says why.",
    [
        ("update_id", "STRING", "Pipeline update (run) id"),
        ("flow_name", "STRING", "Flow reading the landing files"),
        ("measured_at", "TIMESTAMP", "Time of the last backlog figure or failed measurement"),
        ("backlog_files", "BIGINT", "Files waiting (NULL: not measured at the end of the update)"),
        ("backlog_bytes", "BIGINT", "Bytes waiting (NULL: not measured at the end of the update)"),
        ("reason", "STRING", "Why the backlog is NULL (NULL when measured)"),
        ("files_change", "BIGINT", "backlog_files minus the flow's backlog_files in the update before (NULL when "
                                   "either is not measured, or for the first)"),
        ("update_date", "DATE", "Date (UTC) of the measurement"),
    ],
    """
WITH figures AS (
  SELECT update_id, flow_name,
         max(event_time) AS figure_at,
         max_by(backlog_files, struct(event_time, seq)) AS backlog_files,
         max_by(backlog_bytes, struct(event_time, seq)) AS backlog_bytes
  FROM events
  WHERE event_type = 'flow_progress' AND level = 'METRICS' AND (backlog_files IS NOT NULL OR backlog_bytes IS NOT NULL)
    AND update_id IN (SELECT update_id FROM update_status)
  GROUP BY update_id, flow_name
),
failures AS (
  SELECT update_id, flow_name, max(event_time) AS failed_at,
         max_by(measurement_reason, struct(event_time, seq)) AS reason
  FROM events
  WHERE measurement = 'backlog' AND update_id IN (SELECT update_id FROM update_status)
  GROUP BY update_id, flow_name
),
joined AS (
  SELECT coalesce(f.update_id, w.update_id) AS update_id, coalesce(f.flow_name, w.flow_name) AS flow_name,
         f.figure_at, f.backlog_files, f.backlog_bytes, w.failed_at, w.reason,
         (w.failed_at IS NOT NULL AND (f.figure_at IS NULL OR w.failed_at >= f.figure_at)) AS failed_last
  FROM figures f FULL OUTER JOIN failures w ON f.update_id = w.update_id AND f.flow_name <=> w.flow_name
)
SELECT
  update_id, flow_name,
  CASE WHEN failed_last THEN failed_at ELSE figure_at END AS measured_at,
  CASE WHEN failed_last THEN CAST(NULL AS BIGINT) ELSE backlog_files END AS backlog_files,
  CASE WHEN failed_last THEN CAST(NULL AS BIGINT) ELSE backlog_bytes END AS backlog_bytes,
  CASE WHEN failed_last THEN coalesce(reason, 'backlog measurement failed') END AS reason,
  CASE WHEN NOT failed_last THEN backlog_files END
    - lag(CASE WHEN NOT failed_last THEN backlog_files END)
        OVER (PARTITION BY flow_name ORDER BY coalesce(figure_at, failed_at)) AS files_change,
  to_date(CASE WHEN failed_last THEN failed_at ELSE figure_at END) AS update_date
FROM joined
""",
    partition_cols=("update_date",),
)

EXPECTATIONS = _table(
    "expectation_results",
    "Per update, dataset and expectation: rows that passed and failed, and the pass rate. Every dataset of "
    "the ingest pipeline is a streaming table, so each row is counted once, in the update that brought it, "
    "except when the dataset is fully refreshed (full_refresh): then every row is counted again.",
    [
        ("update_id", "STRING", "Pipeline update (run) id"),
        ("dataset", "STRING", "Dataset the expectation is declared on"),
        ("expectation", "STRING", "Expectation name"),
        ("passed_records", "BIGINT", "Rows that met the condition"),
        ("failed_records", "BIGINT", "Rows that did not (whatever the action)"),
        ("pass_rate", "DOUBLE", "passed / (passed + failed), 0..1"),
        ("full_refresh", "BOOLEAN", "The dataset was fully refreshed in this update: its counts cover history again"),
        ("batches_without_counts", "BIGINT", "Micro-batches of the dataset's flow in the update that reported no "
                                             "expectation counts (then the counts cover only the others); NULL "
                                             "when no flow of the update writes the dataset"),
        ("measured_at", "TIMESTAMP", "Last metrics event of the update for the dataset"),
        ("update_date", "DATE", "Date (UTC) of measured_at"),
    ],
    f"""
WITH results AS (
  SELECT update_id, event_time, e.name AS expectation, {short('e.dataset')} AS dataset,
         e.passed_records, e.failed_records
  FROM (SELECT update_id, event_time, explode(expectations) AS e FROM events
        WHERE event_type = 'flow_progress' AND expectations IS NOT NULL
          AND update_id IN (SELECT update_id FROM update_status))
),
per_expectation AS (
  SELECT update_id, dataset, expectation,
         sum(passed_records) AS passed_records, sum(failed_records) AS failed_records,
         max(event_time) AS measured_at
  FROM results
  GROUP BY update_id, dataset, expectation
),
uncounted AS (
  SELECT update_id, dataset, sum(batches_without_expectation_counts) AS batches_without_counts
  FROM flow_throughput GROUP BY update_id, dataset
)
SELECT
  r.update_id, r.dataset, r.expectation, r.passed_records, r.failed_records,
  CAST(r.passed_records AS DOUBLE) / nullif(r.passed_records + r.failed_records, 0) AS pass_rate,
  {full_refresh_of('u', 'r.dataset')} AS full_refresh,
  c.batches_without_counts,
  r.measured_at,
  to_date(r.measured_at) AS update_date
FROM per_expectation r
JOIN update_status u ON u.update_id = r.update_id
LEFT JOIN uncounted c ON c.update_id = r.update_id AND c.dataset = r.dataset
""",
    partition_cols=("update_date",),
)

EXPECTATIONS_DAILY = _table(
    "expectation_results_daily",
    "Per day, dataset and expectation: rows passed and failed, pass rate. Counts of a dataset's full refresh "
    "are left out (they count rows of earlier days again; rows that arrived with the full refresh itself are "
    "therefore not in these figures).",
    [
        ("update_date", "DATE", "Day (UTC)"),
        ("dataset", "STRING", "Dataset"),
        ("expectation", "STRING", "Expectation name"),
        ("passed_records", "BIGINT", "Rows that met the condition"),
        ("failed_records", "BIGINT", "Rows that did not"),
        ("pass_rate", "DOUBLE", "passed / (passed + failed), 0..1"),
    ],
    """
SELECT update_date, dataset, expectation,
       sum(passed_records) AS passed_records, sum(failed_records) AS failed_records,
       CAST(sum(passed_records) AS DOUBLE) / nullif(sum(passed_records) + sum(failed_records), 0) AS pass_rate
FROM expectation_results
WHERE full_refresh IS NOT TRUE
GROUP BY update_date, dataset, expectation
""",
    partition_cols=("update_date",),
)

EXPECTATIONS_WEEKLY = _table(
    "expectation_results_weekly",
    "Per week (starting Monday), dataset and expectation: pass rate, the previous week's rate and the change "
    "(full-refresh recounts left out, as in the daily table).",
    [
        ("week_start", "DATE", "Monday of the week (UTC)"),
        ("dataset", "STRING", "Dataset"),
        ("expectation", "STRING", "Expectation name"),
        ("passed_records", "BIGINT", "Rows that met the condition"),
        ("failed_records", "BIGINT", "Rows that did not"),
        ("pass_rate", "DOUBLE", "passed / (passed + failed), 0..1"),
        ("previous_week_pass_rate", "DOUBLE", "The pass rate of the week before (NULL if no data)"),
        ("pass_rate_change", "DOUBLE", "pass_rate - previous_week_pass_rate"),
    ],
    """
WITH weekly AS (
  SELECT CAST(date_trunc('WEEK', update_date) AS DATE) AS week_start, dataset, expectation,
         sum(passed_records) AS passed_records, sum(failed_records) AS failed_records,
         CAST(sum(passed_records) AS DOUBLE) / nullif(sum(passed_records) + sum(failed_records), 0) AS pass_rate
  FROM expectation_results
  WHERE full_refresh IS NOT TRUE
  GROUP BY CAST(date_trunc('WEEK', update_date) AS DATE), dataset, expectation
)
SELECT w.week_start, w.dataset, w.expectation, w.passed_records, w.failed_records, w.pass_rate,
       p.pass_rate AS previous_week_pass_rate,
       w.pass_rate - p.pass_rate AS pass_rate_change
FROM weekly w
LEFT JOIN weekly p
  ON p.dataset = w.dataset AND p.expectation = w.expectation AND p.week_start = date_sub(w.week_start, 7)
""",
)

DROPPED_RECORDS = _table(
    "dropped_records",
    "Per update and dataset: rows removed by `drop` expectations.",
    [
        ("update_id", "STRING", "Pipeline update (run) id"),
        ("dataset", "STRING", "Dataset"),
        ("dropped_records", "BIGINT", "Rows dropped"),
        ("update_date", "DATE", "Date (UTC)"),
    ],
    """
SELECT update_id, dataset, sum(dropped_records) AS dropped_records, to_date(max(event_time)) AS update_date
FROM events
WHERE event_type = 'flow_progress' AND dropped_records IS NOT NULL
  AND update_id IN (SELECT update_id FROM update_status)
GROUP BY update_id, dataset
""",
    partition_cols=("update_date",),
)

ERRORS = _streaming_table(
    "errors",
    "One row per error event (streaming: each is read once): update, flow, exception classes, error class, "
    "message, time. Errors of internal updates are kept here; error_classes and the health metrics count "
    "only updates in update_status.",
    [
        ("event_id", "STRING", "Event id", "event_id"),
        ("update_id", "STRING", "Pipeline update (run) id", "update_id"),
        ("flow_name", "STRING", "Failed flow (NULL for the update's own error)", "nullif(flow_name, '')"),
        ("event_type", "STRING", "flow_progress or update_progress", "event_type"),
        ("event_time", "TIMESTAMP", "When the error was logged", "event_time"),
        ("exception_class", "STRING", "Outermost exception class", "exception_class"),
        ("root_cause_class", "STRING", "Innermost exception class (the root cause)", "root_cause_class"),
        ("error_class", "STRING", "Error class parsed from the message ([ERROR_CLASS]), if any",
         error_class("exception_message")),
        ("message", "STRING", "Error message", "coalesce(exception_message, message)"),
        ("root_cause_message", "STRING", "Message of the root cause", "root_cause_message"),
        ("fatal", "BOOLEAN", "Whether the error was unrecoverable (no more retries)", "error_fatal"),
        ("error_date", "DATE", "Date (UTC)", "to_date(event_time)"),
    ],
    "events",
    "has_error OR level = 'ERROR'",
    partition_cols=("error_date",),
)

ERROR_CLASSES = _table(
    "error_classes",
    "Per error class (or root-cause exception class when the message has none): occurrences, first and last "
    "seen (internal updates excluded).",
    [
        ("error_class", "STRING", "Error class, or the root cause's exception class"),
        ("occurrences", "BIGINT", "Error events"),
        ("updates", "BIGINT", "Distinct updates with the error"),
        ("first_seen", "TIMESTAMP", "First occurrence"),
        ("last_seen", "TIMESTAMP", "Last occurrence"),
        ("last_message", "STRING", "Message of the last occurrence"),
    ],
    """
SELECT
  coalesce(error_class, root_cause_class, exception_class) AS error_class,
  count(*) AS occurrences,
  count(DISTINCT update_id) AS updates,
  min(event_time) AS first_seen,
  max(event_time) AS last_seen,
  max_by(message, event_time) AS last_message
FROM errors
WHERE update_id IN (SELECT update_id FROM update_status)
GROUP BY coalesce(error_class, root_cause_class, exception_class)
""",
)

# The facts the rules read (pipelines/insights.py): the first error's class, the class and message of every
# exception of its chain (as the CLI reads them), and, should the event log no longer hold that event, what
# `events` kept of it (outermost and innermost exception).
_INSIGHT_FACTS = ("concat_ws(' ', i.first_error_class, " + I.chain_sql("i.first_error_chain") + ", "
                  "i.exception_class, i.root_cause_class, i.first_error_message, "
                  "i.root_cause_message, concat('" + I.STATE_MARKER + "', i.final_state), "
                  "CASE WHEN i.backlog_growing THEN '" + I.BACKLOG_GROWING + "' END, "
                  "CASE WHEN i.no_progress THEN '" + I.NO_PROGRESS + "' END)")

RUN_INSIGHTS = _table(
    "run_insights",
    "One row per FAILED or CANCELED update (internal updates excluded): the failing flow and where it was "
    "defined, the error class and a concise message, the chain of events, the last flow that completed, and "
    "a root-cause category with a recommended action (rules in pipelines/insights.py; 'unknown' when none "
    "matches).",
    [
        ("pipeline_id", "STRING", "Pipeline id"),
        ("pipeline_name", "STRING", "Pipeline name"),
        ("update_id", "STRING", "Pipeline update (run) id"),
        ("final_state", "STRING", "FAILED or CANCELED"),
        ("start_time", "TIMESTAMP", "When the update was created"),
        ("end_time", "TIMESTAMP", "When it failed or was canceled"),
        ("failing_flow", "STRING", "The first flow that logged an error (NULL: the update's own error, or none)"),
        ("definition_file", "STRING", "File that declared the failing flow (NULL where the event log does not say: "
                                      "Databricks)"),
        ("definition_line", "BIGINT", "Line that declared the failing flow (as definition_file)"),
        ("error_class", "STRING", "Error class ([ERROR_CLASS]) or exception class of the first error"),
        ("root_cause_class", "STRING", "Innermost exception class of the first error"),
        ("message", "STRING", "The first error's message: first line, without exception class names, at most "
                              "300 characters; when an exception of its chain names a file Spark could not "
                              "read ([FAILED_READ_FILE]), that exception's message, which names the file"),
        ("root_cause_message", "STRING", "The first error's innermost message, concise (often says more than the "
                                         "outer message: the file, the missing column)"),
        ("last_completed_flow", "STRING", "The last flow that completed in the update before it ended (NULL: none)"),
        ("events", "ARRAY<STRUCT<event_time: TIMESTAMP, flow_name: STRING, event_type: STRING, status: STRING, "
                   "level: STRING, message: STRING>>",
         "The update's state changes, flow outcomes, warnings and errors, in order"),
        ("category", "STRING", "Root-cause category (pipelines/insights.py), 'unknown' when no rule matches"),
        ("recommended_action", "STRING", "What to do about it"),
        ("update_date", "DATE", "Date (UTC) the update started"),
    ],
    f"""
WITH ended AS (
  SELECT * FROM update_status WHERE final_state IN ('FAILED', 'CANCELED')
),
per_update AS (
  SELECT
    e.update_id,
    min_by(e.flow_name, struct(e.event_time, e.seq)) FILTER (WHERE e.has_error AND e.flow_name <> '') AS failing_flow,
    min_by(e.exception_class, struct(e.event_time, e.seq)) FILTER (WHERE e.has_error) AS exception_class,
    min_by(e.root_cause_class, struct(e.event_time, e.seq)) FILTER (WHERE e.has_error) AS root_cause_class,
    min_by(e.root_cause_message, struct(e.event_time, e.seq)) FILTER (WHERE e.has_error) AS root_cause_message,
    min_by(e.event_id, struct(e.event_time, e.seq)) FILTER (WHERE e.has_error) AS first_error_event,
    max_by(e.flow_name, struct(e.event_time, e.seq))
      FILTER (WHERE e.event_type = 'flow_progress' AND e.flow_status = 'COMPLETED' AND e.level <> 'METRICS')
      AS last_completed_flow,
    count_if(e.event_type = 'flow_progress' AND e.flow_status = 'COMPLETED' AND e.level <> 'METRICS') AS completed_flows,
    count_if(e.has_error) AS error_events,
    sum(e.num_output_rows) FILTER (WHERE e.level = 'METRICS') AS rows_written,
    min_by(e.backlog_files, struct(e.event_time, e.seq)) FILTER (WHERE e.backlog_files IS NOT NULL) AS first_backlog,
    max_by(e.backlog_files, struct(e.event_time, e.seq)) FILTER (WHERE e.backlog_files IS NOT NULL) AS last_backlog,
    array_sort(collect_list(struct(e.event_time, e.seq, e.flow_name, e.event_type,
                                   coalesce(e.update_state, e.flow_status) AS status, e.level,
                                   {I.concise_sql('coalesce(e.exception_message, e.message)')} AS message))
      FILTER (WHERE e.event_type = 'update_progress' OR e.level IN ('WARN', 'ERROR') OR e.has_error
              OR (e.event_type = 'flow_progress' AND e.level <> 'METRICS'
                  AND e.flow_status IN ('COMPLETED', 'FAILED', 'SKIPPED', 'STOPPED', 'EXCLUDED')))) AS chain
  FROM events e JOIN ended d ON e.update_id = d.update_id
  GROUP BY e.update_id
),
-- the whole exception chain of each update's first error, from the event log (`events` keeps only its
-- outermost and innermost exception); none when the live log no longer holds the event
first_error_chains AS (
  SELECT l.id AS event_id,
         max_by(transform(l.error.exceptions, x -> named_struct('class_name', x.class_name, 'message', x.message)),
                l.`timestamp`) AS exceptions
  FROM {{event_log}} l
  WHERE l.error IS NOT NULL AND l.id IN (SELECT first_error_event FROM per_update)
  GROUP BY l.id
),
definitions AS (
  SELECT update_id, flow_name, max(definition_file) AS definition_file, max(definition_line) AS definition_line
  FROM events WHERE event_type = 'flow_definition' AND definition_file IS NOT NULL
  GROUP BY update_id, flow_name
),
insight AS (
  SELECT d.*, p.failing_flow, p.exception_class, p.root_cause_class, p.root_cause_message,
         p.last_completed_flow, p.chain, c.exceptions AS first_error_chain,
         coalesce({I.file_message_sql('c.exceptions')}, d.first_error_message) AS first_error_text,
         -- without an error to go by, what the events say
         coalesce(p.error_events, 0) = 0 AND coalesce(p.last_backlog > p.first_backlog, false) AS backlog_growing,
         coalesce(p.error_events, 0) = 0 AND coalesce(p.completed_flows, 0) = 0
           AND coalesce(p.rows_written, 0) = 0 AS no_progress
  FROM ended d LEFT JOIN per_update p ON d.update_id = p.update_id
  LEFT JOIN first_error_chains c ON p.first_error_event = c.event_id
),
classified AS (
  SELECT i.*, {I.category_sql(_INSIGHT_FACTS)} AS category FROM insight i
)
SELECT
  i.pipeline_id, i.pipeline_name, i.update_id, i.final_state, i.start_time, i.end_time, i.failing_flow,
  f.definition_file, f.definition_line,
  coalesce(i.first_error_class, i.exception_class) AS error_class,
  i.root_cause_class,
  {I.concise_sql('i.first_error_text')} AS message,
  {I.concise_sql('i.root_cause_message')} AS root_cause_message,
  i.last_completed_flow,
  transform(i.chain, x -> named_struct('event_time', x.event_time, 'flow_name', x.flow_name,
                                       'event_type', x.event_type, 'status', x.status, 'level', x.level,
                                       'message', x.message)) AS events,
  i.category,
  {I.action_sql('i.category')} AS recommended_action,
  i.update_date
FROM classified i LEFT JOIN definitions f ON i.update_id = f.update_id AND i.failing_flow = f.flow_name
""",
    partition_cols=("update_date",),
)

ANOMALIES = _table(
    "anomalies",
    "One row per value that is unusual for its own series: update duration per pipeline, rows written and "
    "backlog per flow, pass rate per expectation, ingestion latency per table, each against the median and "
    "median absolute deviation of the comparable updates before it (completed, no full refresh). Rules and "
    "settings in pipelines/anomalies.py; nothing is flagged before a series has enough history.",
    [
        ("pipeline_name", "STRING", "Pipeline name"),
        ("metric", "STRING", "What was measured (update_duration_seconds, rows_written, pass_rate, backlog_files, "
                             "backlog_bytes, ingestion_latency_p95_seconds)"),
        ("subject", "STRING", "The series: the pipeline, a flow, dataset.expectation or a table"),
        ("update_id", "STRING", "Update whose value is unusual"),
        ("update_start", "TIMESTAMP", "When that update started"),
        ("value", "DOUBLE", "The value"),
        ("baseline_median", "DOUBLE", "Median of the comparable values before it"),
        ("baseline_mad", "DOUBLE", "Median absolute deviation of those values"),
        ("history_size", "INT", f"Comparable values the baseline is made of (at most {A.WINDOW})"),
        ("expected_low", "DOUBLE", "Lowest value that would not have been flagged by its score"),
        ("expected_high", "DOUBLE", "Highest value that would not have been flagged by its score"),
        ("score", "DOUBLE", f"(value - median) / scale; flagged from {A.THRESHOLD} (modified z-score)"),
        ("kind", "STRING", "spike (above the baseline) or drop (below)"),
        ("seasonal", "BOOLEAN", "Compared with the same day of the week only"),
        ("update_date", "DATE", "Date (UTC) the update started"),
    ],
    A.anomalies_sql(),
    partition_cols=("update_date",),
)

SCHEMA_DRIFT = _table(
    "schema_drift",
    "Per table and day the data arrived (the source file's modification time, so a full refresh that reads "
    "old files again changes no day): rows with rescued data, the rescued field names, the files.",
    [
        ("table_name", "STRING", "Table (as configured)"),
        ("arrival_date", "DATE", "Date (UTC) of the source file's modification time"),
        ("rows_with_rescued_data", "BIGINT", "Rows with _rescued_data set"),
        ("rescued_fields", "ARRAY<STRING>", "Field names found in _rescued_data"),
        ("files", "ARRAY<STRING>", "Source files of those rows"),
    ],
    """
SELECT
  table_name,
  to_date(_source_file_modification_time) AS arrival_date,
  count(*) AS rows_with_rescued_data,
  array_sort(array_distinct(filter(
    flatten(collect_list(map_keys(from_json(_rescued_data, 'MAP<STRING,STRING>')))),
    k -> k <> '_file_path'))) AS rescued_fields,
  array_sort(collect_set(_source_file)) AS files
FROM {bronze_union}
WHERE _rescued_data IS NOT NULL
GROUP BY table_name, to_date(_source_file_modification_time)
""",
    partition_cols=("arrival_date",),
)

BRONZE_DUPLICATES = _table(
    "bronze_duplicates",
    "Per table and landing file: bronze rows whose content (data columns, rescued data, corrupt record) "
    "had already landed, from another file (a producer re-delivering records under a new name) or earlier "
    "in the same file. The first copy of a record (earliest ingestion) is not counted. A full refresh "
    "re-reads files into an emptied bronze, so it adds none.",
    [
        ("table_name", "STRING", "Table (as configured)"),
        ("path", "STRING", "The landing file holding the repeated rows"),
        ("duplicate_rows", "BIGINT", "Rows of the file whose content landed before"),
        ("from_other_files", "BIGINT", "Of those, rows first landed from another file"),
        ("first_landed_in", "ARRAY<STRING>", "The other files those rows first landed from"),
        ("ingested_at", "TIMESTAMP", "Latest ingestion of the repeated rows"),
        ("ingested_date", "DATE", "Date (UTC) of ingested_at"),
    ],
    """
WITH numbered AS (
  SELECT table_name, _source_file, _ingested_at,
         row_number() OVER (PARTITION BY table_name, _content_hash ORDER BY _ingested_at, _source_file) AS copy,
         first_value(_source_file) OVER (PARTITION BY table_name, _content_hash
                                         ORDER BY _ingested_at, _source_file) AS first_file
  FROM {bronze_union}
)
SELECT table_name, _source_file AS path,
       count(*) AS duplicate_rows,
       count_if(first_file <> _source_file) AS from_other_files,
       array_sort(collect_set(CASE WHEN first_file <> _source_file THEN first_file END)) AS first_landed_in,
       max(_ingested_at) AS ingested_at,
       to_date(max(_ingested_at)) AS ingested_date
FROM numbered
WHERE copy > 1
GROUP BY table_name, _source_file
""",
    partition_cols=("ingested_date",),
)

QUARANTINE_DELIVERIES = _table(
    "quarantine_deliveries",
    "Sink rows numbered per (table, file, line hash) by ingestion: delivery 1 is the first time the line was "
    "quarantined, a higher one a re-delivery (a full refresh reads the file again; the sink is not cleared).",
    [],
    f"""
SELECT
  source_table, _source_file, {path_key('_source_file')} AS path_key, _record_hash,
  _source_file_modification_time, _ingested_at, _quarantined_at,
  dense_rank() OVER (PARTITION BY source_table, _source_file, _record_hash ORDER BY _ingested_at) AS delivery
FROM {{sink}}
""",
    kind=TEMPORARY_VIEW,
)

QUARANTINE_DAILY = _table(
    "quarantine_daily",
    "Per table and day: lines quarantined for the first time, counted on the day their file arrived (its "
    "modification time), and re-deliveries of lines already quarantined, counted on the day they were "
    "quarantined again. A full refresh adds re-deliveries only.",
    [
        ("table_name", "STRING", "Table the rows came from"),
        ("day", "DATE", "Day (UTC): the file's arrival for first deliveries, the re-quarantine for re-deliveries"),
        ("quarantined_rows", "BIGINT", "Lines quarantined for the first time, from files that arrived that day"),
        ("files", "BIGINT", "Distinct source files of those lines"),
        ("redelivered_rows", "BIGINT", "Lines quarantined again that day (same table, file and content hash as an "
                                       "earlier ingestion)"),
    ],
    """
WITH attributed AS (
  SELECT source_table, to_date(_source_file_modification_time) AS day, 1 AS first_delivery, 0 AS redelivery,
         _source_file AS first_file
  FROM quarantine_deliveries WHERE delivery = 1
  UNION ALL
  SELECT source_table, to_date(_quarantined_at) AS day, 0, 1, CAST(NULL AS STRING)
  FROM quarantine_deliveries WHERE delivery > 1
)
SELECT source_table AS table_name, day,
       CAST(sum(first_delivery) AS BIGINT) AS quarantined_rows,
       count(DISTINCT first_file) AS files,
       CAST(sum(redelivery) AS BIGINT) AS redelivered_rows
FROM attributed
GROUP BY source_table, day
""",
    partition_cols=("day",),
)

RECONCILIATION = _table(
    "reconciliation",
    "One row per landing file: the records in the file as its format counts them (JSON lines: lines with "
    "content; CSV: lines with content less the header; a JSON document: its objects; Parquet: its rows), counted "
    "by the file state without the ingest's reader, against the rows bronze holds from it. Bronze is the truth "
    "for 'landed': every record becomes exactly one bronze row, a malformed one included (it keeps its text in "
    "_corrupt_record, and is also copied to corrupt_records_sink, so quarantined records are a part of the bronze "
    "rows, not an addition). difference = lines - bronze_rows; a file changed after it was ingested is flagged "
    "(Auto Loader with cloudFiles.allowOverwrites=false does not read it again, nor does the local engine).",
    [
        ("table_name", "STRING", "Bronze table the file feeds"),
        ("path", "STRING", "File path"),
        ("state", "STRING", "File state: committed, discovered, pending or not_in_file_state"),
        ("lines", "BIGINT", "Records in the file as its format counts them: lines with content (a JSON array of "
                            "objects one per object; CSV less the header), a document's objects, Parquet rows "
                            "(NULL: not counted)"),
        ("bronze_rows", "BIGINT", "Bronze rows from the file (corrupt lines included)"),
        ("corrupt_rows", "BIGINT", "Of those, rows with _corrupt_record"),
        ("quarantined_rows", "BIGINT", "Lines of the file in corrupt_records_sink (first deliveries only)"),
        ("difference", "BIGINT", "lines - bronze_rows (NULL when lines are NULL)"),
        ("modified_after_ingest", "BOOLEAN", "Size or modification time changed after the stream took the file "
                                             "(NULL: not known)"),
        ("archive_mode", "STRING", "MOVE or DELETE when cleanSource took the committed file out of the landing "
                                   "folder (its lines are the ones counted when it was committed)"),
        ("status", "STRING", "ok, missing_rows (more lines than bronze rows), extra_rows, not_counted (no line "
                             "count), modified_after_ingest, pending (not committed yet)"),
        ("first_commit_time", "TIMESTAMP", "The file's first commit"),
        ("create_date", "DATE", "Date (UTC) the file was created (modified)"),
    ],
    """
WITH quarantined AS (
  SELECT path_key, count(*) AS quarantined_rows
  FROM quarantine_deliveries WHERE delivery = 1
  GROUP BY path_key
)
SELECT
  f.table_name, f.path, f.state, f.lines, f.bronze_rows, f.corrupt_rows,
  coalesce(q.quarantined_rows, 0) AS quarantined_rows,
  f.lines - f.bronze_rows AS difference,
  f.modified_after_ingest,
  f.archive_mode,
  CASE WHEN NOT f.landed THEN 'pending'
       WHEN f.modified_after_ingest THEN 'modified_after_ingest'
       WHEN f.lines IS NULL THEN 'not_counted'
       WHEN f.lines > f.bronze_rows THEN 'missing_rows'
       WHEN f.lines < f.bronze_rows THEN 'extra_rows'
       ELSE 'ok' END AS status,
  f.first_commit_time, f.create_date
FROM landing_files f LEFT JOIN quarantined q ON q.path_key = f.path_key
""",
    partition_cols=("create_date",),
)

MEASUREMENT_GAPS = _table(
    "measurement_gaps",
    "One row per update (internal ones excluded): what could not be measured in it and why: lakewatch's "
    "measurement WARN events, micro-batches reported without a row count, files that landed without a commit "
    "time (so no latency). metrics_missing = 0 means every figure of the update was measured.",
    [
        ("update_id", "STRING", "Pipeline update (run) id"),
        ("start_time", "TIMESTAMP", "When the update was created"),
        ("measurement_warnings", "BIGINT", "WARN events of figures the run could not measure"),
        ("batches_without_rows", "BIGINT", "Micro-batch METRICS events without a row count"),
        ("files_without_commit_time", "BIGINT", "Files whose rows first landed in the update, without a commit time"),
        ("metrics_missing", "BIGINT", "The three counts added up"),
        ("reasons", "ARRAY<STRING>", "What was not measured and why"),
        ("update_date", "DATE", "Date (UTC) the update started"),
    ],
    """
WITH warnings AS (
  SELECT update_id, count(*) AS n,
         collect_set(concat(measurement,
                            CASE WHEN coalesce(flow_name, '') <> '' THEN concat(' (', flow_name, ')') ELSE '' END,
                            ': ', coalesce(measurement_reason, 'no reason given'))) AS reasons
  FROM events WHERE measurement IS NOT NULL
  GROUP BY update_id
),
unreported AS (
  SELECT update_id, count(*) AS n,
         collect_set(concat('rows of micro-batches of ', coalesce(flow_name, 'a flow'), ' not reported')) AS reasons
  FROM events
  WHERE event_type = 'flow_progress' AND level = 'METRICS' AND batch_id IS NOT NULL AND num_output_rows IS NULL
  GROUP BY update_id
),
uncommitted AS (
  SELECT u.update_id, count(*) AS n
  FROM file_latency f
  JOIN update_status u
    ON f.first_ingested_at >= u.start_time AND (u.end_time IS NULL OR f.first_ingested_at <= u.end_time)
  WHERE f.latency_status = 'no_commit_time'
  GROUP BY u.update_id
)
SELECT
  u.update_id, u.start_time,
  coalesce(w.n, 0) AS measurement_warnings,
  coalesce(b.n, 0) AS batches_without_rows,
  coalesce(f.n, 0) AS files_without_commit_time,
  coalesce(w.n, 0) + coalesce(b.n, 0) + coalesce(f.n, 0) AS metrics_missing,
  array_sort(concat(
    coalesce(w.reasons, CAST(array() AS ARRAY<STRING>)),
    coalesce(b.reasons, CAST(array() AS ARRAY<STRING>)),
    CASE WHEN f.n > 0 THEN array(concat(CAST(f.n AS STRING), ' file(s) landed without a commit time (no latency): '
                                        'cloud_files_state fills commit_time on DBR 18.2+, or with cloudFiles.cleanSource'))
         ELSE CAST(array() AS ARRAY<STRING>) END)) AS reasons,
  u.update_date
FROM update_status u
LEFT JOIN warnings w ON w.update_id = u.update_id
LEFT JOIN unreported b ON b.update_id = u.update_id
LEFT JOIN uncommitted f ON f.update_id = u.update_id
""",
    partition_cols=("update_date",),
)


TABLE_GROWTH = _table(
    "table_growth",
    "Size and file count of every ingest table ({table}_bronze, the clean {table}, corrupt_records_sink) at each "
    "snapshot the job's snapshot_table_sizes task took, and how much it grew since the table's snapshot before: "
    "bytes and files added, and the same per day. Figures that cannot be measured are NULL and reason says why "
    "(table_missing, first_snapshot, table_recreated, not_snapshotted, ...); never 0.",
    [
        ("table_name", "STRING", "Ingest table"),
        ("table_kind", "STRING", "bronze, clean or sink"),
        ("source_table", "STRING", "The configured table it belongs to (NULL for the sink, which all tables share)"),
        ("snapshot_time", "TIMESTAMP", "When the table was measured (NULL: never snapshotted)"),
        ("delta_version", "BIGINT", "Delta version measured"),
        ("size_bytes", "BIGINT", "Bytes of the data files of that version (DESCRIBE DETAIL sizeInBytes)"),
        ("num_files", "BIGINT", "Data files of that version (DESCRIBE DETAIL numFiles)"),
        ("bytes_added", "BIGINT", "size_bytes minus the table's size at its snapshot before (negative: it shrank)"),
        ("files_added", "BIGINT", "num_files minus the table's files at its snapshot before"),
        ("seconds_since_previous", "DOUBLE", "Seconds since the table's snapshot before"),
        ("bytes_per_day", "DOUBLE", "bytes_added scaled to a day: how fast the table grows"),
        ("files_per_day", "DOUBLE", "files_added scaled to a day"),
        ("is_latest", "BOOLEAN", "The table's latest snapshot (or its only row)"),
        ("reason", "STRING", "Why a figure is NULL: the snapshot's own reason (table_missing, not_delta, "
                             "not_measured, changed_while_measured; version_not_measured: only the version), "
                             "first_snapshot, previous_not_measured, table_recreated (a new table id or an older "
                             "version), no_time_elapsed, or not_snapshotted (a configured table no snapshot "
                             "holds); NULL when all are measured"),
        ("snapshot_date", "DATE", "Date (UTC) of the snapshot"),
    ],
    f"""
WITH ordered AS (
  SELECT s.*,
         lag(snapshot_time) OVER w AS previous_time,
         lag(size_bytes) OVER w AS previous_size,
         lag(num_files) OVER w AS previous_files,
         lag(table_id) OVER w AS previous_table_id,
         lag(delta_version) OVER w AS previous_version,
         row_number() OVER (PARTITION BY table_name ORDER BY snapshot_time DESC, snapshot_id DESC) = 1 AS is_latest
  FROM {{table_sizes}} s
  WINDOW w AS (PARTITION BY table_name ORDER BY snapshot_time, snapshot_id)
),
judged AS (
  SELECT *,
         CASE
           WHEN size_bytes IS NULL OR num_files IS NULL THEN coalesce(reason, 'not_measured')
           WHEN previous_time IS NULL THEN 'first_snapshot'
           WHEN previous_size IS NULL OR previous_files IS NULL THEN 'previous_not_measured'
           WHEN NOT (table_id <=> previous_table_id) OR delta_version < previous_version THEN 'table_recreated'
           WHEN snapshot_time <= previous_time THEN 'no_time_elapsed'
         END AS growth_reason,
         {seconds_between('previous_time', 'snapshot_time')} AS seconds
  FROM ordered
)
SELECT
  table_name, table_kind, source_table, snapshot_time, delta_version, size_bytes, num_files,
  CASE WHEN growth_reason IS NULL THEN size_bytes - previous_size END AS bytes_added,
  CASE WHEN growth_reason IS NULL THEN num_files - previous_files END AS files_added,
  CASE WHEN growth_reason IS NULL THEN seconds END AS seconds_since_previous,
  CASE WHEN growth_reason IS NULL THEN (size_bytes - previous_size) * 86400.0 / seconds END AS bytes_per_day,
  CASE WHEN growth_reason IS NULL THEN (num_files - previous_files) * 86400.0 / seconds END AS files_per_day,
  is_latest, coalesce(growth_reason, reason) AS reason, snapshot_date
FROM judged
UNION ALL
SELECT e.table_name, e.table_kind, e.source_table, CAST(NULL AS TIMESTAMP), CAST(NULL AS BIGINT),
       CAST(NULL AS BIGINT), CAST(NULL AS BIGINT), CAST(NULL AS BIGINT), CAST(NULL AS BIGINT),
       CAST(NULL AS DOUBLE), CAST(NULL AS DOUBLE), CAST(NULL AS DOUBLE), true, 'not_snapshotted', CAST(NULL AS DATE)
FROM {{ingest_tables}} e
WHERE e.table_name NOT IN (SELECT table_name FROM {{table_sizes}} WHERE table_name IS NOT NULL)
""",
    partition_cols=("snapshot_date",),
)

def _newest_rows_unknown(alias: str = "") -> str:
    """Whether the newest update (by `at`) that did not write a measured 0 has a row count that is not
    known (`ingested` NULL); max_by is NULL too when every update wrote 0, hence the count."""
    return (f"(max_by({alias}ingested, {alias}at) FILTER (WHERE {alias}ingested IS NOT FALSE) IS NULL "
            f"AND count_if({alias}ingested IS NULL) > 0)")


# A bronze flow's rows in one incremental update: true (rows written), false (a measured 0, or the flow
# did not run a micro-batch), NULL (a micro-batch without a row count: whether rows came is unknown).
_WROTE_ROWS = """CASE WHEN coalesce(f.rows_written, 0) > 0 THEN true
                WHEN f.unmeasured_batches > 0 THEN CAST(NULL AS BOOLEAN)
                ELSE false END"""

TABLE_FRESHNESS = _table(
    "table_freshness",
    "One row per configured ingest table: since when it has received no rows, and the hours it may go "
    "without (max_hours_without_rows in the table configuration). Walking back from the newest "
    "incremental update that ran its bronze flow, updates that wrote a measured 0 are passed over; the "
    "first other decides: rows written (silent since it ended) or a micro-batch without a row count "
    "(not known: silent_since NULL, reason says why). A table that never got rows is silent since the "
    "first update that ran its flow. Full refreshes are left out: they write old files' rows again.",
    [
        ("table_name", "STRING", "Configured table name"),
        ("bronze_table", "STRING", "Its bronze streaming table (the flow of the same name)"),
        ("max_hours_without_rows", "DOUBLE", "Hours it may go without new rows (NULL: no limit of its own)"),
        ("last_rows_update_id", "STRING", "The newest incremental update whose bronze flow wrote rows"),
        ("last_rows_at", "TIMESTAMP", "When that update ended (NULL: no update wrote rows)"),
        ("first_run_at", "TIMESTAMP", "When the first incremental update that ran its bronze flow started"),
        ("silent_since", "TIMESTAMP", "Since when no rows arrived: last_rows_at, or first_run_at when none ever "
         "did; NULL when not known"),
        ("reason", "STRING", "Why silent_since is NULL (NULL when measured)"),
    ],
    f"""
WITH configured AS (
  SELECT source_table AS table_name, table_name AS bronze_table, max_hours_without_rows
  FROM {{ingest_tables}} WHERE table_kind = '{BRONZE}'
),
runs AS (
  SELECT c.table_name, u.update_id, u.start_time, coalesce(u.end_time, u.start_time) AS at,
         {_WROTE_ROWS} AS ingested,
         concat('update ', u.update_id, ': ', CAST(f.unmeasured_batches AS STRING),
                ' micro-batch(es) without a row count') AS why
  FROM configured c
  JOIN flow_throughput f ON f.flow_name = c.bronze_table
  JOIN update_status u ON u.update_id = f.update_id
  WHERE u.full_refresh IS NOT TRUE
),
judged AS (
  SELECT table_name,
         max(at) FILTER (WHERE ingested) AS last_rows_at,
         max_by(update_id, at) FILTER (WHERE ingested) AS last_rows_update_id,
         min(start_time) AS first_run_at,
         {_newest_rows_unknown()} AS newest_unknown,
         max_by(why, at) FILTER (WHERE ingested IS NULL) AS unknown_why
  FROM runs GROUP BY table_name
)
SELECT c.table_name, c.bronze_table, c.max_hours_without_rows, j.last_rows_update_id, j.last_rows_at, j.first_run_at,
       CASE WHEN j.newest_unknown IS FALSE THEN coalesce(j.last_rows_at, j.first_run_at) END AS silent_since,
       CASE WHEN j.table_name IS NULL THEN 'no incremental update has run its bronze flow yet'
            WHEN j.newest_unknown THEN concat('rows not known for the last update that did not write a measured 0 (',
                                              j.unknown_why, ')') END AS reason
FROM configured c LEFT JOIN judged j ON j.table_name = c.table_name
""",
)


# -- health metrics: one SELECT per metric, each (metric_name, metric_value, reason) ---------------
# The clock the metrics read ("today", "the last 24 hours", "hours since"): the `{now}` placeholder.
CLOCK = "current_timestamp()"

_LAST_UPDATE = "no ingest update has finished yet"


def _m(name: str, value: str, reason: str, source: str) -> str:
    return (f"SELECT '{name}' AS metric_name, CAST(({value}) AS DOUBLE) AS metric_value, "
            f"CAST(({reason}) AS STRING) AS reason\nFROM {source}")


def _unknown_for(items: str) -> str:
    """A reason listing the non-NULL `items` (an aggregate of strings)."""
    return f"concat_ws('; ', array_sort(collect_list({items})))"


_NOT_MEASURED = "CASE WHEN b.{col} IS NULL THEN concat(b.flow_name, ': ', coalesce(b.reason, 'no figure')) END"
_KNOWN_BRONZE_ROWS = """CASE WHEN unmeasured_batches > 0 THEN CAST(NULL AS BIGINT)
                 WHEN rows_written IS NOT NULL THEN rows_written
                 WHEN batches = 0 AND final_status = 'COMPLETED' THEN CAST(0 AS BIGINT) END"""


def _hours_since(timestamp: str) -> str:
    """Hours from `timestamp` (a SQL expression) to the metrics' clock."""
    return f"(unix_millis({{now}}) - unix_millis({timestamp})) / 3600000.0"


# backlog_growth_streak: `col` of the newest update that did not grow (the one that ends the streak).
_STREAK_END = "min_by({col}, back) FILTER (WHERE grew IS NOT TRUE)"

_QUIET = ("max_hours_without_rows IS NOT NULL AND silent_since IS NOT NULL AND "
          + _hours_since("silent_since") + " > max_hours_without_rows")
_LIMITED_UNKNOWN = "max_hours_without_rows IS NOT NULL AND silent_since IS NULL"

_METRICS = [
    _m("errors_today", "count(*)", "NULL",
       "errors WHERE error_date = CAST({now} AS DATE) AND update_id IN (SELECT update_id FROM update_status)"),
    _m("failed_updates_today", "count_if(final_state = 'FAILED')", "NULL",
       "update_status WHERE update_date = CAST({now} AS DATE)"),
    _m("last_update_failed", "max(CASE WHEN final_state = 'FAILED' THEN 1 ELSE 0 END)",
       f"CASE WHEN count(*) = 0 THEN '{_LAST_UPDATE}' END", "last_update"),
    _m("last_update_duration_seconds", "max(duration_seconds)",
       "CASE WHEN count(*) = 0 THEN 'no incremental update (one that is not a full refresh) has finished yet' END",
       "last_incremental"),
    _m("last_update_duration_vs_median",
       "max(l.duration_seconds) / nullif(max(m.median_duration), 0)",
       """CASE WHEN count(l.update_id) = 0 THEN 'no incremental update (one that is not a full refresh) has finished yet'
               WHEN max(m.median_duration) IS NULL THEN 'no earlier completed incremental update to compare with'
               WHEN max(m.median_duration) = 0 THEN 'the trailing median duration is 0 seconds' END""",
       """(SELECT percentile(duration_seconds, 0.5) AS median_duration FROM (
            SELECT duration_seconds FROM update_status
            WHERE final_state = 'COMPLETED' AND full_refresh IS NOT TRUE AND duration_seconds IS NOT NULL
              AND start_time < (SELECT max(start_time) FROM last_incremental)
            ORDER BY start_time DESC LIMIT 20)) m
          LEFT JOIN last_incremental l ON true"""),
    # A bronze flow that completed without running a micro-batch wrote nothing: a measured 0. A flow
    # with a micro-batch whose count is missing, or that did not complete without a count, is unknown.
    _m("rows_last_update",
       "CASE WHEN count(b.flow_name) > 0 AND count_if(b.flow_name IS NOT NULL AND b.known_rows IS NULL) = 0 "
       "THEN sum(b.known_rows) END",
       f"""CASE WHEN count(l.update_id) = 0 THEN '{_LAST_UPDATE}'
               WHEN count(b.flow_name) = 0 THEN 'the last update ran no bronze flow'
               WHEN count_if(b.flow_name IS NOT NULL AND b.known_rows IS NULL) > 0 THEN concat('rows not known for: ',
                 {_unknown_for("CASE WHEN b.known_rows IS NULL THEN concat(b.flow_name, ' (', b.why, ')') END")}) END""",
       f"""last_update l LEFT JOIN (
            SELECT update_id, flow_name, {_KNOWN_BRONZE_ROWS} AS known_rows,
                   CASE WHEN unmeasured_batches > 0 THEN concat(CAST(unmeasured_batches AS STRING),
                                                                ' micro-batch(es) without a row count')
                        ELSE concat('no row count reported, status ', coalesce(final_status, 'unknown')) END AS why
            FROM flow_throughput WHERE endswith(flow_name, '_bronze')) b ON b.update_id = l.update_id"""),
    # The time since data last arrived, for lakewatch_no_rows: a pipeline scheduled more often than
    # files land has many updates without rows, and each is healthy. Walking back from the newest
    # update, updates whose bronze flows wrote no rows are passed over (a failed or canceled flow
    # without a micro-batch wrote none either: lakewatch_update_failed pages for it); the first other
    # one decides: rows written (hours since it ended) or a micro-batch without a row count (NULL:
    # whether data arrived then is unknown, so the silence since cannot be measured). A full refresh
    # is left out: it writes old files' rows again. With no update that wrote rows, the clock runs
    # from the first update.
    _m("hours_since_rows_ingested",
       f"""CASE WHEN count(*) = 0 OR {_newest_rows_unknown("d.")} THEN NULL
                ELSE {_hours_since("coalesce(max(d.at) FILTER (WHERE d.ingested), min(d.start_time))")} END""",
       f"""CASE WHEN count(*) = 0 THEN 'no ingest update has run yet'
               WHEN {_newest_rows_unknown("d.")}
                 THEN concat('rows not known for update ', max_by(d.update_id, d.at) FILTER (WHERE d.ingested IS NULL),
                             ', the last that did not write a measured 0: ',
                             max_by(d.why, d.at) FILTER (WHERE d.ingested IS NULL)) END""",
       f"""(SELECT u.update_id, u.start_time, coalesce(u.end_time, u.start_time) AS at,
                   CASE WHEN coalesce(b.known_rows, 0) > 0 THEN true
                        WHEN b.unknown_flows > 0 THEN CAST(NULL AS BOOLEAN)
                        ELSE false END AS ingested,
                   b.why
            FROM update_status u LEFT JOIN (
              SELECT update_id, sum(rows_written) AS known_rows, count_if(unmeasured_batches > 0) AS unknown_flows,
                     {_unknown_for("CASE WHEN unmeasured_batches > 0 THEN concat(flow_name, ' (', "
                                   "CAST(unmeasured_batches AS STRING), ' micro-batch(es) without a row count)') END")} AS why
              FROM flow_throughput WHERE endswith(flow_name, '_bronze') GROUP BY update_id) b
              ON b.update_id = u.update_id
            WHERE u.full_refresh IS NOT TRUE) d"""),
    # Per update, not per day of rows: a full refresh's recount of history is left out.
    _m("lowest_pass_rate_today", "min(pass_rate)",
       "CASE WHEN min(pass_rate) IS NULL THEN 'no business expectation was measured today "
       "(counts of full refreshes left out)' END",
       f"expectation_results WHERE update_date = CAST({{now}} AS DATE) AND expectation NOT IN {BRONZE_EXPECTATIONS} "
       "AND full_refresh IS NOT TRUE"),
    _m("backlog_files",
       "CASE WHEN count(b.flow_name) > 0 AND count_if(b.flow_name IS NOT NULL AND b.backlog_files IS NULL) = 0 "
       "THEN sum(b.backlog_files) END",
       f"""CASE WHEN count(l.update_id) = 0 THEN '{_LAST_UPDATE}'
               WHEN count(b.flow_name) = 0 THEN 'the last update reported no backlog'
               WHEN count_if(b.flow_name IS NOT NULL AND b.backlog_files IS NULL) > 0 THEN concat('backlog not measured: ',
                 {_unknown_for(_NOT_MEASURED.format(col="backlog_files"))}) END""",
       "last_update l LEFT JOIN backlog b ON b.update_id = l.update_id"),
    _m("backlog_bytes",
       "CASE WHEN count(b.flow_name) > 0 AND count_if(b.flow_name IS NOT NULL AND b.backlog_bytes IS NULL) = 0 "
       "THEN sum(b.backlog_bytes) END",
       f"""CASE WHEN count(l.update_id) = 0 THEN '{_LAST_UPDATE}'
               WHEN count(b.flow_name) = 0 THEN 'the last update reported no backlog'
               WHEN count_if(b.flow_name IS NOT NULL AND b.backlog_bytes IS NULL) > 0 THEN concat('backlog not measured: ',
                 {_unknown_for(_NOT_MEASURED.format(col="backlog_bytes"))}) END""",
       "last_update l LEFT JOIN backlog b ON b.update_id = l.update_id"),
    # Hours since the last COMPLETED update; when none ever completed, since the first update started
    # (the pipeline has been without a success that long). NULL only when no update ran at all.
    _m("hours_since_last_success",
       _hours_since("coalesce(max(end_time) FILTER (WHERE final_state = 'COMPLETED'), min(start_time))"),
       "CASE WHEN count(*) = 0 THEN 'no ingest update has run yet' END",
       "update_status"),
    # First deliveries only: lines a full refresh quarantines again are re-deliveries.
    _m("quarantined_rows_last_update",
       "CASE WHEN count(l.update_id) > 0 THEN count(q.delivery) END",
       f"CASE WHEN count(l.update_id) = 0 THEN '{_LAST_UPDATE}' END",
       """last_update l LEFT JOIN quarantine_deliveries q
            ON q.delivery = 1 AND q._quarantined_at >= l.start_time AND q._quarantined_at <= l.end_time"""),
    # The last incremental update: a full refresh rescues every old row again.
    _m("rescued_rows_last_update",
       """CASE WHEN count(b.flow_name) = 0 OR count_if(b.flow_name IS NOT NULL AND b.counted IS NOT TRUE) > 0 THEN NULL
               WHEN max(r.rescued) IS NOT NULL THEN max(r.rescued)
               WHEN coalesce(sum(b.batches), 0) = 0 THEN 0 END""",
       """CASE WHEN count(l.update_id) = 0 THEN 'no incremental update (one that is not a full refresh) has finished yet'
               WHEN count(b.flow_name) = 0 THEN 'the last incremental update ran no bronze flow'
               WHEN count_if(b.flow_name IS NOT NULL AND b.counted IS NOT TRUE) > 0
                 THEN 'expectation counts missing for a bronze flow of the last incremental update'
               WHEN max(r.rescued) IS NULL AND coalesce(sum(b.batches), 0) > 0
                 THEN 'no no_rescued_data counts in the last incremental update' END""",
       """last_incremental l
          LEFT JOIN (SELECT update_id, flow_name, batches,
                            CASE WHEN batches = 0 THEN final_status = 'COMPLETED'
                                 ELSE batches_without_expectation_counts = 0 END AS counted
                     FROM flow_throughput WHERE endswith(flow_name, '_bronze')) b ON b.update_id = l.update_id
          LEFT JOIN (SELECT update_id, sum(failed_records) AS rescued FROM expectation_results
                     WHERE expectation = 'no_rescued_data' GROUP BY update_id) r ON r.update_id = l.update_id"""),
    # Files first committed in the last 24 hours; NULL when some landed without a commit time.
    _m("ingestion_latency_p95_seconds_24h",
       "CASE WHEN count_if(latency_status = 'no_commit_time') = 0 THEN percentile(latency_seconds, 0.95) END",
       """CASE WHEN count_if(latency_status = 'no_commit_time') > 0
                 THEN concat(CAST(count_if(latency_status = 'no_commit_time') AS STRING),
                             ' file(s) landed in the last 24 hours without a commit time: cloud_files_state fills '
                             'commit_time on DBR 18.2+, or with cloudFiles.cleanSource')
               WHEN count_if(latency_status = 'measured') = 0 AND count_if(latency_status = 'recommitted_by_full_refresh') > 0
                 THEN 'only files committed again by a full refresh in the last 24 hours: their first commit is not known'
               WHEN count_if(latency_status = 'measured') = 0 THEN 'no file was first committed in the last 24 hours' END""",
       """file_latency
          WHERE (latency_status = 'measured' AND first_commit_time >= {now} - INTERVAL 24 HOURS)
             OR (latency_status = 'no_commit_time' AND first_ingested_at >= {now} - INTERVAL 24 HOURS)
             OR (latency_status = 'recommitted_by_full_refresh' AND commit_time >= {now} - INTERVAL 24 HOURS)"""),
    # The week-over-week duration trend: completed incremental updates of the last 7 days against the
    # 7 days before (rolling, so a Monday morning is not a week of one update).
    _m("duration_week_over_week_change",
       "avg(duration_seconds) FILTER (WHERE start_time >= {now} - INTERVAL 7 DAYS) "
       "/ nullif(avg(duration_seconds) FILTER (WHERE start_time < {now} - INTERVAL 7 DAYS), 0) - 1",
       """CASE WHEN count_if(start_time >= {now} - INTERVAL 7 DAYS) = 0
                 THEN 'no completed incremental update in the last 7 days'
               WHEN count_if(start_time < {now} - INTERVAL 7 DAYS) = 0
                 THEN 'no completed incremental update in the 7 days before the last 7: no trend yet' END""",
       """update_status WHERE final_state = 'COMPLETED' AND full_refresh IS NOT TRUE AND duration_seconds IS NOT NULL
            AND start_time >= {now} - INTERVAL 14 DAYS"""),
    # Consecutive updates, newest first, in which the files waiting grew: sustained growth, whatever the
    # count. Walking back from the newest, the first update that did not grow (`back` = k) ends the
    # streak at k - 1; the oldest ends it too (nothing before it). When that update's figure, or the
    # one before it, was not measured, whether it grew is not known, and so is the streak: NULL, the
    # reason naming the update not measured and why. A figure not measured behind a measured fall
    # that already ends the streak does not matter.
    _m("backlog_growth_streak",
       f"CASE WHEN NOT {_STREAK_END.format(col='unknown')} THEN min(back) FILTER (WHERE grew IS NOT TRUE) - 1 END",
       f"""CASE WHEN count(*) = 0 THEN 'no finished update reported a backlog'
               WHEN {_STREAK_END.format(col='unknown')} THEN concat(
                 'not known whether the backlog grew in update ', {_STREAK_END.format(col='update_id')},
                 CASE WHEN min(back) FILTER (WHERE grew IS NOT TRUE) > 1
                      THEN concat(' (it grew in the ', CAST(min(back) FILTER (WHERE grew IS NOT TRUE) - 1 AS STRING),
                                  ' update(s) after it)') ELSE '' END,
                 ': backlog not measured in update ', {_STREAK_END.format(col='unmeasured_update')},
                 ' (', {_STREAK_END.format(col='unmeasured_why')}, ')') END""",
       f"""(SELECT update_id, back, files > previous AS grew,
                   files IS NULL OR (previous IS NULL AND previous_update IS NOT NULL) AS unknown,
                   CASE WHEN files IS NULL THEN update_id ELSE previous_update END AS unmeasured_update,
                   CASE WHEN files IS NULL THEN why ELSE previous_why END AS unmeasured_why
            FROM (SELECT *, lag(files) OVER (ORDER BY start_time, update_id) AS previous,
                         lag(update_id) OVER (ORDER BY start_time, update_id) AS previous_update,
                         lag(why) OVER (ORDER BY start_time, update_id) AS previous_why,
                         row_number() OVER (ORDER BY start_time DESC, update_id DESC) AS back
                  FROM (SELECT u.update_id, u.start_time,
                               CASE WHEN count_if(b.backlog_files IS NULL) = 0 THEN sum(b.backlog_files) END AS files,
                               {_unknown_for(_NOT_MEASURED.format(col="backlog_files"))} AS why
                        FROM update_status u JOIN backlog b ON b.update_id = u.update_id
                        WHERE u.final_state IN {TERMINAL_UPDATE}
                        GROUP BY u.update_id, u.start_time)))"""),
    # Values unusual for their own series, in the last incremental update (pipelines/anomalies.py).
    _m("anomalies_last_update",
       "CASE WHEN count(l.update_id) > 0 THEN count(a.metric) END",
       "CASE WHEN count(l.update_id) = 0 THEN 'no incremental update (one that is not a full refresh) has finished yet' END",
       "last_incremental l LEFT JOIN anomalies a ON a.update_id = l.update_id"),
    # Tables beyond their own max_hours_without_rows: one feed that stopped while the others flow. A
    # table past its limit is counted even when another's silence is not known; 0 only when all are known.
    _m("tables_without_rows",
       f"CASE WHEN count_if({_QUIET}) > 0 OR count_if({_LIMITED_UNKNOWN}) = 0 THEN count_if({_QUIET}) END",
       f"""CASE WHEN count_if({_QUIET}) = 0 AND count_if({_LIMITED_UNKNOWN}) > 0 THEN concat('not known for: ',
                 {_unknown_for(f"CASE WHEN {_LIMITED_UNKNOWN} THEN concat(table_name, ' (', reason, ')') END")}) END""",
       "table_freshness"),
    _m("metrics_missing", "max(g.metrics_missing)",
       f"CASE WHEN count(l.update_id) = 0 THEN '{_LAST_UPDATE}' END",
       "last_update l LEFT JOIN measurement_gaps g ON g.update_id = l.update_id"),
    # A known mismatch is reported even when other files are not counted; zero only when all are counted.
    _m("files_not_reconciled",
       f"CASE WHEN count_if(status IN {NOT_RECONCILED}) > 0 OR count_if(status = 'not_counted') = 0 "
       f"THEN count_if(status IN {NOT_RECONCILED}) END",
       f"""CASE WHEN count_if(status IN {NOT_RECONCILED}) = 0 AND count_if(status = 'not_counted') > 0
                 THEN concat(CAST(count_if(status = 'not_counted') AS STRING),
                             ' committed file(s) have no line count, so they cannot be reconciled') END""",
       "reconciliation"),
]

_METRICS_UNION = "\n  UNION ALL\n".join("  " + m for m in _METRICS)

HEALTH_METRICS = _table(
    "health_metrics",
    "One row per health metric (metric_name, metric_value, reason, checked_at), computed at each refresh, for "
    "SQL alerts. metric_value is NULL when it could not be measured, and reason then says why; no alert "
    "treats NULL as healthy. 'Last update' is the last finished update that is not internal; the duration "
    "and rescued-rows metrics read the last finished update that is not a full refresh.",
    [
        ("metric_name", "STRING", "Metric name"),
        ("metric_value", "DOUBLE", "Metric value (NULL when it could not be measured)"),
        ("reason", "STRING", "Why metric_value is NULL (NULL when measured)"),
        ("checked_at", "TIMESTAMP", "When the metric was computed"),
    ],
    f"""
WITH last_update AS (
  SELECT * FROM update_status WHERE final_state IN {TERMINAL_UPDATE} ORDER BY start_time DESC LIMIT 1
),
last_incremental AS (
  SELECT * FROM update_status WHERE final_state IN {TERMINAL_UPDATE} AND full_refresh IS NOT TRUE
  ORDER BY start_time DESC LIMIT 1
),
metrics AS (
{_METRICS_UNION}
)
SELECT metric_name, metric_value, reason, {{now}} AS checked_at FROM metrics
""",
)

# In dependency order: each table reads only the sources and the tables before it.
TABLES: tuple[ObservabilityTable, ...] = (
    EVENTS,
    UPDATE_STATUS,
    FLOW_THROUGHPUT,
    UPDATE_STATUS_DAILY,
    UPDATE_STATUS_WEEKLY,
    FLOW_THROUGHPUT_DAILY,
    FLOW_BOTTLENECKS,
    LANDING_FILES,
    FILE_LATENCY,
    FILE_BATCHES,
    INGESTION_LATENCY_HOURLY,
    INGESTION_LATENCY_BY_UPDATE,
    BACKLOG,
    EXPECTATIONS,
    EXPECTATIONS_DAILY,
    EXPECTATIONS_WEEKLY,
    DROPPED_RECORDS,
    ERRORS,
    ERROR_CLASSES,
    RUN_INSIGHTS,
    ANOMALIES,
    SCHEMA_DRIFT,
    BRONZE_DUPLICATES,
    QUARANTINE_DELIVERIES,
    QUARANTINE_DAILY,
    RECONCILIATION,
    MEASUREMENT_GAPS,
    TABLE_GROWTH,
    TABLE_FRESHNESS,
    HEALTH_METRICS,
)

PUBLISHED: tuple[ObservabilityTable, ...] = tuple(t for t in TABLES if not t.temporary)
# The tables for people (dashboard) rather than for other tables.
REPORTED: tuple[ObservabilityTable, ...] = tuple(t for t in PUBLISHED if not t.intermediate)

HEALTH_METRIC_NAMES = (
    "errors_today", "failed_updates_today", "last_update_failed", "last_update_duration_seconds",
    "last_update_duration_vs_median", "rows_last_update", "hours_since_rows_ingested", "lowest_pass_rate_today", "backlog_files",
    "backlog_bytes", "backlog_growth_streak", "duration_week_over_week_change", "hours_since_last_success", "quarantined_rows_last_update", "rescued_rows_last_update",
    "ingestion_latency_p95_seconds_24h", "anomalies_last_update", "tables_without_rows", "metrics_missing",
    "files_not_reconciled",
)


def reads(table: ObservabilityTable, other: str) -> bool:
    """Whether `table`'s SQL reads the dataset named `other`."""
    text = " ".join(table.sql.replace("(", " ").replace(")", " ").split())
    return f"FROM {other} " in text + " " or f"JOIN {other} " in text + " "


def read_by_views(name: str) -> bool:
    """Whether another observability table reads `name` (it then needs the incremental-source properties)."""
    return any(reads(t, name) for t in TABLES if t.name != name)


def table_properties(table: ObservabilityTable) -> dict[str, str]:
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
