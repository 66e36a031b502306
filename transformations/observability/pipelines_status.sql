-- One row per observed pipeline: the ingest pipeline (`${lakewatch.event_log}`) and each event log of
-- `${lakewatch.observed_event_logs}` (the view observed_event_logs, declared in sources.py), with its
-- latest update, its last success and its open incident. A configured event log that could not be read
-- (the table does not exist yet) has a row too, with the reason, so that a pipeline that was meant to
-- be observed and is not shows rather than being silently absent.
-- The tables that need lakewatch's Auto Loader pattern (landing files, file latency, reconciliation,
-- quarantine, drift, freshness, arrival windows, rejected rows) read the ingest pipeline's bronze
-- tables, file state and sink; for the other pipelines `auto_loader_tables` says they do not apply.
CREATE MATERIALIZED VIEW pipelines_status (
  event_log STRING COMMENT 'The event log table read (lakewatch.event_log for the ingest pipeline, else one of lakewatch.observed_event_logs)',
  pipeline_id STRING COMMENT 'Pipeline id (NULL while its event log holds no update)',
  pipeline_name STRING COMMENT 'Pipeline name (NULL while its event log holds no update)',
  follows_lakewatch_pattern BOOLEAN COMMENT 'Whether it is lakewatch''s ingest pipeline, whose Auto Loader pattern the file, quarantine, drift, reconciliation and freshness tables read',
  auto_loader_tables STRING COMMENT 'Whether the Auto Loader tables (file_latency, reconciliation, quarantine_daily, schema_drift, table_freshness, arrival_windows, rejected_rows) cover the pipeline, and why not',
  read_status STRING COMMENT 'read, or not_read when its event log could not be read in the last refresh (not_read_reason)',
  not_read_reason STRING COMMENT 'Why the event log was not read (NULL when it was)',
  updates BIGINT COMMENT 'Its updates in update_status (internal updates left out)',
  failed_updates BIGINT COMMENT 'Of them, FAILED',
  last_update_id STRING COMMENT 'Its latest update',
  last_update_state STRING COMMENT 'That update''s last state (RUNNING while it runs)',
  last_update_start TIMESTAMP COMMENT 'When that update started',
  last_update_end TIMESTAMP COMMENT 'When that update ended (NULL while it runs)',
  last_success_end TIMESTAMP COMMENT 'When its last COMPLETED update ended (NULL: none yet)',
  last_failed_update_id STRING COMMENT 'Its latest FAILED update (NULL: none)',
  open_incident_id STRING COMMENT 'Its open incident (incidents; NULL: none)',
  open_incident_category STRING COMMENT 'That incident''s root-cause category'
)
COMMENT 'One row per observed pipeline (the ingest pipeline and each of lakewatch.observed_event_logs): whether its event log was read, its updates, the latest, the last success and its open incident, and whether the Auto Loader tables apply to it.'
TBLPROPERTIES ('quality' = 'gold')
AS
WITH per_pipeline AS (
  SELECT event_log, pipeline_id,
         max(pipeline_name) AS pipeline_name,
         count(*) AS updates,
         count_if(final_state = 'FAILED') AS failed_updates,
         max_by(update_id, struct(start_time, update_id)) AS last_update_id,
         max_by(final_state, struct(start_time, update_id)) AS last_update_state,
         max(start_time) AS last_update_start,
         max_by(end_time, struct(start_time, update_id)) AS last_update_end,
         max(end_time) FILTER (WHERE final_state = 'COMPLETED') AS last_success_end,
         max_by(update_id, struct(start_time, update_id)) FILTER (WHERE final_state = 'FAILED') AS last_failed_update_id
  FROM update_status
  GROUP BY event_log, pipeline_id
),
open_incident AS (
  SELECT pipeline_id, max_by(incident_id, opened_at) AS incident_id, max_by(category, opened_at) AS category
  FROM incidents WHERE status = 'OPEN'
  GROUP BY pipeline_id
)
SELECT
  o.event_log,
  p.pipeline_id,
  p.pipeline_name,
  o.follows_lakewatch_pattern,
  CASE WHEN o.follows_lakewatch_pattern THEN 'apply'
       ELSE 'do not apply: not lakewatch''s ingest pipeline (no {table}_bronze with _rescued_data and _corrupt_record, no landing file state)' END AS auto_loader_tables,
  CASE WHEN o.not_read_reason IS NULL THEN 'read' ELSE 'not_read' END AS read_status,
  o.not_read_reason,
  coalesce(p.updates, 0) AS updates,
  coalesce(p.failed_updates, 0) AS failed_updates,
  p.last_update_id,
  p.last_update_state,
  p.last_update_start,
  p.last_update_end,
  p.last_success_end,
  p.last_failed_update_id,
  i.incident_id AS open_incident_id,
  i.category AS open_incident_category
FROM observed_event_logs o
LEFT JOIN per_pipeline p ON p.event_log = o.event_log
LEFT JOIN open_incident i ON i.pipeline_id <=> p.pipeline_id AND p.pipeline_id IS NOT NULL;
