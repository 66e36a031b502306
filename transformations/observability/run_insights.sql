-- The facts the rules (pipelines/insights.py, the view insight_rules) read: the first error's class, the
-- class and message of every exception of its chain (from the event log, as the CLI reads them), and,
-- should the event log no longer hold that event, what `events` kept of it (outermost and innermost
-- exception), then the markers @state=..., @backlog_growing, @no_progress.
CREATE MATERIALIZED VIEW run_insights (
  pipeline_id STRING COMMENT 'Pipeline id',
  pipeline_name STRING COMMENT 'Pipeline name',
  update_id STRING COMMENT 'Pipeline update (run) id',
  final_state STRING COMMENT 'FAILED or CANCELED',
  start_time TIMESTAMP COMMENT 'When the update was created',
  end_time TIMESTAMP COMMENT 'When it failed or was canceled',
  failing_flow STRING COMMENT 'The first flow that logged an error (NULL: the update''s own error, or none)',
  definition_file STRING COMMENT 'File that declared the failing flow (NULL where the event log does not say: Databricks)',
  definition_line BIGINT COMMENT 'Line that declared the failing flow (as definition_file)',
  error_class STRING COMMENT 'Error class ([ERROR_CLASS]) or exception class of the first error',
  root_cause_class STRING COMMENT 'Innermost exception class of the first error',
  message STRING COMMENT 'The first error''s message: first line, without exception class names, at most 300 characters; when an exception of its chain names a file Spark could not read ([FAILED_READ_FILE]), that exception''s message, which names the file',
  root_cause_message STRING COMMENT 'The first error''s innermost message, concise (often says more than the outer message: the file, the missing column)',
  last_completed_flow STRING COMMENT 'The last flow that completed in the update before it ended (NULL: none)',
  events ARRAY<STRUCT<event_time: TIMESTAMP, flow_name: STRING, event_type: STRING, status: STRING, level: STRING, message: STRING>> COMMENT 'The update''s state changes, flow outcomes, warnings and errors, in order',
  category STRING COMMENT 'Root-cause category (pipelines/insights.py), ''unknown'' when no rule matches',
  recommended_action STRING COMMENT 'What to do about it',
  update_date DATE COMMENT 'Date (UTC) the update started'
)
COMMENT 'One row per FAILED or CANCELED update (internal updates excluded): the failing flow and where it was defined, the error class and a concise message, the chain of events, the last flow that completed, and a root-cause category with a recommended action (rules in pipelines/insights.py; ''unknown'' when none matches).'
PARTITIONED BY (update_date)
TBLPROPERTIES ('quality' = 'gold', 'delta.enableChangeDataFeed' = 'true', 'delta.enableRowTracking' = 'true')
AS
WITH ended AS (
  SELECT * FROM update_status WHERE final_state IN ('FAILED', 'CANCELED')
),
per_update AS (
  SELECT
    e.update_id,
    min_by(e.flow_name, struct(e.event_time, e.seq)) FILTER (WHERE e.has_error AND e.flow_name <> '') AS failing_flow,
    min_by(e.exception_class, struct(e.event_time, e.seq)) FILTER (WHERE e.has_error) AS exception_class,
    min_by(e.root_cause_class, struct(e.event_time, e.seq)) FILTER (WHERE e.has_error) AS root_cause_class,
    min_by(e.root_cause_message, struct(e.event_time, e.seq)) FILTER (WHERE e.has_error) AS root_cause_message,
    min_by(e.event_id, struct(e.event_time, e.seq)) FILTER (WHERE e.has_error) AS first_error_event,
    max_by(e.flow_name, struct(e.event_time, e.seq))
      FILTER (WHERE e.event_type = 'flow_progress' AND e.flow_status = 'COMPLETED' AND e.level <> 'METRICS')
      AS last_completed_flow,
    count_if(e.event_type = 'flow_progress' AND e.flow_status = 'COMPLETED' AND e.level <> 'METRICS') AS completed_flows,
    count_if(e.has_error) AS error_events,
    sum(e.num_output_rows) FILTER (WHERE e.level = 'METRICS') AS rows_written,
    min_by(e.backlog_files, struct(e.event_time, e.seq)) FILTER (WHERE e.backlog_files IS NOT NULL) AS first_backlog,
    max_by(e.backlog_files, struct(e.event_time, e.seq)) FILTER (WHERE e.backlog_files IS NOT NULL) AS last_backlog,
    array_sort(collect_list(struct(e.event_time, e.seq, e.flow_name, e.event_type,
                                   coalesce(e.update_state, e.flow_status) AS status, e.level,
                                   CASE WHEN coalesce(e.exception_message, e.message) IS NULL THEN NULL ELSE substring(regexp_replace(substring_index(trim(BOTH concat(' ', char(9), char(10), char(13)) FROM coalesce(coalesce(e.exception_message, e.message), '')), char(10), 1), '^(?:[A-Za-z0-9_.$]+(?:Exception|Error): )+', ''), 1, 300) END AS message))
      FILTER (WHERE e.event_type = 'update_progress' OR e.level IN ('WARN', 'ERROR') OR e.has_error
              OR (e.event_type = 'flow_progress' AND e.level <> 'METRICS'
                  AND e.flow_status IN ('COMPLETED', 'FAILED', 'SKIPPED', 'STOPPED', 'EXCLUDED')))) AS chain
  FROM events e JOIN ended d ON e.update_id = d.update_id
  GROUP BY e.update_id
),
-- the whole exception chain of each update's first error, from the observed event logs (the view
-- event_log_errors; `events` keeps only its outermost and innermost exception); none when the live log
-- no longer holds the event
first_error_chains AS (
  SELECT l.id AS event_id,
         max_by(transform(l.error.exceptions, x -> named_struct('class_name', x.class_name, 'message', x.message)),
                l.`timestamp`) AS exceptions
  FROM event_log_errors l
  WHERE l.error IS NOT NULL AND l.id IN (SELECT first_error_event FROM per_update)
  GROUP BY l.id
),
definitions AS (
  SELECT update_id, flow_name, max(definition_file) AS definition_file, max(definition_line) AS definition_line
  FROM events WHERE event_type = 'flow_definition' AND definition_file IS NOT NULL
  GROUP BY update_id, flow_name
),
insight AS (
  SELECT d.*, p.failing_flow, p.exception_class, p.root_cause_class, p.root_cause_message,
         p.last_completed_flow, p.chain, c.exceptions AS first_error_chain,
         coalesce(try_element_at(filter(c.exceptions, x -> x.message RLIKE '^\\s*\\[FAILED_READ_FILE[.\\]]'), 1).message, d.first_error_message) AS first_error_text,
         -- without an error to go by, what the events say
         coalesce(p.error_events, 0) = 0 AND coalesce(p.last_backlog > p.first_backlog, false) AS backlog_growing,
         coalesce(p.error_events, 0) = 0 AND coalesce(p.completed_flows, 0) = 0
           AND coalesce(p.rows_written, 0) = 0 AS no_progress
  FROM ended d LEFT JOIN per_update p ON d.update_id = p.update_id
  LEFT JOIN first_error_chains c ON p.first_error_event = c.event_id
),
-- the first rule (pipelines/insights.py, the view insight_rules) whose pattern the update's facts match:
-- its error class, every exception of its chain, what `events` kept, then markers; the last rule matches
-- anything (category 'unknown')
matches AS (
  SELECT i.*, r.category, r.action,
         row_number() OVER (PARTITION BY i.update_id ORDER BY r.rule_order) AS match_order
  FROM insight i JOIN insight_rules r
    ON concat_ws(' ', i.first_error_class, concat_ws(' ', flatten(transform(i.first_error_chain, x -> array(x.class_name, x.message)))), i.exception_class, i.root_cause_class, i.first_error_message, i.root_cause_message, concat('@state=', i.final_state), CASE WHEN i.backlog_growing THEN '@backlog_growing' END, CASE WHEN i.no_progress THEN '@no_progress' END) RLIKE concat('(?i)', r.pattern)
),
classified AS (
  SELECT * FROM matches WHERE match_order = 1
)
SELECT
  i.pipeline_id, i.pipeline_name, i.update_id, i.final_state, i.start_time, i.end_time, i.failing_flow,
  f.definition_file, f.definition_line,
  coalesce(i.first_error_class, i.exception_class) AS error_class,
  i.root_cause_class,
  CASE WHEN i.first_error_text IS NULL THEN NULL ELSE substring(regexp_replace(substring_index(trim(BOTH concat(' ', char(9), char(10), char(13)) FROM coalesce(i.first_error_text, '')), char(10), 1), '^(?:[A-Za-z0-9_.$]+(?:Exception|Error): )+', ''), 1, 300) END AS message,
  CASE WHEN i.root_cause_message IS NULL THEN NULL ELSE substring(regexp_replace(substring_index(trim(BOTH concat(' ', char(9), char(10), char(13)) FROM coalesce(i.root_cause_message, '')), char(10), 1), '^(?:[A-Za-z0-9_.$]+(?:Exception|Error): )+', ''), 1, 300) END AS root_cause_message,
  i.last_completed_flow,
  transform(i.chain, x -> named_struct('event_time', x.event_time, 'flow_name', x.flow_name,
                                       'event_type', x.event_type, 'status', x.status, 'level', x.level,
                                       'message', x.message)) AS events,
  i.category,
  i.action AS recommended_action,
  i.update_date
FROM classified i LEFT JOIN definitions f ON i.update_id = f.update_id AND i.failing_flow = f.flow_name;
