-- One SELECT per metric, each (metric_name, metric_value, reason). The clock the metrics read ("the last
-- 24 hours", "hours since") is the view `clock`; a window is the 24 hours up to it, not a calendar day,
-- so that a failure at 23:50 still counts after midnight.
-- - rows_last_update: a bronze flow that completed without running a micro-batch wrote nothing, a
--   measured 0; a flow with a micro-batch whose count is missing, or that did not complete without a
--   count, is unknown.
-- - hours_since_rows_ingested (the time since data last arrived, for lakewatch_no_rows): a pipeline
--   scheduled more often than files land has many updates without rows, and each is healthy. Walking
--   back from the newest update, updates whose bronze flows wrote no rows are passed over (a failed or
--   canceled flow without a micro-batch wrote none either: lakewatch_incident pages for it); the
--   first other one decides: rows written (hours since it ended) or a micro-batch without a row count
--   (NULL: whether data arrived then is unknown). A full refresh is left out: it writes old files' rows
--   again. With no update that wrote rows, the clock runs from the first update.
-- - lowest_pass_rate_last_24h: per update (measured in the window), not per row: a full refresh's recount is left out.
-- - hours_since_last_success: since the last COMPLETED update; when none ever completed, since the first
--   update started. NULL only when no update ran at all.
-- - quarantined_rows_last_update: first deliveries only (lines a full refresh quarantines again are
--   re-deliveries); rescued_rows_last_update: the last incremental update (a full refresh rescues every
--   old row again).
-- - ingestion_latency_p95_seconds_24h: files first committed in the last 24 hours; NULL when some landed
--   without a commit time.
-- - tables_files_late: tables whose next delivery was due (arrival_windows: the learned window, or the
--   table's fixed max_hours_without_rows) and has not come; a table with too little history for a
--   window and no limit of its own is not judged (lakewatch_no_rows covers every table).
-- - rejected_rows_not_reconciled: (update, table) pairs of the completed updates of the last 24 hours after
--   which the rows dropped by expectations differ from the rows their rejected table received (running
--   totals, rejected_rows); NULL when none differ but some were not measured, or a rejected table did not
--   start with its clean table. Failed updates are the incidents' to page for; updates from before a
--   table kept its rejected rows (not_kept) and updates in which a flow did not complete (not_compared)
--   are no mismatch.
-- - pipelines_failing: the other observed pipelines (observed_event_logs) with an open incident, which
--   lakewatch_pipeline_failing pages for; their incidents explain only the counts over every pipeline.
-- - open_incidents: the ingest pipeline's incidents (the incidents view) still open. An open incident explains the metrics it
--   lists (`explains`): their alert_value is 0 and alert_reason names it, so the failure pages once,
--   through lakewatch_incident; the errors of a closed incident's failed updates are left out of
--   errors_last_24h's alert_value, so a recovered failure does not keep paging for a day.
CREATE MATERIALIZED VIEW health_metrics (
  metric_name STRING COMMENT 'Metric name',
  metric_value DOUBLE COMMENT 'Metric value (NULL when it could not be measured)',
  reason STRING COMMENT 'Why metric_value is NULL (NULL when measured)',
  checked_at TIMESTAMP COMMENT 'When the metric was computed',
  alert_value DOUBLE COMMENT 'The value the alerts compare: metric_value, or 0 for what an incident explains (errors_last_24h: the errors of updates that did not fail)',
  alert_reason STRING COMMENT 'What the alerts show beside alert_value: reason, the incident that explains the metric, or for open_incidents the open incident and what to do',
  explained_by STRING COMMENT 'The incident(s) that explain the metric, whose alert then does not page again (NULL: none)'
)
COMMENT 'One row per health metric (metric_name, metric_value, reason, checked_at), computed at each refresh, for SQL alerts, which compare alert_value (the value, or 0 for what an incident explains). metric_value is NULL when it could not be measured, and reason then says why; no alert treats NULL as healthy. ''Last update'' is the last finished update that is not internal; the duration and rescued-rows metrics read the last finished update that is not a full refresh.'
TBLPROPERTIES ('quality' = 'gold')
AS
WITH ingest_updates AS (
  SELECT * FROM update_status WHERE event_log = '${lakewatch.event_log}'
),
open_scoped AS (
  -- the open incidents, each marked as the ingest pipeline's or another observed pipeline's
  SELECT *, event_log <=> '${lakewatch.event_log}' AS ingest FROM incidents WHERE status = 'OPEN'
),
last_update AS (
  SELECT * FROM ingest_updates WHERE final_state IN ('COMPLETED', 'FAILED', 'CANCELED') ORDER BY start_time DESC LIMIT 1
),
last_incremental AS (
  SELECT * FROM ingest_updates WHERE final_state IN ('COMPLETED', 'FAILED', 'CANCELED') AND full_refresh IS NOT TRUE
  ORDER BY start_time DESC LIMIT 1
),
metrics AS (
  SELECT 'errors_last_24h' AS metric_name, CAST((count(*)) AS DOUBLE) AS metric_value, CAST((NULL) AS STRING) AS reason
FROM errors WHERE event_time > (SELECT now FROM clock) - INTERVAL 24 HOURS AND update_id IN (SELECT update_id FROM update_status)
  UNION ALL
  SELECT 'failed_updates_last_24h' AS metric_name, CAST((count_if(final_state = 'FAILED')) AS DOUBLE) AS metric_value, CAST((NULL) AS STRING) AS reason
FROM update_status WHERE coalesce(end_time, start_time) > (SELECT now FROM clock) - INTERVAL 24 HOURS
  UNION ALL
  SELECT 'last_update_failed' AS metric_name, CAST((max(CASE WHEN final_state = 'FAILED' THEN 1 ELSE 0 END)) AS DOUBLE) AS metric_value, CAST((CASE WHEN count(*) = 0 THEN 'no ingest update has finished yet' END) AS STRING) AS reason
FROM last_update
  UNION ALL
  SELECT 'last_update_duration_seconds' AS metric_name, CAST((max(duration_seconds)) AS DOUBLE) AS metric_value, CAST((CASE WHEN count(*) = 0 THEN 'no incremental update (one that is not a full refresh) has finished yet' END) AS STRING) AS reason
FROM last_incremental
  UNION ALL
  SELECT 'last_update_duration_vs_median' AS metric_name, CAST((max(l.duration_seconds) / nullif(max(m.median_duration), 0)) AS DOUBLE) AS metric_value, CAST((CASE WHEN count(l.update_id) = 0 THEN 'no incremental update (one that is not a full refresh) has finished yet'
               WHEN max(m.median_duration) IS NULL THEN 'no earlier completed incremental update to compare with'
               WHEN max(m.median_duration) = 0 THEN 'the trailing median duration is 0 seconds' END) AS STRING) AS reason
FROM (SELECT percentile(duration_seconds, 0.5) AS median_duration FROM (
            SELECT duration_seconds FROM ingest_updates
            WHERE final_state = 'COMPLETED' AND full_refresh IS NOT TRUE AND duration_seconds IS NOT NULL
              AND start_time < (SELECT max(start_time) FROM last_incremental)
            ORDER BY start_time DESC LIMIT 20)) m
          LEFT JOIN last_incremental l ON true
  UNION ALL
  SELECT 'rows_last_update' AS metric_name, CAST((CASE WHEN count(b.flow_name) > 0 AND count_if(b.flow_name IS NOT NULL AND b.known_rows IS NULL) = 0 THEN sum(b.known_rows) END) AS DOUBLE) AS metric_value, CAST((CASE WHEN count(l.update_id) = 0 THEN 'no ingest update has finished yet'
               WHEN count(b.flow_name) = 0 THEN 'the last update ran no bronze flow'
               WHEN count_if(b.flow_name IS NOT NULL AND b.known_rows IS NULL) > 0 THEN concat('rows not known for: ',
                 concat_ws('; ', array_sort(collect_list(CASE WHEN b.known_rows IS NULL THEN concat(b.flow_name, ' (', b.why, ')') END)))) END) AS STRING) AS reason
FROM last_update l LEFT JOIN (
            SELECT update_id, flow_name, CASE WHEN unmeasured_batches > 0 THEN CAST(NULL AS BIGINT)
                 WHEN rows_written IS NOT NULL THEN rows_written
                 WHEN batches = 0 AND final_status = 'COMPLETED' THEN CAST(0 AS BIGINT) END AS known_rows,
                   CASE WHEN unmeasured_batches > 0 THEN concat(CAST(unmeasured_batches AS STRING),
                                                                ' micro-batch(es) without a row count')
                        ELSE concat('no row count reported, status ', coalesce(final_status, 'unknown')) END AS why
            FROM flow_throughput WHERE endswith(flow_name, '_bronze')) b ON b.update_id = l.update_id
  UNION ALL
  SELECT 'hours_since_rows_ingested' AS metric_name, CAST((CASE WHEN count(*) = 0 OR (max_by(d.ingested, d.at) FILTER (WHERE d.ingested IS NOT FALSE) IS NULL AND count_if(d.ingested IS NULL) > 0) THEN NULL
                ELSE (unix_millis((SELECT now FROM clock)) - unix_millis(coalesce(max(d.at) FILTER (WHERE d.ingested), min(d.start_time)))) / 3600000.0 END) AS DOUBLE) AS metric_value, CAST((CASE WHEN count(*) = 0 THEN 'no ingest update has run yet'
               WHEN (max_by(d.ingested, d.at) FILTER (WHERE d.ingested IS NOT FALSE) IS NULL AND count_if(d.ingested IS NULL) > 0)
                 THEN concat('rows not known for update ', max_by(d.update_id, d.at) FILTER (WHERE d.ingested IS NULL),
                             ', the last that did not write a measured 0: ',
                             max_by(d.why, d.at) FILTER (WHERE d.ingested IS NULL)) END) AS STRING) AS reason
FROM (SELECT u.update_id, u.start_time, coalesce(u.end_time, u.start_time) AS at,
                   CASE WHEN coalesce(b.known_rows, 0) > 0 THEN true
                        WHEN b.unknown_flows > 0 THEN CAST(NULL AS BOOLEAN)
                        ELSE false END AS ingested,
                   b.why
            FROM ingest_updates u LEFT JOIN (
              SELECT update_id, sum(rows_written) AS known_rows, count_if(unmeasured_batches > 0) AS unknown_flows,
                     concat_ws('; ', array_sort(collect_list(CASE WHEN unmeasured_batches > 0 THEN concat(flow_name, ' (', CAST(unmeasured_batches AS STRING), ' micro-batch(es) without a row count)') END))) AS why
              FROM flow_throughput WHERE endswith(flow_name, '_bronze') GROUP BY update_id) b
              ON b.update_id = u.update_id
            WHERE u.full_refresh IS NOT TRUE) d
  UNION ALL
  SELECT 'lowest_pass_rate_last_24h' AS metric_name, CAST((min(pass_rate)) AS DOUBLE) AS metric_value, CAST((CASE WHEN min(pass_rate) IS NULL THEN 'no business expectation was measured in the last 24 hours (counts of full refreshes left out)' END) AS STRING) AS reason
FROM expectation_results WHERE measured_at > (SELECT now FROM clock) - INTERVAL 24 HOURS AND expectation NOT IN ('no_rescued_data', 'no_corrupt_record') AND full_refresh IS NOT TRUE
  UNION ALL
  SELECT 'backlog_files' AS metric_name, CAST((CASE WHEN count(b.flow_name) > 0 AND count_if(b.flow_name IS NOT NULL AND b.backlog_files IS NULL) = 0 THEN sum(b.backlog_files) END) AS DOUBLE) AS metric_value, CAST((CASE WHEN count(l.update_id) = 0 THEN 'no ingest update has finished yet'
               WHEN count(b.flow_name) = 0 THEN 'the last update reported no backlog'
               WHEN count_if(b.flow_name IS NOT NULL AND b.backlog_files IS NULL) > 0 THEN concat('backlog not measured: ',
                 concat_ws('; ', array_sort(collect_list(CASE WHEN b.backlog_files IS NULL THEN concat(b.flow_name, ': ', coalesce(b.reason, 'no figure')) END)))) END) AS STRING) AS reason
FROM last_update l LEFT JOIN backlog b ON b.update_id = l.update_id
  UNION ALL
  SELECT 'backlog_bytes' AS metric_name, CAST((CASE WHEN count(b.flow_name) > 0 AND count_if(b.flow_name IS NOT NULL AND b.backlog_bytes IS NULL) = 0 THEN sum(b.backlog_bytes) END) AS DOUBLE) AS metric_value, CAST((CASE WHEN count(l.update_id) = 0 THEN 'no ingest update has finished yet'
               WHEN count(b.flow_name) = 0 THEN 'the last update reported no backlog'
               WHEN count_if(b.flow_name IS NOT NULL AND b.backlog_bytes IS NULL) > 0 THEN concat('backlog not measured: ',
                 concat_ws('; ', array_sort(collect_list(CASE WHEN b.backlog_bytes IS NULL THEN concat(b.flow_name, ': ', coalesce(b.reason, 'no figure')) END)))) END) AS STRING) AS reason
FROM last_update l LEFT JOIN backlog b ON b.update_id = l.update_id
  UNION ALL
  SELECT 'hours_since_last_success' AS metric_name, CAST(((unix_millis((SELECT now FROM clock)) - unix_millis(coalesce(max(end_time) FILTER (WHERE final_state = 'COMPLETED'), min(start_time)))) / 3600000.0) AS DOUBLE) AS metric_value, CAST((CASE WHEN count(*) = 0 THEN 'no ingest update has run yet' END) AS STRING) AS reason
FROM ingest_updates
  UNION ALL
  SELECT 'quarantined_rows_last_update' AS metric_name, CAST((CASE WHEN count(l.update_id) > 0 THEN count(q.delivery) END) AS DOUBLE) AS metric_value, CAST((CASE WHEN count(l.update_id) = 0 THEN 'no ingest update has finished yet' END) AS STRING) AS reason
FROM last_update l LEFT JOIN quarantine_deliveries q
            ON q.delivery = 1 AND q._quarantined_at >= l.start_time AND q._quarantined_at <= l.end_time
  UNION ALL
  SELECT 'rescued_rows_last_update' AS metric_name, CAST((CASE WHEN count(b.flow_name) = 0 OR count_if(b.flow_name IS NOT NULL AND b.counted IS NOT TRUE) > 0 THEN NULL
               WHEN max(r.rescued) IS NOT NULL THEN max(r.rescued)
               WHEN coalesce(sum(b.batches), 0) = 0 THEN 0 END) AS DOUBLE) AS metric_value, CAST((CASE WHEN count(l.update_id) = 0 THEN 'no incremental update (one that is not a full refresh) has finished yet'
               WHEN count(b.flow_name) = 0 THEN 'the last incremental update ran no bronze flow'
               WHEN count_if(b.flow_name IS NOT NULL AND b.counted IS NOT TRUE) > 0
                 THEN 'expectation counts missing for a bronze flow of the last incremental update'
               WHEN max(r.rescued) IS NULL AND coalesce(sum(b.batches), 0) > 0
                 THEN 'no no_rescued_data counts in the last incremental update' END) AS STRING) AS reason
FROM last_incremental l
          LEFT JOIN (SELECT update_id, flow_name, batches,
                            CASE WHEN batches = 0 THEN final_status = 'COMPLETED'
                                 ELSE batches_without_expectation_counts = 0 END AS counted
                     FROM flow_throughput WHERE endswith(flow_name, '_bronze')) b ON b.update_id = l.update_id
          LEFT JOIN (SELECT update_id, sum(failed_records) AS rescued FROM expectation_results
                     WHERE expectation = 'no_rescued_data' GROUP BY update_id) r ON r.update_id = l.update_id
  UNION ALL
  SELECT 'ingestion_latency_p95_seconds_24h' AS metric_name, CAST((CASE WHEN count_if(latency_status = 'no_commit_time') = 0 THEN percentile(latency_seconds, 0.95) END) AS DOUBLE) AS metric_value, CAST((CASE WHEN count_if(latency_status = 'no_commit_time') > 0
                 THEN concat(CAST(count_if(latency_status = 'no_commit_time') AS STRING),
                             ' file(s) landed in the last 24 hours without a commit time: cloud_files_state fills '
                             'commit_time on DBR 18.2+, or with cloudFiles.cleanSource')
               WHEN count_if(latency_status = 'measured') = 0 AND count_if(latency_status = 'recommitted_by_full_refresh') > 0
                 THEN 'only files committed again by a full refresh in the last 24 hours: their first commit is not known'
               WHEN count_if(latency_status = 'measured') = 0 THEN 'no file was first committed in the last 24 hours' END) AS STRING) AS reason
FROM file_latency
          WHERE (latency_status = 'measured' AND first_commit_time >= (SELECT now FROM clock) - INTERVAL 24 HOURS)
             OR (latency_status = 'no_commit_time' AND first_ingested_at >= (SELECT now FROM clock) - INTERVAL 24 HOURS)
             OR (latency_status = 'recommitted_by_full_refresh' AND commit_time >= (SELECT now FROM clock) - INTERVAL 24 HOURS)
  UNION ALL
  SELECT 'duration_week_over_week_change' AS metric_name, CAST((avg(duration_seconds) FILTER (WHERE start_time >= (SELECT now FROM clock) - INTERVAL 7 DAYS) / nullif(avg(duration_seconds) FILTER (WHERE start_time < (SELECT now FROM clock) - INTERVAL 7 DAYS), 0) - 1) AS DOUBLE) AS metric_value, CAST((CASE WHEN count_if(start_time >= (SELECT now FROM clock) - INTERVAL 7 DAYS) = 0
                 THEN 'no completed incremental update in the last 7 days'
               WHEN count_if(start_time < (SELECT now FROM clock) - INTERVAL 7 DAYS) = 0
                 THEN 'no completed incremental update in the 7 days before the last 7: no trend yet' END) AS STRING) AS reason
FROM ingest_updates WHERE final_state = 'COMPLETED' AND full_refresh IS NOT TRUE AND duration_seconds IS NOT NULL
            AND start_time >= (SELECT now FROM clock) - INTERVAL 14 DAYS
  UNION ALL
  SELECT 'backlog_growth_streak' AS metric_name, CAST((CASE WHEN NOT min_by(unknown, back) FILTER (WHERE grew IS NOT TRUE) THEN min(back) FILTER (WHERE grew IS NOT TRUE) - 1 END) AS DOUBLE) AS metric_value, CAST((CASE WHEN count(*) = 0 THEN 'no finished update reported a backlog'
               WHEN min_by(unknown, back) FILTER (WHERE grew IS NOT TRUE) THEN concat(
                 'not known whether the backlog grew in update ', min_by(update_id, back) FILTER (WHERE grew IS NOT TRUE),
                 CASE WHEN min(back) FILTER (WHERE grew IS NOT TRUE) > 1
                      THEN concat(' (it grew in the ', CAST(min(back) FILTER (WHERE grew IS NOT TRUE) - 1 AS STRING),
                                  ' update(s) after it)') ELSE '' END,
                 ': backlog not measured in update ', min_by(unmeasured_update, back) FILTER (WHERE grew IS NOT TRUE),
                 ' (', min_by(unmeasured_why, back) FILTER (WHERE grew IS NOT TRUE), ')') END) AS STRING) AS reason
FROM (SELECT update_id, back, files > previous AS grew,
                   files IS NULL OR (previous IS NULL AND previous_update IS NOT NULL) AS unknown,
                   CASE WHEN files IS NULL THEN update_id ELSE previous_update END AS unmeasured_update,
                   CASE WHEN files IS NULL THEN why ELSE previous_why END AS unmeasured_why
            FROM (SELECT *, lag(files) OVER (ORDER BY start_time, update_id) AS previous,
                         lag(update_id) OVER (ORDER BY start_time, update_id) AS previous_update,
                         lag(why) OVER (ORDER BY start_time, update_id) AS previous_why,
                         row_number() OVER (ORDER BY start_time DESC, update_id DESC) AS back
                  FROM (SELECT u.update_id, u.start_time,
                               CASE WHEN count_if(b.backlog_files IS NULL) = 0 THEN sum(b.backlog_files) END AS files,
                               concat_ws('; ', array_sort(collect_list(CASE WHEN b.backlog_files IS NULL THEN concat(b.flow_name, ': ', coalesce(b.reason, 'no figure')) END))) AS why
                        FROM ingest_updates u JOIN backlog b ON b.update_id = u.update_id
                        WHERE u.final_state IN ('COMPLETED', 'FAILED', 'CANCELED')
                        GROUP BY u.update_id, u.start_time)))
  UNION ALL
  SELECT 'anomalies_last_update' AS metric_name, CAST((CASE WHEN count(l.update_id) > 0 THEN count(a.metric) END) AS DOUBLE) AS metric_value, CAST((CASE WHEN count(l.update_id) = 0 THEN 'no incremental update (one that is not a full refresh) has finished yet' END) AS STRING) AS reason
FROM last_incremental l LEFT JOIN anomalies a ON a.update_id = l.update_id
  UNION ALL
  SELECT 'tables_without_rows' AS metric_name, CAST((CASE WHEN count_if(max_hours_without_rows IS NOT NULL AND silent_since IS NOT NULL AND (unix_millis((SELECT now FROM clock)) - unix_millis(silent_since)) / 3600000.0 > max_hours_without_rows) > 0 OR count_if(max_hours_without_rows IS NOT NULL AND silent_since IS NULL) = 0 THEN count_if(max_hours_without_rows IS NOT NULL AND silent_since IS NOT NULL AND (unix_millis((SELECT now FROM clock)) - unix_millis(silent_since)) / 3600000.0 > max_hours_without_rows) END) AS DOUBLE) AS metric_value, CAST((CASE WHEN count_if(max_hours_without_rows IS NOT NULL AND silent_since IS NOT NULL AND (unix_millis((SELECT now FROM clock)) - unix_millis(silent_since)) / 3600000.0 > max_hours_without_rows) = 0 AND count_if(max_hours_without_rows IS NOT NULL AND silent_since IS NULL) > 0 THEN concat('not known for: ',
                 concat_ws('; ', array_sort(collect_list(CASE WHEN max_hours_without_rows IS NOT NULL AND silent_since IS NULL THEN concat(table_name, ' (', reason, ')') END)))) END) AS STRING) AS reason
FROM table_freshness
  UNION ALL
  SELECT 'metrics_missing' AS metric_name, CAST((max(g.metrics_missing)) AS DOUBLE) AS metric_value, CAST((CASE WHEN count(l.update_id) = 0 THEN 'no ingest update has finished yet' END) AS STRING) AS reason
FROM last_update l LEFT JOIN measurement_gaps g ON g.update_id = l.update_id
  UNION ALL
  SELECT 'files_not_reconciled' AS metric_name, CAST((CASE WHEN count_if(status IN ('missing_rows', 'extra_rows', 'modified_after_ingest')) > 0 OR count_if(status = 'not_counted') = 0 THEN count_if(status IN ('missing_rows', 'extra_rows', 'modified_after_ingest')) END) AS DOUBLE) AS metric_value, CAST((CASE WHEN count_if(status IN ('missing_rows', 'extra_rows', 'modified_after_ingest')) = 0 AND count_if(status = 'not_counted') > 0
                 THEN concat(CAST(count_if(status = 'not_counted') AS STRING),
                             ' committed file(s) have no line count, so they cannot be reconciled') END) AS STRING) AS reason
FROM reconciliation
  UNION ALL
  SELECT 'rejected_rows_not_reconciled' AS metric_name, CAST((CASE WHEN count_if(r.status IN ('missing_rows', 'extra_rows')) > 0 OR count_if(r.status IN ('not_measured', 'not_comparable')) = 0 THEN count_if(r.status IN ('missing_rows', 'extra_rows')) END) AS DOUBLE) AS metric_value, CAST((CASE WHEN count_if(r.status IN ('missing_rows', 'extra_rows')) = 0 AND count_if(r.status IN ('not_measured', 'not_comparable')) > 0
                 THEN concat_ws('; ',
                   CASE WHEN count_if(r.status = 'not_measured') > 0 THEN concat('rows written to the rejected table(s) of ',
                     concat_ws(', ', array_sort(collect_set(r.table_name) FILTER (WHERE r.status = 'not_measured'))), ' not measured') END,
                   CASE WHEN count_if(r.status = 'not_comparable') > 0 THEN concat('the rejected table(s) of ',
                     concat_ws(', ', array_sort(collect_set(r.table_name) FILTER (WHERE r.status = 'not_comparable'))),
                     ' did not start with their clean table: a full refresh of each table''s bronze, clean and rejected tables reconciles them') END) END) AS STRING) AS reason
FROM rejected_rows r JOIN ingest_updates u ON u.update_id = r.update_id
WHERE u.final_state = 'COMPLETED' AND u.end_time > (SELECT now FROM clock) - INTERVAL 24 HOURS
  UNION ALL
  SELECT 'tables_files_late' AS metric_name, CAST((count_if(due_at < (SELECT now FROM clock))) AS DOUBLE) AS metric_value, CAST((NULL) AS STRING) AS reason
FROM arrival_windows
  UNION ALL
  SELECT 'open_incidents' AS metric_name, CAST((count(*)) AS DOUBLE) AS metric_value, CAST((NULL) AS STRING) AS reason
FROM open_scoped WHERE ingest
  UNION ALL
  SELECT 'pipelines_failing' AS metric_name, CAST((count(DISTINCT coalesce(pipeline_id, incident_id))) AS DOUBLE) AS metric_value, CAST((NULL) AS STRING) AS reason
FROM open_scoped WHERE NOT ingest
),
open_incident AS (
  SELECT max_by(incident_id, opened_at) AS incident_id, max_by(pipeline_name, opened_at) AS pipeline_name,
         max_by(category, opened_at) AS category, max_by(recommended_action, opened_at) AS recommended_action
  FROM open_scoped WHERE ingest
),
failing_elsewhere AS (
  SELECT nullif(concat_ws('; ', array_sort(collect_list(concat(coalesce(pipeline_name, pipeline_id, 'a pipeline'),
           ': incident ', incident_id, ' (', category, '): ', coalesce(recommended_action, 'see run_insights'))))), '') AS text
  FROM open_scoped WHERE NOT ingest
),
open_explaining AS (
  -- per metric, the open incidents that explain it (the ingest pipeline's its own metrics, another
  -- pipeline's only the counts over every pipeline), and which alert pages for them
  SELECT m.metric_name, concat_ws(', ', array_sort(collect_list(i.incident_id))) AS ids,
         concat_ws(' and ', array_sort(collect_set(CASE WHEN i.ingest THEN 'lakewatch_incident' ELSE 'lakewatch_pipeline_failing' END))) AS paged_by
  FROM metrics m JOIN open_scoped i ON array_contains(i.explains, m.metric_name)
  GROUP BY m.metric_name
),
recently_closed AS (
  SELECT nullif(concat_ws(', ', array_sort(collect_list(incident_id))), '') AS ids
  FROM incidents WHERE status = 'CLOSED' AND closed_at > (SELECT now FROM clock) - INTERVAL 24 HOURS
),
errors_outside_incidents AS (
  -- errors of updates that did not fail (retried flows, running updates), but not of an update canceled
  -- while an incident was open
  SELECT CAST(count(*) AS DOUBLE) AS n
  FROM errors e JOIN update_status u ON u.update_id = e.update_id
  WHERE e.event_time > (SELECT now FROM clock) - INTERVAL 24 HOURS AND u.final_state IS DISTINCT FROM 'FAILED'
    AND NOT (u.final_state = 'CANCELED' AND EXISTS (
      SELECT 1 FROM incidents i
      WHERE i.pipeline_id <=> u.pipeline_id AND u.start_time >= i.opened_at AND u.start_time <= coalesce(i.closed_at, (SELECT now FROM clock))))
),
judged AS (
  SELECT m.*, o.incident_id AS open_id, o.pipeline_name AS open_pipeline, o.category AS open_category,
         o.recommended_action AS open_action, x.ids AS open_ids, x.paged_by AS open_paged_by, f.text AS failing_text,
         CASE WHEN x.ids IS NOT NULL THEN x.ids
              WHEN m.metric_name = 'errors_last_24h' AND m.metric_value > (SELECT n FROM errors_outside_incidents) THEN r.ids
              WHEN m.metric_name = 'failed_updates_last_24h' AND m.metric_value > 0 THEN r.ids END AS explained_by
  FROM metrics m CROSS JOIN open_incident o CROSS JOIN recently_closed r
  CROSS JOIN failing_elsewhere f
  LEFT JOIN open_explaining x ON x.metric_name = m.metric_name
)
SELECT
  metric_name, metric_value, reason, (SELECT now FROM clock) AS checked_at,
  CAST((CASE WHEN explained_by IS NULL THEN metric_value
             WHEN metric_name = 'errors_last_24h' THEN (SELECT n FROM errors_outside_incidents)
             ELSE 0 END) AS DOUBLE) AS alert_value,
  CAST((CASE WHEN metric_name = 'open_incidents' AND open_id IS NOT NULL
               THEN concat('incident ', open_id, ' of ', coalesce(open_pipeline, 'an unnamed pipeline'), ' (', open_category, '): ',
                           coalesce(open_action, 'see run_insights'),
                           CASE WHEN metric_value > 1 THEN concat(' (', CAST(CAST(metric_value AS BIGINT) AS STRING), ' incidents open)') ELSE '' END)
             WHEN metric_name = 'pipelines_failing' AND failing_text IS NOT NULL THEN concat('failing: ', failing_text)
             WHEN explained_by IS NULL THEN reason
             WHEN open_ids IS NOT NULL THEN concat('explained by open incident ', explained_by,
                                                  ', which ', open_paged_by, ' pages for')
             ELSE concat('the failed updates of closed incident(s) ', explained_by, ' left out') END) AS STRING) AS alert_reason,
  explained_by
FROM judged;
