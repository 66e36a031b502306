CREATE MATERIALIZED VIEW schema_drift (
  table_name STRING COMMENT 'Table (as configured)',
  arrival_date DATE COMMENT 'Date (UTC) of the source file''s modification time',
  rows_with_rescued_data BIGINT COMMENT 'Rows with _rescued_data set',
  rescued_fields ARRAY<STRING> COMMENT 'Field names found in _rescued_data',
  files ARRAY<STRING> COMMENT 'Source files of those rows'
)
COMMENT 'Per table and day the data arrived (the source file''s modification time, so a full refresh that reads old files again changes no day): rows with rescued data, the rescued field names, the files.'
PARTITIONED BY (arrival_date)
TBLPROPERTIES ('quality' = 'gold')
AS
SELECT
  table_name,
  to_date(_source_file_modification_time) AS arrival_date,
  count(*) AS rows_with_rescued_data,
  array_sort(array_distinct(filter(
    flatten(collect_list(map_keys(from_json(_rescued_data, 'MAP<STRING,STRING>')))),
    k -> k <> '_file_path'))) AS rescued_fields,
  array_sort(collect_set(_source_file)) AS files
FROM bronze_union
WHERE _rescued_data IS NOT NULL
GROUP BY table_name, to_date(_source_file_modification_time);
