CREATE MATERIALIZED VIEW ingestion_latency_by_update (
  update_id STRING COMMENT 'Pipeline update (run) id',
  table_name STRING COMMENT 'Bronze table',
  files BIGINT COMMENT 'Files first committed during the update',
  p50_latency_seconds DOUBLE COMMENT 'Median create-to-commit latency',
  p95_latency_seconds DOUBLE COMMENT '95th percentile latency',
  max_latency_seconds DOUBLE COMMENT 'Largest latency',
  update_date DATE COMMENT 'Date (UTC) the update started'
)
COMMENT 'Per ingest update and table: files first committed during the update and their create-to-commit latency.'
PARTITIONED BY (update_date)
TBLPROPERTIES ('quality' = 'gold', 'delta.enableChangeDataFeed' = 'true', 'delta.enableRowTracking' = 'true')
AS
SELECT
  u.update_id, f.table_name,
  count(*) AS files,
  CAST(percentile(f.latency_seconds, 0.5) AS DOUBLE) AS p50_latency_seconds,
  CAST(percentile(f.latency_seconds, 0.95) AS DOUBLE) AS p95_latency_seconds,
  max(f.latency_seconds) AS max_latency_seconds,
  max(u.update_date) AS update_date
FROM file_latency f
JOIN (
  -- an update that never ended is bounded by the next update's start (the last one: open)
  SELECT update_id, update_date, start_time,
         coalesce(end_time, lead(start_time) OVER (PARTITION BY pipeline_id ORDER BY start_time)) AS window_end
  FROM update_status
  WHERE event_log = '${lakewatch.event_log}'  -- the landing files are the ingest pipeline's
) u
  ON f.first_commit_time >= u.start_time AND (u.window_end IS NULL OR f.first_commit_time <= u.window_end)
WHERE f.latency_status = 'measured'
GROUP BY u.update_id, f.table_name;
