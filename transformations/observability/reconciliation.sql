CREATE MATERIALIZED VIEW reconciliation (
  table_name STRING COMMENT 'Bronze table the file feeds',
  path STRING COMMENT 'File path',
  state STRING COMMENT 'File state: committed, discovered, pending or not_in_file_state',
  lines BIGINT COMMENT 'Records in the file as its format counts them: lines with content (a JSON array of objects one per object; CSV less the header), a document''s objects, Parquet rows (NULL: not counted)',
  bronze_rows BIGINT COMMENT 'Bronze rows from the file (corrupt lines included)',
  corrupt_rows BIGINT COMMENT 'Of those, rows with _corrupt_record',
  quarantined_rows BIGINT COMMENT 'Lines of the file in corrupt_records_sink (first deliveries only)',
  difference BIGINT COMMENT 'lines - bronze_rows (NULL when lines are NULL)',
  modified_after_ingest BOOLEAN COMMENT 'Size or modification time changed after the stream took the file (NULL: not known)',
  archive_mode STRING COMMENT 'MOVE or DELETE when cleanSource took the committed file out of the landing folder (its lines are the ones counted when it was committed)',
  status STRING COMMENT 'ok, missing_rows (more lines than bronze rows), extra_rows, not_counted (no line count), modified_after_ingest, pending (not committed yet)',
  first_commit_time TIMESTAMP COMMENT 'The file''s first commit',
  create_date DATE COMMENT 'Date (UTC) the file was created (modified)'
)
COMMENT 'One row per landing file: the records in the file as its format counts them (JSON lines: lines with content; CSV: lines with content less the header; a JSON document: its objects; Parquet: its rows), counted by the file state without the ingest''s reader, against the rows bronze holds from it. Bronze is the truth for ''landed'': every record becomes exactly one bronze row, a malformed one included (it keeps its text in _corrupt_record, and is also copied to corrupt_records_sink, so quarantined records are a part of the bronze rows, not an addition). difference = lines - bronze_rows; a file changed after it was ingested is flagged (Auto Loader with cloudFiles.allowOverwrites=false does not read it again, nor does the local engine).'
PARTITIONED BY (create_date)
TBLPROPERTIES ('quality' = 'gold', 'delta.enableChangeDataFeed' = 'true', 'delta.enableRowTracking' = 'true')
AS
WITH quarantined AS (
  SELECT path_key, count(*) AS quarantined_rows
  FROM quarantine_deliveries WHERE delivery = 1
  GROUP BY path_key
)
SELECT
  f.table_name, f.path, f.state, f.lines, f.bronze_rows, f.corrupt_rows,
  coalesce(q.quarantined_rows, 0) AS quarantined_rows,
  f.lines - f.bronze_rows AS difference,
  f.modified_after_ingest,
  f.archive_mode,
  CASE WHEN NOT f.landed THEN 'pending'
       WHEN f.modified_after_ingest THEN 'modified_after_ingest'
       WHEN f.lines IS NULL THEN 'not_counted'
       WHEN f.lines > f.bronze_rows THEN 'missing_rows'
       WHEN f.lines < f.bronze_rows THEN 'extra_rows'
       ELSE 'ok' END AS status,
  f.first_commit_time, f.create_date
FROM landing_files f LEFT JOIN quarantined q ON q.path_key = f.path_key;
