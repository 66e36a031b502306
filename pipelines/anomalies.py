"""Anomaly baselines: what is unusual for *this* pipeline, flow, expectation or table.

Each baseline is one metric with one series per subject (the pipeline for update duration, each flow
for rows written and backlog, each dataset expectation for pass rate, each table for ingestion
latency). A value is compared with the values of its series in the `WINDOW` comparable updates
before it: robust statistics (the median, and the median absolute deviation, MAD), so one outlier in
the history does not move the baseline. Comparable means a COMPLETED update that fully refreshed
nothing (a full refresh re-reads history, a failed update stops half way); values that were not
measured (NULL) are neither scored nor part of a baseline (`measurement_gaps` reports them). With
`seasonal`, only updates on the same day of the week are compared.

A value is flagged when all hold:
- at least `MIN_HISTORY` comparable values precede it (too little history flags nothing);
- it moved in the baseline's direction (`spike`: above the median, `drop`: below, `both`);
- it moved by at least the floor, `greatest(min_change, min_relative_change * |median|)`: small
  absolute changes are ignored, however regular the history;
- its score `(value - median) / scale` reaches `THRESHOLD` (3.5, Iglewicz and Hoaglin's cut-off for
  the modified z-score), where `scale = 1.4826 * MAD` (the standard deviation, for normal data) but
  never below `floor / THRESHOLD`: a flat history (MAD 0) flags a change of at least the floor, and
  a wiggle below the floor flags nothing.

The statistics are SQL (`score_sql`), so the `anomalies` materialized view computes them on either
engine from the observability tables; `anomalies_last_update` in `health_metrics` feeds one alert.
The fixed-threshold alerts stay as they are: they need no history.
"""

from __future__ import annotations

from dataclasses import dataclass

WINDOW = 20  # comparable updates a baseline looks back on
MIN_HISTORY = 5  # comparable values needed before anything is flagged
THRESHOLD = 3.5  # modified z-score
MAD_TO_SIGMA = 1.4826  # MAD * this = standard deviation of normally distributed values

SPIKE, DROP, BOTH = "spike", "drop", "both"

# Columns every series gives: the pipeline, the subject of the series, the update, when it started,
# the value.
SERIES_COLUMNS = ("pipeline_name", "subject", "update_id", "at", "value")

# A comparable update: completed, nothing fully refreshed (update_status.full_refresh: its create_update
# or its RESETTING state says so, transformations/observability/update_status.sql; an unknown one counts as none).
_COMPARABLE = "u.final_state = 'COMPLETED' AND u.full_refresh IS NOT TRUE"


@dataclass(frozen=True)
class Baseline:
    metric: str
    subject: str  # what one series is per
    direction: str  # SPIKE, DROP or BOTH
    min_change: float  # smallest absolute change flagged (> 0)
    min_relative_change: float  # smallest change flagged, as a fraction of the median
    series: str  # SQL over the observability tables giving SERIES_COLUMNS, comparable updates only
    seasonal: bool = False  # compare with the same day of the week only

    def __post_init__(self) -> None:
        if self.direction not in (SPIKE, DROP, BOTH):
            raise ValueError(f"{self.metric}: direction must be {SPIKE}, {DROP} or {BOTH}")
        if self.min_change <= 0 or self.min_relative_change < 0:
            raise ValueError(f"{self.metric}: min_change must be > 0 and min_relative_change >= 0")


BASELINES: tuple[Baseline, ...] = (
    Baseline("update_duration_seconds", "pipeline", SPIKE, 30.0, 0.5, f"""
SELECT u.pipeline_name, u.pipeline_name AS subject, u.update_id, u.start_time AS at, u.duration_seconds AS value
FROM update_status u WHERE {_COMPARABLE}"""),
    # A flow that reported a micro-batch in any update is streaming; its updates without one found
    # nothing new to read (files arrive less often than the pipeline runs) and are left out: with them,
    # a series such as 0, 0, 0, 1000, 0, 0, 0, 1000 has a median of 0 and flags every real batch. So
    # the series is rows per update that read something. A micro-batch that wrote 0 rows, and a
    # materialized view (no micro-batches) that wrote 0, stay in it. An update with no rows in any
    # bronze table for hours is lakewatch_no_rows' alert; one bronze flow going quiet while others still get
    # files is flagged by neither (as before idle flows reported 0).
    Baseline("rows_written", "flow", BOTH, 50.0, 0.5, f"""
SELECT u.pipeline_name, t.flow_name AS subject, u.update_id, u.start_time AS at, CAST(t.rows_written AS DOUBLE) AS value
FROM (SELECT *, max(batches) OVER (PARTITION BY pipeline_name, flow_name) AS most_batches FROM flow_throughput) t
JOIN update_status u ON u.update_id = t.update_id
WHERE {_COMPARABLE} AND t.final_status = 'COMPLETED' AND NOT (t.batches = 0 AND t.most_batches > 0)"""),
    Baseline("pass_rate", "expectation", DROP, 0.02, 0.0, f"""
SELECT u.pipeline_name, concat(e.dataset, '.', e.expectation) AS subject, u.update_id, u.start_time AS at,
       e.pass_rate AS value
FROM expectation_results e JOIN update_status u ON u.update_id = e.update_id
WHERE {_COMPARABLE} AND e.full_refresh IS NOT TRUE"""),
    Baseline("backlog_files", "flow", SPIKE, 10.0, 1.0, f"""
SELECT u.pipeline_name, b.flow_name AS subject, u.update_id, u.start_time AS at, CAST(b.backlog_files AS DOUBLE) AS value
FROM backlog b JOIN update_status u ON u.update_id = b.update_id
WHERE {_COMPARABLE}"""),
    Baseline("backlog_bytes", "flow", SPIKE, 10.0 * 1024 * 1024, 1.0, f"""
SELECT u.pipeline_name, b.flow_name AS subject, u.update_id, u.start_time AS at, CAST(b.backlog_bytes AS DOUBLE) AS value
FROM backlog b JOIN update_status u ON u.update_id = b.update_id
WHERE {_COMPARABLE}"""),
    Baseline("ingestion_latency_p95_seconds", "table", SPIKE, 60.0, 0.5, f"""
SELECT u.pipeline_name, l.table_name AS subject, u.update_id, u.start_time AS at, l.p95_latency_seconds AS value
FROM ingestion_latency_by_update l JOIN update_status u ON u.update_id = l.update_id
WHERE {_COMPARABLE}"""),
)


def by_metric(metric: str) -> Baseline:
    for b in BASELINES:
        if b.metric == metric:
            return b
    raise KeyError(metric)


def _literal(value: float) -> str:
    return f"CAST({value!r} AS DOUBLE)"


def series_sql(baseline: Baseline) -> str:
    """The baseline's series with its settings as columns (what `score_sql` reads), values not NULL."""
    return (f"SELECT '{baseline.metric}' AS metric, '{baseline.direction}' AS direction, "
            f"{_literal(baseline.min_change)} AS min_change, {_literal(baseline.min_relative_change)} AS min_relative_change, "
            f"{str(baseline.seasonal).lower()} AS seasonal, s.* "
            f"FROM ({baseline.series.strip()}) s WHERE s.value IS NOT NULL")


def _median(sorted_array: str) -> str:
    """The median of a sorted numeric array (NULL when empty)."""
    n = f"size({sorted_array})"
    return (f"CASE WHEN {n} > 0 THEN (element_at({sorted_array}, CAST(floor(({n} + 1) / 2.0) AS INT)) "
            f"+ element_at({sorted_array}, CAST(ceil(({n} + 1) / 2.0) AS INT))) / 2 END")


def score_sql(series: str) -> str:
    """Every value of `series` (columns: metric, direction, min_change, min_relative_change, seasonal and
    SERIES_COLUMNS) with its baseline, score and whether it is flagged."""
    return f"""
WITH series AS (
  SELECT *, CASE WHEN seasonal THEN dayofweek(at) ELSE 0 END AS season FROM ({series})
),
history AS (
  SELECT s.*,
         array_sort(collect_list(value) OVER (
           PARTITION BY metric, pipeline_name, subject, season ORDER BY at, update_id
           ROWS BETWEEN {WINDOW} PRECEDING AND 1 PRECEDING)) AS prior
  FROM series s
),
centred AS (
  SELECT h.*, size(prior) AS history_size, {_median('prior')} AS baseline_median FROM history h
),
spread AS (
  SELECT c.*, {_median('array_sort(transform(prior, v -> abs(v - baseline_median)))')} AS baseline_mad,
         greatest(min_change, min_relative_change * abs(baseline_median)) AS change_floor
  FROM centred c
),
scored AS (
  SELECT p.*,
         greatest({MAD_TO_SIGMA} * baseline_mad, change_floor / {THRESHOLD}) AS scale,
         (value - baseline_median) / nullif(greatest({MAD_TO_SIGMA} * baseline_mad, change_floor / {THRESHOLD}), 0) AS score
  FROM spread p
)
SELECT *,
       coalesce(history_size >= {MIN_HISTORY}
                AND abs(value - baseline_median) >= change_floor
                AND abs(score) >= {THRESHOLD}
                AND (direction = '{BOTH}' OR (direction = '{SPIKE}' AND value > baseline_median)
                     OR (direction = '{DROP}' AND value < baseline_median)), false) AS flagged
FROM scored
"""


def anomalies_sql() -> str:
    """The flagged values of every baseline, with their baseline and score."""
    series = "\n  UNION ALL\n".join(series_sql(b) for b in BASELINES)
    return f"""
SELECT pipeline_name, metric, subject, update_id, at AS update_start, value,
       baseline_median, baseline_mad, history_size,
       baseline_median - {THRESHOLD} * scale AS expected_low,
       baseline_median + {THRESHOLD} * scale AS expected_high,
       score,
       CASE WHEN value > baseline_median THEN '{SPIKE}' ELSE '{DROP}' END AS kind,
       seasonal,
       to_date(at) AS update_date
FROM ({score_sql(series)})
WHERE flagged
"""
