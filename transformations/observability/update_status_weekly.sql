CREATE MATERIALIZED VIEW update_status_weekly (
  week_start DATE COMMENT 'Monday (UTC) of the week',
  pipeline_name STRING COMMENT 'Pipeline name',
  updates BIGINT COMMENT 'Completed incremental updates that week',
  avg_duration_seconds DOUBLE COMMENT 'Average duration',
  p95_duration_seconds DOUBLE COMMENT '95th percentile duration',
  max_duration_seconds DOUBLE COMMENT 'Longest update',
  previous_week_avg_duration_seconds DOUBLE COMMENT 'Average duration the week before (NULL: no update then)',
  avg_duration_change DOUBLE COMMENT 'avg / previous week''s avg - 1 (0.05 = 5% slower)'
)
COMMENT 'Per pipeline and week (starting Monday): completed incremental updates (full refreshes and failures left out: they are not comparable), their average, 95th percentile and longest duration, and the change of the average against the week before (the week-over-week duration trend).'
TBLPROPERTIES ('quality' = 'gold')
AS
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
LEFT JOIN weekly p ON p.pipeline_name = w.pipeline_name AND p.week_start = date_sub(w.week_start, 7);
