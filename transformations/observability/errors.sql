CREATE STREAMING TABLE errors (
  event_id STRING COMMENT 'Event id',
  pipeline_id STRING COMMENT 'Pipeline id',
  pipeline_name STRING COMMENT 'Pipeline name',
  update_id STRING COMMENT 'Pipeline update (run) id',
  flow_name STRING COMMENT 'Failed flow (NULL for the update''s own error)',
  event_type STRING COMMENT 'flow_progress or update_progress',
  event_time TIMESTAMP COMMENT 'When the error was logged',
  exception_class STRING COMMENT 'Outermost exception class',
  root_cause_class STRING COMMENT 'Innermost exception class (the root cause)',
  error_class STRING COMMENT 'Error class parsed from the message ([ERROR_CLASS]), if any',
  message STRING COMMENT 'Error message',
  root_cause_message STRING COMMENT 'Message of the root cause',
  fatal BOOLEAN COMMENT 'Whether the error was unrecoverable (no more retries)',
  error_date DATE COMMENT 'Date (UTC)'
)
COMMENT 'One row per error event of an observed pipeline (streaming: each is read once): pipeline, update, flow, exception classes, error class, message, time. Errors of internal updates are kept here; error_classes and the health metrics count only updates in update_status.'
PARTITIONED BY (error_date)
TBLPROPERTIES ('quality' = 'gold', 'delta.enableChangeDataFeed' = 'true', 'delta.enableRowTracking' = 'true')
AS
SELECT
  event_id,
  pipeline_id,
  pipeline_name,
  update_id,
  nullif(flow_name, '') AS flow_name,
  event_type,
  event_time,
  exception_class,
  root_cause_class,
  nullif(regexp_extract(exception_message, '^\\[([A-Za-z0-9_.:]+)\\]', 1), '') AS error_class,
  coalesce(exception_message, message) AS message,
  root_cause_message,
  error_fatal AS fatal,
  to_date(event_time) AS error_date
FROM STREAM(events) WITH ('skipChangeCommits' = 'true')
WHERE has_error OR level = 'ERROR';
