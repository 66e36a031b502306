"""How an alert's result is evaluated, as Databricks SQL alerts do, without Spark: the aggregation of
the source column, the comparison with a threshold value or column, and the states of an empty
result, a NULL value and a missing column (UNKNOWN and ERROR, never OK)."""

from __future__ import annotations

import pytest

from pipelines.alerts import AlertSpec, aggregate, evaluate, format_result


def spec(**changes) -> AlertSpec:
    base = dict(key="a", display_name="a", query_text="", operator="GREATER_THAN", source="v",
                source_aggregation=None, threshold_value=0.0, empty_result_state="OK")
    base.update(changes)
    return AlertSpec(**base)


@pytest.mark.parametrize("aggregation, expected", [
    (None, 3), ("SUM", 12.0), ("COUNT", 3), ("COUNT_DISTINCT", 2), ("AVG", 4.0), ("MEDIAN", 3.0),
    ("MIN", 3.0), ("MAX", 6.0), ("STDDEV", pytest.approx(3 ** 0.5)),
])
def test_aggregations_skip_nulls_and_unset_means_first_row(aggregation, expected):
    assert aggregate([3, None, 6, 3], aggregation) == expected


def test_comparison_operators_and_thresholds():
    rows = [{"v": 5.0, "limit": 4.0}]
    assert evaluate(spec(operator="GREATER_THAN", threshold_value=4.0), rows).state == "TRIGGERED"
    assert evaluate(spec(operator="LESS_THAN_OR_EQUAL", threshold_value=4.0), rows).state == "OK"
    assert evaluate(spec(operator="EQUAL", threshold_value=5.0), rows).state == "TRIGGERED"
    assert evaluate(spec(operator="NOT_EQUAL", threshold_value=5.0), rows).state == "OK"
    assert evaluate(spec(threshold_value=None, threshold_column="limit"), rows).state == "TRIGGERED"
    assert evaluate(spec(operator="IS_NULL"), [{"v": None}]).state == "TRIGGERED"
    assert evaluate(spec(operator="IS_NOT_NULL"), [{"v": None}]).state == "OK"
    assert evaluate(spec(operator="EQUAL", threshold_value="FAILED"), [{"v": "FAILED"}]).state == "TRIGGERED"


def test_empty_result_null_value_and_missing_column():
    assert evaluate(spec(empty_result_state="TRIGGERED"), []).state == "TRIGGERED"
    assert evaluate(spec(empty_result_state="OK"), []).state == "OK"
    assert evaluate(spec(), [{"v": None}]).state == "UNKNOWN"
    unknown = evaluate(spec(source_aggregation="MAX"), [{"v": None, "reason": "not measured: why"}])
    assert unknown.state == "UNKNOWN" and unknown.reason == "not measured: why"
    assert "not measured: why" in format_result(unknown)
    assert evaluate(spec(operator="LESS_THAN", threshold_value=0.99), [{"v": float("nan")}]).state == "UNKNOWN"
    missing = evaluate(spec(source="nope"), [{"v": 1}])
    assert missing.state == "ERROR" and "nope" in (missing.error or "")
