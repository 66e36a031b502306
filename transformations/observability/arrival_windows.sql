-- Each table's usual cadence, learned from its landing files' creation times: a file created less
-- than 15 minutes after the one before belongs to the same delivery (an upload over a minute boundary, a
-- backfill), so a feed that delivers more often than every 15 minutes is one long delivery and is not
-- judged; the gaps between deliveries give a median and a spread (median absolute deviation). The next delivery is due within median + 3 x spread of the newest one, and at least
-- 1.5 x the median (a perfectly regular feed is not late the minute after it is due). Once at least 3
-- gaps started at the same hour of the week as the newest delivery, those gaps alone give the window
-- (a producer quiet at weekends has a long Friday gap). With fewer than 4 gaps nothing is learned.
-- A fixed `max_hours_without_rows` of tables.yml overrides the learned window.
-- health_metrics compares due_at with the clock (tables_files_late): a producer that stopped sending
-- pages as files late, apart from a pipeline that stopped ingesting (stalled, no rows, backlog).
CREATE MATERIALIZED VIEW arrival_windows (
  table_name STRING COMMENT 'Configured table name',
  deliveries BIGINT COMMENT 'Deliveries seen: its landing files, each less than 15 minutes after the one before in one delivery',
  last_delivery_at TIMESTAMP COMMENT 'Creation time of the first file of its newest delivery',
  gaps BIGINT COMMENT 'Gaps between deliveries',
  median_gap_hours DOUBLE COMMENT 'Median hours between deliveries',
  gap_spread_hours DOUBLE COMMENT 'Median absolute deviation of those gaps, in hours',
  hour_of_week INT COMMENT 'Hour of the week of the newest delivery (0: Monday 00:00 UTC)',
  same_hour_gaps BIGINT COMMENT 'Gaps that started at that hour of the week',
  learned_window_hours DOUBLE COMMENT 'Hours after the newest delivery within which the next is due, as learned (NULL with fewer than 4 gaps)',
  max_hours_without_rows DOUBLE COMMENT 'The table''s fixed limit from tables.yml (NULL: none), which overrides the learned window',
  window_hours DOUBLE COMMENT 'The window in force: max_hours_without_rows, else learned_window_hours',
  window_source STRING COMMENT 'configured, learned_by_hour_of_week, learned, or too_little_history (not judged)',
  due_at TIMESTAMP COMMENT 'When the next delivery is due: last_delivery_at + window_hours (NULL: not judged)'
)
COMMENT 'Per ingest table: the cadence of its deliveries learned from landing file creation times (median and spread of the gaps, by hour of the week once history allows), and when the next delivery is due; a fixed max_hours_without_rows overrides the learned window.'
TBLPROPERTIES ('quality' = 'gold', 'delta.enableChangeDataFeed' = 'true', 'delta.enableRowTracking' = 'true')
AS
WITH configured AS (
  SELECT source_table AS table_name, table_name AS bronze_table, max_hours_without_rows
  FROM ingest_tables WHERE table_kind = 'bronze'
),
files AS (
  SELECT c.table_name, f.create_time,
         lag(f.create_time) OVER (PARTITION BY c.table_name ORDER BY f.create_time) AS previous_file
  FROM configured c JOIN landing_files f ON f.table_name = c.bronze_table
  WHERE f.create_time IS NOT NULL
),
numbered AS (
  SELECT table_name, create_time,
         sum(CASE WHEN previous_file IS NULL OR create_time >= previous_file + INTERVAL 15 MINUTES THEN 1 ELSE 0 END)
           OVER (PARTITION BY table_name ORDER BY create_time ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS delivery
  FROM files
),
deliveries AS (
  SELECT table_name, min(create_time) AS delivered_at FROM numbered GROUP BY table_name, delivery
),
gaps AS (
  SELECT table_name, delivered_at,
         lag(delivered_at) OVER (PARTITION BY table_name ORDER BY delivered_at) AS previous
  FROM deliveries
),
measured AS (
  SELECT table_name, delivered_at, previous,
         (unix_millis(delivered_at) - unix_millis(previous)) / 3600000.0 AS gap_hours,
         (dayofweek(previous) + 5) % 7 * 24 + hour(previous) AS started_hour_of_week
  FROM gaps WHERE previous IS NOT NULL
),
newest AS (
  SELECT table_name, count(*) AS deliveries, max(delivered_at) AS last_delivery_at,
         (dayofweek(max(delivered_at)) + 5) % 7 * 24 + hour(max(delivered_at)) AS hour_of_week
  FROM deliveries GROUP BY table_name
),
overall AS (
  SELECT table_name, count(*) AS gaps, percentile(gap_hours, 0.5) AS median_gap_hours FROM measured GROUP BY table_name
),
overall_spread AS (
  SELECT m.table_name, percentile(abs(m.gap_hours - o.median_gap_hours), 0.5) AS gap_spread_hours
  FROM measured m JOIN overall o ON o.table_name = m.table_name GROUP BY m.table_name
),
same_hour AS (
  SELECT m.table_name, count(*) AS same_hour_gaps, percentile(m.gap_hours, 0.5) AS median_gap_hours
  FROM measured m JOIN newest n ON n.table_name = m.table_name AND m.started_hour_of_week = n.hour_of_week
  GROUP BY m.table_name
),
same_hour_spread AS (
  SELECT m.table_name, percentile(abs(m.gap_hours - s.median_gap_hours), 0.5) AS gap_spread_hours
  FROM measured m JOIN newest n ON n.table_name = m.table_name AND m.started_hour_of_week = n.hour_of_week
  JOIN same_hour s ON s.table_name = m.table_name
  GROUP BY m.table_name
),
learned AS (
  SELECT c.table_name, c.max_hours_without_rows, n.deliveries, n.last_delivery_at, n.hour_of_week,
         coalesce(o.gaps, 0) AS gaps, o.median_gap_hours, os.gap_spread_hours, coalesce(s.same_hour_gaps, 0) AS same_hour_gaps,
         CASE WHEN coalesce(o.gaps, 0) < 4 THEN NULL
              WHEN s.same_hour_gaps >= 3 THEN greatest(1.5 * s.median_gap_hours, s.median_gap_hours + 3 * ss.gap_spread_hours)
              ELSE greatest(1.5 * o.median_gap_hours, o.median_gap_hours + 3 * os.gap_spread_hours) END AS learned_window_hours,
         CASE WHEN coalesce(o.gaps, 0) < 4 THEN 'too_little_history'
              WHEN s.same_hour_gaps >= 3 THEN 'learned_by_hour_of_week' ELSE 'learned' END AS learned_source
  FROM configured c
  LEFT JOIN newest n ON n.table_name = c.table_name
  LEFT JOIN overall o ON o.table_name = c.table_name
  LEFT JOIN overall_spread os ON os.table_name = c.table_name
  LEFT JOIN same_hour s ON s.table_name = c.table_name
  LEFT JOIN same_hour_spread ss ON ss.table_name = c.table_name
)
SELECT
  table_name,
  coalesce(deliveries, 0) AS deliveries,
  last_delivery_at,
  gaps,
  CAST(median_gap_hours AS DOUBLE) AS median_gap_hours,
  CAST(gap_spread_hours AS DOUBLE) AS gap_spread_hours,
  CAST(hour_of_week AS INT) AS hour_of_week,
  same_hour_gaps,
  CAST(learned_window_hours AS DOUBLE) AS learned_window_hours,
  CAST(max_hours_without_rows AS DOUBLE) AS max_hours_without_rows,
  CAST(coalesce(max_hours_without_rows, learned_window_hours) AS DOUBLE) AS window_hours,
  CASE WHEN max_hours_without_rows IS NOT NULL THEN 'configured' ELSE learned_source END AS window_source,
  CASE WHEN last_delivery_at IS NOT NULL AND coalesce(max_hours_without_rows, learned_window_hours) IS NOT NULL
       THEN last_delivery_at + make_interval(0, 0, 0, 0, 0, 0, CAST(coalesce(max_hours_without_rows, learned_window_hours) * 3600 AS DECIMAL(18, 6))) END AS due_at
FROM learned;
