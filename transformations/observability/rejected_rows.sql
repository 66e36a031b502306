-- The clean table and its rejected rows read bronze through streams of their own (each its checkpoint),
-- so in one update they may read different rows: a flow failed, was excluded by --refresh, or a fail
-- expectation stopped the clean flow while the rejected flow went on. What must hold is the running
-- total: once both flows completed an update, every row the drop expectations removed since the two
-- tables started together is in the rejected table. The tables start together when they were created
-- in the same update, or reset by the same full refresh. A rejected table created later (a first drop
-- rule, or a deployment that adds rejected tables to an existing pipeline) read the whole of bronze in
-- its first update: its rows cannot be reconciled with the clean table's until a full refresh resets
-- both (not_comparable).
CREATE MATERIALIZED VIEW rejected_rows (
  update_id STRING COMMENT 'Pipeline update (run) id',
  table_name STRING COMMENT 'Clean table whose drop expectations removed the rows',
  dropped_records BIGINT COMMENT 'Rows the drop expectations removed in the update (the clean table''s dropped_records; 0 when its flow did not run)',
  rejected_rows BIGINT COMMENT 'Rows the table''s {table}_rejected flow wrote in the update (NULL: not measured)',
  dropped_since_start BIGINT COMMENT 'Rows dropped since the clean and rejected tables started together, up to this update',
  rejected_since_start BIGINT COMMENT 'Rows the rejected table received since then (NULL when a count is not measured)',
  difference BIGINT COMMENT 'dropped_since_start - rejected_since_start',
  status STRING COMMENT 'ok; missing_rows (rows dropped that the rejected table did not receive); extra_rows; not_measured (a count of the rejected flow is missing); not_compared (the clean or the rejected flow did not complete in this update, so one may have read further than the other); not_comparable (the rejected table did not start with the clean table: a full refresh of both reconciles them); not_kept (the update had no rejected flow for the table)',
  update_date DATE COMMENT 'Date (UTC) the update started'
)
COMMENT 'Per update and clean table that keeps its rejected rows (a {table}_rejected flow ran in some update): the rows its drop expectations removed (dropped_records) against the rows {table}_rejected received, as running totals since the two tables started together (the rows themselves, with the names of the expectations each failed, are in that table). Datasets without a rejected-rows table (bronze, which has no drop expectation; pipelines without the pattern) are left out.'
PARTITIONED BY (update_date)
TBLPROPERTIES ('quality' = 'gold', 'delta.enableChangeDataFeed' = 'true', 'delta.enableRowTracking' = 'true')
AS
WITH keeping AS (
  SELECT substring(f.dataset, 1, length(f.dataset) - length('_rejected')) AS table_name
  FROM flow_throughput f
  WHERE endswith(f.dataset, '_rejected')
  GROUP BY 1
),
per_update AS (
  SELECT
    k.table_name, u.update_id, u.start_time, u.update_date,
    c.final_status AS clean_status, r.final_status AS rejected_status, r.update_id IS NOT NULL AS has_rejected_flow,
    coalesce(d.dropped_records, 0) AS dropped_records,
    CASE WHEN r.final_status IN ('EXCLUDED', 'SKIPPED') THEN coalesce(r.rows_written, 0) ELSE r.rows_written END AS rejected_rows,
    u.full_refresh IS TRUE AND (size(coalesce(u.full_refresh_selection, array())) = 0
      OR exists(u.full_refresh_selection, s -> lower(substring_index(s, '.', -1)) = k.table_name)) AS resets_clean,
    u.full_refresh IS TRUE AND (size(coalesce(u.full_refresh_selection, array())) = 0
      OR exists(u.full_refresh_selection, s -> lower(substring_index(s, '.', -1)) = concat(k.table_name, '_rejected'))) AS resets_rejected
  FROM keeping k
  CROSS JOIN update_status u
  LEFT JOIN dropped_records d ON d.update_id = u.update_id AND d.dataset = k.table_name
  LEFT JOIN flow_throughput c ON c.update_id = u.update_id AND c.flow_name = k.table_name
  LEFT JOIN flow_throughput r ON r.update_id = u.update_id AND r.dataset = concat(k.table_name, '_rejected')
  WHERE c.update_id IS NOT NULL OR r.update_id IS NOT NULL
),
started AS (
  SELECT *,
    coalesce(max(CASE WHEN resets_clean AND clean_status IS NOT NULL THEN start_time END) OVER w,
             min(CASE WHEN clean_status IS NOT NULL THEN start_time END) OVER t) AS clean_start,
    greatest(max(CASE WHEN resets_rejected AND has_rejected_flow THEN start_time END) OVER w,
             min(CASE WHEN has_rejected_flow THEN start_time END) OVER t) AS rejected_start
  FROM per_update
  WINDOW w AS (PARTITION BY table_name ORDER BY start_time ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW),
         t AS (PARTITION BY table_name)
),
totals AS (
  SELECT *,
    sum(dropped_records) OVER s AS dropped_since_start,
    CASE WHEN count_if(has_rejected_flow AND rejected_rows IS NULL) OVER s = 0 THEN sum(rejected_rows) OVER s END AS rejected_since_start
  FROM started
  WINDOW s AS (PARTITION BY table_name, clean_start ORDER BY start_time ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW)
)
SELECT
  update_id, table_name, dropped_records, rejected_rows, dropped_since_start, rejected_since_start,
  dropped_since_start - rejected_since_start AS difference,
  CASE WHEN NOT has_rejected_flow THEN 'not_kept'
       WHEN rejected_start IS DISTINCT FROM clean_start THEN 'not_comparable'
       WHEN clean_status IS DISTINCT FROM 'COMPLETED' OR rejected_status IS DISTINCT FROM 'COMPLETED' THEN 'not_compared'
       WHEN rejected_since_start IS NULL THEN 'not_measured'
       WHEN dropped_since_start > rejected_since_start THEN 'missing_rows'
       WHEN dropped_since_start < rejected_since_start THEN 'extra_rows'
       ELSE 'ok' END AS status,
  update_date
FROM totals;
