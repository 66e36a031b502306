CREATE MATERIALIZED VIEW expectation_results (
  update_id STRING COMMENT 'Pipeline update (run) id',
  pipeline_id STRING COMMENT 'Pipeline id',
  pipeline_name STRING COMMENT 'Pipeline name',
  dataset STRING COMMENT 'Dataset the expectation is declared on',
  expectation STRING COMMENT 'Expectation name',
  passed_records BIGINT COMMENT 'Rows that met the condition',
  failed_records BIGINT COMMENT 'Rows that did not (whatever the action)',
  pass_rate DOUBLE COMMENT 'passed / (passed + failed), 0..1',
  full_refresh BOOLEAN COMMENT 'The dataset was fully refreshed in this update: its counts cover history again',
  batches_without_counts BIGINT COMMENT 'Micro-batches of the dataset''s flow in the update that reported no expectation counts (then the counts cover only the others); NULL when no flow of the update writes the dataset',
  measured_at TIMESTAMP COMMENT 'Last metrics event of the update for the dataset',
  update_date DATE COMMENT 'Date (UTC) of measured_at'
)
COMMENT 'Per update, dataset and expectation: rows that passed and failed, and the pass rate. Every dataset of the ingest pipeline is a streaming table, so each row is counted once, in the update that brought it, except when the dataset is fully refreshed (full_refresh): then every row is counted again.'
PARTITIONED BY (update_date)
TBLPROPERTIES ('quality' = 'gold', 'delta.enableChangeDataFeed' = 'true', 'delta.enableRowTracking' = 'true')
AS
WITH results AS (
  SELECT update_id, event_time, e.name AS expectation, regexp_extract(e.dataset, '([^.`]+)`?$', 1) AS dataset,
         e.passed_records, e.failed_records
  FROM (SELECT update_id, event_time, explode(expectations) AS e FROM events
        WHERE event_type = 'flow_progress' AND expectations IS NOT NULL
          AND update_id IN (SELECT update_id FROM update_status))
),
per_expectation AS (
  SELECT update_id, dataset, expectation,
         sum(passed_records) AS passed_records, sum(failed_records) AS failed_records,
         max(event_time) AS measured_at
  FROM results
  GROUP BY update_id, dataset, expectation
),
uncounted AS (
  SELECT update_id, dataset, sum(batches_without_expectation_counts) AS batches_without_counts
  FROM flow_throughput GROUP BY update_id, dataset
)
SELECT
  r.update_id, u.pipeline_id, u.pipeline_name, r.dataset, r.expectation, r.passed_records, r.failed_records,
  CAST(r.passed_records AS DOUBLE) / nullif(r.passed_records + r.failed_records, 0) AS pass_rate,
  (u.full_refresh IS TRUE AND (coalesce(size(u.full_refresh_selection), 0) = 0 OR exists(u.full_refresh_selection, s -> regexp_extract(s, '([^.`]+)`?$', 1) = r.dataset))) AS full_refresh,
  c.batches_without_counts,
  r.measured_at,
  to_date(r.measured_at) AS update_date
FROM per_expectation r
JOIN update_status u ON u.update_id = r.update_id
LEFT JOIN uncounted c ON c.update_id = r.update_id AND c.dataset = r.dataset;
