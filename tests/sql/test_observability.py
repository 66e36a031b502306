"""The observability tables' logic on small hand-built event logs (tests/eventlog_builders.py)."""

from __future__ import annotations

import datetime as dt
import re

import pytest
from chispa import assert_df_equality

from pipelines.eventlog.schema import EVENT_LOG_SCHEMA

from pipelines.observability.pipeline import streaming_query
from pipelines import sqldefs
from pipelines.dataset_names import OBSERVABILITY_DEFINITIONS
from pipelines.observability.catalog import (EVENT_LOG, HEALTH_METRIC_NAMES, PUBLISHED, SOURCE_VIEWS, TABLES, by_name,
                                             table_properties)
from tests.eventlog_builders import (
    CATALOG_SCHEMA,
    TINY_DATA_CONF,
    Update,
    bronze_rows,
    completed_update,
    event_rows,
    file_row,
    full_refresh_story,
    observability_views,
    sink_row,
    utc,
)

EOF_CHAIN = (
    ("org.apache.spark.sql.streaming.StreamingQueryException", "[STREAM_FAILED] Query terminated with exception"),
    ("org.apache.spark.SparkException", "[FAILED_READ_FILE.NO_HINT] Encountered error while reading file x.json.gz"),
    ("java.io.EOFException", "Unexpected end of input stream"),
)


def failed_update(update_id: str, start: dt.datetime) -> Update:
    u = Update(update_id, start)
    u.state("RUNNING", 1)
    u.flow("orders_bronze", "QUEUED", 1.8).flow("orders_bronze", "RUNNING", 2)
    u.metrics("orders_bronze", 9.9, backlog_files=3, backlog_bytes=3000)
    u.flow("orders_bronze", "FAILED", 10, error=EOF_CHAIN)
    u.flow("orders", "SKIPPED", 10.5).flow("orders_to_corrupt_records_sink", "SKIPPED", 10.6)
    return u.state("FAILED", 12, error=EOF_CHAIN[0])


def cancelled_update(update_id: str, start: dt.datetime) -> Update:
    u = Update(update_id, start)
    u.state("RUNNING", 1)
    u.flow("orders_bronze", "QUEUED", 1.5).flow("orders_bronze", "RUNNING", 2).flow("orders_bronze", "STOPPED", 8)
    return u.state("CANCELED", 9)


def empty_update(update_id: str, start: dt.datetime) -> Update:
    """Nothing new arrived: flows complete without metrics (NULL rows), backlog still reported."""
    u = Update(update_id, start)
    u.state("RUNNING", 1)
    u.ran("orders_bronze", 2, 4, None)
    u.metrics("orders_bronze", 4.5, backlog_files=0, backlog_bytes=0)  # metrics event with NULL rows
    return u.state("COMPLETED", 5)


# A fixed instant, also the health metrics' clock: "today" and "hours since" mean the same at any hour.
NOW = utc(2026, 6, 15, 12)


def today_at(hour: int, minute: int = 0) -> dt.datetime:
    return NOW.replace(hour=hour, minute=minute)


@pytest.fixture(scope="module")
def scenario(spark):
    """A session (own temporary views) holding the tables of four updates today."""
    session = spark.newSession()
    updates = [
        completed_update("u1", today_at(0, 10), duration=60, rows=100, quarantined=2),
        failed_update("u2", today_at(0, 20)),
        cancelled_update("u3", today_at(0, 30)),
        empty_update("u4", today_at(0, 40)),
    ]
    observability_views(session, updates, now=NOW)
    return session


@pytest.fixture
def fresh(spark):
    """A session with no temporary views, for a test's own event log."""
    return spark.newSession()


def rows(spark, sql: str) -> list[tuple]:
    return [tuple(r) for r in spark.sql(sql).collect()]


def type_text(text: str) -> str:
    return text.lower().replace(" ", "")


def test_every_table_returns_exactly_its_declared_columns(scenario):
    for table in PUBLISHED:
        actual = [(f.name, f.dataType.simpleString()) for f in scenario.table(table.name).schema.fields]
        declared = [(n, type_text(t)) for n, t, _ in table.columns]
        assert actual == declared, table.name
        assert table.comment and all(c for _, _, c in table.columns)


def test_update_status_completed_failed_cancelled_and_empty(scenario):
    actual = scenario.sql(
        "SELECT update_id, cause, full_refresh, final_state, duration_seconds, failed_flows, skipped_flows, "
        "first_error_class, first_error_message FROM update_status"
    )
    expected = scenario.createDataFrame(
        [
            ("u1", "USER_ACTION", False, "COMPLETED", 60.0, 0, 0, None, None),
            ("u2", "USER_ACTION", False, "FAILED", 12.0, 1, 2, "STREAM_FAILED", EOF_CHAIN[0][1]),
            ("u3", "USER_ACTION", False, "CANCELED", 9.0, 0, 0, None, None),
            ("u4", "USER_ACTION", False, "COMPLETED", 5.0, 0, 0, None, None),
        ],
        actual.schema,
    )
    assert_df_equality(actual, expected, ignore_row_order=True, ignore_nullable=True)


def test_daily_rollup_success_rate_and_durations(scenario):
    row = scenario.sql("SELECT * FROM update_status_daily").collect()[0]
    assert (row["updates"], row["completed"], row["failed"], row["canceled"]) == (4, 2, 1, 1)
    assert row["success_rate"] == pytest.approx(0.5)
    assert row["avg_duration_seconds"] == pytest.approx((60 + 12 + 9 + 5) / 4)
    assert row["p95_duration_seconds"] == pytest.approx(12 + 0.85 * 48)  # linear: 5, 9, 12, 60 at 0.95


def test_flow_throughput_rows_duration_and_rate(scenario):
    actual = scenario.sql(
        "SELECT update_id, flow_name, dataset, final_status, rows_written, duration_seconds, rows_per_second "
        "FROM flow_throughput WHERE update_id IN ('u1', 'u4')"
    )
    expected = scenario.createDataFrame(
        [
            ("u1", "orders_bronze", "orders_bronze", "COMPLETED", 100, 28.0, 100 / 28.0),
            ("u1", "orders_to_corrupt_records_sink", "corrupt_records_sink", "COMPLETED", 2, 27.0, 2 / 27.0),
            ("u4", "orders_bronze", "orders_bronze", "COMPLETED", None, 2.0, None),
        ],
        actual.schema,
    )
    assert_df_equality(actual, expected, ignore_row_order=True, ignore_nullable=True)


def test_failed_update_flows_and_errors(scenario):
    statuses = dict(rows(scenario, "SELECT flow_name, final_status FROM flow_throughput WHERE update_id = 'u2'"))
    assert statuses == {"orders_bronze": "FAILED", "orders": "SKIPPED", "orders_to_corrupt_records_sink": "SKIPPED"}
    errors = rows(scenario, "SELECT update_id, flow_name, event_type, exception_class, root_cause_class, error_class, "
                         "root_cause_message FROM errors ORDER BY event_time")
    assert errors == [
        ("u2", "orders_bronze", "flow_progress", EOF_CHAIN[0][0], "java.io.EOFException", "STREAM_FAILED",
         "Unexpected end of input stream"),
        ("u2", None, "update_progress", EOF_CHAIN[0][0], EOF_CHAIN[0][0], "STREAM_FAILED", EOF_CHAIN[0][1]),
    ]
    classes = rows(scenario, "SELECT error_class, occurrences, updates FROM error_classes")
    assert classes == [("STREAM_FAILED", 2, 1)]


def test_backlog_from_the_last_metrics_event_of_each_update(fresh):
    u1 = Update("b1", utc(2026, 11, 2, 8)).completed(30)
    u1.metrics("orders_bronze", 10, rows=50, backlog_files=1, backlog_bytes=100, batch_id=0)
    u1.metrics("orders_bronze", 20, rows=50, backlog_files=2, backlog_bytes=250, batch_id=1)
    u2 = Update("b2", utc(2026, 11, 2, 9)).completed(30)
    u2.metrics("orders_bronze", 10, rows=10, backlog_files=5, backlog_bytes=900)
    u2.metrics("orders_bronze", 12, rows=None, backlog_files=None, backlog_bytes=None)  # carries no backlog
    u3 = Update("b3", utc(2026, 11, 2, 10)).completed(30)
    u3.metrics("orders_bronze", 10, rows=10, backlog_files=5, backlog_bytes=900, batch_id=0)
    u3.metrics("orders_bronze", 20, backlog_files=None, backlog_bytes=None)
    u3.warn("backlog", "landing folder not readable: gone", 20, flow="orders_bronze")  # measured, and failed
    observability_views(fresh, [u1, u2, u3], only=["backlog", "flow_throughput"])
    assert rows(fresh, "SELECT update_id, backlog_files, backlog_bytes, reason FROM backlog ORDER BY update_id") == [
        ("b1", 2, 250, None), ("b2", 5, 900, None), ("b3", None, None, "landing folder not readable: gone"),
    ]
    assert rows(fresh, "SELECT update_id, rows_written FROM flow_throughput ORDER BY update_id") == [
        ("b1", 100), ("b2", 10), ("b3", 10),
    ]


def test_expectations_per_update_day_and_week_with_previous_week(fresh):
    def update(update_id: str, when: dt.datetime, passed: int, failed: int) -> Update:
        u = Update(update_id, when).completed(20)
        u.metrics("orders", 10, rows=passed, dropped=failed,
                  expectations=[("has_id", passed, failed), ("positive", passed + failed, 0)])
        return u

    full = Update("fr", utc(2026, 11, 9, 12), full_refresh=True).completed(20)  # counts history again
    full.metrics("orders", 10, rows=270, expectations=[("has_id", 265, 35), ("positive", 300, 0)])
    observability_views(fresh, [
        update("w1a", utc(2026, 11, 2, 9), 90, 10),   # Monday 2 Nov 2026
        update("w1b", utc(2026, 11, 3, 9), 80, 20),   # Tuesday, same week
        update("w2a", utc(2026, 11, 9, 9), 95, 5),    # next week
        full,
    ], only=["expectation_results_weekly", "expectation_results_daily", "dropped_records"])
    daily = rows(fresh, "SELECT update_date, passed_records, failed_records, pass_rate FROM expectation_results_daily "
                        "WHERE expectation = 'has_id' ORDER BY update_date")
    assert daily == [(dt.date(2026, 11, 2), 90, 10, 0.9), (dt.date(2026, 11, 3), 80, 20, 0.8),
                     (dt.date(2026, 11, 9), 95, 5, 0.95)]
    weekly = rows(fresh, "SELECT week_start, pass_rate, previous_week_pass_rate, pass_rate_change "
                         "FROM expectation_results_weekly WHERE expectation = 'has_id' ORDER BY week_start")
    assert weekly[0] == (dt.date(2026, 11, 2), 0.85, None, None)
    assert weekly[1][:3] == (dt.date(2026, 11, 9), 0.95, 0.85) and weekly[1][3] == pytest.approx(0.10)
    assert rows(fresh, "SELECT dataset, sum(dropped_records) FROM dropped_records GROUP BY dataset") == [("orders", 35)]
    assert rows(fresh, "SELECT DISTINCT pass_rate FROM expectation_results WHERE expectation = 'positive'") == [(1.0,)]
    assert rows(fresh, "SELECT update_id, full_refresh FROM expectation_results WHERE expectation = 'has_id' "
                       "ORDER BY update_id") == [("fr", True), ("w1a", False), ("w1b", False), ("w2a", False)]


def test_file_latency_hourly_and_per_update(fresh):
    start = utc(2026, 11, 2, 8)
    u = completed_update("L1", start, duration=60)
    files = [
        file_row(f"/l/f{i}.json", start - dt.timedelta(seconds=s), start + dt.timedelta(seconds=10), lines=1)
        for i, s in enumerate((10, 20, 30, 40))
    ] + [file_row("/l/new.json", start, None)]
    observability_views(fresh, [u], file_state=files,
                        only=["ingestion_latency_hourly", "ingestion_latency_by_update"])
    latencies = sorted(r[0] for r in rows(fresh, "SELECT latency_seconds FROM file_latency WHERE state = 'committed'"))
    assert latencies == [20.0, 30.0, 40.0, 50.0]
    assert rows(fresh, "SELECT latency_status, latency_seconds FROM file_latency WHERE path = '/l/new.json'") == [
        ("pending", None)]
    hourly = rows(fresh, "SELECT table_name, files, p50_latency_seconds, max_latency_seconds FROM ingestion_latency_hourly")
    assert hourly == [("orders_bronze", 4, 35.0, 50.0)]
    assert rows(fresh, "SELECT update_id, files FROM ingestion_latency_by_update") == [("L1", 4)]


def test_weekly_duration_trend_of_completed_incremental_updates(fresh):
    monday = utc(2026, 11, 2, 6)  # a Monday
    updates = [completed_update(f"a{i}", monday + dt.timedelta(days=i), duration=60, clean_failed=0) for i in range(3)]
    updates += [completed_update(f"b{i}", monday + dt.timedelta(days=7 + i), duration=66, clean_failed=0) for i in range(2)]
    updates += [completed_update("fr", monday + dt.timedelta(days=9), duration=600, full_refresh=True),
                completed_update("failed", monday + dt.timedelta(days=10), duration=900, final_state="FAILED")]
    observability_views(fresh, updates, only=["update_status_weekly"])
    assert rows(fresh, "SELECT week_start, updates, avg_duration_seconds, max_duration_seconds, "
                       "previous_week_avg_duration_seconds, avg_duration_change FROM update_status_weekly "
                       "ORDER BY week_start") == [
        (dt.date(2026, 11, 2), 3, 60.0, 60.0, None, None),
        (dt.date(2026, 11, 9), 2, 66.0, 66.0, 60.0, pytest.approx(0.1)),
    ]


def discovered(row: tuple, at: dt.datetime) -> tuple:
    """A file-state row (file_row) with its own discovery time."""
    return row[:5] + (at,) + row[6:]


def test_file_batches_files_and_bytes_per_second_per_commit(fresh):
    start = utc(2026, 11, 2, 8)
    first, second = start + dt.timedelta(seconds=10), start + dt.timedelta(seconds=30)
    files = [discovered(file_row(f"/l/a{i}.json", start, first, size=100), start + dt.timedelta(seconds=2))
             for i in range(4)]  # 4 files, 400 bytes, discovered 8 s before their commit
    files += [discovered(file_row("/l/b.json", start, second, size=50), start + dt.timedelta(seconds=25)),
              discovered(file_row("/l/c.json", start, second, size=50), start + dt.timedelta(seconds=20))]
    files += [file_row("/l/pending.json", start, None)]
    observability_views(fresh, [completed_update("B1", start)], file_state=files, only=["file_batches"])
    assert rows(fresh, "SELECT commit_time, files, bytes, seconds, files_per_second, bytes_per_second "
                       "FROM file_batches ORDER BY commit_time") == [
        (first.replace(tzinfo=None), 4, 400, 8.0, 0.5, 50.0),
        (second.replace(tzinfo=None), 2, 100, 10.0, 0.2, 10.0),
    ]


def test_schema_drift_and_quarantine_count_on_the_day_the_data_arrived(fresh):
    arrived, when = utc(2026, 11, 1, 23), utc(2026, 11, 2, 8)  # files of the 1st, ingested on the 2nd
    bronze = (bronze_rows("/l/f1", 1, arrived, when, rescued=['{"coupon":"A","_file_path":"f1"}'])
              + bronze_rows("/l/f2", 2, arrived, when, rescued=['{"Amount":"3","coupon":"B","_file_path":"f2"}']))
    later = when + dt.timedelta(days=1)
    sink = [
        sink_row("/l/f1", "h1", arrived, when),
        sink_row("/l/f1", "h1", arrived, when),  # the same line twice in one file: not a re-delivery
        sink_row("/l/f1", "h1", arrived, later),  # quarantined again a day later (a full refresh): re-delivered
        sink_row("/l/f3", "h1", arrived, later),  # the same content in another file: a first delivery
    ]
    observability_views(fresh, [completed_update("d1", when)], sink=sink, bronze=bronze,
                        only=["schema_drift", "quarantine_daily"])
    assert rows(fresh, "SELECT table_name, arrival_date, rows_with_rescued_data, rescued_fields, files FROM schema_drift") == [
        ("orders", dt.date(2026, 11, 1), 2, ["Amount", "coupon"], ["file:/l/f1", "file:/l/f2"]),
    ]
    assert rows(fresh, "SELECT table_name, day, quarantined_rows, files, redelivered_rows FROM quarantine_daily "
                       "ORDER BY day") == [
        ("orders", dt.date(2026, 11, 1), 3, 2, 0),
        ("orders", dt.date(2026, 11, 3), 0, 0, 1),
    ]


def test_bronze_duplicates_count_records_that_landed_before(fresh):
    t0 = utc(2026, 11, 2, 8)
    later = t0 + dt.timedelta(hours=1)
    bronze = (bronze_rows("/l/a", 3, t0, t0, contents=["r1", "r2", "r3"])
              + bronze_rows("/l/b", 4, later, later, contents=["r2", "r3", "r4", "r4"])  # a re-delivers 2, 1 repeated
              + bronze_rows("/l/c", 2, later, later, table="customers", contents=["r1", "r2"]))  # other table
    observability_views(fresh, [completed_update("d1", t0)], bronze=bronze, only=["bronze_duplicates"])
    assert rows(fresh, "SELECT table_name, path, duplicate_rows, from_other_files, first_landed_in "
                       "FROM bronze_duplicates") == [("orders", "file:/l/b", 3, 2, ["file:/l/a"])]


def test_the_content_hash_ignores_file_and_time_columns_only(spark, tmp_path):
    """Real Delta tables with bronze's metadata columns: the same record from two files hashes alike,
    a record differing in one data column, in rescued data or as a corrupt line does not."""
    from pipelines.observability.catalog import bronze_union_sql

    rows_in = [
        ("o1", 2.5, None, None, "file:/l/a.json", utc(2026, 11, 1), utc(2026, 11, 2)),
        ("o1", 2.5, None, None, "file:/l/b.json", utc(2026, 11, 3), utc(2026, 11, 4)),  # same record, other file
        ("o1", 2.6, None, None, "file:/l/b.json", utc(2026, 11, 3), utc(2026, 11, 4)),
        ("o1", 2.5, '{"x":"1"}', None, "file:/l/b.json", utc(2026, 11, 3), utc(2026, 11, 4)),
        (None, None, None, "{bad", "file:/l/b.json", utc(2026, 11, 3), utc(2026, 11, 4)),
    ]
    path = tmp_path / "bronze"
    spark.createDataFrame(rows_in, "order_id STRING, amount DOUBLE, _rescued_data STRING, _corrupt_record STRING, "
                                   "_source_file STRING, _source_file_modification_time TIMESTAMP, "
                                   "_ingested_at TIMESTAMP").write.format("delta").save(str(path))
    union = bronze_union_sql([("orders", f"delta.`{path}`", ("order_id", "amount"))])
    out = spark.sql(f"SELECT _source_file, _content_hash FROM {union}").collect()
    in_a = [r["_content_hash"] for r in out if r["_source_file"].endswith("a.json")]
    in_b = [r["_content_hash"] for r in out if r["_source_file"].endswith("b.json")]
    assert len(in_a) == 1 and in_a[0] in in_b  # the same record from another file
    assert len(set(in_b)) == 4 and all(len(h) == 64 for h in in_a + in_b)  # every difference shows


def test_health_metrics_after_the_scenario(scenario):
    metrics = dict(rows(scenario, "SELECT metric_name, metric_value FROM health_metrics"))
    assert set(metrics) == set(HEALTH_METRIC_NAMES)
    assert metrics["errors_last_24h"] == 2
    assert metrics["failed_updates_last_24h"] == 1
    assert metrics["last_update_failed"] == 0  # u4, the latest, completed
    assert metrics["last_update_duration_seconds"] == 5
    assert metrics["last_update_duration_vs_median"] == pytest.approx(5 / 60)  # median of the earlier completed: u1
    assert metrics["rows_last_update"] == 0  # u4's bronze flow completed without a micro-batch: it wrote nothing
    assert metrics["backlog_files"] == 0
    assert metrics["metrics_missing"] == 0 and metrics["files_not_reconciled"] == 0
    assert metrics["lowest_pass_rate_last_24h"] is None  # only bronze's own expectations ran today
    u4_end = today_at(0, 40) + dt.timedelta(seconds=5)
    expected_hours = (NOW - u4_end).total_seconds() / 3600
    assert metrics["hours_since_last_success"] == pytest.approx(expected_hours, abs=1e-6)
    u1_end = today_at(0, 10) + dt.timedelta(seconds=60)  # u2 failed and u3 was canceled before writing, u4 found nothing
    assert metrics["hours_since_rows_ingested"] == pytest.approx((NOW - u1_end).total_seconds() / 3600, abs=1e-6)
    assert metrics["ingestion_latency_p95_seconds_24h"] is None  # no file state: not measured
    reasons = dict(rows(scenario, "SELECT metric_name, reason FROM health_metrics"))
    assert reasons["ingestion_latency_p95_seconds_24h"] == "no file was first committed in the last 24 hours"
    assert metrics["duration_week_over_week_change"] is None  # every update is from today: no earlier week
    assert "no trend yet" in reasons["duration_week_over_week_change"]
    assert metrics["backlog_growth_streak"] == 0 and metrics["anomalies_last_update"] == 0
    assert {name for name, reason in reasons.items() if reason is not None} == {
        "ingestion_latency_p95_seconds_24h", "lowest_pass_rate_last_24h", "duration_week_over_week_change"}
    assert {name for name, value in metrics.items() if value is None} == set(
        n for n, r in reasons.items() if r is not None)  # every NULL says why, only NULLs do


def test_the_windowed_metrics_keep_a_failure_from_before_midnight(fresh):
    """The windowed health metrics read the 24 hours up to the clock, not the calendar day: at 00:30 a
    failure of 23:50 the day before still counts, and one 25 hours old no longer does; the pass rate
    of the failing rows is read from the update that measured it before midnight."""
    now = utc(2026, 6, 15, 0, 30)
    old = completed_update("old", now - dt.timedelta(hours=25), rows=100, clean_failed=90)
    late = failed_update("late", now - dt.timedelta(minutes=40))
    checked = completed_update("checked", now - dt.timedelta(minutes=35), rows=100, clean_failed=20)
    observability_views(fresh, [old, late, checked], now=now)
    metrics = dict(rows(fresh, "SELECT metric_name, metric_value FROM health_metrics"))
    late_errors = rows(fresh, "SELECT count(*) FROM errors WHERE update_id = 'late'")[0][0]
    assert late_errors > 0 and metrics["errors_last_24h"] == late_errors
    assert metrics["failed_updates_last_24h"] == 1
    assert metrics["lowest_pass_rate_last_24h"] == pytest.approx(80 / 100)  # not the older update's 10 / 100


def test_incidents_are_runs_of_failed_updates_closed_by_the_next_completed_one(fresh):
    """Read from the update history itself: two failures, a cancel and a success make one incident
    with two failed updates, closed by the success (a refresh that came only after the success still
    sees it); a later failure with nothing completed after it is a second incident, open. Each
    incident's root cause is run_insights' reading of its first failed update."""
    start = NOW - dt.timedelta(hours=5)
    updates = [
        completed_update("ok", start, rows=100),
        failed_update("f1", start + dt.timedelta(hours=1)),
        failed_update("f2", start + dt.timedelta(hours=2)),
        cancelled_update("c1", start + dt.timedelta(hours=2, minutes=30)),
        completed_update("fixed", start + dt.timedelta(hours=3), rows=100),
        failed_update("f3", start + dt.timedelta(hours=4)),
    ]
    observability_views(fresh, updates, now=NOW)
    incidents = {r["incident_id"]: r for r in fresh.sql("SELECT * FROM incidents").collect()}
    assert sorted(incidents) == ["f1", "f3"]
    first, second = incidents["f1"], incidents["f3"]
    ended = {r[0]: r[1] for r in rows(fresh, "SELECT update_id, end_time FROM update_status")}
    assert (first["status"], first["failed_updates"], first["last_failed_update_id"]) == ("CLOSED", 2, "f2")
    assert (first["closed_by_update_id"], first["opened_at"], first["closed_at"]) == ("fixed", ended["f1"], ended["fixed"])
    assert (second["status"], second["failed_updates"], second["closed_at"]) == ("OPEN", 1, None)
    insight = rows(fresh, "SELECT category, root_cause_class FROM run_insights WHERE update_id = 'f1'")[0]
    assert (first["category"], first["root_cause_class"]) == insight and insight[0] != "unknown"
    assert "errors_last_24h" in first["explains"] and "backlog_files" not in first["explains"]
    assert {"last_update_failed", "errors_last_24h", "backlog_files"} <= set(second["explains"])
    metrics = {r[0]: r[1:] for r in rows(fresh, "SELECT metric_name, metric_value, alert_value, explained_by "
                                                "FROM health_metrics")}
    assert metrics["open_incidents"] == (1, 1, None)
    assert metrics["last_update_failed"] == (1, 0, "f3")


def test_arrival_windows_learn_each_feeds_cadence_and_the_late_one_pages(fresh):
    """Landing files created every 6 hours (two files per delivery, 90 seconds apart, over a minute boundary) for orders, every 2 hours for customers, and three deliveries only for payments. The
    learned window is median + 3 x spread of the gaps, at least 1.5 x the median: 6 h gaps with one
    8 h gap give 6 + 3 x 0 = 9 h (1.5 x 6). At 12:00 orders' last delivery is 10 hours old: late;
    customers' is 1 hour old: on time; payments has too little history and is not judged. A fixed
    max_hours_without_rows overrides what is learned."""
    now = NOW
    def deliveries(table: str, hours_ago: list[float]) -> list[tuple]:
        return [file_row(f"/l/{table}/{i}-{part}.json", now - dt.timedelta(hours=h) + dt.timedelta(seconds=90 * part), table=f"{table}_bronze",
                         committed=now - dt.timedelta(hours=h) + dt.timedelta(minutes=1))
                for i, h in enumerate(hours_ago) for part in (0, 1)]
    state = (deliveries("orders", [10, 16, 22, 30, 36, 42])  # gaps 6, 6, 8, 6, 6
             + deliveries("customers", [1, 3, 5, 7, 9, 11])
             + deliveries("payments", [1, 5, 9]))
    observability_views(fresh, [completed_update("u", now - dt.timedelta(minutes=30))], file_state=state, now=now,
                        limits={"orders": None, "customers": None, "payments": None})
    windows = {r["table_name"]: r for r in fresh.sql("SELECT * FROM arrival_windows").collect()}
    orders, customers, payments = windows["orders"], windows["customers"], windows["payments"]
    assert (orders["deliveries"], orders["gaps"], orders["median_gap_hours"], orders["gap_spread_hours"]) == (6, 5, 6.0, 0.0)
    assert orders["window_hours"] == pytest.approx(9.0) and orders["window_source"] == "learned"
    assert orders["due_at"] - orders["last_delivery_at"] == dt.timedelta(hours=9)
    assert orders["last_delivery_at"] == fresh.sql(  # the first file of the newest delivery
        "SELECT min(create_time) FROM landing_files WHERE table_name = 'orders_bronze' AND create_time >= "
        "(SELECT max(create_time) FROM landing_files WHERE table_name = 'orders_bronze') - INTERVAL 15 MINUTES"
    ).collect()[0][0]
    assert customers["window_hours"] == pytest.approx(3.0)
    assert (payments["window_source"], payments["due_at"]) == ("too_little_history", None)
    metrics = dict(rows(fresh, "SELECT metric_name, metric_value FROM health_metrics"))
    assert metrics["tables_files_late"] == 1
    observability_views(fresh, [completed_update("u", now - dt.timedelta(minutes=30))], file_state=state, now=now,
                        limits={"orders": 12.0, "customers": None, "payments": 0.5})
    windows = {r["table_name"]: r for r in fresh.sql("SELECT * FROM arrival_windows").collect()}
    assert (windows["orders"]["window_hours"], windows["orders"]["window_source"]) == (12.0, "configured")
    assert windows["payments"]["window_source"] == "configured"
    assert dict(rows(fresh, "SELECT metric_name, metric_value FROM health_metrics"))["tables_files_late"] == 1  # payments


def test_health_metrics_with_an_empty_event_log(fresh):
    observability_views(fresh, [])
    values = {name: (value, reason) for name, value, reason in
              rows(fresh, "SELECT metric_name, metric_value, reason FROM health_metrics")}
    assert values["errors_last_24h"] == (0, None)
    assert values["last_update_failed"] == (None, "no ingest update has finished yet")
    assert values["hours_since_last_success"] == (None, "no ingest update has run yet")
    assert values["metrics_missing"] == (None, "no ingest update has finished yet")
    assert all(reason for value, reason in values.values() if value is None)


def test_tables_are_declared_in_dependency_order():
    names = [t.name for t in TABLES]
    for table in TABLES:
        for other in names:
            if other != table.name and f" {other} " in f" {table.sql} ".replace("\n", " "):
                assert names.index(other) < names.index(table.name), (table.name, other)
    assert by_name("update_status").partition_cols == ("update_date",)


# -- internal updates --------------------------------------------------------------------------------
def test_internal_updates_are_left_out_and_do_not_reset_hours_since_last_success(fresh):
    """validate-only, explore-only and maintenance updates are Databricks' internal runs: no row in
    update_status and after it, and a validate-only update after a failure is not a success."""
    now = NOW
    ok = completed_update("ok", now - dt.timedelta(hours=3), rows=100)
    failed = failed_update("failed", now - dt.timedelta(hours=2))
    validate = Update("validate", now - dt.timedelta(hours=1), validate_only=True).completed(20)
    explore = Update("explore", now - dt.timedelta(minutes=40), explore_only=True).completed(20)
    maintenance = Update("maint", now - dt.timedelta(minutes=20), maintenance_id="m-1").state("RUNNING", 1)
    maintenance.ran("orders_bronze", 2, 8, 7, batch_id=0)
    maintenance.flow("orders", "FAILED", 9, error=[("java.lang.IllegalStateException", "[VACUUM_FAILED] no")])
    maintenance.state("FAILED", 10, error=("java.lang.IllegalStateException", "[VACUUM_FAILED] no"))
    observability_views(fresh, [ok, failed, validate, explore, maintenance], now=NOW)
    assert rows(fresh, "SELECT update_id FROM update_status ORDER BY start_time") == [("ok",), ("failed",)]
    assert rows(fresh, "SELECT DISTINCT update_id FROM flow_throughput ORDER BY 1") == [("failed",), ("ok",)]
    assert rows(fresh, "SELECT DISTINCT update_id FROM measurement_gaps ORDER BY 1") == [("failed",), ("ok",)]
    assert rows(fresh, "SELECT error_class FROM error_classes") == [("STREAM_FAILED",)]  # not VACUUM_FAILED
    assert rows(fresh, "SELECT count(*) FROM errors WHERE update_id = 'maint'") == [(2,)]  # kept per event
    metrics = dict(rows(fresh, "SELECT metric_name, metric_value FROM health_metrics"))
    assert metrics["last_update_failed"] == 1  # the failure is still the last update
    assert metrics["hours_since_last_success"] == pytest.approx(3 - 60 / 3600, abs=0.02)  # since "ok" ended
    assert metrics["errors_last_24h"] == rows(fresh, "SELECT count(*) FROM errors WHERE update_id = 'failed' "
                                                  f"AND error_date = DATE'{NOW.date()}'")[0][0]


# -- rows written: from whichever event carries them, once ------------------------------------------
def test_rows_written_counted_once_from_metrics_or_the_terminal_event(fresh):
    u = Update("r1", utc(2026, 11, 2, 8)).state("RUNNING", 1)
    # streaming flow: two micro-batches; its terminal event also carries a (cumulative) count
    u.flow("orders_bronze", "RUNNING", 2)
    u.metrics("orders_bronze", 3, rows=10, batch_id=0).metrics("orders_bronze", 4, rows=20, batch_id=1)
    u.flow("orders_bronze", "COMPLETED", 5, rows=30)
    # materialized view on Databricks: the count only on its terminal INFO event
    u.flow("daily_totals", "RUNNING", 2).flow("daily_totals", "COMPLETED", 6, rows=12)
    # materialized view locally: a COMPLETED METRICS event, and the same count on the terminal event
    u.flow("weekly_totals", "RUNNING", 2).metrics("weekly_totals", 6.5, rows=7, status="COMPLETED", streaming=False)
    u.flow("weekly_totals", "COMPLETED", 7, rows=7)
    # a micro-batch whose count was not measured: the flow's rows are unknown, not 5
    u.flow("customers_bronze", "RUNNING", 2)
    u.metrics("customers_bronze", 3, rows=5, batch_id=0).metrics("customers_bronze", 4, rows=None, batch_id=1)
    u.flow("customers_bronze", "COMPLETED", 5)
    # a flow that completed without any event carrying a count
    u.flow("customers", "RUNNING", 2).flow("customers", "COMPLETED", 3)
    u.state("COMPLETED", 8)
    observability_views(fresh, [u], only=["flow_throughput_daily"])
    assert rows(fresh, "SELECT flow_name, rows_written, rows_source, batches, unmeasured_batches FROM flow_throughput "
                       "ORDER BY flow_name") == [
        ("customers", None, None, 0, 0),
        ("customers_bronze", None, None, 2, 1),
        ("daily_totals", 12, "terminal_event", 0, 0),
        ("orders_bronze", 30, "metrics", 2, 0),
        ("weekly_totals", 7, "metrics", 0, 0),
    ]
    assert rows(fresh, "SELECT flow_name, rows_written FROM flow_throughput_daily WHERE flow_name LIKE 'customers%' "
                       "ORDER BY 1") == [("customers", None), ("customers_bronze", None)]


def test_bytes_written_from_the_metrics_events_that_carry_them(fresh):
    u = Update("y1", utc(2026, 11, 2, 8)).state("RUNNING", 1)
    # streaming flow on Databricks: bytes on each micro-batch's METRICS event
    u.flow("orders_bronze", "RUNNING", 2)
    u.metrics("orders_bronze", 3, rows=10, batch_id=0, output_bytes=1000)
    u.metrics("orders_bronze", 4, rows=20, batch_id=1, output_bytes=2500)
    u.flow("orders_bronze", "COMPLETED", 5)
    # streaming flow locally: the bytes of its micro-batches on one METRICS event without a batch id
    u.flow("orders", "RUNNING", 2).metrics("orders", 3, rows=4, batch_id=0).metrics("orders", 4, output_bytes=700)
    u.flow("orders", "COMPLETED", 5)
    # no event carries a byte count: unknown
    u.flow("customers", "RUNNING", 2).metrics("customers", 3, rows=4, batch_id=0).flow("customers", "COMPLETED", 4)
    u.state("COMPLETED", 8)
    observability_views(fresh, [u], only=["flow_throughput_daily"])
    assert rows(fresh, "SELECT flow_name, bytes_written, rows_written, batches FROM flow_throughput ORDER BY 1") == [
        ("customers", None, 4, 1), ("orders", 700, 4, 1), ("orders_bronze", 3500, 30, 2)]
    assert rows(fresh, "SELECT flow_name, bytes_written FROM flow_throughput_daily ORDER BY 1") == [
        ("customers", None), ("orders", 700), ("orders_bronze", 3500)]


# -- reconciliation ------------------------------------------------------------------------------------
def test_reconciliation_per_file(fresh):
    t, ingested = utc(2026, 11, 2, 8), utc(2026, 11, 2, 8, 5)
    files = [
        file_row("/l/ok.json", t, ingested, lines=3),               # 2 rows and a corrupt line: 3 bronze rows
        file_row("/l/short.json", t, ingested, lines=4),            # one line more than bronze rows
        file_row("/l/extra.json", t, ingested, lines=1),
        file_row("/l/changed.json", t, ingested, lines=2, modified=True),
        file_row("/l/uncounted.json", t, ingested, lines=None),     # e.g. an incomplete gzip
        file_row("/l/waiting.json", t, None, lines=5),
        file_row("/l/empty.json", t, ingested, lines=0),
        # cleanSource took these away after their commit: counted then, not modified, not missing
        file_row("/l/moved.json", t, ingested, lines=2, archive_mode="MOVE", archived=ingested,
                 move_location="/archive/l/moved.json"),
        file_row("/l/deleted.json", t, ingested, lines=2, modified=None, archive_mode="DELETE"),
    ]
    bronze = (bronze_rows("/l/ok.json", 3, t, ingested, corrupt=1) + bronze_rows("/l/short.json", 3, t, ingested)
              + bronze_rows("/l/extra.json", 2, t, ingested) + bronze_rows("/l/changed.json", 2, t, ingested)
              + bronze_rows("/l/uncounted.json", 2, t, ingested) + bronze_rows("/l/moved.json", 2, t, ingested)
              + bronze_rows("/l/deleted.json", 2, t, ingested))
    sink = [sink_row("/l/ok.json", "h", t, ingested), sink_row("/l/ok.json", "h", t, ingested + dt.timedelta(days=1))]
    observability_views(fresh, [completed_update("c1", t)], file_state=files, bronze=bronze, sink=sink,
                        only=["reconciliation"])
    assert rows(fresh, "SELECT path, lines, bronze_rows, corrupt_rows, quarantined_rows, difference, status "
                       "FROM reconciliation ORDER BY path") == [
        ("/l/changed.json", 2, 2, 0, 0, 0, "modified_after_ingest"),
        ("/l/deleted.json", 2, 2, 0, 0, 0, "ok"),
        ("/l/empty.json", 0, 0, 0, 0, 0, "ok"),
        ("/l/extra.json", 1, 2, 0, 0, -1, "extra_rows"),
        ("/l/moved.json", 2, 2, 0, 0, 0, "ok"),
        ("/l/ok.json", 3, 3, 1, 1, 0, "ok"),  # the re-delivered line is not quarantined twice
        ("/l/short.json", 4, 3, 0, 0, 1, "missing_rows"),
        ("/l/uncounted.json", None, 2, 0, 0, None, "not_counted"),
        ("/l/waiting.json", 5, 0, 0, 0, 5, "pending"),
    ]
    assert rows(fresh, "SELECT path, archive_mode FROM reconciliation WHERE archive_mode IS NOT NULL "
                       "ORDER BY path") == [("/l/deleted.json", "DELETE"), ("/l/moved.json", "MOVE")]


def test_reconciliation_is_zero_on_a_consistent_landing(fresh):
    before, _ = full_refresh_story(NOW)
    before.views(fresh, only=["reconciliation"], now=NOW)
    assert rows(fresh, "SELECT status, sum(difference), count(*) FROM reconciliation GROUP BY status") == [("ok", 0, 3)]


# -- full refresh --------------------------------------------------------------------------------------
EARLIER_FIGURES = {
    "file_latency": "SELECT path, latency_seconds, latency_status FROM file_latency",
    "ingestion_latency_hourly": "SELECT * FROM ingestion_latency_hourly",
    "ingestion_latency_by_update": "SELECT * FROM ingestion_latency_by_update",
    "schema_drift": "SELECT * FROM schema_drift",
    "quarantine_daily": f"SELECT * FROM quarantine_daily WHERE day < DATE'{NOW.date()}'",
    "expectation_results_daily": "SELECT * FROM expectation_results_daily",
}


def test_a_full_refresh_changes_no_figure_of_earlier_days(spark):
    before_inputs, after_inputs = full_refresh_story(NOW)
    before, after = spark.newSession(), spark.newSession()
    before_inputs.views(before, only=list(EARLIER_FIGURES), now=NOW)
    after_inputs.views(after, only=list(EARLIER_FIGURES), now=NOW)
    for name, sql in EARLIER_FIGURES.items():
        assert sorted(rows(after, sql)) == sorted(rows(before, sql)), name
    assert rows(after, "SELECT count(*), count(latency_seconds) FROM file_latency") == [(3, 3)]
    assert rows(after, "SELECT quarantined_rows, redelivered_rows FROM quarantine_daily "
                       f"WHERE day = DATE'{NOW.date()}'") == [
        (0, 1)]  # the full refresh's second quarantine of the corrupt line is a re-delivery
    assert rows(after, "SELECT update_id, full_refresh FROM update_status WHERE update_id = 'fr'") == [("fr", True)]


def test_a_full_refresh_on_databricks_leaves_recommitted_files_without_a_new_latency(fresh):
    """cloud_files_state keeps only the live checkpoint's commit: a file committed again by the full
    refresh has no known first commit, so no latency rather than a new, wrong one."""
    _, after = full_refresh_story(NOW, databricks=True)
    after.views(fresh, only=["ingestion_latency_by_update", "ingestion_latency_hourly"], now=NOW)
    assert rows(fresh, "SELECT DISTINCT latency_status, full_refresh_update_id, latency_seconds FROM file_latency") == [
        ("recommitted_by_full_refresh", "fr", None)]
    assert rows(fresh, "SELECT count(*) FROM ingestion_latency_by_update") == [(0,)]
    assert rows(fresh, "SELECT count(*) FROM ingestion_latency_hourly") == [(0,)]


# -- what could not be measured --------------------------------------------------------------------------
def unmeasured_inputs(now: dt.datetime):
    """The last update: a backlog measurement failed (WARN), a micro-batch's rows were not reported,
    a file landed without a commit time (Databricks below DBR 18.2), and a file lost a line."""
    from tests.eventlog_builders import Inputs

    start = now - dt.timedelta(minutes=5)
    u = Update("gaps", start).state("RUNNING", 1)
    u.flow("orders_bronze", "RUNNING", 2)
    u.metrics("orders_bronze", 3, rows=4, batch_id=0, backlog_files=0, backlog_bytes=0,
              expectations=[("no_rescued_data", 4, 0), ("no_corrupt_record", 4, 0)])
    u.metrics("orders_bronze", 4, rows=None, batch_id=1)
    u.warn("backlog", "landing folder not readable: permission denied", 5, flow="orders_bronze")
    u.flow("orders_bronze", "COMPLETED", 6).state("COMPLETED", 8)
    created, ingested = start - dt.timedelta(minutes=1), start + dt.timedelta(seconds=3)
    files = [file_row("/l/a.json", created, None, lines=3, state="discovered"),  # no commit time
             file_row("/l/b.json", created, ingested, lines=2)]                   # 2 lines, 1 bronze row
    bronze = bronze_rows("/l/a.json", 3, created, ingested) + bronze_rows("/l/b.json", 1, created, ingested)
    return Inputs([completed_update("before", now - dt.timedelta(hours=1)), u], files, bronze)


def test_what_was_not_measured_is_counted_and_every_null_says_why(fresh):
    unmeasured_inputs(NOW).views(fresh, now=NOW)
    gaps = fresh.sql("SELECT * FROM measurement_gaps WHERE update_id = 'gaps'").collect()[0]
    assert (gaps["measurement_warnings"], gaps["batches_without_rows"], gaps["files_without_commit_time"],
            gaps["metrics_missing"]) == (1, 1, 1, 3)
    assert any("permission denied" in r for r in gaps["reasons"]) and len(gaps["reasons"]) == 3
    values = {n: (v, r) for n, v, r in rows(fresh, "SELECT metric_name, metric_value, reason FROM health_metrics")}
    assert values["metrics_missing"] == (3, None)
    assert values["files_not_reconciled"] == (1, None)
    assert values["backlog_files"][0] is None and "permission denied" in values["backlog_files"][1]
    assert values["rows_last_update"][0] is None and "without a row count" in values["rows_last_update"][1]
    assert values["hours_since_rows_ingested"][0] is None and "gaps" in values["hours_since_rows_ingested"][1]
    assert values["ingestion_latency_p95_seconds_24h"][0] is None
    assert "without a commit time" in values["ingestion_latency_p95_seconds_24h"][1]
    assert rows(fresh, "SELECT path, latency_status FROM file_latency ORDER BY path") == [
        ("/l/a.json", "no_commit_time"), ("/l/b.json", "measured")]
    assert all(reason for value, reason in values.values() if value is None)


# -- the streaming tables' queries ---------------------------------------------------------------------
def test_streaming_tables_read_the_event_log_as_a_stream_and_match_their_sql(spark, tmp_path):
    """`events` and `errors` run in the pipeline as `spark.readStream.table(...)` plus their SELECT list
    and WHERE clause; on the same event log that gives exactly what their SQL gives in a batch."""
    session = spark.newSession()
    for key, value in TINY_DATA_CONF.items():
        session.conf.set(key, value)
    session.sql("CREATE DATABASE IF NOT EXISTS obs_stream_test")
    session.catalog.setCurrentDatabase("obs_stream_test")  # `errors` reads the bare name `events`
    log = "obs_stream_test.event_log"
    placeholders = {"event_log": log}
    for name in ("event_log", "events", "errors"):
        session.sql(f"DROP TABLE IF EXISTS obs_stream_test.{name}")

    def append(*updates: Update) -> None:
        session.createDataFrame(event_rows(*updates), EVENT_LOG_SCHEMA).write.format("delta").mode("append") \
            .saveAsTable(log)

    def drain(table, sink: str) -> None:
        writer = (streaming_query(session, table, placeholders).writeStream
                  .option("checkpointLocation", str(tmp_path / table.name)).trigger(availableNow=True))
        query = (writer.format("memory").queryName(sink).start() if sink == "memory_errors"
                 else writer.format("delta").toTable(sink))
        query.awaitTermination()

    EVENTS, ERRORS = by_name("events"), by_name("errors")
    append(completed_update("s1", utc(2026, 11, 2, 8), quarantined=1), failed_update("s2", utc(2026, 11, 2, 9)))
    drain(EVENTS, "obs_stream_test.events")
    assert_df_equality(session.table("obs_stream_test.events"), session.sql(EVENTS.render(placeholders)),
                       ignore_row_order=True, ignore_nullable=True)
    drain(ERRORS, "memory_errors")  # reads the bare name `events`: the streaming table above
    session.sql(EVENTS.render(placeholders)).createOrReplaceTempView("events")
    assert_df_equality(session.table("memory_errors"), session.sql(ERRORS.render(placeholders)),
                       ignore_row_order=True, ignore_nullable=True)
    assert session.table("memory_errors").count() == 2
    assert table_properties(EVENTS)["delta.enableChangeDataFeed"] == "true"
    assert "delta.enableRowTracking" not in table_properties(by_name("health_metrics"))


# -- hours_since_rows_ingested (lakewatch_no_rows): the silence since data last arrived ------------


def unknown_rows_update(update_id: str, start: dt.datetime) -> Update:
    """A completed update whose bronze micro-batch reported no row count."""
    u = Update(update_id, start).state("RUNNING", 1)
    u.flow("orders_bronze", "RUNNING", 2).metrics("orders_bronze", 3, rows=None, batch_id=0)
    return u.flow("orders_bronze", "COMPLETED", 4).state("COMPLETED", 5)


def hours_since_rows(session, *updates: Update) -> tuple:
    from tests.eventlog_builders import Inputs

    Inputs(list(updates)).views(session, only=["health_metrics"], now=NOW)
    return rows(session, "SELECT metric_value, reason FROM health_metrics "
                         "WHERE metric_name = 'hours_since_rows_ingested'")[0]


def hours_before_now(at: dt.datetime) -> float:
    return (NOW - at).total_seconds() / 3600


def test_updates_that_wrote_a_measured_zero_do_not_reset_the_silence(fresh):
    fed = completed_update("fed", NOW - dt.timedelta(hours=30), duration=60, rows=100)
    idle = [completed_update(f"idle{h}", NOW - dt.timedelta(hours=h), rows=0) for h in (20, 10, 1)]
    value, reason = hours_since_rows(fresh, fed, *idle)
    assert value == pytest.approx(hours_before_now(NOW - dt.timedelta(hours=30, seconds=-60)), abs=1e-6)
    assert reason is None


def test_rows_written_an_hour_ago_measure_one_hour_whatever_came_after(fresh):
    fed = completed_update("fed", NOW - dt.timedelta(hours=1), duration=60, rows=5)
    value, _ = hours_since_rows(fresh, completed_update("old", NOW - dt.timedelta(hours=40), rows=100), fed,
                                completed_update("idle", NOW - dt.timedelta(minutes=10), rows=0))
    assert value == pytest.approx(hours_before_now(NOW - dt.timedelta(hours=1, seconds=-60)), abs=1e-6)


def test_an_unknown_row_count_after_the_last_rows_is_null_and_names_the_update(fresh):
    value, reason = hours_since_rows(
        fresh, completed_update("fed", NOW - dt.timedelta(hours=30), rows=100),
        unknown_rows_update("unknown", NOW - dt.timedelta(hours=5)),
        completed_update("idle", NOW - dt.timedelta(hours=1), rows=0))
    assert value is None and "unknown" in reason and "orders_bronze" in reason


def test_an_unknown_row_count_before_the_last_rows_does_not_matter(fresh):
    value, reason = hours_since_rows(
        fresh, unknown_rows_update("unknown", NOW - dt.timedelta(hours=30)),
        completed_update("fed", NOW - dt.timedelta(hours=3), duration=60, rows=100))
    assert value == pytest.approx(hours_before_now(NOW - dt.timedelta(hours=3, seconds=-60)), abs=1e-6)
    assert reason is None


def test_a_full_refresh_rewriting_old_rows_is_not_new_data(fresh):
    value, _ = hours_since_rows(
        fresh, completed_update("fed", NOW - dt.timedelta(hours=30), duration=60, rows=100),
        completed_update("refresh", NOW - dt.timedelta(hours=2), rows=100, full_refresh=True))
    assert value == pytest.approx(hours_before_now(NOW - dt.timedelta(hours=30, seconds=-60)), abs=1e-6)


def test_a_pipeline_that_never_got_rows_counts_from_its_first_update(fresh):
    first = NOW - dt.timedelta(hours=50)
    value, _ = hours_since_rows(fresh, completed_update("idle1", first, rows=0),
                                completed_update("idle2", NOW - dt.timedelta(hours=2), rows=0))
    assert value == pytest.approx(hours_before_now(first), abs=1e-6)


# -- full refresh: from create_update, or from the RESETTING state Databricks documents ---------------
def test_a_full_refresh_is_known_from_its_resetting_state_when_create_update_does_not_say(fresh):
    """Databricks documents only `run_as` and `cause` in create_update; the documented sign of a full
    refresh is the RESETTING update state. Without the keys and without RESETTING nothing says: NULL.
    RESETTING cannot tell a selection from everything, so without create_update's selection every
    dataset counts as fully refreshed (its counts are left out of the daily figures, never counted twice)."""
    def update(update_id: str, hour: int, **options) -> Update:
        u = Update(update_id, utc(2026, 11, 2, hour), **options).completed(20)
        u.metrics("orders", 10, rows=10, expectations=[("has_id", 9, 1)])
        return u.metrics("customers", 10, rows=5, expectations=[("has_name", 5, 0)])

    observability_views(fresh, [
        update("silent", 8, documented_create_update=True),                # neither says: not known
        update("reset", 9, documented_create_update=True, full_refresh=True),
        update("reset_some", 10, documented_create_update=True, full_refresh_selection=("orders",)),
        update("flagged_some", 11, full_refresh_selection=(f"{CATALOG_SCHEMA}.orders",)),  # create_update says which
        update("incremental", 12),
    ], only=["expectation_results_daily", "update_status_weekly"])
    assert rows(fresh, "SELECT update_id, full_refresh, full_refresh_selection FROM update_status "
                       "ORDER BY start_time") == [
        ("silent", None, []), ("reset", True, []), ("reset_some", True, []),
        ("flagged_some", True, [f"{CATALOG_SCHEMA}.orders"]), ("incremental", False, [])]
    assert rows(fresh, "SELECT update_id, dataset, full_refresh FROM expectation_results ORDER BY update_id, dataset") == [
        ("flagged_some", "customers", False), ("flagged_some", "orders", True),
        ("incremental", "customers", False), ("incremental", "orders", False),
        ("reset", "customers", True), ("reset", "orders", True),
        ("reset_some", "customers", True), ("reset_some", "orders", True),
        ("silent", "customers", False), ("silent", "orders", False)]
    # each day's counts: the three updates that refreshed nothing known, and flagged_some's customers
    assert rows(fresh, "SELECT dataset, passed_records, failed_records FROM expectation_results_daily "
                       "ORDER BY dataset") == [("customers", 5 * 3, 0), ("orders", 9 * 2, 1 * 2)]
    assert rows(fresh, "SELECT updates FROM update_status_weekly") == [(2,)]  # silent and incremental


def test_file_names_a_uri_escapes_reconcile_with_bronze_as_the_same_file(fresh, tmp_path):
    """The local file state holds a file's real name (the runner's listing, pipelines/local/checkpoints.py);
    bronze's `_source_file` is Spark's `_metadata.file_path`, a URI (`%` written `%25`, a space `%20`,
    `#` `%23`; `+` and unicode as they are). Read here from real files by Spark itself. Each file is
    matched with its own rows, once: `p%41ct.json` is not `pAct.json`, nor `a+b.json` `a b.json`."""
    from pipelines.local.checkpoints import list_landing

    names = ["p%41ct.json", "pAct.json", "100%.json", "a b.json", "a+b.json", "x#y.json", "ünï€.json"]
    land = tmp_path / "land dir"
    land.mkdir()
    for i, name in enumerate(names):
        (land / name).write_text(f'{{"i":{i}}}\n{{"i":{i}}}\n', encoding="utf-8")
    uri = {names[int(r[0][5:-1])]: r[1] for r in
           fresh.read.text(str(land)).selectExpr("value", "_metadata.file_path").distinct().collect()}
    assert uri["p%41ct.json"].endswith("/land%20dir/p%2541ct.json")  # what Spark writes: the test's premise
    state_path = {f.path.rsplit("/", 1)[-1]: f.path for f in list_landing(land)}
    assert set(state_path) == set(uri) == set(names)
    t, ingested = utc(2026, 11, 2, 8), utc(2026, 11, 2, 8, 5)
    files = [file_row(state_path[n], t, ingested, lines=2) for n in names]
    bronze = [r for n in names for r in bronze_rows(state_path[n], 2, t, ingested, corrupt=1, source_file=uri[n])]
    sink = [sink_row(state_path["p%41ct.json"], "h", t, ingested, source_file=uri["p%41ct.json"])]
    observability_views(fresh, [completed_update("c1", t)], file_state=files, bronze=bronze, sink=sink,
                        only=["reconciliation", "file_latency"])
    assert rows(fresh, "SELECT path, state, lines, bronze_rows, quarantined_rows, status FROM reconciliation "
                       "ORDER BY path") == sorted(
        (state_path[n], "committed", 2, 2, 1 if n == "p%41ct.json" else 0, "ok") for n in names)
    assert rows(fresh, "SELECT latency_status, count(*) FROM file_latency GROUP BY 1") == [("measured", len(names))]


def test_each_definition_file_declares_its_dataset_and_the_properties_its_readers_need():
    """The TBLPROPERTIES written in each .sql file are the rule's (quality gold; change data feed and row
    tracking where another view reads the table), and each file is named after its dataset."""
    for table in TABLES:
        assert (OBSERVABILITY_DEFINITIONS / f"{table.name}.sql").is_file()
        if not table.temporary:
            assert dict(table.properties) == table_properties(table), table.name
    assert table_properties(by_name("events"))["delta.enableRowTracking"] == "true"


def test_the_views_the_sql_reads_are_the_ones_the_python_definition_file_declares():
    declared = set(re.findall(r"^def (\w+)\(\) -> DataFrame:", (OBSERVABILITY_DEFINITIONS / "sources.py").read_text(),
                              re.MULTILINE))
    read = {name for t in TABLES for name, _ in sqldefs.parse_file(
        (OBSERVABILITY_DEFINITIONS / f"{t.name}.sql").read_text())[0].reads()}
    datasets = {t.name for t in TABLES}
    assert declared == set(SOURCE_VIEWS.values()) | {"clock"}
    assert read - datasets == declared | {EVENT_LOG}


def test_rejected_rows_reconcile_with_the_rows_drop_expectations_removed(fresh):
    """Per update and clean table: the running totals, since the clean and rejected tables started
    together, of the clean flow's dropped_records and of the rows its `{table}_rejected` flow wrote.
    A failed clean flow while the rejected flow went on is not compared, and the next completed update
    that catches up is ok again; a row lost is missing_rows. A rejected table created after its clean
    table (it read all of bronze at once) is not comparable until a full refresh resets both; a missing
    count is not_measured; the health metric is then NULL with the reason rather than 0. Bronze, whose
    dropped_records is 0 without any drop rule, is left out."""
    start = NOW - dt.timedelta(hours=6)

    def update(update_id: str, hours: float, dropped: int | None, rejected: int | None, final: str = "COMPLETED",
               kept: bool = True, full_refresh: bool = False) -> Update:
        u = Update(update_id, start + dt.timedelta(hours=hours), full_refresh=full_refresh)
        u.state("RUNNING", 1)
        u.ran("orders_bronze", 1.5, 2, 100, dropped=0, expectations=[("no_rescued_data", 100, 0)])  # no drop rule
        if dropped is None:
            u.ran("orders", 2, 8, None, status="FAILED")
        else:
            u.ran("orders", 2, 8, 100 - dropped, dropped=dropped, expectations=[("has_id", 100 - dropped, dropped)])
        if kept:
            u.ran("orders_rejected", 3, 8, None)
            u.metrics("orders_rejected", 7.5, rows=rejected, batch_id=0)
        return u.state(final, 10)

    observability_views(fresh, [update("u1", 0, 4, 4), update("u2", 1, None, 3, final="FAILED"),
                                update("u3", 2, 3, 0), update("u4", 3, 2, 1)],
                        only=["rejected_rows", "health_metrics"], now=NOW)
    assert rows(fresh, "SELECT update_id, table_name, dropped_since_start, rejected_since_start, difference, status "
                       "FROM rejected_rows ORDER BY update_id") == [
        ("u1", "orders", 4, 4, 0, "ok"), ("u2", "orders", 4, 7, -3, "not_compared"),
        ("u3", "orders", 7, 7, 0, "ok"), ("u4", "orders", 9, 8, 1, "missing_rows")]
    metric = rows(fresh, "SELECT metric_value, reason FROM health_metrics WHERE metric_name = 'rejected_rows_not_reconciled'")
    assert metric == [(1.0, None)]

    later = fresh.newSession()
    observability_views(later, [update("u0", 0, 6, None, kept=False), update("u1", 1, 2, 8),
                                update("u2", 2, 8, 8, full_refresh=True), update("u3", 3, 1, None)],
                        only=["rejected_rows", "health_metrics"], now=NOW)
    assert rows(later, "SELECT update_id, status FROM rejected_rows ORDER BY update_id") == [
        ("u0", "not_kept"), ("u1", "not_comparable"), ("u2", "ok"), ("u3", "not_measured")]
    [(value, reason)] = rows(later, "SELECT metric_value, reason FROM health_metrics "
                                    "WHERE metric_name = 'rejected_rows_not_reconciled'")
    assert value is None and "not measured" in reason and "did not start with their clean table" in reason
