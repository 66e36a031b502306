CREATE MATERIALIZED VIEW flow_throughput (
  update_id STRING COMMENT 'Pipeline update (run) id',
  pipeline_id STRING COMMENT 'Pipeline id',
  pipeline_name STRING COMMENT 'Pipeline name',
  flow_name STRING COMMENT 'Flow name (last part of the qualified name)',
  dataset STRING COMMENT 'Target dataset or sink of the flow',
  final_status STRING COMMENT 'Last status of the flow in the update (COMPLETED, FAILED, SKIPPED, ...)',
  rows_written BIGINT COMMENT 'Rows the flow wrote in the update; NULL when no event carried a count, or when a micro-batch''s count is missing (see unmeasured_batches)',
  rows_source STRING COMMENT 'Where rows_written comes from: metrics (METRICS events) or terminal_event',
  bytes_written BIGINT COMMENT 'Bytes the flow wrote in the update (its METRICS events'' num_output_bytes; NULL when none carried a byte count)',
  batches BIGINT COMMENT 'Micro-batches reported (METRICS events with a batch id)',
  unmeasured_batches BIGINT COMMENT 'Micro-batches reported without a row count',
  batches_without_expectation_counts BIGINT COMMENT 'Micro-batches reported without expectation counts (matters for datasets with expectations)',
  started_at TIMESTAMP COMMENT 'First time the flow was RUNNING in the update',
  ended_at TIMESTAMP COMMENT 'Time of the flow''s last terminal status in the update',
  duration_seconds DOUBLE COMMENT 'Seconds from RUNNING to the terminal status',
  rows_per_second DOUBLE COMMENT 'rows_written / duration_seconds',
  update_date DATE COMMENT 'Date (UTC) the flow started'
)
COMMENT 'One row per update and flow: rows written, micro-batches, time from RUNNING to the flow''s last status, rows per second. Rows come from whichever events carry them, never twice: the METRICS events (per micro-batch for streaming flows) when any carries a count, else the flow''s terminal event (materialized views may report there).'
PARTITIONED BY (update_date)
TBLPROPERTIES ('quality' = 'gold', 'delta.enableChangeDataFeed' = 'true', 'delta.enableRowTracking' = 'true')
AS
WITH per_flow AS (
  SELECT
    update_id,
    max(pipeline_id) AS pipeline_id,
    max(pipeline_name) AS pipeline_name,
    flow_name,
    max(dataset) AS dataset,
    max_by(flow_status, struct(event_time, seq)) FILTER (WHERE level <> 'METRICS' AND flow_status IS NOT NULL) AS final_status,
    sum(num_output_rows) FILTER (WHERE level = 'METRICS') AS metrics_rows,
    sum(num_output_bytes) FILTER (WHERE level = 'METRICS') AS bytes_written,
    count_if(level = 'METRICS' AND num_output_rows IS NOT NULL) AS metrics_with_rows,
    max_by(num_output_rows, struct(event_time, seq)) FILTER (
      WHERE level <> 'METRICS' AND flow_status IN ('COMPLETED', 'FAILED', 'SKIPPED', 'EXCLUDED', 'STOPPED') AND num_output_rows IS NOT NULL) AS terminal_rows,
    count_if(level = 'METRICS' AND batch_id IS NOT NULL) AS batches,
    count_if(level = 'METRICS' AND batch_id IS NOT NULL AND num_output_rows IS NULL) AS unmeasured_batches,
    count_if(level = 'METRICS' AND batch_id IS NOT NULL AND expectations IS NULL) AS batches_without_expectation_counts,
    min(event_time) FILTER (WHERE level <> 'METRICS' AND flow_status = 'RUNNING') AS started_at,
    max(event_time) FILTER (WHERE level <> 'METRICS' AND flow_status IN ('COMPLETED', 'FAILED', 'SKIPPED', 'EXCLUDED', 'STOPPED')) AS ended_at,
    min(event_time) AS first_seen
  FROM events
  WHERE event_type = 'flow_progress' AND flow_name IS NOT NULL AND flow_name <> ''
    AND update_id IN (SELECT update_id FROM update_status)
  GROUP BY update_id, flow_name
),
counted AS (
  SELECT *,
    CASE WHEN unmeasured_batches > 0 THEN CAST(NULL AS BIGINT)
         WHEN metrics_with_rows > 0 THEN metrics_rows
         ELSE terminal_rows END AS rows_written,
    CASE WHEN unmeasured_batches > 0 THEN CAST(NULL AS STRING)
         WHEN metrics_with_rows > 0 THEN 'metrics'
         WHEN terminal_rows IS NOT NULL THEN 'terminal_event' END AS rows_source
  FROM per_flow
)
SELECT
  update_id, pipeline_id, pipeline_name, flow_name, dataset, final_status, rows_written, rows_source, bytes_written,
  batches, unmeasured_batches, batches_without_expectation_counts, started_at, ended_at,
  CAST((unix_millis(ended_at) - unix_millis(started_at)) / 1000.0 AS DOUBLE) AS duration_seconds,
  CASE WHEN CAST((unix_millis(ended_at) - unix_millis(started_at)) / 1000.0 AS DOUBLE) > 0
       THEN rows_written / CAST((unix_millis(ended_at) - unix_millis(started_at)) / 1000.0 AS DOUBLE) END AS rows_per_second,
  to_date(coalesce(started_at, first_seen)) AS update_date
FROM counted;
