"""The observability tables' logic on small hand-built event logs (tests/eventlog_builders.py)."""

from __future__ import annotations

import datetime as dt

import pytest
from chispa import assert_df_equality

from pipelines.observability.tables import HEALTH_METRIC_NAMES, PUBLISHED, TABLES, by_name
from tests.eventlog_builders import Update, completed_update, observability_views, today_at, utc

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
    observability_views(session, updates)
    return session


@pytest.fixture
def fresh(spark):
    """A session with no temporary views, for a test's own event log."""
    return spark.newSession()


def rows(spark, sql: str) -> list[tuple]:
    return [tuple(r) for r in spark.sql(sql).collect()]


def test_every_table_returns_exactly_its_declared_columns(scenario):
    for table in PUBLISHED:
        actual = [(f.name, f.dataType.simpleString()) for f in scenario.table(table.name).schema.fields]
        declared = [(n, t.lower()) for n, t, _ in table.columns]
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
    u2.metrics("orders_bronze", 12, rows=None, backlog_files=None, backlog_bytes=None)  # no backlog measured
    observability_views(fresh, [u1, u2])
    assert rows(fresh, "SELECT update_id, backlog_files, backlog_bytes FROM backlog ORDER BY update_id") == [
        ("b1", 2, 250), ("b2", 5, 900),
    ]
    assert rows(fresh, "SELECT update_id, rows_written FROM flow_throughput ORDER BY update_id") == [
        ("b1", 100), ("b2", 10),
    ]


def test_expectations_per_update_day_and_week_with_previous_week(fresh):
    def update(update_id: str, when: dt.datetime, passed: int, failed: int) -> Update:
        u = Update(update_id, when).completed(20)
        u.metrics("orders", 10, rows=passed, dropped=failed,
                  expectations=[("has_id", passed, failed), ("positive", passed + failed, 0)])
        return u

    observability_views(fresh, [
        update("w1a", utc(2026, 11, 2, 9), 90, 10),   # Monday 2 Nov 2026
        update("w1b", utc(2026, 11, 3, 9), 80, 20),   # Tuesday, same week
        update("w2a", utc(2026, 11, 9, 9), 95, 5),    # next week
    ])
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


def test_file_latency_hourly_and_per_update(fresh):
    start = utc(2026, 11, 2, 8)
    u = completed_update("L1", start, duration=60)
    files = [
        ("orders_bronze", "orders_bronze", f"/l/f{i}.json", 10, start - dt.timedelta(seconds=s),
         start + dt.timedelta(seconds=5), start + dt.timedelta(seconds=10), 0, "committed")
        for i, s in enumerate((10, 20, 30, 40))
    ] + [("orders_bronze", "orders_bronze", "/l/new.json", 10, start, None, None, None, "pending")]
    observability_views(fresh, [u], file_state=files)
    latencies = sorted(r[0] for r in rows(fresh, "SELECT latency_seconds FROM file_latency WHERE state = 'committed'"))
    assert latencies == [20.0, 30.0, 40.0, 50.0]
    hourly = rows(fresh, "SELECT table_name, files, p50_latency_seconds, max_latency_seconds FROM ingestion_latency_hourly")
    assert hourly == [("orders_bronze", 4, 35.0, 50.0)]
    assert rows(fresh, "SELECT update_id, files FROM ingestion_latency_by_update") == [("L1", 4)]


def test_schema_drift_and_quarantine(fresh):
    when = utc(2026, 11, 2, 8)
    bronze = [
        ("orders", '{"coupon":"A","_file_path":"f1"}', "f1", when),
        ("orders", '{"Amount":"3","coupon":"B","_file_path":"f2"}', "f2", when),
        ("orders", None, "f2", when),
    ]
    sink = [
        ("orders", "bad", "h1", "f1", when, when, when),
        ("orders", "bad", "h1", "f1", when, when, when),  # the same line twice in one file: not a re-delivery
        ("orders", "bad", "h1", "f1", when, when + dt.timedelta(hours=1), when + dt.timedelta(hours=1)),  # re-delivered
    ]
    observability_views(fresh, [completed_update("d1", when)], sink=sink, bronze=bronze)
    assert rows(fresh, "SELECT table_name, rows_with_rescued_data, rescued_fields, files FROM schema_drift") == [
        ("orders", 2, ["Amount", "coupon"], ["f1", "f2"]),
    ]
    assert rows(fresh, "SELECT table_name, quarantined_rows, files, redelivered_rows FROM quarantine_daily") == [
        ("orders", 3, 1, 1),
    ]


def test_health_metrics_after_the_scenario(scenario):
    metrics = dict(rows(scenario, "SELECT metric_name, metric_value FROM health_metrics"))
    assert set(metrics) == set(HEALTH_METRIC_NAMES)
    assert metrics["errors_today"] == 2
    assert metrics["failed_updates_today"] == 1
    assert metrics["last_update_failed"] == 0  # u4, the latest, completed
    assert metrics["last_update_duration_seconds"] == 5
    assert metrics["last_update_duration_vs_median"] == pytest.approx(5 / 60)  # median of the earlier completed: u1
    assert metrics["rows_last_update"] == 0  # u4 ingested nothing: NULL rows count as none
    assert metrics["backlog_files"] == 0
    assert metrics["lowest_pass_rate_today"] is None  # only bronze's own expectations ran today
    u4_end = today_at(0, 40) + dt.timedelta(seconds=5)
    expected_hours = (dt.datetime.now(dt.timezone.utc) - u4_end).total_seconds() / 3600
    assert metrics["hours_since_last_success"] == pytest.approx(expected_hours, abs=0.05)
    assert metrics["ingestion_latency_p95_seconds_24h"] is None  # no file state: not measured


def test_health_metrics_with_an_empty_event_log(fresh):
    observability_views(fresh, [])
    metrics = dict(rows(fresh, "SELECT metric_name, metric_value FROM health_metrics"))
    assert metrics["errors_today"] == 0 and metrics["last_update_failed"] is None
    assert metrics["hours_since_last_success"] is None and metrics["lowest_pass_rate_today"] is None


def test_tables_are_declared_in_dependency_order():
    names = [t.name for t in TABLES]
    for table in TABLES:
        for other in names:
            if other != table.name and f" {other} " in f" {table.sql} ".replace("\n", " "):
                assert names.index(other) < names.index(table.name), (table.name, other)
    assert by_name("update_status").partition_cols == ("update_date",)
