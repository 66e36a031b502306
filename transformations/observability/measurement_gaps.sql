CREATE MATERIALIZED VIEW measurement_gaps (
  update_id STRING COMMENT 'Pipeline update (run) id',
  start_time TIMESTAMP COMMENT 'When the update was created',
  measurement_warnings BIGINT COMMENT 'WARN events of figures the run could not measure',
  batches_without_rows BIGINT COMMENT 'Micro-batch METRICS events without a row count',
  files_without_commit_time BIGINT COMMENT 'Files whose rows first landed in the update, without a commit time',
  metrics_missing BIGINT COMMENT 'The three counts added up',
  reasons ARRAY<STRING> COMMENT 'What was not measured and why',
  update_date DATE COMMENT 'Date (UTC) the update started'
)
COMMENT 'One row per update (internal ones excluded): what could not be measured in it and why: lakewatch''s measurement WARN events, micro-batches reported without a row count, files that landed without a commit time (so no latency). metrics_missing = 0 means every figure of the update was measured.'
PARTITIONED BY (update_date)
TBLPROPERTIES ('quality' = 'gold', 'delta.enableChangeDataFeed' = 'true', 'delta.enableRowTracking' = 'true')
AS
WITH warnings AS (
  SELECT update_id, count(*) AS n,
         collect_set(concat(measurement,
                            CASE WHEN coalesce(flow_name, '') <> '' THEN concat(' (', flow_name, ')') ELSE '' END,
                            ': ', coalesce(measurement_reason, 'no reason given'))) AS reasons
  FROM events WHERE measurement IS NOT NULL
  GROUP BY update_id
),
unreported AS (
  SELECT update_id, count(*) AS n,
         collect_set(concat('rows of micro-batches of ', coalesce(flow_name, 'a flow'), ' not reported')) AS reasons
  FROM events
  WHERE event_type = 'flow_progress' AND level = 'METRICS' AND batch_id IS NOT NULL AND num_output_rows IS NULL
  GROUP BY update_id
),
uncommitted AS (
  SELECT u.update_id, count(*) AS n
  FROM file_latency f
  JOIN update_status u
    ON u.event_log = '${lakewatch.event_log}' AND f.first_ingested_at >= u.start_time AND (u.end_time IS NULL OR f.first_ingested_at <= u.end_time)
  WHERE f.latency_status = 'no_commit_time'
  GROUP BY u.update_id
)
SELECT
  u.update_id, u.start_time,
  coalesce(w.n, 0) AS measurement_warnings,
  coalesce(b.n, 0) AS batches_without_rows,
  coalesce(f.n, 0) AS files_without_commit_time,
  coalesce(w.n, 0) + coalesce(b.n, 0) + coalesce(f.n, 0) AS metrics_missing,
  array_sort(concat(
    coalesce(w.reasons, CAST(array() AS ARRAY<STRING>)),
    coalesce(b.reasons, CAST(array() AS ARRAY<STRING>)),
    CASE WHEN f.n > 0 THEN array(concat(CAST(f.n AS STRING), ' file(s) landed without a commit time (no latency): '
                                        'cloud_files_state fills commit_time on DBR 18.2+, or with cloudFiles.cleanSource'))
         ELSE CAST(array() AS ARRAY<STRING>) END)) AS reasons,
  u.update_date
FROM update_status u
LEFT JOIN warnings w ON w.update_id = u.update_id
LEFT JOIN unreported b ON b.update_id = u.update_id
LEFT JOIN uncommitted f ON f.update_id = u.update_id;
