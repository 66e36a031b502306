-- Each event of the observed pipelines' event logs, parsed once: this query reads the ingest pipeline's
-- (`${lakewatch.event_log}` in the pipeline configuration); transformations/observability/sources.py adds
-- a flow with this SELECT list and WHERE clause for each other pipeline's event log in
-- `${lakewatch.observed_event_logs}` (events_from_<table>), and, when the ingest event log's history
-- table exists, events_from_history over the events the live log no longer holds. `event_log` says which
-- log an event came from: the Auto Loader tables and the ingest health metrics read the ingest
-- pipeline's. try_element_at: an empty exceptions list is NULL, not an error under ANSI mode.
CREATE STREAMING TABLE events (
  event_id STRING COMMENT 'Event id',
  event_log STRING COMMENT 'The event log table the event was read from (lakewatch.event_log: the ingest pipeline; else one of lakewatch.observed_event_logs)',
  pipeline_id STRING COMMENT 'Pipeline id',
  pipeline_name STRING COMMENT 'Pipeline name',
  update_id STRING COMMENT 'Update (run) id; for a maintenance run without one, its maintenance id',
  maintenance_id STRING COMMENT 'Set on the events of a maintenance run (an internal run)',
  flow_name_full STRING COMMENT 'Flow name as logged (often qualified)',
  flow_name STRING COMMENT 'Flow name (last part of the qualified name)',
  dataset STRING COMMENT 'Target dataset or sink (last part of the name)',
  batch_id BIGINT COMMENT 'Micro-batch id (METRICS events of streaming flows)',
  event_time TIMESTAMP COMMENT 'Event time (UTC)',
  seq BIGINT COMMENT 'Sequence number (tie-break for events at the same time)',
  event_type STRING COMMENT 'Event type (create_update, update_progress, flow_progress, ...)',
  level STRING COMMENT 'INFO, WARN, ERROR or METRICS',
  message STRING COMMENT 'Event message',
  has_error BOOLEAN COMMENT 'Whether the event carries an error',
  error_fatal BOOLEAN COMMENT 'Whether the error was unrecoverable',
  exception_class STRING COMMENT 'Outermost exception class',
  exception_message STRING COMMENT 'Outermost exception message',
  root_cause_class STRING COMMENT 'Innermost exception class',
  root_cause_message STRING COMMENT 'Innermost exception message',
  cause STRING COMMENT 'create_update: what started the update',
  full_refresh BOOLEAN COMMENT 'create_update: full refresh of every table (as create_update says it; update_status also reads the RESETTING state)',
  full_refresh_selection ARRAY<STRING> COMMENT 'create_update: tables selected for a full refresh',
  validate_only BOOLEAN COMMENT 'create_update: a validate-only update (internal)',
  explore_only BOOLEAN COMMENT 'create_update: an explore-only update (internal)',
  update_state STRING COMMENT 'update_progress: the update''s state',
  flow_status STRING COMMENT 'flow_progress: the flow''s status',
  num_output_rows BIGINT COMMENT 'flow_progress: rows written (NULL when the event does not say)',
  num_output_bytes BIGINT COMMENT 'flow_progress: bytes written (NULL when the event does not say)',
  backlog_bytes BIGINT COMMENT 'flow_progress: bytes waiting in the source',
  backlog_files BIGINT COMMENT 'flow_progress: files waiting in the source',
  dropped_records BIGINT COMMENT 'flow_progress: rows removed by drop expectations',
  expectations ARRAY<STRUCT<name: STRING, dataset: STRING, passed_records: BIGINT, failed_records: BIGINT>> COMMENT 'flow_progress: rows passing and failing each expectation',
  measurement STRING COMMENT 'A figure the run could not measure (lakewatch WARN event), else NULL',
  measurement_reason STRING COMMENT 'Why that figure was not measured',
  definition_file STRING COMMENT 'flow_definition: the file that declared the flow (the local engine records it; Databricks'' documented event does not, so NULL there)',
  definition_line BIGINT COMMENT 'flow_definition: the line that declared the flow (as definition_file)',
  event_date DATE COMMENT 'Date (UTC) of the event'
)
COMMENT 'The observed pipelines'' event logs (the ingest pipeline''s and each of lakewatch.observed_event_logs) with the JSON details parsed once per event (streaming: each event is read once). Every event of every update, internal ones included; other tables filter. Events the ingest pipeline''s live log no longer holds come from its history table, each once.'
PARTITIONED BY (event_date)
TBLPROPERTIES ('quality' = 'gold', 'delta.enableChangeDataFeed' = 'true', 'delta.enableRowTracking' = 'true')
AS
SELECT
  id AS event_id,
  '${lakewatch.event_log}' AS event_log,
  origin.pipeline_id AS pipeline_id,
  origin.pipeline_name AS pipeline_name,
  coalesce(origin.update_id, origin.maintenance_id) AS update_id,
  origin.maintenance_id AS maintenance_id,
  origin.flow_name AS flow_name_full,
  regexp_extract(origin.flow_name, '([^.`]+)`?$', 1) AS flow_name,
  regexp_extract(coalesce(origin.dataset_name, origin.sink_name), '([^.`]+)`?$', 1) AS dataset,
  origin.batch_id AS batch_id,
  `timestamp` AS event_time,
  coalesce(sequence.data_plane_id.seq_no, sequence.control_plane_seq_no) AS seq,
  event_type,
  level,
  message,
  error IS NOT NULL AS has_error,
  error.fatal AS error_fatal,
  try_element_at(error.exceptions, 1).class_name AS exception_class,
  try_element_at(error.exceptions, 1).message AS exception_message,
  try_element_at(error.exceptions, -1).class_name AS root_cause_class,
  try_element_at(error.exceptions, -1).message AS root_cause_message,
  get_json_object(details, '$.create_update.cause') AS cause,
  try_cast(get_json_object(details, '$.create_update.full_refresh') AS BOOLEAN) AS full_refresh,
  from_json(get_json_object(details, '$.create_update.full_refresh_selection'), 'ARRAY<STRING>') AS full_refresh_selection,
  try_cast(get_json_object(details, '$.create_update.validate_only') AS BOOLEAN) AS validate_only,
  try_cast(get_json_object(details, '$.create_update.explore_only') AS BOOLEAN) AS explore_only,
  get_json_object(details, '$.update_progress.state') AS update_state,
  get_json_object(details, '$.flow_progress.status') AS flow_status,
  try_cast(get_json_object(details, '$.flow_progress.metrics.num_output_rows') AS BIGINT) AS num_output_rows,
  try_cast(get_json_object(details, '$.flow_progress.metrics.num_output_bytes') AS BIGINT) AS num_output_bytes,
  try_cast(get_json_object(details, '$.flow_progress.metrics.backlog_bytes') AS BIGINT) AS backlog_bytes,
  try_cast(get_json_object(details, '$.flow_progress.metrics.backlog_files') AS BIGINT) AS backlog_files,
  try_cast(get_json_object(details, '$.flow_progress.data_quality.dropped_records') AS BIGINT) AS dropped_records,
  from_json(get_json_object(details, '$.flow_progress.data_quality.expectations'), 'ARRAY<STRUCT<name: STRING, dataset: STRING, passed_records: BIGINT, failed_records: BIGINT>>') AS expectations,
  CASE WHEN get_json_object(details, '$.operation_progress.type') = 'LAKEWATCH_MEASUREMENT' THEN coalesce(get_json_object(details, '$.operation_progress.measurement'), 'unnamed measurement') END AS measurement,
  CASE WHEN get_json_object(details, '$.operation_progress.type') = 'LAKEWATCH_MEASUREMENT' THEN get_json_object(details, '$.operation_progress.reason') END AS measurement_reason,
  get_json_object(details, '$.flow_definition.source_code_location.file_name') AS definition_file,
  try_cast(get_json_object(details, '$.flow_definition.source_code_location.line_number') AS BIGINT) AS definition_line,
  to_date(`timestamp`) AS event_date
FROM STREAM(${lakewatch.event_log}) WITH ('skipChangeCommits' = 'true')
WHERE (origin.update_id IS NOT NULL OR origin.maintenance_id IS NOT NULL) AND coalesce(origin.flow_name, '') <> 'pipelines.flowTimeMetrics.missingFlowName';
