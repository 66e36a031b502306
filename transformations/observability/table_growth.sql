CREATE MATERIALIZED VIEW table_growth (
  table_name STRING COMMENT 'Ingest table',
  table_kind STRING COMMENT 'bronze, clean, rejected or sink',
  source_table STRING COMMENT 'The configured table it belongs to (NULL for the sink, which all tables share)',
  snapshot_time TIMESTAMP COMMENT 'When the table was measured (NULL: never snapshotted)',
  delta_version BIGINT COMMENT 'Delta version measured',
  size_bytes BIGINT COMMENT 'Bytes of the data files of that version (DESCRIBE DETAIL sizeInBytes)',
  num_files BIGINT COMMENT 'Data files of that version (DESCRIBE DETAIL numFiles)',
  bytes_added BIGINT COMMENT 'size_bytes minus the table''s size at its snapshot before (negative: it shrank)',
  files_added BIGINT COMMENT 'num_files minus the table''s files at its snapshot before',
  seconds_since_previous DOUBLE COMMENT 'Seconds since the table''s snapshot before',
  bytes_per_day DOUBLE COMMENT 'bytes_added scaled to a day: how fast the table grows',
  files_per_day DOUBLE COMMENT 'files_added scaled to a day',
  is_latest BOOLEAN COMMENT 'The table''s latest snapshot (or its only row)',
  reason STRING COMMENT 'Why a figure is NULL: the snapshot''s own reason (table_missing, not_delta, not_measured, changed_while_measured; version_not_measured: only the version), first_snapshot, previous_not_measured, table_recreated (a new table id or an older version), no_time_elapsed, or not_snapshotted (a configured table no snapshot holds); NULL when all are measured',
  snapshot_date DATE COMMENT 'Date (UTC) of the snapshot'
)
COMMENT 'Size and file count of every ingest table ({table}_bronze, the clean {table}, {table}_rejected, corrupt_records_sink) at each snapshot the job''s snapshot_table_sizes task took, and how much it grew since the table''s snapshot before: bytes and files added, and the same per day. Figures that cannot be measured are NULL and reason says why (table_missing, first_snapshot, table_recreated, not_snapshotted, ...); never 0.'
PARTITIONED BY (snapshot_date)
TBLPROPERTIES ('quality' = 'gold')
AS
WITH ordered AS (
  SELECT s.*,
         lag(snapshot_time) OVER w AS previous_time,
         lag(size_bytes) OVER w AS previous_size,
         lag(num_files) OVER w AS previous_files,
         lag(table_id) OVER w AS previous_table_id,
         lag(delta_version) OVER w AS previous_version,
         row_number() OVER (PARTITION BY table_name ORDER BY snapshot_time DESC, snapshot_id DESC) = 1 AS is_latest
  FROM table_size_snapshots s
  WINDOW w AS (PARTITION BY table_name ORDER BY snapshot_time, snapshot_id)
),
judged AS (
  SELECT *,
         CASE
           WHEN size_bytes IS NULL OR num_files IS NULL THEN coalesce(reason, 'not_measured')
           WHEN previous_time IS NULL THEN 'first_snapshot'
           WHEN previous_size IS NULL OR previous_files IS NULL THEN 'previous_not_measured'
           WHEN NOT (table_id <=> previous_table_id) OR delta_version < previous_version THEN 'table_recreated'
           WHEN snapshot_time <= previous_time THEN 'no_time_elapsed'
         END AS growth_reason,
         CAST((unix_millis(snapshot_time) - unix_millis(previous_time)) / 1000.0 AS DOUBLE) AS seconds
  FROM ordered
)
SELECT
  table_name, table_kind, source_table, snapshot_time, delta_version, size_bytes, num_files,
  CASE WHEN growth_reason IS NULL THEN size_bytes - previous_size END AS bytes_added,
  CASE WHEN growth_reason IS NULL THEN num_files - previous_files END AS files_added,
  CASE WHEN growth_reason IS NULL THEN seconds END AS seconds_since_previous,
  CASE WHEN growth_reason IS NULL THEN (size_bytes - previous_size) * 86400.0 / seconds END AS bytes_per_day,
  CASE WHEN growth_reason IS NULL THEN (num_files - previous_files) * 86400.0 / seconds END AS files_per_day,
  is_latest, coalesce(growth_reason, reason) AS reason, snapshot_date
FROM judged
UNION ALL
SELECT e.table_name, e.table_kind, e.source_table, CAST(NULL AS TIMESTAMP), CAST(NULL AS BIGINT),
       CAST(NULL AS BIGINT), CAST(NULL AS BIGINT), CAST(NULL AS BIGINT), CAST(NULL AS BIGINT),
       CAST(NULL AS DOUBLE), CAST(NULL AS DOUBLE), CAST(NULL AS DOUBLE), true, 'not_snapshotted', CAST(NULL AS DATE)
FROM ingest_tables e
WHERE e.table_name NOT IN (SELECT table_name FROM table_size_snapshots WHERE table_name IS NOT NULL);
