CREATE MATERIALIZED VIEW file_latency (
  table_name STRING COMMENT 'Bronze table the file feeds',
  path STRING COMMENT 'File path',
  size_bytes BIGINT COMMENT 'File size',
  create_time TIMESTAMP COMMENT 'File modification time when the stream took it',
  discovery_time TIMESTAMP COMMENT 'When the stream planned the file into a batch',
  commit_time TIMESTAMP COMMENT 'Commit in the live checkpoint (NULL while pending or when not known)',
  first_commit_time TIMESTAMP COMMENT 'The file''s earliest commit over every checkpoint',
  latency_seconds DOUBLE COMMENT 'first_commit_time - create_time (NULL unless latency_status is measured)',
  discovery_to_commit_seconds DOUBLE COMMENT 'commit_time - discovery_time in the live checkpoint: how long the stream took from planning the file to committing it (slow discovery or processing; NULL when either time is unknown)',
  latency_status STRING COMMENT 'measured, pending (not committed yet), no_commit_time (landed, but the file state has no commit time: cloud_files_state below DBR 18.2 without cleanSource), recommitted_by_full_refresh',
  full_refresh_update_id STRING COMMENT 'The full-refresh update that committed the file again (recommitted files)',
  state STRING COMMENT 'committed, discovered, pending or not_in_file_state',
  first_ingested_at TIMESTAMP COMMENT 'Earliest _ingested_at of the file''s bronze rows',
  create_date DATE COMMENT 'Date (UTC) of create_time'
)
COMMENT 'One row per landing file: when it was created and first committed, and the ingestion latency in between. A full refresh commits every file again: latency is measured from the file''s first commit, and where the file state cannot tell (Databricks keeps only the live checkpoint, so first_commit_time = commit_time), a file whose only known commit is in a full-refresh update of its table has no latency (status recommitted_by_full_refresh) instead of a new one.'
PARTITIONED BY (create_date)
TBLPROPERTIES ('quality' = 'gold', 'delta.enableChangeDataFeed' = 'true', 'delta.enableRowTracking' = 'true')
AS
WITH recommitted AS (
  SELECT f.path_key, min(u.update_id) AS update_id
  FROM landing_files f
  JOIN update_status u
    ON u.event_log = '${lakewatch.event_log}' AND f.commit_time >= u.start_time AND (u.end_time IS NULL OR f.commit_time <= u.end_time)
   AND (u.full_refresh IS TRUE AND (coalesce(size(u.full_refresh_selection), 0) = 0 OR exists(u.full_refresh_selection, s -> regexp_extract(s, '([^.`]+)`?$', 1) = f.table_name)))
  WHERE f.first_commit_time = f.commit_time
  GROUP BY f.path_key
),
classified AS (
  SELECT f.*, r.update_id AS full_refresh_update_id,
    CASE WHEN r.update_id IS NOT NULL THEN 'recommitted_by_full_refresh'
         WHEN f.first_commit_time IS NOT NULL THEN 'measured'
         WHEN f.landed THEN 'no_commit_time'
         ELSE 'pending' END AS latency_status
  FROM landing_files f LEFT JOIN recommitted r ON f.path_key = r.path_key
)
SELECT
  table_name, path, size_bytes, create_time, discovery_time, commit_time, first_commit_time,
  CASE WHEN latency_status = 'measured' THEN CAST((unix_millis(first_commit_time) - unix_millis(create_time)) / 1000.0 AS DOUBLE) END AS latency_seconds,
  CAST((unix_millis(commit_time) - unix_millis(discovery_time)) / 1000.0 AS DOUBLE) AS discovery_to_commit_seconds,
  latency_status, full_refresh_update_id, state, first_ingested_at, create_date
FROM classified;
