CREATE MATERIALIZED VIEW backlog (
  update_id STRING COMMENT 'Pipeline update (run) id',
  pipeline_id STRING COMMENT 'Pipeline id',
  flow_name STRING COMMENT 'Flow reading the landing files',
  measured_at TIMESTAMP COMMENT 'Time of the last backlog figure or failed measurement',
  backlog_files BIGINT COMMENT 'Files waiting (NULL: not measured at the end of the update)',
  backlog_bytes BIGINT COMMENT 'Bytes waiting (NULL: not measured at the end of the update)',
  reason STRING COMMENT 'Why the backlog is NULL (NULL when measured)',
  files_change BIGINT COMMENT 'backlog_files minus the flow''s backlog_files in the update before (NULL when either is not measured, or for the first)',
  update_date DATE COMMENT 'Date (UTC) of the measurement'
)
COMMENT 'Per update and flow reading files: the backlog (files and bytes not yet ingested) of the update''s last measurement. When a measurement failed after it (a WARN event), the backlog is NULL and reason says why.'
PARTITIONED BY (update_date)
TBLPROPERTIES ('quality' = 'gold', 'delta.enableChangeDataFeed' = 'true', 'delta.enableRowTracking' = 'true')
AS
WITH figures AS (
  SELECT update_id, max(pipeline_id) AS pipeline_id, flow_name,
         max(event_time) AS figure_at,
         max_by(backlog_files, struct(event_time, seq)) AS backlog_files,
         max_by(backlog_bytes, struct(event_time, seq)) AS backlog_bytes
  FROM events
  WHERE event_type = 'flow_progress' AND level = 'METRICS' AND (backlog_files IS NOT NULL OR backlog_bytes IS NOT NULL)
    AND update_id IN (SELECT update_id FROM update_status)
  GROUP BY update_id, flow_name
),
failures AS (
  SELECT update_id, max(pipeline_id) AS pipeline_id, flow_name, max(event_time) AS failed_at,
         max_by(measurement_reason, struct(event_time, seq)) AS reason
  FROM events
  WHERE measurement = 'backlog' AND update_id IN (SELECT update_id FROM update_status)
  GROUP BY update_id, flow_name
),
joined AS (
  SELECT coalesce(f.update_id, w.update_id) AS update_id, coalesce(f.pipeline_id, w.pipeline_id) AS pipeline_id,
         coalesce(f.flow_name, w.flow_name) AS flow_name,
         f.figure_at, f.backlog_files, f.backlog_bytes, w.failed_at, w.reason,
         (w.failed_at IS NOT NULL AND (f.figure_at IS NULL OR w.failed_at >= f.figure_at)) AS failed_last
  FROM figures f FULL OUTER JOIN failures w ON f.update_id = w.update_id AND f.flow_name <=> w.flow_name
)
SELECT
  update_id, pipeline_id, flow_name,
  CASE WHEN failed_last THEN failed_at ELSE figure_at END AS measured_at,
  CASE WHEN failed_last THEN CAST(NULL AS BIGINT) ELSE backlog_files END AS backlog_files,
  CASE WHEN failed_last THEN CAST(NULL AS BIGINT) ELSE backlog_bytes END AS backlog_bytes,
  CASE WHEN failed_last THEN coalesce(reason, 'backlog measurement failed') END AS reason,
  CASE WHEN NOT failed_last THEN backlog_files END
    - lag(CASE WHEN NOT failed_last THEN backlog_files END)
        OVER (PARTITION BY pipeline_id, flow_name ORDER BY coalesce(figure_at, failed_at)) AS files_change,
  to_date(CASE WHEN failed_last THEN failed_at ELSE figure_at END) AS update_date
FROM joined;
