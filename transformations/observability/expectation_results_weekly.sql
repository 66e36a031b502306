CREATE MATERIALIZED VIEW expectation_results_weekly (
  week_start DATE COMMENT 'Monday of the week (UTC)',
  pipeline_id STRING COMMENT 'Pipeline id',
  pipeline_name STRING COMMENT 'Pipeline name (its latest of the week)',
  dataset STRING COMMENT 'Dataset',
  expectation STRING COMMENT 'Expectation name',
  passed_records BIGINT COMMENT 'Rows that met the condition',
  failed_records BIGINT COMMENT 'Rows that did not',
  pass_rate DOUBLE COMMENT 'passed / (passed + failed), 0..1',
  previous_week_pass_rate DOUBLE COMMENT 'The pass rate of the week before (NULL if no data)',
  pass_rate_change DOUBLE COMMENT 'pass_rate - previous_week_pass_rate'
)
COMMENT 'Per week (starting Monday), pipeline, dataset and expectation: pass rate, the previous week''s rate and the change (full-refresh recounts left out, as in the daily table).'
TBLPROPERTIES ('quality' = 'gold')
AS
WITH weekly AS (
  SELECT CAST(date_trunc('WEEK', update_date) AS DATE) AS week_start, pipeline_id,
         max_by(pipeline_name, measured_at) AS pipeline_name, dataset, expectation,
         sum(passed_records) AS passed_records, sum(failed_records) AS failed_records,
         CAST(sum(passed_records) AS DOUBLE) / nullif(sum(passed_records) + sum(failed_records), 0) AS pass_rate
  FROM expectation_results
  WHERE full_refresh IS NOT TRUE
  GROUP BY CAST(date_trunc('WEEK', update_date) AS DATE), pipeline_id, dataset, expectation
)
SELECT w.week_start, w.pipeline_id, w.pipeline_name, w.dataset, w.expectation, w.passed_records, w.failed_records, w.pass_rate,
       p.pass_rate AS previous_week_pass_rate,
       w.pass_rate - p.pass_rate AS pass_rate_change
FROM weekly w
LEFT JOIN weekly p
  ON p.pipeline_id <=> w.pipeline_id AND p.dataset = w.dataset AND p.expectation = w.expectation AND p.week_start = date_sub(w.week_start, 7);
