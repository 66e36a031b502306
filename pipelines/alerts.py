"""Evaluates the bundle's SQL alerts (alerts v2) on the local tables, exactly as Databricks does.

An alert runs its `query_text`; with no rows its state is `evaluation.empty_result_state`;
otherwise the `source` column is reduced by its aggregation (first row when unset) and compared with
the threshold (a value, or another column reduced the same way) by the comparison operator. The
alert is TRIGGERED when the comparison holds, OK when it does not, UNKNOWN when the value (or the
threshold) is NULL, ERROR when the query fails. NULL is never OK: a metric that could not be measured
is not a healthy one. When the query also returns a `reason` column (lakewatch's health metrics say
there why a value is NULL, or which incident explains it), its first value is kept with the result.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass
from typing import Any, Callable, Mapping, Sequence

from pipelines.bundle import Bundle
from pipelines.errors import engine_message

OPERATORS: dict[str, Callable[[Any, Any], bool]] = {
    "GREATER_THAN": lambda a, b: a > b,
    "GREATER_THAN_OR_EQUAL": lambda a, b: a >= b,
    "LESS_THAN": lambda a, b: a < b,
    "LESS_THAN_OR_EQUAL": lambda a, b: a <= b,
    "EQUAL": lambda a, b: a == b,
    "NOT_EQUAL": lambda a, b: a != b,
}
NULL_OPERATORS = ("IS_NULL", "IS_NOT_NULL")
EMPTY_RESULT_STATES = ("UNKNOWN", "TRIGGERED", "OK", "ERROR")


def _values(rows: Sequence[Mapping[str, Any]], column: str) -> list[Any]:
    if rows and column not in rows[0]:
        raise KeyError(f"the query returns no column '{column}' (columns: {', '.join(rows[0])})")
    return [r[column] for r in rows]


def aggregate(values: Sequence[Any], aggregation: str | None) -> Any:
    """Reduces a column as Databricks' alert evaluation does; None aggregation means the first row."""
    if not aggregation:
        return values[0] if values else None
    present = [v for v in values if v is not None]
    if aggregation == "COUNT":
        return len(present)
    if aggregation == "COUNT_DISTINCT":
        return len(set(present))
    if not present:
        return None
    numbers = [float(v) for v in present]
    if aggregation == "SUM":
        return sum(numbers)
    if aggregation == "AVG":
        return sum(numbers) / len(numbers)
    if aggregation == "MEDIAN":
        return statistics.median(numbers)
    if aggregation == "MIN":
        return min(numbers)
    if aggregation == "MAX":
        return max(numbers)
    if aggregation == "STDDEV":
        return statistics.stdev(numbers) if len(numbers) > 1 else None
    raise ValueError(f"unknown aggregation {aggregation}")


@dataclass(frozen=True)
class AlertSpec:
    key: str
    display_name: str
    query_text: str
    operator: str
    source: str
    source_aggregation: str | None
    threshold_value: Any = None
    threshold_column: str | None = None
    threshold_aggregation: str | None = None
    empty_result_state: str = "UNKNOWN"
    retrigger_seconds: int | None = None  # while TRIGGERED, notify again after this long (None: once)
    notify_on_ok: bool = False  # notify when the alert returns to OK
    schedule: str | None = None  # the Quartz cron it is evaluated on

    @classmethod
    def from_resource(cls, key: str, resource: Mapping[str, Any]) -> "AlertSpec":
        evaluation = resource["evaluation"]
        threshold = evaluation.get("threshold") or {}
        value = threshold.get("value") or {}
        column = threshold.get("column") or {}
        notification = evaluation.get("notification") or {}
        literal = next((value[k] for k in ("double_value", "string_value", "bool_value") if k in value), None)
        if "double_value" in value and literal is not None:
            literal = float(literal)
        return cls(
            key=key,
            display_name=str(resource.get("display_name", key)),
            query_text=str(resource["query_text"]),
            operator=str(evaluation["comparison_operator"]),
            source=str(evaluation["source"]["name"]),
            source_aggregation=evaluation["source"].get("aggregation"),
            threshold_value=literal,
            threshold_column=column.get("name"),
            threshold_aggregation=column.get("aggregation"),
            empty_result_state=str(evaluation.get("empty_result_state", "UNKNOWN")),
            retrigger_seconds=int(notification["retrigger_seconds"]) if notification.get("retrigger_seconds") else None,
            notify_on_ok=bool(notification.get("notify_on_ok", False)),
            schedule=(resource.get("schedule") or {}).get("quartz_cron_schedule"),
        )


@dataclass(frozen=True)
class AlertResult:
    spec: AlertSpec
    state: str  # TRIGGERED, OK, UNKNOWN, ERROR
    value: Any = None
    threshold: Any = None
    error: str | None = None
    reason: str | None = None  # why the value is NULL, or the incident that explains it, when the query says


def _comparable(value: Any, threshold: Any) -> tuple[Any, Any]:
    if isinstance(threshold, bool) or isinstance(value, bool):
        return str(value).lower(), str(threshold).lower()
    if isinstance(threshold, (int, float)) and not isinstance(threshold, bool):
        return float(value), float(threshold)
    return str(value), str(threshold)


def _reason(rows: Sequence[Mapping[str, Any]]) -> str | None:
    return next((str(r["reason"]) for r in rows if r.get("reason") is not None), None)


def evaluate(spec: AlertSpec, rows: Sequence[Mapping[str, Any]]) -> AlertResult:
    """The alert's state for the rows its query returned."""
    if not rows:
        return AlertResult(spec, spec.empty_result_state)
    try:
        value = aggregate(_values(rows, spec.source), spec.source_aggregation)
        if spec.operator in NULL_OPERATORS:
            holds = (value is None) == (spec.operator == "IS_NULL")
            return AlertResult(spec, "TRIGGERED" if holds else "OK", value)
        threshold = (
            aggregate(_values(rows, spec.threshold_column), spec.threshold_aggregation)
            if spec.threshold_column else spec.threshold_value
        )
        if value is None or threshold is None or (isinstance(value, float) and math.isnan(value)):
            return AlertResult(spec, "UNKNOWN", value, threshold, reason=_reason(rows))
        left, right = _comparable(value, threshold)
        holds = OPERATORS[spec.operator](left, right)
        return AlertResult(spec, "TRIGGERED" if holds else "OK", value, threshold, reason=_reason(rows))
    except (KeyError, ValueError, TypeError) as e:
        return AlertResult(spec, "ERROR", error=str(e))


def load_alerts(bundle: Bundle) -> list[AlertSpec]:
    """Every alert resource of the bundle, with its references resolved for the bundle's target."""
    specs = []
    for key, raw in sorted(bundle.resources("alerts").items()):
        source = bundle.resource_file("alerts", key)
        resolved = bundle.resolve(raw, f"{source.relative_to(bundle.root)}: resources.alerts.{key}")
        specs.append(AlertSpec.from_resource(key, resolved))
    return specs


def failed_query(spec: AlertSpec, error: Exception) -> AlertResult:
    """The ERROR state of an alert whose query failed, with the engine's message on one line."""
    return AlertResult(spec, "ERROR", error=" ".join(engine_message(error).split())[:500])


def run_alert(spark: Any, spec: AlertSpec) -> AlertResult:
    try:
        rows = [r.asDict() for r in spark.sql(spec.query_text).collect()]
    except Exception as e:  # noqa: BLE001 (a failing query is the alert's ERROR state)
        return failed_query(spec, e)
    return evaluate(spec, rows)


def format_result(result: AlertResult, key_width: int = 30) -> str:
    """One alert's state, value against threshold and name on a line (`key_width`: the key column's
    width, the longest key of those printed together), its reason and error on lines below."""
    def show(v: Any) -> str:
        if v is None:
            return "NULL"
        return f"{v:.4g}" if isinstance(v, float) else str(v)

    comparison = f"{show(result.value)} {result.spec.operator} {show(result.threshold)}"
    line = f"{result.state:<9} {result.spec.key:<{key_width}} {comparison:<40} {result.spec.display_name}"
    if result.reason:
        line += f"\n          {'not measured: ' if result.value is None else ''}{result.reason}"
    return line + (f"\n          error: {result.error}" if result.error else "")
