"""The observability tables: one definition per table (name, comment, columns with comments, SQL).

This module is the single source of the SQL that the observability pipeline materializes; alerts and
the dashboard only read the resulting tables. The SQL is written in the dialect both Databricks SQL
and Spark SQL accept (`get_json_object`, `from_json`, `max_by`, aggregate `FILTER`, `percentile`),
never the `details:path` colon syntax on the STRING column, which only Databricks accepts.

Placeholders: `{event_log}` (the ingest pipeline's event log table), `{file_state}` (one row per
landing file: the local file-state table, or `cloud_files_state()` on Databricks), `{sink}` (the
quarantine sink table), `{bronze_union}` (rows of every bronze table with a `table_name`).
Other datasets are referred to by their bare names (`events`, `update_status`, ...), so the same
text runs in the pipeline and, in tests, over temporary views.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping, Sequence

TERMINAL_UPDATE = "('COMPLETED', 'FAILED', 'CANCELED')"
TERMINAL_FLOW = "('COMPLETED', 'FAILED', 'SKIPPED', 'EXCLUDED', 'STOPPED')"
# Bronze's own expectations; rescued and corrupt rows have their own metrics (drift, quarantine).
BRONZE_EXPECTATIONS = "('no_rescued_data', 'no_corrupt_record')"
EXPECTATIONS_TYPE = "ARRAY<STRUCT<name: STRING, dataset: STRING, passed_records: BIGINT, failed_records: BIGINT>>"
SHORT_NAME = r"regexp_extract({0}, '([^.`]+)`?$', 1)"
ERROR_CLASS = r"nullif(regexp_extract({0}, '^\\[([A-Za-z0-9_.:]+)\\]', 1), '')"


def seconds_between(start: str, end: str) -> str:
    return f"CAST((unix_millis({end}) - unix_millis({start})) / 1000.0 AS DOUBLE)"


@dataclass(frozen=True)
class ObservabilityTable:
    name: str
    comment: str
    columns: tuple[tuple[str, str, str], ...]  # (name, type, comment)
    sql: str
    partition_cols: tuple[str, ...] = ()
    temporary: bool = False  # a pipeline-private view (no table is published)

    @property
    def schema_ddl(self) -> str:
        """Column list with comments, as `dp.materialized_view(schema=...)` takes it."""
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
           partition_cols: Sequence[str] = (), temporary: bool = False) -> ObservabilityTable:
    return ObservabilityTable(name, comment, tuple(columns), sql.strip(), tuple(partition_cols), temporary)


EVENTS = _table(
    "events",
    "The ingest pipeline's event log with the JSON details parsed once; private to the pipeline.",
    [],
    f"""
SELECT
  id AS event_id,
  origin.pipeline_id AS pipeline_id,
  origin.pipeline_name AS pipeline_name,
  origin.update_id AS update_id,
  origin.flow_name AS flow_name_full,
  {SHORT_NAME.format('origin.flow_name')} AS flow_name,
  {SHORT_NAME.format('coalesce(origin.dataset_name, origin.sink_name)')} AS dataset,
  origin.batch_id AS batch_id,
  `timestamp` AS event_time,
  coalesce(sequence.data_plane_id.seq_no, sequence.control_plane_seq_no) AS seq,
  event_type,
  level,
  message,
  error,
  -- try_element_at: an empty exceptions list is NULL, not an error under ANSI mode
  try_element_at(error.exceptions, 1) AS first_exception,
  try_element_at(error.exceptions, -1) AS root_exception,
  get_json_object(details, '$.create_update.cause') AS cause,
  CAST(get_json_object(details, '$.create_update.full_refresh') AS BOOLEAN) AS full_refresh,
  get_json_object(details, '$.update_progress.state') AS update_state,
  get_json_object(details, '$.flow_progress.status') AS flow_status,
  CAST(get_json_object(details, '$.flow_progress.metrics.num_output_rows') AS BIGINT) AS num_output_rows,
  CAST(get_json_object(details, '$.flow_progress.metrics.backlog_bytes') AS BIGINT) AS backlog_bytes,
  CAST(get_json_object(details, '$.flow_progress.metrics.backlog_files') AS BIGINT) AS backlog_files,
  CAST(get_json_object(details, '$.flow_progress.data_quality.dropped_records') AS BIGINT) AS dropped_records,
  from_json(get_json_object(details, '$.flow_progress.data_quality.expectations'), '{EXPECTATIONS_TYPE}') AS expectations
FROM {{event_log}}
WHERE origin.update_id IS NOT NULL
  AND coalesce(origin.flow_name, '') <> 'pipelines.flowTimeMetrics.missingFlowName'
""",
    temporary=True,
)

FLOW_THROUGHPUT = _table(
    "flow_throughput",
    "One row per update and flow: rows written, time from RUNNING to the flow's last status, rows per second.",
    [
        ("update_id", "STRING", "Pipeline update (run) id"),
        ("pipeline_name", "STRING", "Pipeline name"),
        ("flow_name", "STRING", "Flow name (last part of the qualified name)"),
        ("dataset", "STRING", "Target dataset or sink of the flow"),
        ("final_status", "STRING", "Last status of the flow in the update (COMPLETED, FAILED, SKIPPED, ...)"),
        ("rows_written", "BIGINT", "Rows the flow wrote in the update (NULL when no metrics were reported)"),
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
    sum(num_output_rows) FILTER (WHERE level = 'METRICS') AS rows_written,
    min(event_time) FILTER (WHERE level <> 'METRICS' AND flow_status = 'RUNNING') AS started_at,
    max(event_time) FILTER (WHERE level <> 'METRICS' AND flow_status IN {TERMINAL_FLOW}) AS ended_at,
    min(event_time) AS first_seen
  FROM events
  WHERE event_type = 'flow_progress' AND flow_name IS NOT NULL AND flow_name <> ''
  GROUP BY update_id, flow_name
)
SELECT
  update_id, pipeline_name, flow_name, dataset, final_status, rows_written, started_at, ended_at,
  {seconds_between('started_at', 'ended_at')} AS duration_seconds,
  CASE WHEN {seconds_between('started_at', 'ended_at')} > 0
       THEN rows_written / {seconds_between('started_at', 'ended_at')} END AS rows_per_second,
  to_date(coalesce(started_at, first_seen)) AS update_date
FROM per_flow
""",
    partition_cols=("update_date",),
)

UPDATE_STATUS = _table(
    "update_status",
    "One row per pipeline update: cause, full refresh, start, end, duration, final state, failed and skipped flows, first error.",
    [
        ("pipeline_id", "STRING", "Pipeline id"),
        ("pipeline_name", "STRING", "Pipeline name"),
        ("update_id", "STRING", "Pipeline update (run) id"),
        ("cause", "STRING", "What started the update (USER_ACTION, JOB_TASK, ...)"),
        ("full_refresh", "BOOLEAN", "Whether the update was a full refresh"),
        ("start_time", "TIMESTAMP", "When the update was created"),
        ("end_time", "TIMESTAMP", "When the update reached COMPLETED, FAILED or CANCELED (NULL while running)"),
        ("duration_seconds", "DOUBLE", "Seconds from start to end"),
        ("final_state", "STRING", "Last state of the update"),
        ("failed_flows", "BIGINT", "Flows whose last status in the update is FAILED"),
        ("skipped_flows", "BIGINT", "Flows whose last status in the update is SKIPPED"),
        ("first_error_message", "STRING", "Message of the update's first error event"),
        ("first_error_class", "STRING", "Error class ([ERROR_CLASS]) or exception class of the first error"),
        ("update_date", "DATE", "Date (UTC) the update started"),
    ],
    f"""
WITH updates AS (
  SELECT
    max(pipeline_id) AS pipeline_id,
    max(pipeline_name) AS pipeline_name,
    update_id,
    max(cause) AS cause,
    coalesce(max(full_refresh), false) AS full_refresh,
    min(event_time) AS start_time,
    max(event_time) FILTER (WHERE event_type = 'update_progress' AND update_state IN {TERMINAL_UPDATE}) AS end_time,
    max_by(update_state, struct(event_time, seq)) FILTER (WHERE event_type = 'update_progress') AS final_state,
    min_by(first_exception.message, struct(event_time, seq)) FILTER (WHERE error IS NOT NULL) AS first_error_message,
    min_by(coalesce({ERROR_CLASS.format('first_exception.message')}, root_exception.class_name),
           struct(event_time, seq)) FILTER (WHERE error IS NOT NULL) AS first_error_class
  FROM events
  GROUP BY update_id
),
flows AS (
  SELECT update_id,
         count_if(final_status = 'FAILED') AS failed_flows,
         count_if(final_status = 'SKIPPED') AS skipped_flows
  FROM flow_throughput GROUP BY update_id
)
SELECT
  u.pipeline_id, u.pipeline_name, u.update_id, u.cause, u.full_refresh, u.start_time, u.end_time,
  {seconds_between('u.start_time', 'u.end_time')} AS duration_seconds,
  u.final_state,
  coalesce(f.failed_flows, 0) AS failed_flows,
  coalesce(f.skipped_flows, 0) AS skipped_flows,
  u.first_error_message, u.first_error_class,
  to_date(u.start_time) AS update_date
FROM updates u LEFT JOIN flows f ON u.update_id = f.update_id
""",
    partition_cols=("update_date",),
)

UPDATE_STATUS_DAILY = _table(
    "update_status_daily",
    "Per pipeline and day: updates, failures, success rate, average and 95th percentile duration.",
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
  CAST(percentile(duration_seconds, 0.95) AS DOUBLE) AS p95_duration_seconds
FROM update_status
GROUP BY update_date, pipeline_name
""",
)

FLOW_THROUGHPUT_DAILY = _table(
    "flow_throughput_daily",
    "Per flow and day: updates, rows written, time spent, rows per second.",
    [
        ("update_date", "DATE", "Day (UTC)"),
        ("flow_name", "STRING", "Flow name"),
        ("updates", "BIGINT", "Updates in which the flow ran"),
        ("rows_written", "BIGINT", "Rows written that day"),
        ("total_duration_seconds", "DOUBLE", "Seconds the flow ran that day"),
        ("avg_duration_seconds", "DOUBLE", "Average seconds per update"),
        ("rows_per_second", "DOUBLE", "rows_written / total_duration_seconds"),
    ],
    """
SELECT
  update_date, flow_name,
  count(*) AS updates,
  coalesce(sum(rows_written), 0) AS rows_written,
  sum(duration_seconds) AS total_duration_seconds,
  avg(duration_seconds) AS avg_duration_seconds,
  CASE WHEN sum(duration_seconds) > 0 THEN coalesce(sum(rows_written), 0) / sum(duration_seconds) END AS rows_per_second
FROM flow_throughput
WHERE started_at IS NOT NULL
GROUP BY update_date, flow_name
""",
    partition_cols=("update_date",),
)

FLOW_BOTTLENECKS = _table(
    "flow_bottlenecks",
    "The slowest flows over the last 7 days: average and longest duration, average rows, rank by average duration.",
    [
        ("flow_name", "STRING", "Flow name"),
        ("updates", "BIGINT", "Updates in the last 7 days in which the flow ran"),
        ("avg_duration_seconds", "DOUBLE", "Average seconds per update"),
        ("max_duration_seconds", "DOUBLE", "Longest run in seconds"),
        ("avg_rows_written", "DOUBLE", "Average rows written per update"),
        ("duration_rank", "INT", "1 = the slowest flow on average"),
    ],
    """
SELECT
  flow_name,
  count(*) AS updates,
  avg(duration_seconds) AS avg_duration_seconds,
  max(duration_seconds) AS max_duration_seconds,
  avg(coalesce(rows_written, 0)) AS avg_rows_written,
  CAST(rank() OVER (ORDER BY avg(duration_seconds) DESC) AS INT) AS duration_rank
FROM flow_throughput
WHERE started_at >= current_timestamp() - INTERVAL 7 DAYS AND duration_seconds IS NOT NULL
GROUP BY flow_name
""",
)

FILE_LATENCY = _table(
    "file_latency",
    "One row per landing file: when it was created and committed, and the ingestion latency in between.",
    [
        ("table_name", "STRING", "Bronze table the file feeds"),
        ("path", "STRING", "File path"),
        ("size_bytes", "BIGINT", "File size"),
        ("create_time", "TIMESTAMP", "File creation (modification) time"),
        ("discovery_time", "TIMESTAMP", "When the stream planned the file into a batch"),
        ("commit_time", "TIMESTAMP", "When the batch holding the file committed (NULL while pending)"),
        ("latency_seconds", "DOUBLE", "commit_time - create_time"),
        ("state", "STRING", "committed, discovered (in a batch not committed yet) or pending"),
        ("create_date", "DATE", "Date (UTC) of create_time"),
    ],
    f"""
SELECT
  {SHORT_NAME.format('table_name')} AS table_name,
  path,
  CAST(size AS BIGINT) AS size_bytes,
  create_time, discovery_time, commit_time,
  {seconds_between('create_time', 'commit_time')} AS latency_seconds,
  state,
  to_date(create_time) AS create_date
FROM {{file_state}}
""",
    partition_cols=("create_date",),
)

INGESTION_LATENCY_HOURLY = _table(
    "ingestion_latency_hourly",
    "Per table and hour of commit: files committed and their create-to-commit latency (p50, p95, max).",
    [
        ("commit_hour", "TIMESTAMP", "Hour (UTC) the files were committed"),
        ("table_name", "STRING", "Bronze table"),
        ("files", "BIGINT", "Files committed in the hour"),
        ("p50_latency_seconds", "DOUBLE", "Median create-to-commit latency"),
        ("p95_latency_seconds", "DOUBLE", "95th percentile latency"),
        ("max_latency_seconds", "DOUBLE", "Largest latency"),
    ],
    """
SELECT
  date_trunc('HOUR', commit_time) AS commit_hour,
  table_name,
  count(*) AS files,
  CAST(percentile(latency_seconds, 0.5) AS DOUBLE) AS p50_latency_seconds,
  CAST(percentile(latency_seconds, 0.95) AS DOUBLE) AS p95_latency_seconds,
  max(latency_seconds) AS max_latency_seconds
FROM file_latency
WHERE commit_time IS NOT NULL
GROUP BY date_trunc('HOUR', commit_time), table_name
""",
)

INGESTION_LATENCY_BY_UPDATE = _table(
    "ingestion_latency_by_update",
    "Per ingest update and table: files committed during the update and their create-to-commit latency.",
    [
        ("update_id", "STRING", "Pipeline update (run) id"),
        ("table_name", "STRING", "Bronze table"),
        ("files", "BIGINT", "Files committed during the update"),
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
  -- an update that never ended is bounded by the next update's start
  SELECT update_id, update_date, start_time,
         coalesce(end_time, lead(start_time) OVER (PARTITION BY pipeline_id ORDER BY start_time), current_timestamp()) AS window_end
  FROM update_status
) u
  ON f.commit_time >= u.start_time AND f.commit_time <= u.window_end
GROUP BY u.update_id, f.table_name
""",
    partition_cols=("update_date",),
)

BACKLOG = _table(
    "backlog",
    "Per update and flow: the backlog (files and bytes not yet ingested) reported by the update's last metrics event.",
    [
        ("update_id", "STRING", "Pipeline update (run) id"),
        ("flow_name", "STRING", "Flow reading the landing files"),
        ("measured_at", "TIMESTAMP", "Time of the metrics event"),
        ("backlog_files", "BIGINT", "Files waiting"),
        ("backlog_bytes", "BIGINT", "Bytes waiting"),
        ("update_date", "DATE", "Date (UTC) of the measurement"),
    ],
    """
SELECT
  update_id, flow_name,
  max(event_time) AS measured_at,
  max_by(backlog_files, struct(event_time, seq)) AS backlog_files,
  max_by(backlog_bytes, struct(event_time, seq)) AS backlog_bytes,
  to_date(max(event_time)) AS update_date
FROM events
WHERE event_type = 'flow_progress' AND level = 'METRICS' AND (backlog_files IS NOT NULL OR backlog_bytes IS NOT NULL)
GROUP BY update_id, flow_name
""",
    partition_cols=("update_date",),
)

EXPECTATIONS = _table(
    "expectation_results",
    "Per update, dataset and expectation: rows that passed and failed, and the pass rate. Streaming "
    "tables count the rows of the update; materialized views count the whole view at each refresh.",
    [
        ("update_id", "STRING", "Pipeline update (run) id"),
        ("dataset", "STRING", "Dataset the expectation is declared on"),
        ("expectation", "STRING", "Expectation name"),
        ("passed_records", "BIGINT", "Rows that met the condition"),
        ("failed_records", "BIGINT", "Rows that did not (whatever the action)"),
        ("pass_rate", "DOUBLE", "passed / (passed + failed), 0..1"),
        ("measured_at", "TIMESTAMP", "Last metrics event of the update for the dataset"),
        ("update_date", "DATE", "Date (UTC) of measured_at"),
    ],
    f"""
WITH results AS (
  SELECT update_id, event_time, e.name AS expectation, {SHORT_NAME.format('e.dataset')} AS dataset,
         e.passed_records, e.failed_records
  FROM (SELECT update_id, event_time, explode(expectations) AS e FROM events
        WHERE event_type = 'flow_progress' AND expectations IS NOT NULL)
)
SELECT
  update_id, dataset, expectation,
  sum(passed_records) AS passed_records,
  sum(failed_records) AS failed_records,
  CAST(sum(passed_records) AS DOUBLE) / nullif(sum(passed_records) + sum(failed_records), 0) AS pass_rate,
  max(event_time) AS measured_at,
  to_date(max(event_time)) AS update_date
FROM results
GROUP BY update_id, dataset, expectation
""",
    partition_cols=("update_date",),
)

EXPECTATIONS_DAILY = _table(
    "expectation_results_daily",
    "Per day, dataset and expectation: rows passed and failed, pass rate.",
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
GROUP BY update_date, dataset, expectation
""",
    partition_cols=("update_date",),
)

EXPECTATIONS_WEEKLY = _table(
    "expectation_results_weekly",
    "Per week (starting Monday), dataset and expectation: pass rate, the previous week's rate and the change.",
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
GROUP BY update_id, dataset
""",
    partition_cols=("update_date",),
)

ERRORS = _table(
    "errors",
    "One row per error event: update, flow, exception classes, error class, message, time.",
    [
        ("event_id", "STRING", "Event id"),
        ("update_id", "STRING", "Pipeline update (run) id"),
        ("flow_name", "STRING", "Failed flow (NULL for the update's own error)"),
        ("event_type", "STRING", "flow_progress or update_progress"),
        ("event_time", "TIMESTAMP", "When the error was logged"),
        ("exception_class", "STRING", "Outermost exception class"),
        ("root_cause_class", "STRING", "Innermost exception class (the root cause)"),
        ("error_class", "STRING", "Error class parsed from the message ([ERROR_CLASS]), if any"),
        ("message", "STRING", "Error message"),
        ("root_cause_message", "STRING", "Message of the root cause"),
        ("fatal", "BOOLEAN", "Whether the error was unrecoverable (no more retries)"),
        ("error_date", "DATE", "Date (UTC)"),
    ],
    f"""
SELECT
  event_id, update_id, nullif(flow_name, '') AS flow_name, event_type, event_time,
  first_exception.class_name AS exception_class,
  root_exception.class_name AS root_cause_class,
  {ERROR_CLASS.format('first_exception.message')} AS error_class,
  coalesce(first_exception.message, message) AS message,
  root_exception.message AS root_cause_message,
  error.fatal AS fatal,
  to_date(event_time) AS error_date
FROM events
WHERE error IS NOT NULL OR level = 'ERROR'
""",
    partition_cols=("error_date",),
)

ERROR_CLASSES = _table(
    "error_classes",
    "Per error class (or root-cause exception class when the message has none): occurrences, first and last seen.",
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
GROUP BY coalesce(error_class, root_cause_class, exception_class)
""",
)

SCHEMA_DRIFT = _table(
    "schema_drift",
    "Per table and day: rows with rescued data, the rescued field names, and the files they came from.",
    [
        ("table_name", "STRING", "Table (as configured)"),
        ("ingest_date", "DATE", "Date (UTC) the rows were ingested"),
        ("rows_with_rescued_data", "BIGINT", "Rows with _rescued_data set"),
        ("rescued_fields", "ARRAY<STRING>", "Field names found in _rescued_data"),
        ("files", "ARRAY<STRING>", "Source files of those rows"),
    ],
    """
SELECT
  table_name,
  to_date(_ingested_at) AS ingest_date,
  count(*) AS rows_with_rescued_data,
  array_sort(array_distinct(filter(
    flatten(collect_list(map_keys(from_json(_rescued_data, 'MAP<STRING,STRING>')))),
    k -> k <> '_file_path'))) AS rescued_fields,
  array_sort(collect_set(_source_file)) AS files
FROM {bronze_union}
WHERE _rescued_data IS NOT NULL
GROUP BY table_name, to_date(_ingested_at)
""",
    partition_cols=("ingest_date",),
)

QUARANTINE_DAILY = _table(
    "quarantine_daily",
    "Per table and day: rows quarantined in corrupt_records_sink, files, and re-deliveries of the same line.",
    [
        ("table_name", "STRING", "Table the rows came from"),
        ("quarantine_date", "DATE", "Date (UTC) the rows were quarantined"),
        ("quarantined_rows", "BIGINT", "Rows written to the sink"),
        ("files", "BIGINT", "Distinct source files"),
        ("redelivered_rows", "BIGINT", "Rows whose (file, content hash) an earlier ingestion already quarantined (e.g. before a full refresh)"),
    ],
    """
WITH numbered AS (
  SELECT source_table, _quarantined_at, _source_file,
         dense_rank() OVER (PARTITION BY source_table, _source_file, _record_hash ORDER BY _ingested_at) AS delivery
  FROM {sink}
)
SELECT source_table AS table_name, to_date(_quarantined_at) AS quarantine_date,
       count(*) AS quarantined_rows,
       count(DISTINCT _source_file) AS files,
       count_if(delivery > 1) AS redelivered_rows
FROM numbered
GROUP BY source_table, to_date(_quarantined_at)
""",
    partition_cols=("quarantine_date",),
)


def _metric(name: str, value_sql: str, source: str, where: str = "") -> str:
    return (f"SELECT '{name}' AS metric_name, CAST(({value_sql}) AS DOUBLE) AS metric_value, "
            f"current_timestamp() AS checked_at FROM {source}{(' ' + where) if where else ''}")


_LAST_UPDATE = "(SELECT * FROM update_status WHERE final_state IN ('COMPLETED', 'FAILED', 'CANCELED') ORDER BY start_time DESC LIMIT 1)"
_LAST_UPDATE_ID = f"(SELECT update_id FROM {_LAST_UPDATE})"

HEALTH_METRICS = _table(
    "health_metrics",
    "One row per health metric (metric_name, metric_value, checked_at), computed at each refresh, for SQL alerts.",
    [
        ("metric_name", "STRING", "Metric name"),
        ("metric_value", "DOUBLE", "Metric value (NULL when there is nothing to measure)"),
        ("checked_at", "TIMESTAMP", "When the metric was computed"),
    ],
    "\nUNION ALL\n".join([
        _metric("errors_today", "count(*)", "errors", "WHERE error_date = current_date()"),
        _metric("failed_updates_today", "count_if(final_state = 'FAILED')", "update_status",
                "WHERE update_date = current_date()"),
        _metric("last_update_failed", "max(CASE WHEN final_state = 'FAILED' THEN 1 ELSE 0 END)", _LAST_UPDATE),
        _metric("last_update_duration_seconds", "max(duration_seconds)", _LAST_UPDATE),
        _metric(
            "last_update_duration_vs_median",
            "max(l.duration_seconds) / nullif(max(m.median_duration), 0)",
            f"{_LAST_UPDATE} l CROSS JOIN (SELECT percentile(duration_seconds, 0.5) AS median_duration FROM "
            f"(SELECT duration_seconds FROM update_status WHERE final_state = 'COMPLETED' AND update_id <> {_LAST_UPDATE_ID} "
            f"ORDER BY start_time DESC LIMIT 20)) m",
        ),
        _metric("rows_last_update", "coalesce(sum(rows_written), 0)", "flow_throughput",
                f"WHERE update_id = {_LAST_UPDATE_ID} AND endswith(flow_name, '_bronze')"),
        # Per update, not per day: a materialized view's expectations are counted over the whole
        # view at each refresh, so adding a day's refreshes up would count its rows many times.
        _metric("lowest_pass_rate_today", "min(pass_rate)", "expectation_results",
                f"WHERE update_date = current_date() AND expectation NOT IN {BRONZE_EXPECTATIONS}"),
        _metric("backlog_files", "sum(backlog_files)", "backlog", f"WHERE update_id = {_LAST_UPDATE_ID}"),
        _metric("backlog_bytes", "sum(backlog_bytes)", "backlog", f"WHERE update_id = {_LAST_UPDATE_ID}"),
        _metric("hours_since_last_success",
                "(unix_millis(current_timestamp()) - unix_millis(max(end_time))) / 3600000.0",
                "update_status", "WHERE final_state = 'COMPLETED'"),
        _metric("quarantined_rows_last_update", "coalesce(sum(rows_written), 0)", "flow_throughput",
                f"WHERE update_id = {_LAST_UPDATE_ID} AND endswith(flow_name, '_to_corrupt_records_sink')"),
        _metric("rescued_rows_last_update", "coalesce(sum(failed_records), 0)", "expectation_results",
                f"WHERE update_id = {_LAST_UPDATE_ID} AND expectation = 'no_rescued_data'"),
        _metric("ingestion_latency_p95_seconds_24h", "percentile(latency_seconds, 0.95)", "file_latency",
                "WHERE commit_time >= current_timestamp() - INTERVAL 24 HOURS"),
    ]),
)

# In dependency order: each table reads only the sources and the tables before it.
TABLES: tuple[ObservabilityTable, ...] = (
    EVENTS,
    FLOW_THROUGHPUT,
    UPDATE_STATUS,
    UPDATE_STATUS_DAILY,
    FLOW_THROUGHPUT_DAILY,
    FLOW_BOTTLENECKS,
    FILE_LATENCY,
    INGESTION_LATENCY_HOURLY,
    INGESTION_LATENCY_BY_UPDATE,
    BACKLOG,
    EXPECTATIONS,
    EXPECTATIONS_DAILY,
    EXPECTATIONS_WEEKLY,
    DROPPED_RECORDS,
    ERRORS,
    ERROR_CLASSES,
    SCHEMA_DRIFT,
    QUARANTINE_DAILY,
    HEALTH_METRICS,
)

PUBLISHED: tuple[ObservabilityTable, ...] = tuple(t for t in TABLES if not t.temporary)

HEALTH_METRIC_NAMES = (
    "errors_today", "failed_updates_today", "last_update_failed", "last_update_duration_seconds",
    "last_update_duration_vs_median", "rows_last_update", "lowest_pass_rate_today", "backlog_files",
    "backlog_bytes", "hours_since_last_success", "quarantined_rows_last_update", "rescued_rows_last_update",
    "ingestion_latency_p95_seconds_24h",
)


def by_name(name: str) -> ObservabilityTable:
    for t in TABLES:
        if t.name == name:
            return t
    raise KeyError(name)


def bronze_union_sql(tables: Sequence[tuple[str, str]]) -> str:
    """`(SELECT '<table>' AS table_name, ... FROM <bronze> UNION ALL ...)` for the drift table."""
    parts = [
        f"SELECT '{name}' AS table_name, _rescued_data, _source_file, _ingested_at FROM {bronze}"
        for name, bronze in tables
    ]
    return "(" + " UNION ALL ".join(parts) + ")"
