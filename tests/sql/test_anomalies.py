"""Anomaly baselines: for each baseline, synthetic histories with a true positive, a false positive to
avoid (a flat series with one small wiggle, a noisy series), a true negative, too little history, and
the wrong direction; then the `anomalies` table and its health metric from a crafted event log.

Oracle: the median and the median absolute deviation are computed here with Python's `statistics`
from the values the test wrote, and which values are unusual is decided by how the test built them."""

from __future__ import annotations

import statistics
from datetime import datetime, timedelta, timezone

import pytest

from pipelines import anomalies
from pipelines.observability.catalog import by_name
from tests.eventlog_builders import Inputs, Update, completed_update

START = datetime(2026, 11, 2, 6, 0, tzinfo=timezone.utc)  # a Monday

# Per metric: a usual level, a noise around it that is normal for a noisy series, and an unusual value
# in the baseline's direction (for `both`, a spike).
LEVELS = {
    "update_duration_seconds": (60.0, 40.0, 600.0),
    "rows_written": (1000.0, 600.0, 10000.0),
    "pass_rate": (0.90, 0.08, 0.50),
    "backlog_files": (50.0, 30.0, 2000.0),
    "backlog_bytes": (50e6, 30e6, 5e9),
    "ingestion_latency_p95_seconds": (120.0, 100.0, 3600.0),
}


def values_for(metric: str) -> dict[str, tuple[list[float], float]]:
    """case -> (history, last value); whether the last one must be flagged is in `expected`."""
    level, noise, unusual = LEVELS[metric]
    b = anomalies.by_metric(metric)
    floor = max(b.min_change, b.min_relative_change * level)
    toward = -1.0 if b.direction == anomalies.DROP else 1.0
    flat = [level] * 10
    noisy = [level + noise * (1 if i % 2 else -1) * (0.5 + (i % 3) / 4) for i in range(12)]
    usual = [level + noise * 0.01 * (i % 3 - 1) for i in range(10)]
    return {
        "true_positive": (usual, unusual),
        "flat_with_small_wiggle": (flat, level + toward * floor * 0.9),
        # beyond every value seen, yet within the series' own noise
        "noisy": (noisy, level + toward * noise * 1.5),
        "true_negative": (usual, level),
        "too_little_history": (usual[: anomalies.MIN_HISTORY - 1], unusual),
        # a drop for a spike baseline, a rise to 100% for a drop one
        "wrong_direction": (usual, 1.0 if b.direction == anomalies.DROP else level * 0.01),
    }


CASES = ("true_positive", "flat_with_small_wiggle", "noisy", "true_negative", "too_little_history", "wrong_direction")


def expected(metric: str, case: str) -> bool:
    """Only the true positive is unusual; a baseline watching both directions also flags the opposite."""
    return case == "true_positive" or (case == "wrong_direction"
                                       and anomalies.by_metric(metric).direction == anomalies.BOTH)


def series_rows(metric: str, subject: str, values: list[float], days_apart: float = 1.0,
                baseline: anomalies.Baseline | None = None) -> list[tuple]:
    b = baseline or anomalies.by_metric(metric)
    return [(b.metric, b.direction, b.min_change, b.min_relative_change, b.seasonal, "p", subject,
             f"{subject}-{i}", START + timedelta(days=i * days_apart), float(v)) for i, v in enumerate(values)]


SERIES_DDL = ("metric STRING, direction STRING, min_change DOUBLE, min_relative_change DOUBLE, seasonal BOOLEAN, "
              "pipeline_name STRING, subject STRING, update_id STRING, at TIMESTAMP, value DOUBLE")


def scored(spark, rows: list[tuple]) -> dict[tuple[str, str], dict]:
    """(metric, subject) -> the score row of the last value of each series."""
    spark.createDataFrame(rows, SERIES_DDL).createOrReplaceTempView("t_series")
    out = spark.sql(anomalies.score_sql("SELECT * FROM t_series")).collect()
    last = {}
    for r in sorted(out, key=lambda r: r["at"]):
        last[(r["metric"], r["subject"])] = r.asDict()
    return last


@pytest.fixture(scope="module")
def synthetic(spark):
    rows = []
    for b in anomalies.BASELINES:
        for case, (history, last) in values_for(b.metric).items():
            rows += series_rows(b.metric, case, history + [last])
    return scored(spark, rows)


@pytest.mark.parametrize("metric", [b.metric for b in anomalies.BASELINES])
@pytest.mark.parametrize("case", CASES)
def test_each_baseline_flags_only_what_is_unusual(synthetic, metric, case):
    row = synthetic[(metric, case)]
    assert row["flagged"] is expected(metric, case), row


@pytest.mark.parametrize("metric", [b.metric for b in anomalies.BASELINES])
def test_the_baseline_is_the_median_and_mad_of_the_values_before(synthetic, metric):
    history, last = values_for(metric)["true_positive"]
    row = synthetic[(metric, "true_positive")]
    median = statistics.median(history)
    mad = statistics.median(abs(v - median) for v in history)
    assert row["history_size"] == len(history)
    assert row["baseline_median"] == pytest.approx(median)
    assert row["baseline_mad"] == pytest.approx(mad, abs=1e-9)
    b = anomalies.by_metric(metric)
    floor = max(b.min_change, b.min_relative_change * abs(median))
    assert row["score"] == pytest.approx((last - median) / max(anomalies.MAD_TO_SIGMA * mad, floor / anomalies.THRESHOLD))


def test_only_the_last_window_of_updates_makes_the_baseline(spark):
    # 30 updates at 1000 rows, then 20 at 100: the baseline has forgotten the first level
    values = [1000.0] * 30 + [100.0] * anomalies.WINDOW + [100.0]
    row = scored(spark, series_rows("rows_written", "level_change", values))[("rows_written", "level_change")]
    assert row["history_size"] == anomalies.WINDOW and row["baseline_median"] == 100.0 and not row["flagged"]


def test_day_of_week_seasonality(spark):
    """Mondays take ten times as long: with seasonality a long Monday is usual, without it unusual."""
    values = [600.0 if (START + timedelta(days=i)).weekday() == 0 else 60.0 + i % 3 for i in range(42)]
    values.append(600.0)  # day 42 is a Monday again
    assert (START + timedelta(days=42)).weekday() == 0
    plain = anomalies.by_metric("update_duration_seconds")
    seasonal = anomalies.Baseline(plain.metric, plain.subject, plain.direction, plain.min_change,
                                  plain.min_relative_change, plain.series, seasonal=True)
    rows = series_rows(plain.metric, "plain", values) + series_rows(plain.metric, "seasonal", values, baseline=seasonal)
    out = scored(spark, rows)
    assert out[(plain.metric, "plain")]["flagged"] is True
    assert out[(plain.metric, "seasonal")]["flagged"] is False
    assert out[(plain.metric, "seasonal")]["baseline_median"] == 600.0


def test_settings_are_checked():
    with pytest.raises(ValueError, match="direction"):
        anomalies.Baseline("m", "flow", "up", 1.0, 0.0, "SELECT 1")
    with pytest.raises(ValueError, match="min_change"):
        anomalies.Baseline("m", "flow", anomalies.SPIKE, 0.0, 0.0, "SELECT 1")


# -- the anomalies table from a crafted event log ------------------------------------------------
NOW = datetime(2026, 6, 15, 12, tzinfo=timezone.utc)  # also the health metrics' clock
DURATIONS = [60, 61, 62, 60, 61, 62, 60, 61]


def story(history: int = len(DURATIONS), documented_create_update: bool = False) -> Inputs:
    """`history` ordinary updates (2 files waiting, every row passing), a full refresh and a failed
    update that took long (neither comparable), then a slow update with 40 of 100 rows failing an
    expectation and 300 files waiting. With `documented_create_update` the create_update events hold
    only what Databricks documents: the full refresh shows only in its RESETTING state."""
    doc = documented_create_update
    ups = [completed_update(f"u{i}", NOW - timedelta(hours=20 - i), duration=DURATIONS[i], rows=100,
                            clean_failed=0, backlog_files=2, documented_create_update=doc) for i in range(history)]
    ups.append(completed_update("fr", NOW - timedelta(hours=3), duration=900, rows=1000, clean_failed=0,
                                full_refresh=True, documented_create_update=doc))
    ups.append(completed_update("failed", NOW - timedelta(hours=2), duration=900, rows=100, clean_failed=0,
                                final_state="FAILED"))
    ups.append(completed_update("last", NOW - timedelta(minutes=5), duration=400, rows=100, clean_failed=40,
                                backlog_files=300))
    return Inputs(ups)


def anomalies_of(spark, inputs: Inputs) -> tuple[dict, dict]:
    session = spark.newSession()
    inputs.views(session, only=["anomalies", "health_metrics"], now=NOW)
    flagged = {(r["update_id"], r["metric"], r["subject"]): r.asDict() for r in session.table("anomalies").collect()}
    metrics = {r["metric_name"]: (r["metric_value"], r["reason"]) for r in session.table("health_metrics").collect()}
    return flagged, metrics


def test_the_anomalies_table_flags_the_unusual_update_against_comparable_ones(spark):
    flagged, metrics = anomalies_of(spark, story())
    assert set(flagged) == {
        ("last", "update_duration_seconds", "lakewatch_ingest"),
        ("last", "pass_rate", "orders.non_negative_amount"),
        ("last", "backlog_files", "orders_bronze"),
    }
    duration = flagged[("last", "update_duration_seconds", "lakewatch_ingest")]
    # the full refresh and the failed update (900 s each) are not part of the baseline
    assert duration["history_size"] == len(DURATIONS)
    assert duration["baseline_median"] == pytest.approx(statistics.median(DURATIONS))
    assert duration["value"] == pytest.approx(400) and duration["kind"] == "spike"
    assert flagged[("last", "pass_rate", "orders.non_negative_amount")]["value"] == pytest.approx(0.6)
    assert metrics["anomalies_last_update"] == (3.0, None)


def test_a_full_refresh_known_only_by_its_resetting_state_is_not_comparable(spark):
    """The same story where create_update does not say which update is a full refresh (Databricks
    documents only run_as and cause): its RESETTING state does, so it is neither flagged nor part of
    a baseline, and the same three values are flagged against the same baseline."""
    flagged, metrics = anomalies_of(spark, story(documented_create_update=True))
    assert {key: (r["value"], r["history_size"], r["baseline_median"]) for key, r in flagged.items()} == {
        key: (r["value"], r["history_size"], r["baseline_median"]) for key, r in anomalies_of(spark, story())[0].items()}
    assert not any(update_id == "fr" for update_id, _, _ in flagged)
    assert flagged[("last", "update_duration_seconds", "lakewatch_ingest")]["history_size"] == len(DURATIONS)
    assert metrics["anomalies_last_update"] == (3.0, None)


def test_too_little_history_flags_nothing(spark):
    flagged, metrics = anomalies_of(spark, story(history=anomalies.MIN_HISTORY - 1))
    assert flagged == {}
    assert metrics["anomalies_last_update"] == (0.0, None)


def test_rows_written_leaves_out_updates_a_streaming_flow_had_nothing_to_read(spark):
    """Files land every hour and the pipeline runs every 15 minutes: three of four updates find nothing
    for the bronze flows (each completes without a micro-batch and writes 0). orders_bronze's next
    1,000-row batch is usual; customers_bronze's 10,000-row batch is a spike against the 6 batches of
    1,000 before it, the idle updates left out. A view that never runs micro-batches and suddenly
    writes 0 is still a drop, and so is a streaming flow whose micro-batch wrote 0."""
    assert anomalies.MIN_HISTORY <= 6  # the 6 earlier batches make a baseline
    updates = []
    for i in range(28):  # files arrive before every fourth update: the last brings the 7th batch
        u = Update(f"u{i:02d}", NOW - timedelta(minutes=15 * (28 - i))).state("RUNNING", 1)
        arrived, last = i % 4 == 3, i == 27
        batch = {"batch_id": i} if arrived else {}
        u.ran("orders_bronze", 2, 20, 1000 if arrived else 0, **batch)
        u.ran("customers_bronze", 2, 20, (10000 if last else 1000) if arrived else 0, **batch)
        u.ran("orders_daily_view", 21, 30, 0 if last else 500)
        u.ran("orders_to_corrupt_records_sink", 21, 30, 0 if last else 200, batch_id=i)
        updates.append(u.state("COMPLETED", 60))
    flagged, _ = anomalies_of(spark, Inputs(updates))
    rows = {(u, s): r for (u, m, s), r in flagged.items() if m == "rows_written"}
    assert set(rows) == {("u27", "customers_bronze"), ("u27", "orders_daily_view"),
                         ("u27", "orders_to_corrupt_records_sink")}
    spike = rows[("u27", "customers_bronze")]
    assert (spike["history_size"], spike["baseline_median"], spike["kind"]) == (6, 1000, "spike")
    assert rows[("u27", "orders_daily_view")]["baseline_median"] == 500


def test_the_anomalies_definition_file_runs_the_detector_of_this_module():
    """transformations/observability/anomalies.sql holds the SQL `anomalies_sql` writes from the baselines
    and settings here, and its column comments name the settings."""
    table = by_name("anomalies")
    assert " ".join(table.sql.split()) == " ".join(anomalies.anomalies_sql().split())
    comments = dict((name, comment) for name, _, comment in table.columns)
    assert f"at most {anomalies.WINDOW}" in comments["history_size"] and f"from {anomalies.THRESHOLD}" in comments["score"]
