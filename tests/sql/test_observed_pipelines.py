"""Other pipelines observed through their event logs (lakewatch.observed_event_logs): `events` reads
each log (a flow per log, here a union of the same query over each), and the tables keep the pipelines
apart. Oracle: the updates and states the test writes into two event logs, one of them another
pipeline's (plain SDP: one materialized view with expectations, no Auto Loader pattern)."""

from __future__ import annotations

import datetime as dt

import pytest

from tests.eventlog_builders import (OTHER_ID, OTHER_LOG, OTHER_NAME, PIPELINE, PIPELINE_ID, completed_update,
                                    in_pipeline, observability_views, plain_pipeline_update, utc)

NOW = utc(2026, 6, 15, 12)
MISSING_LOG = "t_never_ran_log"
other_update = plain_pipeline_update


@pytest.fixture(scope="module")
def two_pipelines(spark):
    """The ingest pipeline completes three times; orders_daily fails, completes (a failed expectation),
    then fails last of all. Ingest's completions fall between the other's updates, so a history that
    did not keep the pipelines apart would close orders_daily's incidents with ingest's successes."""
    session = spark.newSession()
    ingest = [completed_update("i1", NOW - dt.timedelta(hours=5)),
              completed_update("i2", NOW - dt.timedelta(hours=3, minutes=50)),
              completed_update("i3", NOW - dt.timedelta(minutes=40))]
    other = [other_update("o1", NOW - dt.timedelta(hours=4), "FAILED"),
             other_update("o2", NOW - dt.timedelta(hours=3), "COMPLETED", failed=2),
             other_update("o3", NOW - dt.timedelta(minutes=10), "FAILED")]
    observability_views(session, ingest, observed={OTHER_LOG: other}, unread=[MISSING_LOG], now=NOW)
    return session


def table(spark, sql: str) -> list[dict]:
    return [r.asDict() for r in spark.sql(sql).collect()]


def test_every_update_of_both_logs_is_in_update_status_with_its_pipeline_and_log(two_pipelines):
    got = {r["update_id"]: (r["pipeline_name"], r["event_log"], r["final_state"])
           for r in table(two_pipelines, "SELECT * FROM update_status")}
    assert got == {"i1": (PIPELINE, "t_event_log", "COMPLETED"), "i2": (PIPELINE, "t_event_log", "COMPLETED"),
                   "i3": (PIPELINE, "t_event_log", "COMPLETED"),
                   "o1": (OTHER_NAME, OTHER_LOG, "FAILED"), "o2": (OTHER_NAME, OTHER_LOG, "COMPLETED"),
                   "o3": (OTHER_NAME, OTHER_LOG, "FAILED")}
    errors = {(r["update_id"], r["pipeline_name"]) for r in table(two_pipelines, "SELECT * FROM errors")}
    assert {("o1", OTHER_NAME), ("o3", OTHER_NAME)} <= errors and all(u.startswith("o") for u, _ in errors)


def test_incidents_are_per_pipeline(two_pipelines):
    """o1's incident is closed by orders_daily's o2, not by ingest's i2 that completed in between; o3's
    stays open: nothing of orders_daily completed after it."""
    incidents = {r["incident_id"]: r for r in table(two_pipelines, "SELECT * FROM incidents")}
    assert sorted(incidents) == ["o1", "o3"]
    assert (incidents["o1"]["pipeline_name"], incidents["o1"]["status"], incidents["o1"]["closed_by_update_id"]) \
        == (OTHER_NAME, "CLOSED", "o2")
    assert (incidents["o3"]["pipeline_name"], incidents["o3"]["status"]) == (OTHER_NAME, "OPEN")
    # another pipeline's incident explains only the counts over every pipeline
    assert sorted(incidents["o3"]["explains"]) == ["errors_last_24h", "failed_updates_last_24h"]


def test_the_ingest_metrics_read_the_ingest_pipeline_and_the_counts_every_pipeline(two_pipelines):
    metrics = {r["metric_name"]: r for r in table(two_pipelines, "SELECT * FROM health_metrics")}
    # the latest update of all is o3 (FAILED); the ingest pipeline's is i3 (COMPLETED)
    assert (metrics["last_update_failed"]["metric_value"], metrics["last_update_failed"]["explained_by"]) == (0, None)
    ended = table(two_pipelines, "SELECT end_time FROM update_status WHERE update_id = 'i3'")[0]["end_time"]
    assert metrics["hours_since_last_success"]["metric_value"] == pytest.approx(
        (NOW.replace(tzinfo=None) - ended).total_seconds() / 3600)
    assert metrics["failed_updates_last_24h"]["metric_value"] == 2  # o1 and o3
    # o3's incident is another pipeline's: lakewatch_pipeline_failing pages for it, not lakewatch_incident,
    # so an ingest incident opening meanwhile would still page
    assert (metrics["open_incidents"]["metric_value"], metrics["pipelines_failing"]["metric_value"]) == (0, 1)
    assert metrics["pipelines_failing"]["alert_reason"].startswith(f"failing: {OTHER_NAME}: incident o3 (")
    # o3's open incident explains the errors and failures it counts: one page, lakewatch_pipeline_failing's
    assert (metrics["failed_updates_last_24h"]["alert_value"], metrics["failed_updates_last_24h"]["explained_by"]) == (0, "o3")
    assert metrics["failed_updates_last_24h"]["alert_reason"].endswith("which lakewatch_pipeline_failing pages for")
    assert metrics["errors_last_24h"]["metric_value"] > 0 and metrics["errors_last_24h"]["alert_value"] == 0
    # the other pipeline's failed expectation (known_currency: 8 of 10) is in the pass-rate metric
    assert metrics["lowest_pass_rate_last_24h"]["metric_value"] == pytest.approx(0.8)


def test_pipelines_status_has_one_row_per_configured_event_log(two_pipelines):
    got = {r["event_log"]: r for r in table(two_pipelines, "SELECT * FROM pipelines_status")}
    assert set(got) == {"t_event_log", OTHER_LOG, MISSING_LOG}
    ingest, other, missing = got["t_event_log"], got[OTHER_LOG], got[MISSING_LOG]
    assert (ingest["pipeline_name"], ingest["follows_lakewatch_pattern"], ingest["auto_loader_tables"]) == (PIPELINE, True, "apply")
    assert (ingest["updates"], ingest["failed_updates"], ingest["last_update_id"], ingest["open_incident_id"]) == (3, 0, "i3", None)
    assert (other["pipeline_id"], other["follows_lakewatch_pattern"]) == (OTHER_ID, False)
    assert other["auto_loader_tables"].startswith("do not apply")
    assert (other["updates"], other["failed_updates"], other["last_update_id"], other["last_update_state"]) == (3, 2, "o3", "FAILED")
    assert (other["last_failed_update_id"], other["open_incident_id"]) == ("o3", "o3")
    assert other["last_success_end"] == table(two_pipelines, "SELECT end_time FROM update_status WHERE update_id = 'o2'")[0]["end_time"]
    assert (missing["read_status"], missing["updates"], missing["pipeline_id"]) == ("not_read", 0, None)
    assert "does not exist" in missing["not_read_reason"] and ingest["read_status"] == other["read_status"] == "read"


def test_expectations_of_the_other_pipeline_are_counted_per_update(two_pipelines):
    got = {(r["update_id"], r["expectation"]): (r["passed_records"], r["failed_records"])
           for r in table(two_pipelines, "SELECT * FROM expectation_results WHERE dataset = 'orders_daily'")}
    assert got == {("o2", "has_orders"): (10, 0), ("o2", "known_currency"): (8, 2)}


@pytest.fixture(scope="module")
def same_names(spark):
    """Two pipelines with the same datasets and flows (orders_bronze, orders): the ingest pipeline and
    a copy of it in another schema. Their counts differ, so a table that mixed them would show sums."""
    session = spark.newSession()
    ingest = [completed_update("i1", NOW - dt.timedelta(hours=5), backlog_files=3, clean_failed=5),
              completed_update("i2", NOW - dt.timedelta(hours=1), backlog_files=5, clean_failed=5)]
    other = [in_pipeline(completed_update("o1", NOW - dt.timedelta(hours=3), rows=200, backlog_files=10,
                                          clean_failed=50), OTHER_ID, OTHER_NAME)]
    observability_views(session, ingest, observed={OTHER_LOG: other}, now=NOW, only=[
        "flow_throughput_daily", "flow_bottlenecks", "backlog", "expectation_results_daily", "expectation_results_weekly"])
    return session


def test_tables_over_many_updates_keep_pipelines_with_the_same_flow_names_apart(same_names):
    daily = {(r["pipeline_id"], r["pipeline_name"]): (r["updates"], r["rows_written"]) for r in table(
        same_names, "SELECT * FROM flow_throughput_daily WHERE flow_name = 'orders_bronze'")}
    assert daily == {(PIPELINE_ID, PIPELINE): (2, 200), (OTHER_ID, OTHER_NAME): (1, 200)}
    slowest = {r["pipeline_id"]: r["updates"] for r in table(
        same_names, "SELECT * FROM flow_bottlenecks WHERE flow_name = 'orders_bronze'")}
    assert slowest == {PIPELINE_ID: 2, OTHER_ID: 1}
    # the backlog's change is against the same pipeline's update before (5 - 3), not o1's 10 in between
    change = {r["update_id"]: r["files_change"] for r in table(same_names, "SELECT * FROM backlog")}
    assert change == {"i1": None, "i2": 2, "o1": None}
    for name in ("expectation_results_daily", "expectation_results_weekly"):
        failed = {(r["pipeline_id"], r["pipeline_name"]): r["failed_records"] for r in table(
            same_names, f"SELECT * FROM {name} WHERE dataset = 'orders' AND expectation = 'non_negative_amount'")}
        assert failed == {(PIPELINE_ID, PIPELINE): 10, (OTHER_ID, OTHER_NAME): 50}, name
