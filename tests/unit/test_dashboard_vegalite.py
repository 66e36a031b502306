"""The dashboard's charts from Vega-Lite: for real widgets of `dashboards/lakewatch.lvdash.json` and rows
written here, the specification is valid against Vega-Lite's own v5 JSON schema (the one altair
ships), and the SVG that vl-convert draws from it has one mark per row (or bar), the widget's axis
titles, legend, colours and number formats, each mark's value as its tooltip, and says "No data"
when there is nothing to draw. No Spark: the query results are built by hand."""

from __future__ import annotations

import copy
import json
import re
import xml.etree.ElementTree as ET
from datetime import date, datetime
from pathlib import Path
from typing import Any

import altair.vegalite.v5.schema as altair_schema
import jsonschema
import pytest

from pipelines.dashboard.lvdash import Widget, load_dashboard, parse_dashboard
from pipelines.dashboard.query import WidgetResult
from pipelines.dashboard.vegalite import VEGA_LITE_VERSION, chart_spec, chart_svg, render_svg

ROOT = Path(__file__).resolve().parents[2]
LVDASH = ROOT / "dashboards" / "lakewatch.lvdash.json"
SVG = "{http://www.w3.org/2000/svg}"
WIDTH, HEIGHT = 620, 280


@pytest.fixture(scope="module")
def schema() -> jsonschema.Draft7Validator:
    """Vega-Lite's JSON schema as altair ships it, for the version the charts are drawn with."""
    assert altair_schema.SCHEMA_VERSION.startswith(f"v{VEGA_LITE_VERSION}.")
    path = Path(altair_schema.__file__).parent / "vega-lite-schema.json"
    return jsonschema.Draft7Validator(json.loads(path.read_text()))


def real_widget(name: str) -> Widget:
    return {w.name: w for _, w in load_dashboard(LVDASH).widgets()}[name]


def result(widget: Widget, rows: list[dict[str, Any]]) -> WidgetResult:
    """The widget's query result: `rows` by field name, columns in the query's order."""
    assert widget.query is not None
    columns = tuple(f.name for f in widget.query.fields)
    return WidgetResult(widget, "", columns, tuple(tuple(r.get(c) for c in columns) for r in rows), False, 0.0)


def validate(schema: jsonschema.Draft7Validator, spec: dict) -> None:
    errors = [f"{list(e.absolute_path)}: {e.message[:300]}" for e in schema.iter_errors(spec)]
    assert not errors, errors


# -- reading the SVG ---------------------------------------------------------------------------
def parse(svg: str) -> ET.Element:
    return ET.fromstring(svg)


def marks(root: ET.Element, kind: str) -> list[ET.Element]:
    """Data marks Vega drew: `bar` or `point` (each row's mark carries aria-roledescription)."""
    return [e for e in root.iter() if e.get("aria-roledescription") == kind]


def tooltip(mark: ET.Element) -> str:
    title = mark.find(f"{SVG}title")
    assert title is not None, ET.tostring(mark)
    return title.text or ""


def texts(group: ET.Element, role: str) -> list[str]:
    return [t.text or "" for g in group.iter(f"{SVG}g") if role in (g.get("class") or "").split()
            for t in g.iter(f"{SVG}text")]


def axis(root: ET.Element, which: str) -> tuple[str, list[str]]:
    """(title, labels) of the `X` or `Y` axis."""
    for g in root.iter(f"{SVG}g"):
        if (g.get("aria-label") or "").startswith(f"{which}-axis"):
            titles = texts(g, "role-axis-title")
            return (titles[0] if titles else ""), texts(g, "role-axis-label")
    raise AssertionError(f"no {which} axis")


def legend(root: ET.Element) -> tuple[str, list[str]]:
    for g in root.iter(f"{SVG}g"):
        if "role-legend" in (g.get("class") or "").split():
            titles = texts(g, "role-legend-title")
            return (titles[0] if titles else ""), texts(g, "role-legend-label")
    return "", []


def value_labels(root: ET.Element) -> list[str]:
    """Text marks of the chart itself (value labels), not of its axes or legend."""
    return [t.text or "" for g in root.iter(f"{SVG}g") if {"mark-text", "role-mark"} <= set((g.get("class") or "").split())
            for t in g.iter(f"{SVG}text")]


def box(mark: ET.Element) -> tuple[float, float, float, float]:
    """x, y, width, height of a bar: Vega draws it as the path `M x,y h w v h h -w Z`."""
    numbers = [float(n) for n in re.findall(r"-?\d+(?:\.\d+)?(?:e-?\d+)?", mark.get("d") or "")]
    return numbers[0], numbers[1], numbers[2], numbers[3]


def percent(label: str) -> float:
    return float(label.rstrip("%")) / 100


# -- the specification -------------------------------------------------------------------------
def generic_rows(widget: Widget) -> list[dict[str, Any]]:
    """Two rows with a value of the right kind for every field (times, categories, numbers)."""
    rows = []
    for i in range(2):
        row: dict[str, Any] = {}
        for enc in widget.encodings:
            if enc.scale == "temporal":
                row[enc.field_name] = datetime(2026, 11, 2 + i, 10)
            elif enc.scale == "categorical" or enc.channel == "color":
                row[enc.field_name] = f"value {i}"
            else:
                row[enc.field_name] = 3.0 + i
        rows.append(row)
    return rows


CHARTS = [w.name for _, w in load_dashboard(LVDASH).widgets() if w.kind in ("line", "bar")]


@pytest.mark.parametrize("name", CHARTS)
def test_every_chart_of_the_dashboard_is_a_valid_vega_lite_v5_specification(schema, name):
    widget = real_widget(name)
    spec = chart_spec(result(widget, generic_rows(widget)), WIDTH, HEIGHT)
    validate(schema, spec)
    assert spec["data"]["values"] and spec["layer"][0]["mark"]["type"] == ("line" if widget.kind == "line" else "bar")


def test_no_data_is_a_valid_specification_too(schema):
    widget = real_widget("run-timeline")
    validate(schema, chart_spec(result(widget, []), WIDTH, HEIGHT))


# -- bars --------------------------------------------------------------------------------------
def test_update_timeline_draws_a_bar_per_update_in_its_states_colour(schema):
    widget = real_widget("run-timeline")
    rows = [{"start_time": datetime(2026, 11, 2, 10), "final_state": "COMPLETED", "sum(duration_seconds)": 20.0},
            {"start_time": datetime(2026, 11, 2, 11), "final_state": "FAILED", "sum(duration_seconds)": 30.26},
            {"start_time": datetime(2026, 11, 3, 9), "final_state": "COMPLETED", "sum(duration_seconds)": 40.0},
            {"start_time": datetime(2026, 11, 3, 12), "final_state": "CANCELED", "sum(duration_seconds)": 1.0}]
    spec = chart_spec(result(widget, rows), WIDTH, HEIGHT)
    validate(schema, spec)
    root = parse(render_svg(spec, widget.title))
    bars = marks(root, "bar")
    assert len(bars) == len(rows)
    # the widget maps states to palette positions 3 (COMPLETED), 4 (FAILED) and 9 (CANCELED)
    fills = {tooltip(b).split("\n")[0]: b.get("fill") for b in bars}
    assert fills == {"COMPLETED": "#00A972", "FAILED": "#FF3621", "CANCELED": "#919191"}
    assert sorted(tooltip(b) for b in bars) == sorted([
        "CANCELED\n2026-11-03 12:00:00: 1", "COMPLETED\n2026-11-02 10:00:00: 20",
        "COMPLETED\n2026-11-03 09:00:00: 40", "FAILED\n2026-11-02 11:00:00: 30.3"])  # one decimal at most
    x_title, x_labels = axis(root, "X")
    y_title, _ = axis(root, "Y")
    assert (x_title, y_title) == ("Update start", "Duration (s)")
    assert x_labels == ["Nov 02 10:00", "Nov 02 11:00", "Nov 03 09:00", "Nov 03 12:00"]  # as precise as the gaps
    assert legend(root) == ("Final state", ["CANCELED", "COMPLETED", "FAILED"])
    assert sorted(value_labels(root)) == ["1", "20", "30.3", "40"]  # label.show: every bar's value


def test_several_measures_stack_one_series_each_in_the_widgets_colours(schema):
    widget = real_widget("run-outcomes-daily")  # y.fields: completed, failed, canceled; mark.colors
    rows = [{"daily(update_date)": date(2026, 11, 2), "sum(completed)": 5, "sum(failed)": 2, "sum(canceled)": 0},
            {"daily(update_date)": date(2026, 11, 3), "sum(completed)": 7, "sum(failed)": None, "sum(canceled)": 1}]
    spec = chart_spec(result(widget, rows), WIDTH, HEIGHT)
    validate(schema, spec)
    root = parse(render_svg(spec, widget.title))
    bars = marks(root, "bar")
    assert len(bars) == 5  # every value but the missing one
    assert {tooltip(b).split("\n")[0]: b.get("fill") for b in bars} == {
        "Completed": "#00A972", "Failed": "#FF3621", "Canceled": "#919191"}
    assert legend(root) == ("", ["Completed", "Failed", "Canceled"])
    by_day: dict[str, set[float]] = {}
    for b in bars:
        by_day.setdefault(tooltip(b).split("\n")[1].split(":")[0], set()).add(round(box(b)[0], 3))
    assert all(len(xs) == 1 for xs in by_day.values()) and len(by_day) == 2  # stacked: one column per day
    completed = {tooltip(b): box(b) for b in bars if tooltip(b).startswith("Completed")}
    failed = {tooltip(b): box(b) for b in bars if tooltip(b).startswith("Failed")}
    # the first series sits at the base: its top edge is below the failed segment of the same day
    assert completed["Completed\n2026-11-02: 5"][1] > failed["Failed\n2026-11-02: 2"][1]
    assert sorted(value_labels(root)) == ["7", "8"]  # each day's total above its stack
    assert axis(root, "X")[1] == ["Nov 02", "Nov 03"] and axis(root, "Y")[0] == ""


def test_grouped_bars_stand_side_by_side_with_compact_numbers(schema):
    widget = real_widget("tp-rows-daily")  # mark.layout group, compact format
    rows = [{"daily(update_date)": datetime(2026, 11, 2), "flow_name": "orders_bronze", "sum(rows_written)": 29287},
            {"daily(update_date)": datetime(2026, 11, 2), "flow_name": "orders_clean", "sum(rows_written)": 1_260_000},
            {"daily(update_date)": datetime(2026, 11, 3), "flow_name": "orders_bronze", "sum(rows_written)": 900}]
    spec = chart_spec(result(widget, rows), WIDTH, HEIGHT)
    validate(schema, spec)
    root = parse(render_svg(spec, widget.title))
    bars = {tooltip(b): box(b) for b in marks(root, "bar")}
    assert set(bars) == {"orders_bronze\n2026-11-02: 29.3K", "orders_clean\n2026-11-02: 1.3M", "orders_bronze\n2026-11-03: 900"}
    bronze, clean = bars["orders_bronze\n2026-11-02: 29.3K"], bars["orders_clean\n2026-11-02: 1.3M"]
    assert bronze[0] + bronze[2] <= clean[0] + 0.5 and bronze[2] == pytest.approx(clean[2])  # side by side, same width
    _, y_labels = axis(root, "Y")
    assert y_labels[0] == "0" and all(label.endswith(("K", "M")) for label in y_labels[1:])
    assert legend(root) == ("Flow", ["orders_bronze", "orders_clean"])
    assert sorted(value_labels(root)) == ["1.3M", "29.3K", "900"]


def test_a_category_on_y_draws_horizontal_bars_in_the_querys_order(schema):
    widget = real_widget("tp-slowest-flows")  # x: quantitative measure, y: categorical flow, ordered DESC
    rows = [{"flow_name": "payments_clean", "sum(avg_duration_seconds)": 30.5},
            {"flow_name": "orders_bronze", "sum(avg_duration_seconds)": 12.4},
            {"flow_name": "zeta", "sum(avg_duration_seconds)": 3.0}]
    spec = chart_spec(result(widget, rows), WIDTH, HEIGHT)
    validate(schema, spec)
    root = parse(render_svg(spec, widget.title))
    bars = [box(b) for b in marks(root, "bar")]
    names = [tooltip(b).split("\n")[0] for b in marks(root, "bar")]
    assert len(bars) == 3 and names == ["Average seconds per update"] * 3
    by_flow = {tooltip(b).split("\n")[1].split(":")[0]: box(b) for b in marks(root, "bar")}
    tops = [by_flow[r["flow_name"]][1] for r in rows]
    assert tops == sorted(tops)  # longest first, top to bottom, as the query orders them
    assert len({round(b[0], 3) for b in bars}) == 1 and all(b[2] > b[3] * 0 for b in bars)  # from the same left edge
    widths = [by_flow[r["flow_name"]][2] for r in rows]
    assert widths == sorted(widths, reverse=True)
    y_title, y_labels = axis(root, "Y")
    x_title, _ = axis(root, "X")
    assert (y_title, x_title) == ("Flow", "Average seconds per update")
    assert y_labels == ["payments_clean", "orders_bronze", "zeta"]
    assert value_labels(root) == ["30.5", "12.4", "3"]
    assert legend(root) == ("", [])  # one series, no color encoding: no legend


def test_stacked_to_100_percent_reads_as_shares(schema):
    raw = json.loads(LVDASH.read_text())
    raw = copy.deepcopy(raw)
    for page in raw["pages"]:
        for item in page["layout"]:
            if item["widget"]["name"] == "run-failures-by-hour":
                item["widget"]["spec"]["mark"] = {"layout": "stack-100"}
    widget = {w.name: w for _, w in parse_dashboard(raw).widgets()}["run-failures-by-hour"]
    rows = [{"start_hour": 9, "final_state": "COMPLETED", "sum(updates)": 3},
            {"start_hour": 9, "final_state": "FAILED", "sum(updates)": 1},
            {"start_hour": 14, "final_state": "COMPLETED", "sum(updates)": 2}]
    spec = chart_spec(result(widget, rows), WIDTH, HEIGHT)
    validate(schema, spec)
    root = parse(render_svg(spec, widget.title))
    assert sorted(tooltip(b) for b in marks(root, "bar")) == ["COMPLETED\n14: 100%", "COMPLETED\n9: 75%", "FAILED\n9: 25%"]
    _, y_labels = axis(root, "Y")
    assert y_labels[0] == "0%" and y_labels[-1] == "100%"
    assert axis(root, "X") == ("Hour of day (UTC)", ["9", "14"])  # numbers in numeric order
    heights = {round(box(b)[1] + box(b)[3], 1) for b in marks(root, "bar") if tooltip(b).startswith("COMPLETED")}
    assert len(heights) == 1  # both columns' bases on the same baseline


def test_counts_get_whole_axis_steps_from_zero(schema):
    widget = real_widget("rec-gaps-per-update")
    rows = [{"start_time": datetime(2026, 11, 2, 10, m), "sum(metrics_missing)": n} for m, n in ((0, 2), (15, 0), (30, 1))]
    root = parse(chart_svg(result(widget, rows), WIDTH, HEIGHT))
    assert len(marks(root, "bar")) == 3
    title, labels = axis(root, "Y")
    assert title == "Figures not measured" and labels[0] == "0" and all(label.isdigit() for label in labels)
    assert axis(root, "X") == ("Update start", ["10:00", "10:15", "10:30"])


# -- lines -------------------------------------------------------------------------------------
def test_a_line_per_series_with_a_dot_per_value_on_a_zoomed_percent_axis(schema):
    widget = real_widget("run-success-daily")
    days = [datetime(2026, 11, d) for d in (2, 3, 4)]
    rows = ([{"daily(update_date)": d, "pipeline_name": "ingest", "avg(success_rate)": r} for d, r in zip(days, (0.9, 0.95, 1.0))]
            + [{"daily(update_date)": d, "pipeline_name": "observability", "avg(success_rate)": r}
               for d, r in zip(days, (0.92, None, 0.975))])
    spec = chart_spec(result(widget, rows), WIDTH, HEIGHT)
    validate(schema, spec)
    root = parse(render_svg(spec, widget.title))
    dots = marks(root, "point")
    assert len(dots) == 5  # every value; the missing one has no dot
    assert sorted(tooltip(d) for d in dots) == sorted([
        "ingest\n2026-11-02: 90%", "ingest\n2026-11-03: 95%", "ingest\n2026-11-04: 100%",
        "observability\n2026-11-02: 92%", "observability\n2026-11-04: 97.5%"])
    lines = [p for g in root.iter(f"{SVG}g") if "mark-line" in (g.get("class") or "").split() for p in g.iter(f"{SVG}path")]
    # palette order, series sorted; the missing value breaks the observability line in two
    assert {p.get("stroke"): (p.get("d") or "").count("M") for p in lines} == {"#077A9D": 1, "#FFAB00": 2}
    y_title, y_labels = axis(root, "Y")
    assert y_title == "Success rate" and y_labels[-1] == "100%"
    assert 0.5 < percent(y_labels[0]) <= 0.9  # rates of 90-100% are not squashed at the top
    assert axis(root, "X")[0] == "Day" and "Nov 03" in axis(root, "X")[1]
    assert legend(root) == ("Pipeline", ["ingest", "observability"])
    assert value_labels(root) == []  # label.show is false on this widget


def test_several_measures_draw_a_line_each(schema):
    widget = real_widget("lat-hourly")
    rows = [{"hourly(commit_hour)": datetime(2026, 11, 2, h), "max(p50_latency_seconds)": 2.0 + h,
             "max(p95_latency_seconds)": 9.5 + h} for h in range(4)]
    spec = chart_spec(result(widget, rows), WIDTH, HEIGHT)
    validate(schema, spec)
    root = parse(render_svg(spec, widget.title))
    assert len(marks(root, "point")) == 8
    assert legend(root) == ("", ["p50 (s)", "p95 (s)"])
    assert "p95 (s)\n2026-11-02 03:00:00: 12.5" in {tooltip(d) for d in marks(root, "point")}
    x_title, x_labels = axis(root, "X")
    assert x_title == "Commit hour" and x_labels[0] == "Nov 02" and {"01:00", "02:00"} <= set(x_labels) and x_labels[-1] == "03:00"


# -- nothing to draw, and the SVG itself ---------------------------------------------------------
@pytest.mark.parametrize("rows", [[], [{"start_time": datetime(2026, 11, 2), "final_state": "FAILED", "sum(duration_seconds)": None}]])
def test_nothing_to_draw_says_no_data(rows):
    widget = real_widget("run-timeline")
    root = parse(chart_svg(result(widget, rows), WIDTH, HEIGHT))
    assert [t.text for t in root.iter(f"{SVG}text")] == ["No data"]
    assert not marks(root, "bar") and not marks(root, "point")


def test_the_svg_inlines_in_html_without_references_or_script():
    widget = real_widget("run-success-daily")
    svg = chart_svg(result(widget, generic_rows(widget)), WIDTH, HEIGHT)
    assert svg.startswith("<svg") and svg.count("<svg") == 1 and "<script" not in svg
    assert set(re.findall(r"https?://[^\"' ]+", svg)) == {"http://www.w3.org/2000/svg"}
    root = parse(svg)
    assert "chart" in root.get("class", "").split() and root.get("aria-label") == widget.title
    assert (root.get("width"), root.get("height")) == (str(WIDTH), str(HEIGHT))
