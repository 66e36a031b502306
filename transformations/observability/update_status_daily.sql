CREATE MATERIALIZED VIEW update_status_daily (
  update_date DATE COMMENT 'Day (UTC) the updates started',
  pipeline_name STRING COMMENT 'Pipeline name',
  updates BIGINT COMMENT 'Updates started that day',
  completed BIGINT COMMENT 'Updates that COMPLETED',
  failed BIGINT COMMENT 'Updates that FAILED',
  canceled BIGINT COMMENT 'Updates that were CANCELED',
  success_rate DOUBLE COMMENT 'completed / finished updates (0..1; NULL when none finished)',
  avg_duration_seconds DOUBLE COMMENT 'Average duration of finished updates',
  p95_duration_seconds DOUBLE COMMENT '95th percentile duration of finished updates',
  max_duration_seconds DOUBLE COMMENT 'Longest finished update'
)
COMMENT 'Per pipeline and day: updates, failures, success rate, average and 95th percentile duration (internal updates excluded).'
TBLPROPERTIES ('quality' = 'gold')
AS
SELECT
  update_date, pipeline_name,
  count(*) AS updates,
  count_if(final_state = 'COMPLETED') AS completed,
  count_if(final_state = 'FAILED') AS failed,
  count_if(final_state = 'CANCELED') AS canceled,
  CAST(count_if(final_state = 'COMPLETED') AS DOUBLE) / nullif(count_if(final_state IN ('COMPLETED', 'FAILED', 'CANCELED')), 0) AS success_rate,
  avg(duration_seconds) AS avg_duration_seconds,
  CAST(percentile(duration_seconds, 0.95) AS DOUBLE) AS p95_duration_seconds,
  max(duration_seconds) AS max_duration_seconds
FROM update_status
GROUP BY update_date, pipeline_name;
