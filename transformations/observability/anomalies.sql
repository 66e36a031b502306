-- The anomaly detector of pipelines/anomalies.py (baselines and settings there; its `anomalies_sql` writes
-- this query, and tests/unit/test_anomalies.py checks that this file holds it).
CREATE MATERIALIZED VIEW anomalies (
  pipeline_name STRING COMMENT 'Pipeline name',
  metric STRING COMMENT 'What was measured (update_duration_seconds, rows_written, pass_rate, backlog_files, backlog_bytes, ingestion_latency_p95_seconds)',
  subject STRING COMMENT 'The series: the pipeline, a flow, dataset.expectation or a table',
  update_id STRING COMMENT 'Update whose value is unusual',
  update_start TIMESTAMP COMMENT 'When that update started',
  value DOUBLE COMMENT 'The value',
  baseline_median DOUBLE COMMENT 'Median of the comparable values before it',
  baseline_mad DOUBLE COMMENT 'Median absolute deviation of those values',
  history_size INT COMMENT 'Comparable values the baseline is made of (at most 20)',
  expected_low DOUBLE COMMENT 'Lowest value that would not have been flagged by its score',
  expected_high DOUBLE COMMENT 'Highest value that would not have been flagged by its score',
  score DOUBLE COMMENT '(value - median) / scale; flagged from 3.5 (modified z-score)',
  kind STRING COMMENT 'spike (above the baseline) or drop (below)',
  seasonal BOOLEAN COMMENT 'Compared with the same day of the week only',
  update_date DATE COMMENT 'Date (UTC) the update started'
)
COMMENT 'One row per value that is unusual for its own series: update duration per pipeline, rows written and backlog per flow, pass rate per expectation, ingestion latency per table, each against the median and median absolute deviation of the comparable updates before it (completed, no full refresh). Rules and settings in pipelines/anomalies.py; nothing is flagged before a series has enough history.'
PARTITIONED BY (update_date)
TBLPROPERTIES ('quality' = 'gold', 'delta.enableChangeDataFeed' = 'true', 'delta.enableRowTracking' = 'true')
AS
SELECT pipeline_name, metric, subject, update_id, at AS update_start, value,
       baseline_median, baseline_mad, history_size,
       baseline_median - 3.5 * scale AS expected_low,
       baseline_median + 3.5 * scale AS expected_high,
       score,
       CASE WHEN value > baseline_median THEN 'spike' ELSE 'drop' END AS kind,
       seasonal,
       to_date(at) AS update_date
FROM (
WITH series AS (
  SELECT *, CASE WHEN seasonal THEN dayofweek(at) ELSE 0 END AS season FROM (SELECT 'update_duration_seconds' AS metric, 'spike' AS direction, CAST(30.0 AS DOUBLE) AS min_change, CAST(0.5 AS DOUBLE) AS min_relative_change, false AS seasonal, s.* FROM (SELECT u.pipeline_name, u.pipeline_name AS subject, u.update_id, u.start_time AS at, u.duration_seconds AS value
FROM update_status u WHERE u.final_state = 'COMPLETED' AND u.full_refresh IS NOT TRUE) s WHERE s.value IS NOT NULL
  UNION ALL
SELECT 'rows_written' AS metric, 'both' AS direction, CAST(50.0 AS DOUBLE) AS min_change, CAST(0.5 AS DOUBLE) AS min_relative_change, false AS seasonal, s.* FROM (SELECT u.pipeline_name, t.flow_name AS subject, u.update_id, u.start_time AS at, CAST(t.rows_written AS DOUBLE) AS value
FROM (SELECT *, max(batches) OVER (PARTITION BY pipeline_name, flow_name) AS most_batches FROM flow_throughput) t
JOIN update_status u ON u.update_id = t.update_id
WHERE u.final_state = 'COMPLETED' AND u.full_refresh IS NOT TRUE AND t.final_status = 'COMPLETED' AND NOT (t.batches = 0 AND t.most_batches > 0)) s WHERE s.value IS NOT NULL
  UNION ALL
SELECT 'pass_rate' AS metric, 'drop' AS direction, CAST(0.02 AS DOUBLE) AS min_change, CAST(0.0 AS DOUBLE) AS min_relative_change, false AS seasonal, s.* FROM (SELECT u.pipeline_name, concat(e.dataset, '.', e.expectation) AS subject, u.update_id, u.start_time AS at,
       e.pass_rate AS value
FROM expectation_results e JOIN update_status u ON u.update_id = e.update_id
WHERE u.final_state = 'COMPLETED' AND u.full_refresh IS NOT TRUE AND e.full_refresh IS NOT TRUE) s WHERE s.value IS NOT NULL
  UNION ALL
SELECT 'backlog_files' AS metric, 'spike' AS direction, CAST(10.0 AS DOUBLE) AS min_change, CAST(1.0 AS DOUBLE) AS min_relative_change, false AS seasonal, s.* FROM (SELECT u.pipeline_name, b.flow_name AS subject, u.update_id, u.start_time AS at, CAST(b.backlog_files AS DOUBLE) AS value
FROM backlog b JOIN update_status u ON u.update_id = b.update_id
WHERE u.final_state = 'COMPLETED' AND u.full_refresh IS NOT TRUE) s WHERE s.value IS NOT NULL
  UNION ALL
SELECT 'backlog_bytes' AS metric, 'spike' AS direction, CAST(10485760.0 AS DOUBLE) AS min_change, CAST(1.0 AS DOUBLE) AS min_relative_change, false AS seasonal, s.* FROM (SELECT u.pipeline_name, b.flow_name AS subject, u.update_id, u.start_time AS at, CAST(b.backlog_bytes AS DOUBLE) AS value
FROM backlog b JOIN update_status u ON u.update_id = b.update_id
WHERE u.final_state = 'COMPLETED' AND u.full_refresh IS NOT TRUE) s WHERE s.value IS NOT NULL
  UNION ALL
SELECT 'ingestion_latency_p95_seconds' AS metric, 'spike' AS direction, CAST(60.0 AS DOUBLE) AS min_change, CAST(0.5 AS DOUBLE) AS min_relative_change, false AS seasonal, s.* FROM (SELECT u.pipeline_name, l.table_name AS subject, u.update_id, u.start_time AS at, l.p95_latency_seconds AS value
FROM ingestion_latency_by_update l JOIN update_status u ON u.update_id = l.update_id
WHERE u.final_state = 'COMPLETED' AND u.full_refresh IS NOT TRUE) s WHERE s.value IS NOT NULL)
),
history AS (
  SELECT s.*,
         array_sort(collect_list(value) OVER (
           PARTITION BY metric, pipeline_name, subject, season ORDER BY at, update_id
           ROWS BETWEEN 20 PRECEDING AND 1 PRECEDING)) AS prior
  FROM series s
),
centred AS (
  SELECT h.*, size(prior) AS history_size, CASE WHEN size(prior) > 0 THEN (element_at(prior, CAST(floor((size(prior) + 1) / 2.0) AS INT)) + element_at(prior, CAST(ceil((size(prior) + 1) / 2.0) AS INT))) / 2 END AS baseline_median FROM history h
),
spread AS (
  SELECT c.*, CASE WHEN size(array_sort(transform(prior, v -> abs(v - baseline_median)))) > 0 THEN (element_at(array_sort(transform(prior, v -> abs(v - baseline_median))), CAST(floor((size(array_sort(transform(prior, v -> abs(v - baseline_median)))) + 1) / 2.0) AS INT)) + element_at(array_sort(transform(prior, v -> abs(v - baseline_median))), CAST(ceil((size(array_sort(transform(prior, v -> abs(v - baseline_median)))) + 1) / 2.0) AS INT))) / 2 END AS baseline_mad,
         greatest(min_change, min_relative_change * abs(baseline_median)) AS change_floor
  FROM centred c
),
scored AS (
  SELECT p.*,
         greatest(1.4826 * baseline_mad, change_floor / 3.5) AS scale,
         (value - baseline_median) / nullif(greatest(1.4826 * baseline_mad, change_floor / 3.5), 0) AS score
  FROM spread p
)
SELECT *,
       coalesce(history_size >= 5
                AND abs(value - baseline_median) >= change_floor
                AND abs(score) >= 3.5
                AND (direction = 'both' OR (direction = 'spike' AND value > baseline_median)
                     OR (direction = 'drop' AND value < baseline_median)), false) AS flagged
FROM scored
)
WHERE flagged;
