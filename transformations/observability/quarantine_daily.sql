CREATE MATERIALIZED VIEW quarantine_daily (
  table_name STRING COMMENT 'Table the rows came from',
  day DATE COMMENT 'Day (UTC): the file''s arrival for first deliveries, the re-quarantine for re-deliveries',
  quarantined_rows BIGINT COMMENT 'Lines quarantined for the first time, from files that arrived that day',
  files BIGINT COMMENT 'Distinct source files of those lines',
  redelivered_rows BIGINT COMMENT 'Lines quarantined again that day (same table, file and content hash as an earlier ingestion)'
)
COMMENT 'Per table and day: lines quarantined for the first time, counted on the day their file arrived (its modification time), and re-deliveries of lines already quarantined, counted on the day they were quarantined again. A full refresh adds re-deliveries only.'
PARTITIONED BY (day)
TBLPROPERTIES ('quality' = 'gold')
AS
WITH attributed AS (
  SELECT source_table, to_date(_source_file_modification_time) AS day, 1 AS first_delivery, 0 AS redelivery,
         _source_file AS first_file
  FROM quarantine_deliveries WHERE delivery = 1
  UNION ALL
  SELECT source_table, to_date(_quarantined_at) AS day, 0, 1, CAST(NULL AS STRING)
  FROM quarantine_deliveries WHERE delivery > 1
)
SELECT source_table AS table_name, day,
       CAST(sum(first_delivery) AS BIGINT) AS quarantined_rows,
       count(DISTINCT first_file) AS files,
       CAST(sum(redelivery) AS BIGINT) AS redelivered_rows
FROM attributed
GROUP BY source_table, day;
