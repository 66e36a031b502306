-- Columns:

CREATE TEMPORARY VIEW quarantine_deliveries
COMMENT 'Sink rows numbered per (table, file, line hash) by ingestion: delivery 1 is the first time the line was quarantined, a higher one a re-delivery (a full refresh reads the file again; the sink is not cleared).'
AS
SELECT
  source_table, _source_file, CASE WHEN _source_file RLIKE '^[A-Za-z][A-Za-z0-9+.-]*:/' THEN coalesce(try_url_decode(replace(regexp_replace(_source_file, '^[A-Za-z][A-Za-z0-9+.-]*:/+', '/'), '+', '%2B')), regexp_replace(_source_file, '^[A-Za-z][A-Za-z0-9+.-]*:/+', '/')) ELSE _source_file END AS path_key, _record_hash,
  _source_file_modification_time, _ingested_at, _quarantined_at,
  dense_rank() OVER (PARTITION BY source_table, _source_file, _record_hash ORDER BY _ingested_at) AS delivery
FROM quarantine_sink;
