CREATE MATERIALIZED VIEW expectation_results_daily (
  update_date DATE COMMENT 'Day (UTC)',
  pipeline_id STRING COMMENT 'Pipeline id',
  pipeline_name STRING COMMENT 'Pipeline name (its latest of the day)',
  dataset STRING COMMENT 'Dataset',
  expectation STRING COMMENT 'Expectation name',
  passed_records BIGINT COMMENT 'Rows that met the condition',
  failed_records BIGINT COMMENT 'Rows that did not',
  pass_rate DOUBLE COMMENT 'passed / (passed + failed), 0..1'
)
COMMENT 'Per day, pipeline, dataset and expectation: rows passed and failed, pass rate. Counts of a dataset''s full refresh are left out (they count rows of earlier days again; rows that arrived with the full refresh itself are therefore not in these figures).'
PARTITIONED BY (update_date)
TBLPROPERTIES ('quality' = 'gold')
AS
SELECT update_date, pipeline_id, max_by(pipeline_name, measured_at) AS pipeline_name, dataset, expectation,
       sum(passed_records) AS passed_records, sum(failed_records) AS failed_records,
       CAST(sum(passed_records) AS DOUBLE) / nullif(sum(passed_records) + sum(failed_records), 0) AS pass_rate
FROM expectation_results
WHERE full_refresh IS NOT TRUE
GROUP BY update_date, pipeline_id, dataset, expectation;
