"""One ingest table going quiet while the others get rows: `table_freshness` and the health metric
`tables_without_rows`, on event logs built here, against the times the test gives its updates."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

from tests.eventlog_builders import Inputs, Update

NOW = datetime(2026, 6, 15, 12, 0, tzinfo=timezone.utc)
DURATION = 60


def update(update_id: str, hours_ago: float, full_refresh: bool = False, **rows: int | None | str) -> Update:
    """An incremental update `hours_ago`, running the bronze flow of each table in `rows`: a count (its
    one micro-batch wrote that many rows; 0 is a measured 0), None (a micro-batch without a row count)
    or "idle" (the flow completed without a micro-batch)."""
    u = Update(update_id, NOW - timedelta(hours=hours_ago), full_refresh=full_refresh).state("RUNNING", 1)
    for table, n in rows.items():
        if n == "idle":
            u.ran(f"{table}_bronze", 2, 20, None)
        else:
            u.ran(f"{table}_bronze", 2, 20, n, batch_id=0)
    return u.state("COMPLETED", DURATION)


def ended(hours_ago: float) -> datetime:
    return NOW - timedelta(hours=hours_ago) + timedelta(seconds=DURATION)


def freshness_of(spark, inputs: Inputs) -> dict[str, dict]:
    session = spark.newSession()
    inputs.views(session, only=["table_freshness", "health_metrics"], now=NOW)
    rows = {r["table_name"]: r.asDict() for r in session.table("table_freshness").collect()}
    metric = [r for r in session.table("health_metrics").collect() if r["metric_name"] == "tables_without_rows"]
    rows["metric"] = {"value": metric[0]["metric_value"], "reason": metric[0]["reason"]}
    return rows


def since(row: dict) -> datetime | None:
    value = row["silent_since"]
    return value.replace(tzinfo=timezone.utc) if value is not None else None


@pytest.fixture(scope="module")
def freshness(spark) -> dict[str, dict]:
    """Six tables over four updates (limit 24 hours unless said):
    - orders got rows an hour ago;
    - customers last got rows 30 hours ago, then a measured 0 and an idle flow: past its limit;
    - payments is as quiet, without a limit of its own: not counted;
    - refunds last got rows 30 hours ago; a full refresh an hour ago wrote old rows again: past its limit;
    - invoices' newest update that did not write a measured 0 has no row count: not known;
    - returns, just added to the configuration, has not run yet: not known;
    - leads (limit 12) ran in every update and never got rows: silent since the first one started."""
    updates = [update("u30", 30, orders=10, customers=5, payments=3, refunds=4, invoices=2, leads=0),
               update("u20", 20, orders=10, customers=0, payments=0, invoices=None, leads=0),
               update("fr", 1, full_refresh=True, orders=10, customers=5, payments=3, refunds=4, invoices=2, leads=0),
               update("u1", 1, orders=10, customers="idle", payments=0, refunds=0, invoices=0, leads=0)]
    limits = {"orders": 24, "customers": 24, "payments": None, "refunds": 24, "invoices": 24, "returns": 24, "leads": 12}
    return freshness_of(spark, Inputs(updates, limits=limits))


def test_a_table_gets_rows_is_silent_since_the_update_that_wrote_them(freshness):
    assert since(freshness["orders"]) == ended(1) and freshness["orders"]["last_rows_update_id"] == "u1"


def test_measured_zeros_and_idle_flows_are_passed_over(freshness):
    assert since(freshness["customers"]) == ended(30) and freshness["customers"]["last_rows_update_id"] == "u30"
    assert since(freshness["payments"]) == ended(30) and freshness["payments"]["max_hours_without_rows"] is None


def test_a_full_refresh_rewriting_old_rows_is_not_new_rows(freshness):
    assert since(freshness["refunds"]) == ended(30)


def test_a_table_that_never_got_rows_is_silent_since_the_first_update_that_ran_it(freshness):
    assert since(freshness["leads"]) == NOW - timedelta(hours=30) and freshness["leads"]["last_rows_at"] is None


def test_a_row_count_not_known_makes_the_silence_unknown_never_measured(freshness):
    assert freshness["invoices"]["silent_since"] is None
    assert "update u20: 1 micro-batch(es) without a row count" in freshness["invoices"]["reason"]
    assert freshness["returns"]["silent_since"] is None
    assert freshness["returns"]["reason"] == "no incremental update has run its bronze flow yet"


def test_tables_past_their_own_limit_are_counted_even_when_others_are_not_known(freshness):
    assert freshness["metric"] == {"value": 3.0, "reason": None}  # customers, refunds, leads


def test_with_none_past_its_limit_an_unknown_silence_makes_the_metric_unknown_saying_which(spark):
    inputs = Inputs([update("u30", 30, orders=10, customers=5), update("u2", 2, orders=10, customers=None),
                     update("u1", 1, orders=10, customers=0)],
                    limits={"orders": 24, "customers": 24})
    metric = freshness_of(spark, inputs)["metric"]
    assert metric["value"] is None
    assert metric["reason"] == ("not known for: customers (rows not known for the last update that did not write "
                                "a measured 0 (update u2: 1 micro-batch(es) without a row count))")
