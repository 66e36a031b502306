-- Archives the ingest pipeline's event log into a history table that keeps every event, also after
-- the live log has dropped it. The job's `archive_event_log` task runs this file on a SQL warehouse
-- after each ingest update (resources/lakewatch.job.yml); `lakewatch job` runs it on the local engine
-- with the same parameters.
--
-- Parameters (the task's `parameters`; each {{name}} stands for the value as a string literal, as in
-- databricks/cli's default-sql template):
--   event_log      the live event log, catalog.schema.table
--   history_table  the history table, catalog.schema.table (created by the first run)
--   slack_hours    how far before the newest archived event each run reads the live log again
--
-- Incremental: a run reads only live events from (newest archived event - slack_hours) on.
-- Idempotent: an insert-only MERGE on the event id adds those the history does not hold yet (a
-- second run adds nothing), each id once. Insert-only, and `delta.appendOnly`, keep the history
-- append-only (its commits only add files), so the observability pipeline reads it as a stream.
-- Limit: an event that reaches the live log more than slack_hours after its own timestamp, when a
-- newer event was archived in between, is not archived.

-- event_date is the UTC date, as in the observability tables.
SET TIME ZONE 'UTC';

CREATE TABLE IF NOT EXISTS IDENTIFIER({{history_table}}) (
  id STRING,
  sequence STRUCT<data_plane_id: STRUCT<instance: STRING, seq_no: BIGINT>, control_plane_seq_no: BIGINT>,
  origin STRUCT<cloud: STRING, region: STRING, org_id: BIGINT, user_id: BIGINT, pipeline_id: STRING,
    pipeline_type: STRING, pipeline_name: STRING, cluster_id: STRING, update_id: STRING,
    maintenance_id: STRING, table_id: STRING, table_name: STRING, flow_id: STRING, flow_name: STRING,
    batch_id: BIGINT, request_id: STRING, uc_resource_id: STRING, dataset_name: STRING,
    sink_name: STRING, catalog_name: STRING, schema_name: STRING, materialization_name: STRING,
    operation_id: STRING, flow_attempt_id: STRING, source_name: STRING, uc_table_id: STRING,
    ingestion_source_type: STRING, uc_parent_table_id: STRING>,
  `timestamp` TIMESTAMP,
  message STRING,
  level STRING,
  maturity_level STRING,
  error STRUCT<fatal: BOOLEAN, exceptions: ARRAY<STRUCT<class_name: STRING, message: STRING,
    stack: ARRAY<STRUCT<declaring_class: STRING, method_name: STRING, file_name: STRING, line_number: BIGINT>>>>>,
  details STRING,
  event_type STRING,
  event_date DATE COMMENT 'Date (UTC) of the event: the partition'
)
USING DELTA
PARTITIONED BY (event_date)
COMMENT 'Every event of the ingest pipeline event log, kept beyond the retention of the live log (jobs/archive_event_log.sql)'
TBLPROPERTIES ('delta.appendOnly' = 'true');

DECLARE OR REPLACE VARIABLE archive_since TIMESTAMP;

SET VAR archive_since = (
  SELECT coalesce(max(`timestamp`) - make_dt_interval(0, CAST({{slack_hours}} AS INT)), TIMESTAMP '1970-01-01 00:00:00')
  FROM IDENTIFIER({{history_table}})
);

-- The date bound on the history prunes its partitions: an event read again has its timestamp, hence
-- its date, at or after archive_since.
MERGE INTO IDENTIFIER({{history_table}}) AS h
USING (
  SELECT id, sequence, origin, `timestamp`, message, level, maturity_level, error, details, event_type,
         to_date(`timestamp`) AS event_date
  FROM (
    SELECT *, row_number() OVER (PARTITION BY id ORDER BY `timestamp`) AS copy
    FROM IDENTIFIER({{event_log}})
    WHERE `timestamp` >= archive_since
  ) AS live
  WHERE copy = 1
) AS s
ON h.event_date >= to_date(archive_since) AND h.event_date = s.event_date AND h.id = s.id
WHEN NOT MATCHED THEN INSERT
  (id, sequence, origin, `timestamp`, message, level, maturity_level, error, details, event_type, event_date)
  VALUES (s.id, s.sequence, s.origin, s.`timestamp`, s.message, s.level, s.maturity_level, s.error, s.details,
          s.event_type, s.event_date);
