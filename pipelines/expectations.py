"""Expectations: named SQL conditions with an action, declared once per dataset.

Databricks applies them with `dp.expect_all`, `dp.expect_all_or_drop` and `dp.expect_all_or_fail`;
the local engine enforces the same actions and counts passed and failed rows (see `adapter`).
A row fails an expectation when its condition is false or NULL.
"""

from __future__ import annotations

import enum
import re
from dataclasses import dataclass
from typing import Iterable, Sequence

from pyspark.sql import Column
from pyspark.sql import functions as F

NAME_PATTERN = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,127}$")

# Prefix of the local engine's error message for a violated `fail` expectation; the event log
# writer reports it under Databricks' error class for the same situation.
FAIL_MESSAGE_PREFIX = "lakewatch expectation violated:"
EXPECTATION_ERROR_CLASS = "EXPECTATION_VIOLATION.VERIFY_FAILED"
DROPPED_METRIC = "dropped_records"


class Action(str, enum.Enum):
    """What happens to a row that fails: kept and counted, dropped and counted, or the update fails."""

    WARN = "warn"
    DROP = "drop"
    FAIL = "fail"


@dataclass(frozen=True)
class Expectation:
    name: str
    condition: str
    action: Action = Action.WARN

    def passes(self) -> Column:
        """True when the row meets the condition; NULL counts as not met."""
        return F.coalesce(F.expr(self.condition), F.lit(False))

    def passes_sql(self) -> str:
        """`passes` as SQL text, for statements run outside a pipeline (`lakewatch replay --sql`)."""
        return f"coalesce(({self.condition}), false)"


def warn(name: str, condition: str) -> Expectation:
    return Expectation(name, condition, Action.WARN)


def drop(name: str, condition: str) -> Expectation:
    return Expectation(name, condition, Action.DROP)


def fail(name: str, condition: str) -> Expectation:
    return Expectation(name, condition, Action.FAIL)


def by_action(expectations: Iterable[Expectation], action: Action) -> dict[str, str]:
    """The `{name: condition}` mapping that `dp.expect_all*` takes, for one action."""
    return {e.name: e.condition for e in expectations if e.action == action}


def all_pass(expectations: Sequence[Expectation], action: Action) -> Column:
    """True when the row meets every expectation with the given action (true when there are none)."""
    result: Column = F.lit(True)
    for e in expectations:
        if e.action == action:
            result = result & e.passes()
    return result


def fail_message(dataset: str, expectations: Sequence[Expectation]) -> Column:
    """The error text raised for a row that fails a `fail` expectation: names the expectations."""
    parts = [
        F.when(~e.passes(), F.lit(e.name)) for e in expectations if e.action == Action.FAIL
    ]
    return F.concat(
        F.lit(f"{FAIL_MESSAGE_PREFIX} dataset '{dataset}', expectation(s) "),
        F.concat_ws(", ", *parts),
        F.lit(" failed on a row; the update stops (action fail)."),
    )


def metric_names(expectation: Expectation) -> tuple[str, str]:
    """Observed-metric column names for one expectation's passed and failed counts."""
    return f"passed__{expectation.name}", f"failed__{expectation.name}"


def count_columns(expectations: Sequence[Expectation]) -> list[Column]:
    """Aggregate columns that count passed and failed rows per expectation (for `observe`)."""
    columns: list[Column] = []
    for e in expectations:
        passed, failed = metric_names(e)
        columns.append(F.count_if(e.passes()).alias(passed))
        columns.append(F.count_if(~e.passes()).alias(failed))
    return columns
