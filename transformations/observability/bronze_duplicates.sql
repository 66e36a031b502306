CREATE MATERIALIZED VIEW bronze_duplicates (
  table_name STRING COMMENT 'Table (as configured)',
  path STRING COMMENT 'The landing file holding the repeated rows',
  duplicate_rows BIGINT COMMENT 'Rows of the file whose content landed before',
  from_other_files BIGINT COMMENT 'Of those, rows first landed from another file',
  first_landed_in ARRAY<STRING> COMMENT 'The other files those rows first landed from',
  ingested_at TIMESTAMP COMMENT 'Latest ingestion of the repeated rows',
  ingested_date DATE COMMENT 'Date (UTC) of ingested_at'
)
COMMENT 'Per table and landing file: bronze rows whose content (data columns, rescued data, corrupt record) had already landed, from another file (a producer re-delivering records under a new name) or earlier in the same file. The first copy of a record (earliest ingestion) is not counted. A full refresh re-reads files into an emptied bronze, so it adds none.'
PARTITIONED BY (ingested_date)
TBLPROPERTIES ('quality' = 'gold')
AS
WITH numbered AS (
  SELECT table_name, _source_file, _ingested_at,
         row_number() OVER (PARTITION BY table_name, _content_hash ORDER BY _ingested_at, _source_file) AS copy,
         first_value(_source_file) OVER (PARTITION BY table_name, _content_hash
                                         ORDER BY _ingested_at, _source_file) AS first_file
  FROM bronze_union
)
SELECT table_name, _source_file AS path,
       count(*) AS duplicate_rows,
       count_if(first_file <> _source_file) AS from_other_files,
       array_sort(collect_set(CASE WHEN first_file <> _source_file THEN first_file END)) AS first_landed_in,
       max(_ingested_at) AS ingested_at,
       to_date(max(_ingested_at)) AS ingested_date
FROM numbered
WHERE copy > 1
GROUP BY table_name, _source_file;
