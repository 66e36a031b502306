-- An incident is the run of failed updates of one pipeline between two of its completed ones: opened
-- by the first failure, closed by the pipeline's next update that completes. It is read from the update history itself, so a failure
-- that a success follows before the next refresh still opens (and closes) one. Its root cause is
-- run_insights' reading of its first failed update.
-- `explains` names the health metrics whose alerts the incident stands for (health_metrics gives them
-- alert_value 0 and alert_reason naming the incident, and lakewatch_incident pages once instead):
-- while it is open, every metric a failing update moves (the failure itself, errors, backlog,
-- anomalies, missing measurements, hours without rows or success, table freshness, latency, duration);
-- once closed, the errors its failed updates logged, which the 24-hour window still counts. The
-- metrics of the ingest pipeline's last update do not read other pipelines, so an incident of another
-- observed pipeline explains only the counts over every pipeline (errors, failed updates).
CREATE MATERIALIZED VIEW incidents (
  incident_id STRING COMMENT 'The incident''s first failed update (its id names the incident)',
  pipeline_id STRING COMMENT 'The pipeline whose updates failed',
  pipeline_name STRING COMMENT 'Its name',
  event_log STRING COMMENT 'The event log its updates were read from (update_status.event_log)',
  status STRING COMMENT 'OPEN until an update completes after its failures, then CLOSED',
  opened_at TIMESTAMP COMMENT 'When its first failed update ended',
  closed_at TIMESTAMP COMMENT 'When the update that closed it ended (NULL while open)',
  closed_by_update_id STRING COMMENT 'The completed update that closed it (NULL while open)',
  failed_updates BIGINT COMMENT 'Failed updates in the incident',
  last_failed_update_id STRING COMMENT 'Its latest failed update',
  duration_hours DOUBLE COMMENT 'Hours from opened_at to closed_at (NULL while open)',
  category STRING COMMENT 'Root-cause category of its first failed update (run_insights; ''unknown'' when no rule matches)',
  failing_flow STRING COMMENT 'The first flow that logged an error in its first failed update',
  error_class STRING COMMENT 'Error class or exception class of that first error',
  root_cause_class STRING COMMENT 'Innermost exception class of that first error',
  root_cause_message STRING COMMENT 'Innermost message of that first error, concise',
  recommended_action STRING COMMENT 'What to do about it (run_insights)',
  explains ARRAY<STRING> COMMENT 'The health metrics whose alerts it stands for: while open, those a failing update moves; once closed, the error counts of its failed updates',
  opened_date DATE COMMENT 'Date (UTC) it opened'
)
COMMENT 'One row per incident: a run of failed updates of one observed pipeline from the first failure to its next completed update, with its root cause (run_insights) and the health metrics it explains, so that one failure pages once (lakewatch_incident) rather than through every alert it moves.'
TBLPROPERTIES ('quality' = 'gold', 'delta.enableChangeDataFeed' = 'true', 'delta.enableRowTracking' = 'true')
AS
WITH finished AS (
  SELECT pipeline_id, pipeline_name, event_log, update_id, start_time, end_time, final_state,
         sum(CASE WHEN final_state = 'COMPLETED' THEN 1 ELSE 0 END)
           OVER (PARTITION BY pipeline_id ORDER BY start_time, update_id) AS completed_before
  FROM update_status
  WHERE final_state IN ('COMPLETED', 'FAILED', 'CANCELED')
),
grouped AS (
  SELECT pipeline_id, completed_before,
         max(pipeline_name) AS pipeline_name,
         max(event_log) AS event_log,
         min_by(update_id, struct(start_time, update_id)) AS incident_id,
         min(end_time) AS opened_at,
         count(*) AS failed_updates,
         max_by(update_id, struct(start_time, update_id)) AS last_failed_update_id
  FROM finished
  WHERE final_state = 'FAILED'
  GROUP BY pipeline_id, completed_before
),
closers AS (
  SELECT pipeline_id, completed_before, update_id, end_time FROM finished WHERE final_state = 'COMPLETED'
)
SELECT
  g.incident_id,
  g.pipeline_id,
  g.pipeline_name,
  g.event_log,
  CASE WHEN c.update_id IS NULL THEN 'OPEN' ELSE 'CLOSED' END AS status,
  g.opened_at,
  c.end_time AS closed_at,
  c.update_id AS closed_by_update_id,
  g.failed_updates,
  g.last_failed_update_id,
  CAST((unix_millis(c.end_time) - unix_millis(g.opened_at)) / 3600000.0 AS DOUBLE) AS duration_hours,
  coalesce(i.category, 'unknown') AS category,
  i.failing_flow,
  i.error_class,
  i.root_cause_class,
  i.root_cause_message,
  i.recommended_action,
  CASE WHEN g.event_log IS DISTINCT FROM '${lakewatch.event_log}'
       THEN array('errors_last_24h', 'failed_updates_last_24h')
       WHEN c.update_id IS NULL
       THEN array('last_update_failed', 'errors_last_24h', 'failed_updates_last_24h', 'backlog_files', 'backlog_bytes',
                  'backlog_growth_streak', 'anomalies_last_update', 'metrics_missing', 'rows_last_update',
                  'hours_since_rows_ingested', 'hours_since_last_success', 'tables_without_rows',
                  'ingestion_latency_p95_seconds_24h', 'last_update_duration_seconds', 'last_update_duration_vs_median',
                  'tables_files_late')
       ELSE array('errors_last_24h', 'failed_updates_last_24h') END AS explains,
  CAST(g.opened_at AS DATE) AS opened_date
FROM grouped g
LEFT JOIN closers c ON c.pipeline_id <=> g.pipeline_id AND c.completed_before = g.completed_before + 1
LEFT JOIN run_insights i ON i.update_id = g.incident_id;
