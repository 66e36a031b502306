-- path_key: a file path as the file's real name, whatever wrote it, so the file state, bronze's and the
-- sink's `_source_file` and the Databricks line counts join on it. A path with a URI scheme (`file:/`,
-- `dbfs:/`, `s3://bucket/`, ...) is a URI, percent-encoded as Hadoop's `Path.toUri` writes it (Spark's
-- `_metadata.file_path`, and cloud_files_state's paths): its scheme goes and it is decoded, `+` kept as
-- `+`; one that does not decode is kept as it is. A path without a scheme is a file-system path (the
-- local file state), the real name already, kept as it is (pipelines/pathkeys.py).
CREATE MATERIALIZED VIEW landing_files (
  table_name STRING COMMENT 'Bronze table the file feeds',
  flow_name STRING COMMENT 'Flow reading the file',
  path STRING COMMENT 'File path as the file state gives it',
  path_key STRING COMMENT 'The file''s real path, without scheme: a URI decoded, a file-system path as it is (joins file state, bronze and sink)',
  size_bytes BIGINT COMMENT 'File size (NULL when the file state does not know it)',
  create_time TIMESTAMP COMMENT 'File modification time when the stream took it',
  discovery_time TIMESTAMP COMMENT 'When the stream planned the file into a batch',
  commit_time TIMESTAMP COMMENT 'Commit of the file in the live checkpoint (a full refresh commits it again)',
  first_commit_time TIMESTAMP COMMENT 'The file''s earliest commit over every checkpoint the flow had (on Databricks: commit_time, see file_latency)',
  state STRING COMMENT 'committed, discovered, pending, or not_in_file_state (only bronze knows it)',
  lines BIGINT COMMENT 'Records in the file as its format counts them (JSON lines: lines with content, an array of objects one per object; CSV: less the header; a JSON document: its objects; Parquet: its rows), counted without the ingest''s reader (NULL: not counted)',
  committed_size BIGINT COMMENT 'Size of the file as the stream took it',
  committed_modification_time TIMESTAMP COMMENT 'Modification time of the file as the stream took it',
  modified_after_ingest BOOLEAN COMMENT 'Size or modification time changed after the stream took the file (NULL where not known, e.g. on Databricks)',
  archive_time TIMESTAMP COMMENT 'When cleanSource moved or deleted the committed file (NULL: not archived, or not known)',
  archive_mode STRING COMMENT 'MOVE or DELETE when cleanSource took the committed file out of the landing folder',
  move_location STRING COMMENT 'Where cleanSource MOVE put the file',
  bronze_rows BIGINT COMMENT 'Bronze rows from the file (corrupt lines included)',
  corrupt_rows BIGINT COMMENT 'Bronze rows from the file with _corrupt_record',
  rescued_rows BIGINT COMMENT 'Bronze rows from the file with _rescued_data',
  first_ingested_at TIMESTAMP COMMENT 'Earliest _ingested_at of the file''s bronze rows',
  landed BOOLEAN COMMENT 'Committed by the stream, or rows from it are in bronze',
  create_date DATE COMMENT 'Date (UTC) of create_time'
)
COMMENT 'One row per landing file: the engine''s file state (cloud_files_state() on Databricks, the local runner''s file state locally) joined by path with what bronze holds from the file.'
PARTITIONED BY (create_date)
TBLPROPERTIES ('quality' = 'gold', 'delta.enableChangeDataFeed' = 'true', 'delta.enableRowTracking' = 'true')
AS
WITH state AS (
  SELECT regexp_extract(table_name, '([^.`]+)`?$', 1) AS table_name, flow_name, path, CASE WHEN path RLIKE '^[A-Za-z][A-Za-z0-9+.-]*:/' THEN coalesce(try_url_decode(replace(regexp_replace(path, '^[A-Za-z][A-Za-z0-9+.-]*:/+', '/'), '+', '%2B')), regexp_replace(path, '^[A-Za-z][A-Za-z0-9+.-]*:/+', '/')) ELSE path END AS path_key,
         CAST(size AS BIGINT) AS size_bytes, create_time, discovery_time, commit_time, first_commit_time,
         state, CAST(lines AS BIGINT) AS lines, CAST(committed_size AS BIGINT) AS committed_size,
         committed_modification_time, modified_after_ingest, archive_time, archive_mode, move_location
  FROM landing_file_state
),
bronze AS (
  SELECT CASE WHEN _source_file RLIKE '^[A-Za-z][A-Za-z0-9+.-]*:/' THEN coalesce(try_url_decode(replace(regexp_replace(_source_file, '^[A-Za-z][A-Za-z0-9+.-]*:/+', '/'), '+', '%2B')), regexp_replace(_source_file, '^[A-Za-z][A-Za-z0-9+.-]*:/+', '/')) ELSE _source_file END AS path_key,
         max(bronze_table) AS bronze_table,
         max(_source_file) AS source_file,
         count(*) AS bronze_rows,
         count_if(_is_corrupt) AS corrupt_rows,
         count_if(_rescued_data IS NOT NULL) AS rescued_rows,
         min(_ingested_at) AS first_ingested_at,
         max(_source_file_modification_time) AS source_modification_time
  FROM bronze_union
  GROUP BY CASE WHEN _source_file RLIKE '^[A-Za-z][A-Za-z0-9+.-]*:/' THEN coalesce(try_url_decode(replace(regexp_replace(_source_file, '^[A-Za-z][A-Za-z0-9+.-]*:/+', '/'), '+', '%2B')), regexp_replace(_source_file, '^[A-Za-z][A-Za-z0-9+.-]*:/+', '/')) ELSE _source_file END
)
SELECT
  coalesce(s.table_name, b.bronze_table) AS table_name,
  s.flow_name,
  coalesce(s.path, b.source_file) AS path,
  coalesce(s.path_key, b.path_key) AS path_key,
  s.size_bytes, s.create_time, s.discovery_time, s.commit_time, s.first_commit_time,
  coalesce(s.state, 'not_in_file_state') AS state,
  s.lines, s.committed_size, s.committed_modification_time, s.modified_after_ingest,
  s.archive_time, s.archive_mode, s.move_location,
  -- no row from the file in bronze is a measured zero (bronze is read whole)
  coalesce(b.bronze_rows, 0) AS bronze_rows,
  coalesce(b.corrupt_rows, 0) AS corrupt_rows,
  coalesce(b.rescued_rows, 0) AS rescued_rows,
  b.first_ingested_at,
  (coalesce(s.state, '') = 'committed' OR coalesce(b.bronze_rows, 0) > 0) AS landed,
  to_date(coalesce(s.create_time, b.source_modification_time)) AS create_date
FROM state s FULL OUTER JOIN bronze b ON s.path_key = b.path_key;
