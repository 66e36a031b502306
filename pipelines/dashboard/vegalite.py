"""Lakeview chart widgets as Vega-Lite v5 specifications, drawn to SVG offline by vl-convert.

`chart_spec` derives one specification from a widget's `spec` (line or bar; `x`/`y`/`color`
encodings with their scale types, several measures in `y.fields`, the bar layout, colour mappings,
number formats, display names, value labels) and its query's rows, inlined as `values`. Series are
one per `color` value, one per `y.fields` field, or a single one. Bars stack (Lakeview's default),
group or stack to 100%, and lie horizontally when the category is on `y` and the measure on `x`.
`render_svg` draws it with vl-convert (no browser, no network, no script in the result) and gives
every mark an SVG `<title>` with its exact value, so hovering shows it.

The data has one record per mark with fields named by role (`x`, `y`, `series`, `tip`, `label`,
`at`), so widget field names such as `sum(rows)` need no escaping in Vega-Lite.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from datetime import date, datetime, timezone
from decimal import Decimal
from html import unescape
from typing import Any, Mapping, Sequence

import vl_convert

from pipelines.dashboard.formatting import (
    MISSING, format_number, format_time, format_value, is_midnight, is_number, is_temporal, time_label_format, to_epoch,
)
from pipelines.dashboard.lvdash import Encoding, NumberFormat, Widget
from pipelines.dashboard.query import WidgetResult

VEGA_LITE_VERSION = "5.20"  # the newest v5 that vl-convert bundles
NO_DATA = "No data"
PERCENT = NumberFormat(kind="number-percent")
MAX_VALUE_LABELS = 24  # value labels (`label.show`) are drawn when a chart has at most this many marks
MAX_BAR_WIDTH = 72.0  # px; one bar on a wide widget stays a bar, not a wall
CHAR_WIDTH = 6.4  # average width of an 11px label, for layout estimates
MUTED, TEXT, GRID, AXIS = "#5f6b76", "#44505c", "#edf0f2", "#9aa5b1"
FONT = 'system-ui, -apple-system, "Segoe UI", Roboto, sans-serif'
CONFIG: dict[str, Any] = {
    "font": FONT,
    "view": {"stroke": None},
    "axis": {"labelColor": TEXT, "labelFontSize": 11, "titleColor": MUTED, "titleFontSize": 11,
             "titleFontWeight": "normal", "gridColor": GRID, "domainColor": AXIS, "tickColor": AXIS},
    "axisX": {"grid": False},
    "axisBand": {"grid": False, "ticks": False},
    "legend": {"orient": "top", "labelFontSize": 11, "labelColor": TEXT, "titleFontSize": 11,
               "titleFontWeight": "normal", "titleColor": MUTED, "symbolType": "square", "labelLimit": 220},
    "text": {"fontSize": 11, "fontWeight": 600, "color": "#1b2631"},
}
# 24-hour labels on a time axis: dates at midnight, minutes otherwise, seconds when a tick has them
TIME_LABEL = ("utcFormat(datum.value, utcseconds(datum.value) ? '%H:%M:%S' : "
              "utchours(datum.value) || utcminutes(datum.value) ? '%H:%M' : '%b %d')")


@dataclass(frozen=True)
class Series:
    key: str  # the raw color value as text (what colour mappings match) or the y field name
    label: str
    color: str


@dataclass(frozen=True)
class Point:
    series: Series
    x: Any  # the category (or x) value as the query returned it
    y: float | None


@dataclass(frozen=True)
class Roles:
    """Which encodings a chart puts along its category (or x) axis and its measure axis."""

    category: Encoding
    measures: tuple[Encoding, ...]
    color: Encoding | None
    horizontal: bool  # bars along x, categories on y


# -- public ------------------------------------------------------------------------------------
def chart_svg(result: WidgetResult, width: int, height: int) -> str:
    """The widget's chart as one inline SVG element ("No data" when nothing can be drawn)."""
    return render_svg(chart_spec(result, width, height), result.widget.title)


def chart_spec(result: WidgetResult, width: int, height: int) -> dict[str, Any]:
    """A Vega-Lite v5 specification of a line or bar widget with its rows inlined."""
    widget = result.widget
    roles = chart_roles(widget)
    points = build_points(result, roles)
    if not any(p.y is not None for p in points):
        return no_data_spec(width, height)
    draw = line_layers if widget.kind == "line" else bar_layers
    body = draw(widget, roles, points, width, height)
    return {"description": widget.title or widget.name, "width": width, "height": height,
            "autosize": {"type": "fit", "contains": "padding"}, "background": "transparent",
            "padding": 4, "config": CONFIG, **body}


def no_data_spec(width: int, height: int) -> dict[str, Any]:
    """A chart that says there is nothing to draw."""
    return {"description": NO_DATA, "width": width, "height": height, "background": "transparent",
            "autosize": {"type": "fit", "contains": "padding"}, "config": CONFIG,
            "data": {"values": [{"text": NO_DATA}]},
            "mark": {"type": "text", "fontSize": 13, "fontWeight": "normal", "color": MUTED},
            "encoding": {"text": {"field": "text", "type": "nominal"}}}


def render_svg(spec: Mapping[str, Any], title: str = "") -> str:
    """Draws a specification with vl-convert; the SVG is ready to inline in HTML."""
    svg = vl_convert.vegalite_to_svg(dict(spec), vl_version=VEGA_LITE_VERSION)
    return inline_svg(svg, title)


def inline_svg(svg: str, title: str) -> str:
    """Vega's SVG for inlining: a `chart` class, a label, and each mark's description as its `<title>`."""
    if "xlink:" not in svg.replace('xmlns:xlink="', ""):
        svg = svg.replace(' xmlns:xlink="http://www.w3.org/1999/xlink"', "", 1)
    label = title.replace("&", "&amp;").replace('"', "&quot;").replace("<", "&lt;")
    svg = svg.replace('class="marks"', f'class="marks chart" aria-label="{label}"', 1)
    return MARK.sub(_with_title, svg)


MARK = re.compile(r'<path aria-label="([^"]*)" role="graphics-symbol"([^>]*?)/>')


def _with_title(match: re.Match[str]) -> str:
    text = unescape(match.group(1)).replace("&", "&amp;").replace("<", "&lt;")
    return f'<path aria-label="{match.group(1)}" role="graphics-symbol"{match.group(2)}><title>{text}</title></path>'


# -- roles, series and points ------------------------------------------------------------------
def chart_roles(widget: Widget) -> Roles:
    """Category and measures: horizontal bars put the category on `y` and the measure on `x`."""
    x, ys, color = widget.first("x"), widget.channel("y"), widget.first("color")
    assert x is not None and ys, widget.name
    horizontal = widget.kind == "bar" and x.scale == "quantitative" and ys[0].scale == "categorical" and len(ys) == 1
    return Roles(ys[0], (x,), color, True) if horizontal else Roles(x, ys, color, False)


def build_points(result: WidgetResult, roles: Roles) -> list[Point]:
    """One point per row and measure, in row order; series per `y.fields` field, per color value or one."""
    widget = result.widget
    cat_i = result.columns.index(roles.category.field_name)
    if roles.color is None or len(roles.measures) > 1:
        out = []
        for n, enc in enumerate(roles.measures):
            series = Series(enc.field_name, enc.display_name, series_color(widget, enc.field_name, n))
            i = result.columns.index(enc.field_name)
            out += [Point(series, r[cat_i], _num(r[i])) for r in result.rows]
        return out
    val_i = result.columns.index(roles.measures[0].field_name)
    col_i = result.columns.index(roles.color.field_name)
    keys = sorted({_key(r[col_i]) for r in result.rows})
    labels = {_key(r[col_i]): format_value(r[col_i]) for r in result.rows}
    series = {k: Series(k, labels[k], series_color(widget, k, n)) for n, k in enumerate(keys)}
    return [Point(series[_key(r[col_i])], r[cat_i], _num(r[val_i])) for r in result.rows]


def series_color(widget: Widget, key: str, index: int) -> str:
    """The widget's colour mapping for a series, else the palette's colour at the series' position."""
    return widget.color_mappings.get(key) or widget.palette[index % len(widget.palette)]


def _key(value: Any) -> str:
    return "" if value is None else str(value)


def _num(value: Any) -> float | None:
    """A finite measure, else None (NaN and infinities are not drawn)."""
    return float(value) if is_number(value) and math.isfinite(float(value)) else None


# -- encodings shared by both kinds --------------------------------------------------------------
def color_channel(series: Sequence[Series], roles: Roles, width: int) -> dict[str, Any] | None:
    """Series colours with a legend on top; none for a single series without a `color` encoding."""
    if roles.color is None and len(series) < 2:
        return None
    widest = max(len(s.label) for s in series) * CHAR_WIDTH + 28
    legend = {"title": roles.color.display_name if roles.color else None,
              "columns": max(1, min(len(series), int((width - 120) // widest)))}
    return {"field": "series", "type": "nominal", "legend": legend,
            "scale": {"domain": [s.label for s in series], "range": [s.color for s in series]},
            "sort": [s.label for s in series]}


def value_axis(fmt: NumberFormat | None, values: Sequence[float], extent: float) -> dict[str, Any]:
    """Measure axis labels in d3-format, as precise as the tick step (percentages for rates; compact
    numbers read 1.2K, 3.4M, 5.6B); whole steps when every value is whole (counts)."""
    axis: dict[str, Any] = {}
    if values and all(float(v).is_integer() for v in values):  # ticks no closer than the values' span allows
        span = max(0.0, *values) - min(0.0, *values)
        axis["tickCount"] = max(1, min(math.ceil(extent / 40), int(span)))
    kind = fmt.kind if fmt else "number"
    if kind == "number-percent":
        return {**axis, "format": "~%"}
    if fmt and fmt.compact:
        return {**axis, "format": "~s", "labelExpr": "abs(datum.value) < 1000 ? format(datum.value, ',~r') : "
                                                     "replace(replace(datum.label, 'G', 'B'), 'k', 'K')"}
    return {**axis, "format": "~f" if kind == "number-plain" else ",~f"}


def json_value(value: Any) -> Any:
    """A query value as Vega-Lite reads it: times as UTC ISO text (shown as the query returned them)."""
    if value is None:
        return MISSING
    if isinstance(value, datetime):
        moment = value.astimezone(timezone.utc).replace(tzinfo=None) if value.tzinfo else value
        return moment.isoformat() + "Z"
    if isinstance(value, date):
        return datetime(value.year, value.month, value.day).isoformat() + "Z"
    if isinstance(value, (int, float, Decimal)) and not isinstance(value, bool):
        return float(value) if isinstance(value, Decimal) else value
    return format_value(value)


def tip(series: Series, x: Any, text: str) -> str:
    return f"{series.label}\n{format_value(x)}: {text}"


def _keep_order(widget: Widget) -> bool:
    return bool(widget.query and widget.query.orders)


def band_sort(values: Sequence[Any], widget: Widget) -> str | None:
    """Times and numbers ascending; text as the query ordered it, else ascending."""
    present = [v for v in values if v is not None]
    ordered = bool(present) and all(is_temporal(v) or is_number(v) for v in present)
    return "ascending" if ordered or not _keep_order(widget) else None


def band_time_pattern(values: Sequence[Any]) -> str | None:
    """strftime pattern for bands of times: as precise as the gaps between them need, no more."""
    present = [v for v in values if v is not None]
    if not present or not all(is_temporal(v) for v in present):
        return None
    epochs = sorted({to_epoch(v) for v in present})
    dates_only = all(is_midnight(v) for v in present)
    if len(epochs) == 1:
        return "%Y-%m-%d" if dates_only else "%Y-%m-%d %H:%M"
    gaps = [b - a for a, b in zip(epochs, epochs[1:])]
    return time_label_format(epochs[-1] - epochs[0], min(gaps), dates_only)


# -- line --------------------------------------------------------------------------------------
def line_layers(widget: Widget, roles: Roles, points: list[Point], width: int, height: int) -> dict[str, Any]:
    """A line per series (broken where a value is missing) and a dot per point carrying its value."""
    fmt = roles.measures[0].format
    series = _ordered_series(points, roles)
    xs = [p.x for p in points]
    present = [p.y for p in points if p.y is not None]
    records = [{"x": json_value(p.x), "y": p.y, "series": p.series.label,
                "tip": tip(p.series, p.x, format_number(p.y, fmt)), "label": format_number(p.y, fmt)} for p in points]
    x = {"field": "x", "title": roles.category.display_name, **line_x(xs, roles.category, widget, width)}
    y = {"field": "y", "type": "quantitative", "title": roles.measures[0].display_name if len(roles.measures) == 1 else None,
         "axis": value_axis(fmt, present, height - 70), "scale": line_scale(present, fmt)}
    labels = widget.labels and len(present) <= MAX_VALUE_LABELS
    if labels:
        y["scale"].update(headroom(present, height - 70))
    color = color_channel(series, roles, width)
    shared = {"x": x, "y": y, **({"color": color} if color else {})}
    fixed = {} if color else {"color": series[0].color}
    count = len(present)
    layers: list[dict[str, Any]] = [
        {"mark": {"type": "line", "strokeWidth": 2, "invalid": "break-paths-show-domains", "aria": False, **fixed}, "encoding": shared},
        {"mark": {"type": "point", "filled": True, "opacity": 1, "size": 40 if count <= 60 else 14, **fixed},
         "encoding": {**shared, "description": {"field": "tip"}, "tooltip": {"field": "tip"}}},
    ]
    if labels:
        layers.append(label_layer(shared, "y", vertical=True))
    return {"data": {"values": records}, "layer": layers}


def line_x(xs: Sequence[Any], enc: Encoding, widget: Widget, width: int) -> dict[str, Any]:
    """Time on a UTC time axis, numbers on a linear one, anything else in bands; a label per 90 px."""
    present = [x for x in xs if x is not None]
    ticks = {"tickCount": max(2, (width - 70) // 90), "labelOverlap": True}
    if present and all(is_temporal(x) for x in present):
        return {"type": "temporal", "scale": {"type": "utc"}, "axis": {"labelExpr": TIME_LABEL, **ticks}}
    if enc.scale == "quantitative" and present and all(is_number(x) for x in present):
        return {"type": "quantitative", "scale": {"zero": False}, "axis": ticks}
    return {"type": "ordinal", "sort": band_sort(xs, widget), "axis": {"labelOverlap": True, "labelLimit": 140}}


def line_scale(values: Sequence[float], fmt: NumberFormat | None) -> dict[str, Any]:
    """Values in a narrow band far from zero (pass rates of 89-99%) get an axis that starts near them;
    rates of more than 50% read against 100%."""
    scale: dict[str, Any] = {}
    if fmt and fmt.kind == "number-percent" and values and 0.5 < max(values) <= 1:
        values = [*values, 1.0]
        scale["domainMax"] = 1
    lo, hi = (min(values), max(values)) if values else (0.0, 0.0)
    if lo > 0 and hi > lo and hi - lo < 0.5 * hi:
        scale["zero"] = False
    return scale


def headroom(ends: Sequence[float], extent: float, room: float = 24.0) -> dict[str, Any]:
    """A scale maximum that leaves `room` px beyond the longest mark for its value label."""
    top = max(ends, default=0.0)
    return {"domainMax": top * extent / (extent - room)} if top > 0 and extent > 2 * room else {}


def label_layer(shared: Mapping[str, Any], at: str, vertical: bool) -> dict[str, Any]:
    """Each mark's value (the record's `label`) printed at its end, `at` (`label.show`)."""
    mark = {"type": "text", "aria": False, **({"baseline": "bottom", "dy": -3} if vertical else {"align": "left", "dx": 3})}
    measure = "y" if vertical else "x"
    encoding = {k: v for k, v in shared.items() if k != "color"}
    encoding[measure] = {**shared[measure], "field": at, "stack": None}  # the same axis: layers merge theirs
    return {"mark": mark, "encoding": {**encoding, "text": {"field": "label", "type": "nominal"}}}


def _ordered_series(points: Sequence[Point], roles: Roles) -> list[Series]:
    seen: dict[str, Series] = {}
    for p in points:
        seen.setdefault(p.series.key, p.series)
    series = list(seen.values())
    return sorted(series, key=lambda s: s.key) if roles.color is not None and len(roles.measures) == 1 else series


# -- bar ---------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Cell:
    """One bar: a category's value for one series (rows of the same cell are summed)."""

    series: Series
    category: Any
    value: float


def bar_cells(points: Sequence[Point]) -> list[Cell]:
    sums: dict[tuple[str, str], float] = {}
    first: dict[tuple[str, str], Point] = {}
    for p in points:
        if p.y is None:
            continue
        key = (p.series.key, _band_key(p.x))
        first.setdefault(key, p)
        sums[key] = sums.get(key, 0.0) + p.y
    return [Cell(first[k].series, first[k].x, v) for k, v in sums.items()]


def _band_key(value: Any) -> str:
    return "\x00" if value is None else (value.isoformat() if is_temporal(value) else str(value))


def bar_layers(widget: Widget, roles: Roles, points: list[Point], width: int, height: int) -> dict[str, Any]:
    """Bars per category: stacked, grouped side by side, or stacked to 100%."""
    cells = bar_cells(points)
    series = _ordered_series(points, roles)
    grouped = widget.bar_layout == "group" and len(series) > 1
    shares = widget.bar_layout == "stack-100"
    fmt = PERCENT if shares else roles.measures[0].format
    cat_ch, val_ch = ("y", "x") if roles.horizontal else ("x", "y")
    extent = width * 0.58 - 20 if roles.horizontal else height - 70  # px along the measure axis
    value = value_channel(roles, cells, fmt, extent, "normalize" if shares else None if grouped else "zero")
    color = color_channel(series, roles, width)
    shared: dict[str, Any] = {cat_ch: category_channel(widget, roles, cells, len(series) if grouped else 1, width, height),
                              val_ch: value, **({"color": color} if color else {})}
    if grouped:
        labels = [s.label for s in series]
        shared[f"{cat_ch}Offset"] = {"field": "series", "type": "nominal", "sort": labels, "scale": {"domain": labels}}
    fixed = {} if color else {"color": series[0].color}
    marks = {**shared, "order": {"field": "order", "type": "quantitative"}, "description": {"field": "tip"}, "tooltip": {"field": "tip"}}
    layers: list[dict[str, Any]] = [{"mark": {"type": "bar", **fixed}, "encoding": marks}]
    labels_data = bar_labels(cells, fmt, grouped or len(series) == 1)
    if widget.labels and not shares and len(labels_data) <= MAX_VALUE_LABELS:
        value["scale"] = headroom([r["at"] for r in labels_data], extent, 56.0 if roles.horizontal else 18.0)
        layers.append({"data": {"values": labels_data}, **label_layer(shared, "at", not roles.horizontal)})
    records = bar_records(cells, series, roles.measures[0].format, shares)
    return {"data": {"values": records}, "layer": layers}


def category_channel(widget: Widget, roles: Roles, cells: Sequence[Cell], per_band: int, width: int, height: int) -> dict[str, Any]:
    """The bars' category axis: a band per distinct value, in order, labelled as it reads best."""
    categories = [c.category for c in cells]
    n = len({_band_key(c) for c in categories})
    extent = (height - 40) if roles.horizontal else (width - 70)
    return {"field": "cat", "type": "ordinal", "title": roles.category.display_name, "sort": band_sort(categories, widget),
            "scale": band_scale(n, per_band, extent, roles.horizontal), "axis": band_axis(categories, n, width, roles.horizontal)}


def value_channel(roles: Roles, cells: Sequence[Cell], fmt: NumberFormat | None, extent: float, stack: str | None) -> dict[str, Any]:
    """The bars' measure axis; titled by the measure unless there are several (the legend names them)."""
    whole = [] if stack == "normalize" else [c.value for c in cells]
    return {"field": "value", "type": "quantitative", "axis": value_axis(fmt, whole, extent),
            "title": roles.measures[0].display_name if len(roles.measures) == 1 else None, "stack": stack}


def bar_records(cells: Sequence[Cell], series: Sequence[Series], fmt: NumberFormat | None, shares: bool) -> list[dict[str, Any]]:
    """One record per bar, stacked in series order (the first at the base); with `shares` (stack-100)
    the tooltip gives the bar's share of its category."""
    order = {s.key: n for n, s in enumerate(series)}
    totals: dict[str, float] = {}
    for c in cells:
        totals[_band_key(c.category)] = totals.get(_band_key(c.category), 0.0) + abs(c.value)
    out = []
    for c in cells:
        shown = c.value / (totals[_band_key(c.category)] or 1.0) if shares else c.value
        text = format_number(shown, PERCENT if shares else fmt)
        out.append({"cat": json_value(c.category), "value": c.value, "series": c.series.label,
                    "tip": tip(c.series, c.category, text), "order": order[c.series.key]})
    return out


def band_scale(n: int, per_band: int, extent: float, horizontal: bool) -> dict[str, Any]:
    """Band padding so that a bar is at most MAX_BAR_WIDTH (30 px lying down) wide: with `n` bands over
    `extent` px a band is extent * (1 - inner) / (n - inner + 2 * outer) wide."""
    widest = (30.0 if horizontal else MAX_BAR_WIDTH) * per_band
    if extent * 0.8 / max(n, 1) <= widest:
        return {"paddingInner": 0.2, "paddingOuter": 0.1}
    inner = (extent - widest * (n + 2)) / (extent - widest)
    return {"paddingInner": round(min(max(inner, 0.2), 0.95), 3), "paddingOuter": 1}


def band_axis(categories: Sequence[Any], n: int, width: int, horizontal: bool) -> dict[str, Any]:
    """Category labels: times as precise as needed; tilted when they do not fit under their bar."""
    axis: dict[str, Any] = {"labelOverlap": True, "labelLimit": int(width * 0.42) if horizontal else 140}
    pattern = band_time_pattern(categories)
    if pattern:
        axis["labelExpr"] = f"datum.value == '{MISSING}' ? '{MISSING}' : utcFormat(toDate(datum.value), '{pattern}')"
    if not horizontal:
        labels = [format_time(c, pattern) if pattern and c is not None else format_value(c) for c in categories]
        longest = max((len(label) for label in labels), default=1) * CHAR_WIDTH
        axis["labelAngle"] = -35 if longest > (width - 70) / max(n, 1) - 6 else 0
    return axis


def bar_labels(cells: Sequence[Cell], fmt: NumberFormat | None, each: bool) -> list[dict[str, Any]]:
    """Value labels: one per bar (`each`: grouped or a single series), else each stack's total at its top."""
    if each:
        return [{"cat": json_value(c.category), "series": c.series.label, "at": c.value,
                 "label": format_number(c.value, fmt)} for c in cells]
    totals: dict[str, tuple[Any, float, float]] = {}
    for c in cells:
        key = _band_key(c.category)
        cat, up, net = totals.get(key, (c.category, 0.0, 0.0))
        totals[key] = (cat, up + max(c.value, 0.0), net + c.value)
    return [{"cat": json_value(cat), "at": up, "label": format_number(net, fmt)} for cat, up, net in totals.values()]
