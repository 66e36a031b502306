"""Expectations enforced as Databricks does: warn keeps and counts, drop removes and counts, fail stops."""

from __future__ import annotations

import pytest
from chispa import assert_df_equality

from pipelines import expectations
from pipelines.local.adapter import enforce

RULES = (
    expectations.warn("positive", "amount > 0"),
    expectations.drop("has_id", "id IS NOT NULL"),
)


@pytest.fixture
def orders(spark):
    return spark.createDataFrame(
        [(1, 5.0), (2, -1.0), (None, 3.0), (None, None)], "id BIGINT, amount DOUBLE"
    )


def test_counts_per_expectation_treat_null_as_failed(orders):
    row = orders.agg(*expectations.count_columns(RULES)).collect()[0].asDict()
    assert row == {
        "passed__positive": 2, "failed__positive": 2,
        "passed__has_id": 2, "failed__has_id": 2,
    }


def test_warn_keeps_rows_and_drop_removes_them(spark, orders):
    actual = enforce(orders, "orders", RULES, streaming=False)
    expected = spark.createDataFrame([(1, 5.0), (2, -1.0)], "id BIGINT, amount DOUBLE")
    assert_df_equality(actual, expected, ignore_row_order=True)


def test_fail_raises_naming_the_expectation(orders):
    rules = (*RULES, expectations.fail("small", "amount < 4"))
    with pytest.raises(Exception) as info:
        enforce(orders, "orders", rules, streaming=False).collect()
    assert expectations.FAIL_MESSAGE_PREFIX in str(info.value)
    assert "'orders'" in str(info.value) and "small" in str(info.value)


def test_fail_passes_when_every_row_meets_it(orders):
    rules = (expectations.fail("not_huge", "coalesce(amount, 0) < 100"),)
    assert enforce(orders, "orders", rules, streaming=False).count() == 4


def test_by_action_builds_the_mappings_dp_expect_all_takes():
    assert expectations.by_action(RULES, expectations.Action.DROP) == {"has_id": "id IS NOT NULL"}
    assert expectations.by_action(RULES, expectations.Action.FAIL) == {}


def test_a_fail_expectation_in_a_cause_gets_databricks_error_class(orders):
    """A violation raised inside a write task surfaces as STREAM_FAILED / TASK_WRITE_FAILED whose text
    does not repeat it; the event log still names it, from the cause that does."""
    from pipelines.local.jvm_log import JvmException
    from pipelines.local.update.messages import databricks_message

    with pytest.raises(Exception) as info:
        enforce(orders, "orders", (expectations.fail("small", "amount < 4"),), streaming=False).collect()
    outer = ("[STREAM_FAILED] Query [id = q] terminated with exception: [TASK_WRITE_FAILED] Task failed while "
             "writing rows to file:/w/orders. SQLSTATE: 58030")
    chain = [JvmException("org.apache.spark.sql.streaming.StreamingQueryException", outer),
             JvmException("org.apache.spark.SparkRuntimeException", str(info.value))]
    message = databricks_message(outer, chain)
    assert message.startswith(f"[{expectations.EXPECTATION_ERROR_CLASS}]") and "small" in message
    assert databricks_message(outer, chain[:1]) == outer  # no violation anywhere: the text as it was
