"""The dashboard's queries and page on Spark: the real dashboard's queries resolve against the
observability tables' columns and every widget renders data; widget queries aggregate, order and count
as Lakeview does; the static page shows every widget with its data and caps its tables. (The definition
without Spark: tests/unit/test_dashboard_definition.py.)"""

from __future__ import annotations

import json
import re
from datetime import date, datetime
from pathlib import Path
from typing import Any

import pytest

from pipelines.dashboard.lvdash import load_dashboard, parse_dashboard
from pipelines.dashboard import batch
from pipelines.dashboard.batch import DatasetWidgets, run_dataset
from pipelines.dashboard.query import ROW_LIMIT, run_widget, widget_sql
from pipelines.dashboard.render import TABLE_ROWS, render_dashboard, run_widgets, write_dashboard
from pipelines.observability.catalog import PUBLISHED, ObservabilityTable
from tests.dashboard_builders import field, small_dashboard, widget

ROOT = Path(__file__).resolve().parents[2]
LVDASH = ROOT / "dashboards" / "lakewatch.lvdash.json"


@pytest.fixture(scope="module")
def session(spark):
    """A session of its own (same JVM): the temp views named like the observability tables stay here."""
    return spark.newSession()


def empty_views(session, tables: tuple[ObservabilityTable, ...] = PUBLISHED) -> None:
    for t in tables:
        schema = ", ".join(f"`{name}` {data_type}" for name, data_type, _ in t.columns)
        session.createDataFrame([], schema).createOrReplaceTempView(t.name)


def sample_value(name: str, data_type: str) -> Any:
    """One plausible value per column type; ids agree across tables so the datasets' joins match."""
    if name.endswith("_id") and data_type.upper() == "STRING":
        return "u1"
    kind = data_type.upper()
    if kind == "TIMESTAMP":
        return datetime(2026, 11, 2, 10, 30)
    if kind == "DATE":
        return date(2026, 11, 2)
    if kind in ("BIGINT", "INT"):
        return 3
    if kind == "DOUBLE":
        return 0.75
    if kind == "BOOLEAN":
        return True
    if kind.startswith("ARRAY<STRUCT"):
        return []
    if kind.startswith("ARRAY"):
        return ["a", "b"]
    return f"{name}_value"


def one_row_views(session) -> None:
    for t in PUBLISHED:
        schema = ", ".join(f"`{name}` {data_type}" for name, data_type, _ in t.columns)
        row = tuple(sample_value(name, data_type) for name, data_type, _ in t.columns)
        session.createDataFrame([row], schema).createOrReplaceTempView(t.name)


# -- the real dashboard ------------------------------------------------------------------------
def test_dataset_and_widget_queries_resolve_against_the_tables_columns(session):
    empty_views(session)
    dashboard = load_dashboard(LVDASH)
    columns = {d.name: set(session.sql(d.query).columns) for d in dashboard.datasets}
    for _, w in dashboard.widgets():
        if w.query is None:
            continue
        referenced = {c for f in w.query.fields for c in re.findall(r"`([^`]+)`", f.expression)} - {"*"}
        missing = referenced - columns[w.query.dataset_name]
        assert not missing, f"widget {w.name} uses {missing}, which dataset {w.query.dataset_name} does not return"
        session.sql(widget_sql(w.query, dashboard.dataset(w.query.dataset_name))).schema  # parses and resolves (analysis only: the next test runs every widget)
    # a filter's every binding: the dataset returns the field it filters on (Databricks filters it there)
    for _, w in dashboard.widgets():
        for dataset, field_name in w.bindings:
            assert field_name in columns[dataset], f"filter {w.name} binds {dataset}, which has no column {field_name}"


def test_every_widget_of_the_real_dashboard_renders_data_from_one_row_per_table(session, tmp_path):
    one_row_views(session)
    out = write_dashboard(session, LVDASH, tmp_path / "out" / "dashboard.html", title="lakewatch test")
    page = out.read_text()
    dashboard = load_dashboard(LVDASH)
    for _, w in dashboard.widgets():
        match = re.search(rf'data-widget="{re.escape(w.name)}"[^>]*', page)
        assert match, w.name
        if w.kind == "text":
            assert "data-rows" not in match.group(0)
            continue
        rows = int(re.search(r'data-rows="(\d+)"', match.group(0)).group(1))
        assert rows >= 1 and "data-error" not in match.group(0), w.name
    assert "could not be shown" not in page
    assert page.count("<svg") == sum(w.kind in ("line", "bar") for _, w in dashboard.widgets())


def test_the_page_is_self_contained(session):
    update_status_view(session)
    page = render_dashboard_from(session, parse_dashboard(small_dashboard()))
    assert "<script" not in page and "<link" not in page and "url(" not in page and "@import" not in page
    assert set(re.findall(r"https?://[^\"' ]+", page)) <= {"http://www.w3.org/2000/svg"}


# -- widget queries and the page, on hand-made rows --------------------------------------------
UPDATES = [  # update_id, start_time, duration_seconds, final_state
    ("u1", datetime(2026, 11, 2, 10, 0), 20.0, "COMPLETED"),
    ("u2", datetime(2026, 11, 2, 11, 0), 30.0, "FAILED"),
    ("u3", datetime(2026, 11, 3, 9, 0), 40.0, "COMPLETED"),
    ("u4", datetime(2026, 11, 3, 12, 0), 10.0, "COMPLETED"),
]


def update_status_view(session, rows=UPDATES) -> None:
    session.createDataFrame(rows, "update_id STRING, start_time TIMESTAMP, duration_seconds DOUBLE, final_state STRING") \
        .createOrReplaceTempView("update_status")


def test_widget_queries_group_order_and_count_like_lakeview(session):
    update_status_view(session)
    results = run_widgets(session, parse_dashboard(small_dashboard()))
    assert results["rate"].rows == ((0.75,),)
    assert results["count"].rows == ((4,),)
    by_day = {(r["daily(start_time)"].date(), r["final_state"]): r["sum(duration_seconds)"] for r in results["by-day"].records()}
    assert by_day == {(date(2026, 11, 2), "COMPLETED"): 20.0, (date(2026, 11, 2), "FAILED"): 30.0,
                      (date(2026, 11, 3), "COMPLETED"): 50.0}
    assert results["latest"].column("update_id") == ["u4", "u3", "u2", "u1"]  # orders by a column not shown
    assert "GROUP BY ALL" in results["by-day"].sql and "GROUP BY" not in results["latest"].sql


def test_the_health_table_lists_the_figures_not_measured_first_each_with_why(session):
    """On the real dashboard: what is UNKNOWN (NULL, never shown as healthy) comes first, with its reason."""
    checked = datetime(2026, 11, 3, 12, 0)
    session.createDataFrame([("backlog_files", 0.0, None, checked), ("errors_last_24h", 2.0, None, checked),
                             ("rows_last_update", None, "rows not known for: orders_bronze", checked)],
                            "metric_name STRING, metric_value DOUBLE, reason STRING, checked_at TIMESTAMP") \
        .createOrReplaceTempView("health_metrics")
    raw = json.loads(LVDASH.read_text())
    [layout] = [l for p in raw["pages"] for l in p["layout"] if l["widget"]["name"] == "run-health-metrics"]
    alone = parse_dashboard({"datasets": raw["datasets"], "pages": [
        {"name": "p", "displayName": "p", "pageType": "PAGE_TYPE_CANVAS", "layout": [layout]}]})
    rows = run_widgets(session, alone)["run-health-metrics"].records()
    assert [(r["metric_name"], r["reason"]) for r in rows] == [
        ("rows_last_update", "rows not known for: orders_bronze"), ("backlog_files", None), ("errors_last_24h", None)]


def test_page_shows_each_widget_with_its_rows_legend_and_formatting(session):
    update_status_view(session)
    dashboard = parse_dashboard(small_dashboard())
    page = render_dashboard_from(session, dashboard)
    rows = dict(re.findall(r'data-widget="([^"]+)" data-kind="(?:counter|line|bar|table)" data-rows="(\d+)"', page))
    assert rows == {"rate": "1", "count": "1", "by-day": "3", "trend": "4", "latest": "4"}
    assert re.search(r'data-widget="intro" data-kind="text"', page) and "<h4>Runs</h4>" in page
    assert "<strong>by state</strong>" in page
    assert '<div class="counter-value" title="avg(ok)">75%</div>' in page
    trend = widget_html(page, "trend")  # Vega's SVG: each data mark has its value as aria-label and <title>
    assert trend.count('aria-roledescription="point"') == 4 and trend.count("<title>FAILED\n2026-11-02 11:00:00: 30</title>") == 1
    assert ">COMPLETED</text>" in trend and ">FAILED</text>" in trend  # the legend
    bars = widget_html(page, "by-day")
    assert bars.count('aria-roledescription="bar"') == 3 and 'fill="#FF3621"' in bars  # FAILED mapped to palette position 4
    assert ">Nov 02<" in bars and ">Nov 03<" in bars and ">50<" in bars  # day labels, stacked total (label.show)
    table = widget_html(page, "latest")
    assert table.index(">u4<") < table.index(">u1<") and '<span class="state bad">FAILED</span>' in table


def test_tables_cap_their_rows_and_say_so(session):
    many = [(f"u{i}", datetime(2026, 11, 2, 10, 0), 1.0, "COMPLETED") for i in range(TABLE_ROWS + 50)]
    update_status_view(session, many)
    table = widget_html(render_dashboard_from(session, parse_dashboard(small_dashboard())), "latest")
    assert table.count("<tr>") == TABLE_ROWS + 1  # header + rows shown
    assert f"Showing the first {TABLE_ROWS} of {TABLE_ROWS + 50} rows." in table


def test_a_failing_widget_is_shown_as_an_error_and_the_others_still_render(session):
    update_status_view(session)
    raw = small_dashboard()
    raw["pages"][0]["layout"][1]["widget"]["queries"][0]["query"]["fields"][0]["expression"] = "AVG(`no_such_column`)"
    page = render_dashboard_from(session, parse_dashboard(raw))
    assert 'data-widget="rate" data-kind="counter" data-rows="0" data-error="1"' in page
    assert "1 widget(s) could not be shown" in page and "no_such_column" in page
    assert 'data-widget="count" data-kind="counter" data-rows="1"' in page


def test_write_dashboard_renders_the_file_it_is_given(session, tmp_path):
    update_status_view(session)
    path = tmp_path / "small.lvdash.json"
    path.write_text(json.dumps(small_dashboard()))
    rendered = render_dashboard(session, path)
    assert "<title>small</title>" in rendered.html and not rendered.failed()


def render_dashboard_from(session, dashboard) -> str:
    from pipelines.dashboard.render import render_html

    return render_html(dashboard, run_widgets(session, dashboard), "test")


def widget_html(page: str, name: str) -> str:
    start = page.index(f'data-widget="{name}"')
    end = page.find('<div class="widget', start)
    return page[start:end if end > 0 else None]


def test_widgets_run_together_return_what_each_widget_s_query_returns_alone(session, monkeypatch):
    """The widgets of a dataset run as one query (`batch`) and each widget's own query (`run_widget`,
    Spark running the SQL Lakeview would run) give the same rows in the same order, with groups in
    Spark's order, NULLs, a capped row count and braces in the SQL; a widget whose column is missing
    gets the error its own query gets, and the others still their rows. (Rows an ORDER BY ties are
    the engine's to order: a classic session's `collect()` orders them otherwise than a subquery
    does, so the times here differ; test_demo compares tied rows too, through Spark Connect.)"""
    rows = [(f"u{i}", datetime(2026, 11, 2 + i % 3, 10, i), float(i % 4) if i % 5 else None,
             ("COMPLETED", "FAILED", "CANCELED")[i % 3]) for i in range(23)]
    update_status_view(session, rows)
    raw = small_dashboard()
    raw["datasets"][0]["queryLines"][1] = "  CASE WHEN final_state RLIKE '^C.{8}$' THEN 1.0 ELSE 0.0 END AS ok\n"
    page = raw["pages"][0]["layout"]

    def table_spec(*names: str) -> dict:
        return {"version": 1, "widgetType": "table", "encodings": {"columns": [{"fieldName": n} for n in names]}}

    page.append(widget("states", "upd", [field("final_state", "`final_state`"), field("start_time", "`start_time`")],
                       table_spec("final_state", "start_time"), y=11, disaggregated=True))  # columns as they are
    page.append(widget("by-state", "upd", [field("final_state", "`final_state`"), field("count(*)", "COUNT(`*`)")],
                       table_spec("final_state", "count(*)"), y=15))  # GROUP BY without ORDER BY
    page.append(widget("missing", "upd", [field("nope", "`nope`")], table_spec("nope"), y=19, disaggregated=True))
    dashboard = parse_dashboard(raw)
    dataset = dashboard.dataset("upd")
    widgets = tuple(w for _, w in dashboard.widgets() if w.query is not None)
    good = tuple(w for w in widgets if w.name != "missing")
    by_state = tuple(w for w in widgets if w.name == "by-state")

    def same(together: dict, group: tuple, limit: int) -> None:
        for w in group:
            alone = run_widget(session, w, dataset, limit)
            mine = together[w.name]
            assert (mine.columns, mine.rows, mine.truncated, mine.error, mine.sql) == \
                (alone.columns, alone.rows, alone.truncated, alone.error, alone.sql), w.name

    def not_alone(*args):
        raise AssertionError("a widget ran alone: the combined query failed")

    for group in (good, by_state):  # dataset read once, then widgets over it; one widget straight
        for limit in (ROW_LIMIT, 3):
            with monkeypatch.context() as patch:
                patch.setattr(batch, "run_widget", not_alone)
                together = run_dataset(session, DatasetWidgets(dataset, group), limit)
            same(together, group, limit)
    assert together["by-state"].rows and len(run_dataset(session, DatasetWidgets(dataset, good), 3)["latest"].rows) == 3
    together = run_dataset(session, DatasetWidgets(dataset, widgets))
    same(together, widgets, ROW_LIMIT)
    assert "nope" in (together["missing"].error or "") and together["count"].rows == ((23,),)
