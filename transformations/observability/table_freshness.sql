-- A bronze flow's rows in one incremental update: true (rows written), false (a measured 0, or the flow
-- did not run a micro-batch), NULL (a micro-batch without a row count: whether rows came is unknown).
CREATE MATERIALIZED VIEW table_freshness (
  table_name STRING COMMENT 'Configured table name',
  bronze_table STRING COMMENT 'Its bronze streaming table (the flow of the same name)',
  max_hours_without_rows DOUBLE COMMENT 'Hours it may go without new rows (NULL: no limit of its own)',
  last_rows_update_id STRING COMMENT 'The newest incremental update whose bronze flow wrote rows',
  last_rows_at TIMESTAMP COMMENT 'When that update ended (NULL: no update wrote rows)',
  first_run_at TIMESTAMP COMMENT 'When the first incremental update that ran its bronze flow started',
  silent_since TIMESTAMP COMMENT 'Since when no rows arrived: last_rows_at, or first_run_at when none ever did; NULL when not known',
  reason STRING COMMENT 'Why silent_since is NULL (NULL when measured)'
)
COMMENT 'One row per configured ingest table: since when it has received no rows, and the hours it may go without (max_hours_without_rows in the table configuration). Walking back from the newest incremental update that ran its bronze flow, updates that wrote a measured 0 are passed over; the first other decides: rows written (silent since it ended) or a micro-batch without a row count (not known: silent_since NULL, reason says why). A table that never got rows is silent since the first update that ran its flow. Full refreshes are left out: they write old files'' rows again.'
TBLPROPERTIES ('quality' = 'gold', 'delta.enableChangeDataFeed' = 'true', 'delta.enableRowTracking' = 'true')
AS
WITH configured AS (
  SELECT source_table AS table_name, table_name AS bronze_table, max_hours_without_rows
  FROM ingest_tables WHERE table_kind = 'bronze'
),
runs AS (
  SELECT c.table_name, u.update_id, u.start_time, coalesce(u.end_time, u.start_time) AS at,
         CASE WHEN coalesce(f.rows_written, 0) > 0 THEN true
                WHEN f.unmeasured_batches > 0 THEN CAST(NULL AS BOOLEAN)
                ELSE false END AS ingested,
         concat('update ', u.update_id, ': ', CAST(f.unmeasured_batches AS STRING),
                ' micro-batch(es) without a row count') AS why
  FROM configured c
  JOIN flow_throughput f ON f.flow_name = c.bronze_table
  JOIN update_status u ON u.update_id = f.update_id
  WHERE u.full_refresh IS NOT TRUE
),
judged AS (
  SELECT table_name,
         max(at) FILTER (WHERE ingested) AS last_rows_at,
         max_by(update_id, at) FILTER (WHERE ingested) AS last_rows_update_id,
         min(start_time) AS first_run_at,
         (max_by(ingested, at) FILTER (WHERE ingested IS NOT FALSE) IS NULL AND count_if(ingested IS NULL) > 0) AS newest_unknown,
         max_by(why, at) FILTER (WHERE ingested IS NULL) AS unknown_why
  FROM runs GROUP BY table_name
)
SELECT c.table_name, c.bronze_table, c.max_hours_without_rows, j.last_rows_update_id, j.last_rows_at, j.first_run_at,
       CASE WHEN j.newest_unknown IS FALSE THEN coalesce(j.last_rows_at, j.first_run_at) END AS silent_since,
       CASE WHEN j.table_name IS NULL THEN 'no incremental update has run its bronze flow yet'
            WHEN j.newest_unknown THEN concat('rows not known for the last update that did not write a measured 0 (',
                                              j.unknown_why, ')') END AS reason
FROM configured c LEFT JOIN judged j ON j.table_name = c.table_name;
