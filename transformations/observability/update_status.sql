-- Whether an update is a full refresh is derived here once, from its events; every other table reads
-- update_status.full_refresh / full_refresh_selection (a dataset is fully refreshed by an update when
-- full_refresh is true and the selection is empty or names it; `full_refresh IS NOT TRUE` is an
-- incremental update). Two signals, either is enough:
-- - create_update's `full_refresh` / `full_refresh_selection`: observed in real event logs, but
--   Databricks documents only `run_as` and `cause` there;
-- - the documented one: the update went through the RESETTING state ("resetting datasets/checkpoints
--   (full refresh)"), which the local runner logs too.
-- RESETTING does not say which datasets were reset (the local runner logs it for a selection as for
-- everything). So an update that logged RESETTING while its create_update names no tables counts as a
-- full refresh of every table (full_refresh_selection empty): a dataset that was in fact left alone
-- then has its counts left out of the daily figures and its files' new commits read as re-commits
-- (no latency, with the reason), rather than a refreshed dataset's history counted as new. With
-- neither signal (no keys, no RESETTING), full_refresh is NULL: not known.
CREATE MATERIALIZED VIEW update_status (
  pipeline_id STRING COMMENT 'Pipeline id',
  pipeline_name STRING COMMENT 'Pipeline name',
  event_log STRING COMMENT 'The event log the update was read from (events.event_log)',
  update_id STRING COMMENT 'Pipeline update (run) id',
  cause STRING COMMENT 'What started the update (USER_ACTION, JOB_TASK, ...)',
  full_refresh BOOLEAN COMMENT 'Whether the update fully refreshed every table, or the tables in full_refresh_selection: its create_update event says so, or it went through the RESETTING state (NULL when neither says)',
  full_refresh_selection ARRAY<STRING> COMMENT 'Tables selected for a full refresh (empty: none, or all; a RESETTING state without a selection counts as all)',
  start_time TIMESTAMP COMMENT 'When the update was created',
  end_time TIMESTAMP COMMENT 'When the update reached COMPLETED, FAILED or CANCELED (NULL while running)',
  duration_seconds DOUBLE COMMENT 'Seconds from start to end',
  final_state STRING COMMENT 'Last state of the update',
  failed_flows BIGINT COMMENT 'Flows whose last status in the update is FAILED',
  skipped_flows BIGINT COMMENT 'Flows whose last status in the update is SKIPPED',
  first_error_message STRING COMMENT 'Message of the update''s first error event',
  first_error_class STRING COMMENT 'Error class ([ERROR_CLASS]) or exception class of the first error',
  start_hour INT COMMENT 'Hour of the day (UTC, 0-23) the update started: failures by hour of day',
  update_date DATE COMMENT 'Date (UTC) the update started'
)
COMMENT 'One row per update of an observed pipeline: pipeline, cause, full refresh, start, end, duration, final state, failed and skipped flows, first error. Internal updates (validate-only, explore-only, maintenance) are left out, as Databricks'' own monitoring does: they neither fail nor succeed an ingestion.'
PARTITIONED BY (update_date)
TBLPROPERTIES ('quality' = 'gold', 'delta.enableChangeDataFeed' = 'true', 'delta.enableRowTracking' = 'true')
AS
WITH runs AS (
  SELECT
    update_id,
    max(pipeline_id) AS pipeline_id,
    max(pipeline_name) AS pipeline_name,
    -- events parsed before `events` had the column are the ingest pipeline's (it read no other log)
    max(coalesce(event_log, '${lakewatch.event_log}')) AS event_log,
    max(cause) AS cause,
    bool_or(full_refresh) AS full_refresh_all,
    max_by(full_refresh_selection, struct(event_time, seq)) FILTER (WHERE event_type = 'create_update') AS selection,
    count_if(event_type = 'update_progress' AND update_state = 'RESETTING') > 0 AS reset,
    bool_or(coalesce(validate_only, false) OR coalesce(explore_only, false) OR maintenance_id IS NOT NULL) AS internal,
    min(event_time) AS start_time,
    max(event_time) FILTER (WHERE event_type = 'update_progress' AND update_state IN ('COMPLETED', 'FAILED', 'CANCELED')) AS end_time,
    max_by(update_state, struct(event_time, seq)) FILTER (WHERE event_type = 'update_progress') AS final_state,
    min_by(exception_message, struct(event_time, seq)) FILTER (WHERE has_error) AS first_error_message,
    min_by(coalesce(nullif(regexp_extract(exception_message, '^\\[([A-Za-z0-9_.:]+)\\]', 1), ''), root_cause_class),
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
  r.pipeline_id, r.pipeline_name, r.event_log, r.update_id, r.cause,
  CASE WHEN r.full_refresh_all OR coalesce(size(r.selection), 0) > 0 OR r.reset THEN true
       WHEN r.full_refresh_all IS NULL AND r.selection IS NULL THEN CAST(NULL AS BOOLEAN)
       ELSE false END AS full_refresh,
  coalesce(r.selection, CAST(array() AS ARRAY<STRING>)) AS full_refresh_selection,
  r.start_time, r.end_time,
  CAST((unix_millis(r.end_time) - unix_millis(r.start_time)) / 1000.0 AS DOUBLE) AS duration_seconds,
  r.final_state,
  coalesce(f.failed_flows, 0) AS failed_flows,
  coalesce(f.skipped_flows, 0) AS skipped_flows,
  r.first_error_message, r.first_error_class,
  hour(r.start_time) AS start_hour,
  to_date(r.start_time) AS update_date
FROM runs r LEFT JOIN flow_counts f ON r.update_id = f.update_id
WHERE NOT r.internal;
