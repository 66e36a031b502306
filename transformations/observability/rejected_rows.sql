CREATE MATERIALIZED VIEW rejected_rows (
  update_id STRING COMMENT 'Pipeline update (run) id',
  table_name STRING COMMENT 'Clean table whose drop expectations removed the rows',
  dropped_records BIGINT COMMENT 'Rows the drop expectations removed in the update (the clean table''s dropped_records)',
  rejected_rows BIGINT COMMENT 'Rows the table''s {table}_rejected flow wrote in the update (NULL: not measured, or the flow did not run)',
  difference BIGINT COMMENT 'dropped_records - rejected_rows (NULL when rejected_rows is NULL)',
  status STRING COMMENT 'ok; missing_rows (rows dropped that the rejected table did not receive); extra_rows; not_measured (the rejected flow wrote without a row count); not_kept (the update had no rejected flow for the table: an update from before the table had one, whose dropped rows were only counted)',
  update_date DATE COMMENT 'Date (UTC) of the update''s last flow event'
)
COMMENT 'Per update and clean table that keeps its rejected rows (a {table}_rejected flow ran in some update): the rows its drop expectations removed (dropped_records) against the rows {table}_rejected received (the rows themselves, with the names of the expectations each failed, are in that table). Both read the same micro-batches of bronze in an update, so they are equal unless a row was lost. Datasets without a rejected-rows table (bronze, which has no drop expectation; pipelines without the pattern) are left out.'
PARTITIONED BY (update_date)
TBLPROPERTIES ('quality' = 'gold', 'delta.enableChangeDataFeed' = 'true', 'delta.enableRowTracking' = 'true')
AS
WITH keeping AS (
  SELECT DISTINCT substring(dataset, 1, length(dataset) - length('_rejected')) AS table_name
  FROM flow_throughput WHERE endswith(dataset, '_rejected')
)
SELECT
  d.update_id, d.dataset AS table_name, d.dropped_records, t.rows_written AS rejected_rows,
  d.dropped_records - t.rows_written AS difference,
  CASE WHEN t.update_id IS NULL THEN 'not_kept'
       WHEN t.rows_written IS NULL THEN 'not_measured'
       WHEN d.dropped_records > t.rows_written THEN 'missing_rows'
       WHEN d.dropped_records < t.rows_written THEN 'extra_rows'
       ELSE 'ok' END AS status,
  d.update_date
FROM dropped_records d
JOIN keeping k ON k.table_name = d.dataset
LEFT JOIN flow_throughput t ON t.update_id = d.update_id AND t.dataset = concat(d.dataset, '_rejected');
