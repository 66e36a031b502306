CREATE MATERIALIZED VIEW ingestion_latency_hourly (
  commit_hour TIMESTAMP COMMENT 'Hour (UTC) the files were first committed',
  table_name STRING COMMENT 'Bronze table',
  files BIGINT COMMENT 'Files first committed in the hour',
  p50_latency_seconds DOUBLE COMMENT 'Median create-to-commit latency',
  p95_latency_seconds DOUBLE COMMENT '95th percentile latency',
  max_latency_seconds DOUBLE COMMENT 'Largest latency'
)
COMMENT 'Per table and hour of first commit: files first committed and their create-to-commit latency (p50, p95, max). Files committed again by a full refresh are not new files.'
TBLPROPERTIES ('quality' = 'gold')
AS
SELECT
  date_trunc('HOUR', first_commit_time) AS commit_hour,
  table_name,
  count(*) AS files,
  CAST(percentile(latency_seconds, 0.5) AS DOUBLE) AS p50_latency_seconds,
  CAST(percentile(latency_seconds, 0.95) AS DOUBLE) AS p95_latency_seconds,
  max(latency_seconds) AS max_latency_seconds
FROM file_latency
WHERE latency_status = 'measured'
GROUP BY date_trunc('HOUR', first_commit_time), table_name;
