CREATE MATERIALIZED VIEW flow_throughput_daily (
  update_date DATE COMMENT 'Day (UTC)',
  pipeline_id STRING COMMENT 'Pipeline id',
  pipeline_name STRING COMMENT 'Pipeline name (its latest of the day)',
  flow_name STRING COMMENT 'Flow name',
  updates BIGINT COMMENT 'Updates in which the flow ran',
  rows_written BIGINT COMMENT 'Rows written that day (NULL when a micro-batch''s count is missing, or none was reported)',
  unmeasured_batches BIGINT COMMENT 'Micro-batches of the day without a row count',
  bytes_written BIGINT COMMENT 'Bytes written that day (updates without a byte count left out)',
  total_duration_seconds DOUBLE COMMENT 'Seconds the flow ran that day',
  avg_duration_seconds DOUBLE COMMENT 'Average seconds per update',
  rows_per_second DOUBLE COMMENT 'rows_written / total_duration_seconds'
)
COMMENT 'Per pipeline, flow and day: updates, rows written, time spent, rows per second.'
PARTITIONED BY (update_date)
TBLPROPERTIES ('quality' = 'gold')
AS
SELECT
  update_date, pipeline_id, max_by(pipeline_name, started_at) AS pipeline_name, flow_name,
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
GROUP BY update_date, pipeline_id, flow_name;
