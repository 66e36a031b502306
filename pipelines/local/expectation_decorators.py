"""Databricks' expectation decorators (`dp.expect`, `dp.expect_or_drop`, `dp.expect_or_fail` and their
`expect_all*` forms) for pipelines written with plain `pyspark.pipelines` and run by the local engine.

Open-source SDP has no expectations, so a pipeline of a user's own that declares them could not run
locally. `install` adds the six decorators to the `pyspark.pipelines` module while definition files
are registered (each only where the module has none of that name). Applied under `@dp.table` or
`@dp.materialized_view`, as Databricks documents them, they record the expectations on the query
function; the recording registry (`registry.RecordingRegistry.register_flow`) then applies them to the
flow through the local engine's `query` decorator, the same enforcement and counting as lakewatch's
own datasets get (warn counts, drop removes, fail stops the update), so their counts reach the event
log's `flow_progress` events.
"""

from __future__ import annotations

import contextlib
from typing import Any, Callable, Iterator, Mapping, TypeVar

import pyspark.pipelines as dp

from pipelines.expectations import Action, Expectation

QueryFunction = TypeVar("QueryFunction", bound=Callable[..., Any])
# The attribute of a query function that holds its expectations, in the order they were declared.
EXPECTATIONS_ATTR = "_lakewatch_expectations"


def declared(function: Callable[..., Any]) -> tuple[Expectation, ...]:
    """The expectations the decorators recorded on `function` (none: an empty tuple)."""
    return tuple(getattr(function, EXPECTATIONS_ATTR, ()))


def _adding(rules: list[Expectation]) -> Callable[[QueryFunction], QueryFunction]:
    def decorate(function: QueryFunction) -> QueryFunction:
        # Decorators apply bottom-up; prepending keeps the order in which they are written.
        setattr(function, EXPECTATIONS_ATTR, (*rules, *declared(function)))
        return function

    return decorate


def _one(action: Action) -> Callable[[str, str], Callable[[QueryFunction], QueryFunction]]:
    def expectation(description: str, invariant: str) -> Callable[[QueryFunction], QueryFunction]:
        return _adding([Expectation(description, invariant, action)])

    expectation.__name__ = {Action.WARN: "expect", Action.DROP: "expect_or_drop", Action.FAIL: "expect_or_fail"}[action]
    return expectation


def _all(action: Action) -> Callable[[Mapping[str, str]], Callable[[QueryFunction], QueryFunction]]:
    def expectations(expectations: Mapping[str, str]) -> Callable[[QueryFunction], QueryFunction]:
        return _adding([Expectation(name, condition, action) for name, condition in expectations.items()])

    expectations.__name__ = {Action.WARN: "expect_all", Action.DROP: "expect_all_or_drop",
                             Action.FAIL: "expect_all_or_fail"}[action]
    return expectations


DECORATORS: dict[str, Callable[..., Any]] = {
    "expect": _one(Action.WARN),
    "expect_or_drop": _one(Action.DROP),
    "expect_or_fail": _one(Action.FAIL),
    "expect_all": _all(Action.WARN),
    "expect_all_or_drop": _all(Action.DROP),
    "expect_all_or_fail": _all(Action.FAIL),
}


@contextlib.contextmanager
def installed() -> Iterator[list[str]]:
    """The decorators on `pyspark.pipelines` for the duration (those it lacks), then removed again;
    yields the names added."""
    added = [name for name in DECORATORS if not hasattr(dp, name)]
    for name in added:
        setattr(dp, name, DECORATORS[name])
    try:
        yield added
    finally:
        for name in added:
            delattr(dp, name)
