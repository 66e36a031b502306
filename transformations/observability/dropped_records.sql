CREATE MATERIALIZED VIEW dropped_records (
  update_id STRING COMMENT 'Pipeline update (run) id',
  dataset STRING COMMENT 'Dataset',
  dropped_records BIGINT COMMENT 'Rows dropped',
  update_date DATE COMMENT 'Date (UTC)'
)
COMMENT 'Per update and dataset: rows removed by `drop` expectations.'
PARTITIONED BY (update_date)
TBLPROPERTIES ('quality' = 'gold', 'delta.enableChangeDataFeed' = 'true', 'delta.enableRowTracking' = 'true')
AS
SELECT update_id, dataset, sum(dropped_records) AS dropped_records, to_date(max(event_time)) AS update_date
FROM events
WHERE event_type = 'flow_progress' AND dropped_records IS NOT NULL
  AND update_id IN (SELECT update_id FROM update_status)
GROUP BY update_id, dataset;
