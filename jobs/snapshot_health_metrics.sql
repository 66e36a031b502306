-- Keeps the health metrics of each observability refresh: the job's `snapshot_health_metrics` task
-- runs this file on a SQL warehouse after the observability refresh (resources/lakewatch.job.yml);
-- `lakewatch job` runs it on the local engine with the same parameters. `lakewatch alerts --replay`
-- evaluates today's alert definitions over these rows, to show when each alert would have fired and
-- cleared before a threshold is changed.
--
-- Parameters (the task's `parameters`; each {{name}} stands for the value as a string literal):
--   health_metrics  the observability pipeline's health_metrics, catalog.schema.table
--   history_table   the history table, catalog.schema.table (created by the first run)
--
-- Idempotent: the rows of a refresh are appended once, keyed by their checked_at (the clock of the
-- refresh that computed them); a second run after the same refresh adds nothing.

CREATE TABLE IF NOT EXISTS IDENTIFIER({{history_table}}) (
  metric_name STRING COMMENT 'Metric name',
  metric_value DOUBLE COMMENT 'Metric value (NULL when it could not be measured)',
  reason STRING COMMENT 'Why metric_value is NULL (NULL when measured)',
  checked_at TIMESTAMP COMMENT 'When the refresh computed the metric: one value per refresh',
  alert_value DOUBLE COMMENT 'The value the alerts compare',
  alert_reason STRING COMMENT 'What the alerts show beside alert_value',
  explained_by STRING COMMENT 'The incident(s) that explained the metric'
)
USING DELTA
COMMENT 'The health metrics of every observability refresh (jobs/snapshot_health_metrics.sql), for lakewatch alerts --replay'
TBLPROPERTIES ('delta.appendOnly' = 'true');

INSERT INTO IDENTIFIER({{history_table}})
SELECT m.metric_name, m.metric_value, m.reason, m.checked_at, m.alert_value, m.alert_reason, m.explained_by
FROM IDENTIFIER({{health_metrics}}) AS m
WHERE NOT EXISTS (
  SELECT 1 FROM IDENTIFIER({{history_table}}) AS h WHERE h.checked_at = m.checked_at
);
