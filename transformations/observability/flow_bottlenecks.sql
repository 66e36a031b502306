CREATE MATERIALIZED VIEW flow_bottlenecks (
  pipeline_id STRING COMMENT 'Pipeline id',
  pipeline_name STRING COMMENT 'Pipeline name (its latest)',
  flow_name STRING COMMENT 'Flow name',
  updates BIGINT COMMENT 'Updates in those 7 days in which the flow ran',
  avg_duration_seconds DOUBLE COMMENT 'Average seconds per update',
  max_duration_seconds DOUBLE COMMENT 'Longest run in seconds',
  avg_rows_written DOUBLE COMMENT 'Average rows written per update that reported them',
  duration_rank INT COMMENT '1 = the slowest flow on average, of every pipeline'
)
COMMENT 'The slowest flows over the 7 days up to the latest flow run (bounded by the data, not the clock): average and longest duration, average rows, rank by average duration.'
TBLPROPERTIES ('quality' = 'gold')
AS
SELECT
  pipeline_id, max_by(pipeline_name, started_at) AS pipeline_name, flow_name,
  count(*) AS updates,
  avg(duration_seconds) AS avg_duration_seconds,
  max(duration_seconds) AS max_duration_seconds,
  avg(rows_written) AS avg_rows_written,
  CAST(rank() OVER (ORDER BY avg(duration_seconds) DESC) AS INT) AS duration_rank
FROM flow_throughput
WHERE started_at >= (SELECT max(started_at) FROM flow_throughput) - INTERVAL 7 DAYS AND duration_seconds IS NOT NULL
GROUP BY pipeline_id, flow_name;
