"""Run all the widgets of one dataset with ONE Spark query, and independent datasets side by side.

Each widget's result is still its own query (`query.widget_sql`) evaluated by Spark; what changes is
how often the dataset is read and how many queries go to the engine. A dataset that several widget
queries read is computed once into partitions of this session (`localCheckpoint`: the very
partitions the dataset's query produces, so a widget groups and orders the rows as its own query
would; not the engine-wide cache, which other sessions' queries would pick up). All the widgets of
the dataset then become scalar subqueries of one `SELECT`: each numbers the rows of the widget's
query (limited as `run_widget` limits them) with `monotonically_increasing_id()`, which follows the
order the query produced them in, and returns them as one array, which Python puts back in that
order. Widgets that show dataset columns as they are (disaggregated, no filter, no order, plain
columns) are served from the dataset's own rows, fetched once by one more subquery.

When the combined query fails (a widget's column does not exist, a value does not cast, the engine
is gone), every widget of that dataset runs alone with `run_widget`, so a failing widget gets
exactly its own error and the others their rows. Datasets run concurrently on a few threads of the
one session: each query is its own operation of the session's client (a Spark Connect client retries
a result stream another request preempted, INVALID_CURSOR.DISCONNECTED).
"""

from __future__ import annotations

import re
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Sequence

from pipelines.dashboard.lvdash import Dataset, Widget
from pipelines.dashboard.query import ROW_LIMIT, WidgetResult, dataset_sql, quote, run_widget, widget_sql

DATASET_WORKERS = 2  # datasets whose queries are in flight at once
PLAIN_COLUMN = re.compile(r"^`((?:[^`]|``)+)`$")
ROWS = "__rows"  # alias of the subquery that returns a dataset's own rows
SOURCE_MARK = "__lakewatch_dataset_rows__"  # where the rows read once go in the combined query


@dataclass(frozen=True)
class DatasetWidgets:
    """The widgets of one dataset, in page order."""

    dataset: Dataset
    widgets: tuple[Widget, ...]


def plain_columns(widget: Widget) -> tuple[str, ...] | None:
    """The dataset columns a widget shows as they are, or None when its query computes anything
    (aggregates, expressions, filters, an order): such a query needs Spark."""
    query = widget.query
    if query is None or not query.disaggregated or query.filters or query.orders:
        return None
    names = []
    for f in query.fields:
        match = PLAIN_COLUMN.match(f.expression.strip())
        if match is None:
            return None
        names.append(match.group(1).replace("``", "`"))
    return tuple(names)


def numbered_rows(sql: str, limit: int) -> str:
    """A scalar subquery: the rows of `sql` (at most `limit` + 1) as one array of
    `(i, r)` structs, `i` following the order the query produced the rows in, `r` the row."""
    return (f"(SELECT collect_list(named_struct('i', i, 'r', r)) FROM (\n"
            f"SELECT monotonically_increasing_id() AS i, struct(*) AS r FROM (\n{sql}\nLIMIT {limit + 1}\n) AS q\n) AS n)")


def combined_sql(group: DatasetWidgets, source: Dataset, limit: int = ROW_LIMIT) -> tuple[str, list[Widget], list[Widget]]:
    """The one query of a dataset's widgets over `source` (the dataset, or its rows read once): a column
    per widget that needs Spark, plus the dataset's rows when some widget only shows columns. Returns
    the SQL, those widgets, and the column-only widgets."""
    computed = [w for w in group.widgets if plain_columns(w) is None]
    projected = [w for w in group.widgets if plain_columns(w) is not None]
    columns = [f"{numbered_rows(widget_sql(w.query, source), limit)} AS {quote(f'w{n}')}"
               for n, w in enumerate(computed) if w.query is not None]
    if projected:
        rows = f"SELECT * FROM (\n{dataset_sql(source)}\n) AS {quote('dataset_' + source.name)}"
        columns.append(f"{numbered_rows(rows, limit)} AS {ROWS}")
    return "SELECT\n" + ",\n".join(columns), computed, projected


def in_order(numbered: Sequence[Any]) -> list[Any]:
    """The rows of a `numbered_rows` array, in the order the query produced them."""
    return [item["r"] for item in sorted(numbered, key=lambda item: item["i"])]


def subqueries(group: DatasetWidgets) -> int:
    """How many times the combined query would read the dataset."""
    computed = sum(plain_columns(w) is None for w in group.widgets)
    return computed + (computed < len(group.widgets))


def read_once(spark: Any, group: DatasetWidgets) -> tuple[Dataset, dict[str, Any]]:
    """The dataset's rows computed once, as Spark partitions of this session (`localCheckpoint`, not
    the engine-wide cache), and a stand-in dataset whose query reads them; with the keyword
    arguments for `spark.sql`. Each widget's query then runs over the very partitions the dataset's
    query produced, so grouping and ordering see the rows as the widget's own query would."""
    rows = spark.sql(dataset_sql(group.dataset)).localCheckpoint(eager=True)
    return Dataset(group.dataset.name, group.dataset.display_name, f"SELECT * FROM {SOURCE_MARK}"), {"dataset": rows}


def run_dataset(spark: Any, group: DatasetWidgets, limit: int = ROW_LIMIT) -> dict[str, WidgetResult]:
    """Every widget of one dataset, by widget name; the results `run_widget` returns for each."""
    started = time.monotonic()
    try:
        source, frames = read_once(spark, group) if subqueries(group) > 1 else (group.dataset, {})
        sql, computed, projected = combined_sql(group, source, limit)
        if frames:  # `spark.sql` formats the text: braces of the SQL itself are doubled
            sql = sql.replace("{", "{{").replace("}", "}}").replace(SOURCE_MARK, "{dataset}")
        frame = spark.sql(sql, **frames)
        [row] = frame.collect()
    except Exception:  # noqa: BLE001 - each widget then runs alone and reports its own error
        return {w.name: run_widget(spark, w, group.dataset, limit) for w in group.widgets}
    seconds = time.monotonic() - started
    results: dict[str, WidgetResult] = {}
    for n, widget in enumerate(computed):
        assert widget.query is not None
        columns = tuple(f.name for f in widget.query.fields)
        rows = [tuple(r) for r in in_order(row[n])]
        results[widget.name] = WidgetResult(widget, widget_sql(widget.query, group.dataset), columns,
                                            tuple(rows[:limit]), len(rows) > limit, seconds)
    if projected:
        dataset_rows = in_order(row[ROWS])
        names = list(dataset_rows[0].__fields__) if dataset_rows else \
            frame.schema[ROWS].dataType.elementType["r"].dataType.fieldNames()
        for widget in projected:
            result = projection(widget, group.dataset, dataset_rows, names, limit, seconds)
            results[widget.name] = result if result is not None else run_widget(spark, widget, group.dataset, limit)
    return {w.name: results[w.name] for w in group.widgets}


def projection(widget: Widget, dataset: Dataset, rows: list[Any], names: list[str], limit: int,
               seconds: float) -> WidgetResult | None:
    """A column-only widget's result from its dataset's rows; None when a column is not exactly one
    of the dataset's (Spark then resolves it, or reports why it cannot)."""
    wanted = plain_columns(widget)
    assert wanted is not None and widget.query is not None
    if any(names.count(name) != 1 for name in wanted):
        return None
    index = [names.index(name) for name in wanted]
    values = tuple(tuple(r[i] for i in index) for r in rows[:limit])
    return WidgetResult(widget, widget_sql(widget.query, dataset), tuple(f.name for f in widget.query.fields),
                        values, len(rows) > limit, seconds)


def run_datasets(spark: Any, groups: Sequence[DatasetWidgets], workers: int = DATASET_WORKERS) -> dict[str, WidgetResult]:
    """Every widget of every dataset, by widget name; up to `workers` datasets in flight at once."""
    if workers <= 1 or len(groups) <= 1:
        found = [run_dataset(spark, g) for g in groups]
    else:
        pool = ThreadPoolExecutor(max_workers=min(workers, len(groups)))
        try:  # the datasets with the most widget queries first, so no long one is left for the end
            found = list(pool.map(lambda g: run_dataset(spark, g), sorted(groups, key=subqueries, reverse=True)))
        finally:
            pool.shutdown(wait=False, cancel_futures=True)  # an interrupt does not wait for the rest
    return {name: result for results in found for name, result in results.items()}
