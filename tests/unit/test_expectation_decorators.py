"""Databricks' expectation decorators for plain pyspark.pipelines on the local engine
(pipelines/local/expectation_decorators.py): what each records, in which order, and that they are on
`pyspark.pipelines` only while definitions are registered. Oracle: Databricks' documented semantics
(`expect` warns, `expect_or_drop` drops, `expect_or_fail` fails; `expect_all*` take a name -> condition
mapping)."""

from __future__ import annotations

import pyspark.pipelines as dp

from pipelines.expectations import Action, Expectation
from pipelines.local import expectation_decorators


def test_the_decorators_record_their_expectations_in_the_order_written():
    with expectation_decorators.installed():
        @dp.expect("has_id", "id IS NOT NULL")
        @dp.expect_or_drop("positive", "amount > 0")
        @dp.expect_or_fail("known_day", "day IS NOT NULL")
        @dp.expect_all({"a": "a > 0", "b": "b > 0"})
        @dp.expect_all_or_drop({"c": "c > 0"})
        @dp.expect_all_or_fail({"d": "d > 0"})
        def dataset() -> None:
            return None

    assert expectation_decorators.declared(dataset) == (
        Expectation("has_id", "id IS NOT NULL", Action.WARN),
        Expectation("positive", "amount > 0", Action.DROP),
        Expectation("known_day", "day IS NOT NULL", Action.FAIL),
        Expectation("a", "a > 0", Action.WARN),
        Expectation("b", "b > 0", Action.WARN),
        Expectation("c", "c > 0", Action.DROP),
        Expectation("d", "d > 0", Action.FAIL),
    )
    assert dataset() is None  # the query function itself is unchanged


def test_a_function_without_expectations_declares_none():
    assert expectation_decorators.declared(lambda: None) == ()


def test_the_decorators_are_there_only_while_installed_and_never_replace_the_module_s_own():
    names = set(expectation_decorators.DECORATORS)
    own = {name for name in names if hasattr(dp, name)}  # a pyspark that ships them keeps its own
    with expectation_decorators.installed() as added:
        assert set(added) == names - own
        assert all(hasattr(dp, name) for name in names)
    assert {name for name in names if hasattr(dp, name)} == own
