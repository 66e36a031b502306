CREATE MATERIALIZED VIEW file_batches (
  table_name STRING COMMENT 'Bronze table',
  commit_time TIMESTAMP COMMENT 'When the batch was committed',
  files BIGINT COMMENT 'Files in the batch',
  bytes BIGINT COMMENT 'Their size',
  first_discovery_time TIMESTAMP COMMENT 'When the stream planned the batch''s first file',
  seconds DOUBLE COMMENT 'commit_time - first_discovery_time',
  files_per_second DOUBLE COMMENT 'files / seconds (NULL when seconds is 0)',
  bytes_per_second DOUBLE COMMENT 'bytes / seconds (NULL when seconds is 0)',
  commit_date DATE COMMENT 'Date (UTC) of the commit'
)
COMMENT 'One row per micro-batch of a bronze flow, as the file state shows it (the files committed together, at one commit time): files and bytes, from the first file''s discovery to the commit, files and bytes per second. Only files with both times (cloud_files_state fills commit_time on DBR 18.2+ or with cloudFiles.cleanSource); a full refresh''s re-commit counts as the batch it is.'
PARTITIONED BY (commit_date)
TBLPROPERTIES ('quality' = 'gold')
AS
SELECT
  table_name, commit_time,
  count(*) AS files,
  sum(size_bytes) AS bytes,
  min(discovery_time) AS first_discovery_time,
  CAST((unix_millis(commit_time) - unix_millis(min(discovery_time))) / 1000.0 AS DOUBLE) AS seconds,
  count(*) / nullif(CAST((unix_millis(commit_time) - unix_millis(min(discovery_time))) / 1000.0 AS DOUBLE), 0) AS files_per_second,
  sum(size_bytes) / nullif(CAST((unix_millis(commit_time) - unix_millis(min(discovery_time))) / 1000.0 AS DOUBLE), 0) AS bytes_per_second,
  to_date(commit_time) AS commit_date
FROM landing_files
WHERE commit_time IS NOT NULL AND discovery_time IS NOT NULL
GROUP BY table_name, commit_time;
