"""Auto Loader rescue semantics on every kind of bad line (pipelines/rescue.py)."""

from __future__ import annotations

import datetime as dt

import pytest
from chispa import assert_df_equality

from pipelines.rescue import rescue_json_lines
from tests.builders import FILE, ORDERS_COLUMNS, line, order, rescued

OUT_SCHEMA = (
    "order_id BIGINT, amount DOUBLE, order_ts TIMESTAMP, note STRING, "
    "_rescued_data STRING, _corrupt_record STRING, _source_file STRING"
)
TS = dt.datetime(2026, 11, 1, 10, 0, 0)


def rescue(spark, *lines: str):
    df = spark.createDataFrame([(text, FILE) for text in lines], "value STRING, _source_file STRING")
    return rescue_json_lines(df, ORDERS_COLUMNS, passthrough=["_source_file"])


def expected(spark, *rows: tuple):
    return spark.createDataFrame([(*r, FILE) for r in rows], OUT_SCHEMA)


def test_good_line_is_typed_and_not_rescued(spark):
    actual = rescue(spark, line(order()))
    assert_df_equality(actual, expected(spark, (1, 9.5, TS, "ok", None, None)))


@pytest.mark.parametrize(
    "text",
    [
        '{"order_id": 1, "amount": 9.5',  # truncated
        "this is not json",
        "[1, 2, 3]",  # JSON, but not an object
        '"just a string"',
        "{order_id: 1}",  # unquoted key
    ],
)
def test_line_that_is_not_a_json_object_is_kept_as_corrupt(spark, text):
    actual = rescue(spark, text)
    assert_df_equality(actual, expected(spark, (None, None, None, None, None, text)))


def test_type_mismatch_nulls_the_column_and_rescues_the_raw_value(spark):
    actual = rescue(spark, line(order(order_id="n/a", amount="1.5")))
    assert_df_equality(
        actual,
        expected(spark, (None, None, TS, "ok", rescued(order_id="n/a", amount="1.5"), None)),
    )


def test_unknown_field_is_rescued_and_the_row_keeps_its_columns(spark):
    actual = rescue(spark, line(order(coupon="A1", nested={"x": [1, 2]})))
    assert_df_equality(
        actual,
        expected(spark, (1, 9.5, TS, "ok", rescued(coupon="A1", nested='{"x":[1,2]}'), None)),
    )


def test_case_variant_key_is_rescued_not_matched(spark):
    record = order()
    record["Amount"] = record.pop("amount")
    actual = rescue(spark, line(record))
    assert_df_equality(actual, expected(spark, (1, None, TS, "ok", rescued(Amount="9.5"), None)))


def test_json_null_is_not_rescued(spark):
    actual = rescue(spark, line(order(note=None, extra=None)))
    assert_df_equality(actual, expected(spark, (1, 9.5, TS, None, None, None)))


def test_string_column_accepts_numbers_as_text(spark):
    actual = rescue(spark, line(order(note=42)))
    assert_df_equality(actual, expected(spark, (1, 9.5, TS, "42", None, None)))


def test_integer_beyond_bigint_is_a_mismatch(spark):
    actual = rescue(spark, line(order(order_id=99999999999999999999)))
    assert_df_equality(
        actual, expected(spark, (None, 9.5, TS, "ok", rescued(order_id="99999999999999999999"), None))
    )


def test_blank_lines_are_not_records(spark):
    actual = rescue(spark, "", "   ", "\t", line(order()))
    assert actual.count() == 1


def test_record_with_its_own_file_path_key_loses_nothing(spark):
    actual = rescue(spark, line(order(_file_path="theirs")))
    value = actual.collect()[0]["_rescued_data"]
    assert value == '{"_file_path":"theirs","_file_path":"' + FILE + '"}'


def test_every_line_comes_out_exactly_once(spark):
    lines = [line(order(order_id=i)) for i in range(20)] + ["bad"] * 3 + [line(order(x=1))] * 2
    assert rescue(spark, *lines).count() == len(lines)
