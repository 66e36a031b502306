"""Expectations enforced as Databricks does: warn keeps and counts, drop removes and counts, fail stops."""

from __future__ import annotations

import pytest
from chispa import assert_df_equality

from pipelines import expectations as X
from pipelines.adapter import enforce

RULES = (
    X.warn("positive", "amount > 0"),
    X.drop("has_id", "id IS NOT NULL"),
)


@pytest.fixture
def orders(spark):
    return spark.createDataFrame(
        [(1, 5.0), (2, -1.0), (None, 3.0), (None, None)], "id BIGINT, amount DOUBLE"
    )


def test_counts_per_expectation_treat_null_as_failed(orders):
    row = orders.agg(*X.count_columns(RULES)).collect()[0].asDict()
    assert row == {
        "passed__positive": 2, "failed__positive": 2,
        "passed__has_id": 2, "failed__has_id": 2,
    }


def test_warn_keeps_rows_and_drop_removes_them(spark, orders):
    actual = enforce(orders, "orders", RULES, streaming=False)
    expected = spark.createDataFrame([(1, 5.0), (2, -1.0)], "id BIGINT, amount DOUBLE")
    assert_df_equality(actual, expected, ignore_row_order=True)


def test_fail_raises_naming_the_expectation(orders):
    rules = (*RULES, X.fail("small", "amount < 4"))
    with pytest.raises(Exception) as info:
        enforce(orders, "orders", rules, streaming=False).collect()
    assert X.FAIL_MESSAGE_PREFIX in str(info.value)
    assert "'orders'" in str(info.value) and "small" in str(info.value)


def test_fail_passes_when_every_row_meets_it(orders):
    rules = (X.fail("not_huge", "coalesce(amount, 0) < 100"),)
    assert enforce(orders, "orders", rules, streaming=False).count() == 4


def test_by_action_builds_the_mappings_dp_expect_all_takes():
    assert X.by_action(RULES, X.Action.DROP) == {"has_id": "id IS NOT NULL"}
    assert X.by_action(RULES, X.Action.FAIL) == {}
