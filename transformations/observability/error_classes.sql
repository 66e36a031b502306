CREATE MATERIALIZED VIEW error_classes (
  error_class STRING COMMENT 'Error class, or the root cause''s exception class',
  occurrences BIGINT COMMENT 'Error events',
  updates BIGINT COMMENT 'Distinct updates with the error',
  first_seen TIMESTAMP COMMENT 'First occurrence',
  last_seen TIMESTAMP COMMENT 'Last occurrence',
  last_message STRING COMMENT 'Message of the last occurrence'
)
COMMENT 'Per error class (or root-cause exception class when the message has none): occurrences, first and last seen (internal updates excluded).'
TBLPROPERTIES ('quality' = 'gold')
AS
SELECT
  coalesce(error_class, root_cause_class, exception_class) AS error_class,
  count(*) AS occurrences,
  count(DISTINCT update_id) AS updates,
  min(event_time) AS first_seen,
  max(event_time) AS last_seen,
  max_by(message, event_time) AS last_message
FROM errors
WHERE update_id IN (SELECT update_id FROM update_status)
GROUP BY coalesce(error_class, root_cause_class, exception_class);
