"""`lakewatch report`: each update's duration against the median of the completed incremental updates
before it (none before three of them), rows to bronze, lowest business pass rate, files waiting, and
the insight of a failure; the text fits a narrow terminal."""

from __future__ import annotations

import pytest

from pipelines.report import MIN_HISTORY, REPORT_SQL, UpdateLine, render
from tests.eventlog_builders import Update, completed_update, observability_views, today_at

NEEDED = ["update_status", "flow_throughput", "expectation_results", "backlog", "run_insights", "anomalies", "pipelines_status"]
GZIP = (("org.apache.spark.SparkException", "[FAILED_READ_FILE.NO_HINT] Encountered error while reading file o.json.gz"),
        ("java.io.EOFException", "Unexpected end of input stream"))


def failed(update_id: str, minute: int) -> Update:
    u = Update(update_id, today_at(1, minute))
    u.state("RUNNING", 1).flow("orders_bronze", "RUNNING", 2).flow("orders_bronze", "FAILED", 9, error=GZIP)
    return u.state("FAILED", 10, error=GZIP[0])


@pytest.fixture(scope="module")
def report(spark):
    session = spark.newSession()
    updates = [
        completed_update("a", today_at(1, 0), duration=60, rows=100, clean_failed=10),
        completed_update("b", today_at(1, 5), duration=80, rows=100, clean_failed=0),
        failed("c", 10),
        completed_update("d", today_at(1, 15), duration=500, rows=100, full_refresh=True),  # not in the baseline
        completed_update("e", today_at(1, 20), duration=70, rows=100, backlog_files=4),
        completed_update("f", today_at(1, 25), duration=140, rows=250),
    ]
    observability_views(session, updates, only=NEEDED)
    return {r["update_id"]: UpdateLine(r.asDict(recursive=True)) for r in session.sql(REPORT_SQL.format(last=10)).collect()}


def test_newest_first_and_limited(spark, report):
    assert list(report) == ["f", "e", "d", "c", "b", "a"]


def test_no_baseline_before_three_completed_incremental_updates(report):
    # a, b and e are the completed incremental updates; the full refresh d and the failure c do not count.
    assert [(u, report[u]["baseline_updates"], report[u]["baseline_seconds"]) for u in "abcde"] == [
        ("a", 0, None), ("b", 1, None), ("c", 2, None), ("d", 2, None), ("e", 2, None)]
    assert MIN_HISTORY == 3


def test_the_baseline_is_the_median_of_the_earlier_completed_incremental_updates(report):
    f = report["f"]
    assert (f["baseline_updates"], f["baseline_seconds"], f["duration_seconds"]) == (3, 70.0, 140.0)
    assert "2.0x the median 70.0 s of 3 before" in f.duration_text()


def test_rows_pass_rate_backlog_and_the_failure_insight(report):
    assert (report["f"]["bronze_rows"], report["a"]["lowest_pass_rate"], report["e"]["backlog_files"]) == (250, 0.9, 4)
    assert report["b"]["lowest_pass_rate"] == 1.0 and report["f"]["lowest_pass_rate"] is None  # no clean table counted
    c = report["c"]
    assert (c["final_state"], c["category"], c["failing_flow"]) == ("FAILED", "unreadable_file", "orders_bronze")


def test_text_fits_a_narrow_terminal_and_says_why(report):
    text = render(list(report.values()), None, width=44)
    assert all(len(line) <= 44 for line in text.splitlines())
    assert "why: unreadable_file in flow orders_bronze" in " ".join(text.split())
    assert "lowest pass rate: no business expectation counted" in " ".join(text.split())
    assert "root cause: EOFException: Unexpected end of input stream" in " ".join(text.split())


def test_an_unusual_value_is_named_with_its_baseline(spark):
    session = spark.newSession()
    usual = [completed_update(f"u{i}", today_at(2, i * 5), duration=60, rows=100) for i in range(6)]
    observability_views(session, usual + [completed_update("slow", today_at(3, 0), duration=300, rows=100)],
                        only=NEEDED)
    lines = {r["update_id"]: UpdateLine(r.asDict(recursive=True)) for r in session.sql(REPORT_SQL.format(last=2)).collect()}
    assert lines["slow"].unusual() == [
        "unusual: update_duration_seconds of lakewatch_ingest: 300, a spike from the median 60 (score 28.0)"]
    assert lines["u5"].unusual() == []
    assert "unusual: update_duration_seconds" in render(list(lines.values()), None, width=60).replace("\n      ", " ")
