"""Build and run a widget's query the way Lakeview does.

Lakeview runs each widget as its `fields` over the dataset's query as a subquery: with
`disaggregated: false` it groups by the fields that are not aggregates, with `true` it returns the
rows as they are. `GROUP BY ALL` (Spark 4, Databricks SQL) groups by exactly the non-aggregated
select expressions, so the SQL stays a direct translation of the widget. Only the plain SQL API
and `.collect()` are used, so a classic session and a Spark Connect session both work.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass
from typing import Any

from pipelines.dashboard.lvdash import Dataset, Widget, WidgetQuery
from pipelines.errors import engine_message

ROW_LIMIT = 10_000  # rows a widget fetches at most; a dashboard widget never needs more
STAR = re.compile(r"\(\s*`\*`\s*\)")


@dataclass(frozen=True)
class WidgetResult:
    """What one widget's query returned (or why it failed)."""

    widget: Widget
    sql: str
    columns: tuple[str, ...]
    rows: tuple[tuple[Any, ...], ...]
    truncated: bool  # more rows than ROW_LIMIT existed
    seconds: float
    error: str | None = None

    def column(self, name: str) -> list[Any]:
        i = self.columns.index(name)
        return [r[i] for r in self.rows]

    def records(self) -> list[dict[str, Any]]:
        return [dict(zip(self.columns, r)) for r in self.rows]


def quote(name: str) -> str:
    """A backquoted identifier (field names such as `sum(rows_written)` contain parentheses)."""
    return "`" + name.replace("`", "``") + "`"


def dataset_sql(dataset: Dataset) -> str:
    """The dataset's query, ready to nest: no trailing semicolon; a newline keeps `--` comments closed."""
    return dataset.query.strip().rstrip(";").rstrip()


def spark_expression(expression: str) -> str:
    """A field expression in Spark SQL: Lakeview writes a row count as COUNT(`*`), Spark as COUNT(*)."""
    return STAR.sub("(*)", expression)


def widget_sql(query: WidgetQuery, dataset: Dataset) -> str:
    """The SQL Lakeview would run for a widget: its fields over the dataset's query as a subquery."""
    select = ",\n  ".join(f"{spark_expression(f.expression)} AS {quote(f.name)}" for f in query.fields)
    sql = f"SELECT\n  {select}\nFROM (\n{dataset_sql(dataset)}\n) AS {quote('dataset_' + dataset.name)}"
    if query.filters:
        sql += "\nWHERE " + " AND ".join(f"({spark_expression(f)})" for f in query.filters)
    if not query.disaggregated:
        sql += "\nGROUP BY ALL"
    if query.orders:
        sql += "\nORDER BY " + ", ".join(f"{spark_expression(o.expression)} {'DESC' if o.descending else 'ASC'}" for o in query.orders)
    return sql


def run_widget(spark: Any, widget: Widget, dataset: Dataset, limit: int = ROW_LIMIT) -> WidgetResult:
    """Runs one widget's query; a failure is returned (with its first line), not raised."""
    assert widget.query is not None, f"text widget {widget.name} has no query"
    sql = widget_sql(widget.query, dataset)
    columns = tuple(f.name for f in widget.query.fields)
    started = time.monotonic()
    try:
        rows = spark.sql(sql).limit(limit + 1).collect()
    except Exception as e:  # noqa: BLE001 - any engine error becomes the widget's error
        return WidgetResult(widget, sql, columns, (), False, time.monotonic() - started, error=short_error(e))
    values = tuple(tuple(r[i] for i in range(len(columns))) for r in rows[:limit])
    return WidgetResult(widget, sql, columns, values, len(rows) > limit, time.monotonic() - started)


def short_error(error: BaseException) -> str:
    """The engine's message without the JVM stack trace or the logical plan."""
    text = engine_message(error)
    first = text.strip().splitlines()[0] if text.strip() else type(error).__name__
    return f"{type(error).__name__}: {first}"
