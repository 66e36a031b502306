"""Inline SVG line and bar charts from a widget's query result, readable at a glance.

Series come from the encodings as Lakeview draws them: one per value of the `color` field, or one
per field of `y.fields`, or a single one. Line charts put time (or numbers) on a proportional axis;
bar charts give every x value a band (stacked, grouped or stacked to 100%) and draw horizontally
when the category is on `y` and the measure on `x`. Every mark carries an SVG `<title>`, so hovering
shows the exact value without any script.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from html import escape
from typing import Any, Callable, Sequence

from pipelines.dashboard.formatting import (
    MISSING, format_number, format_time, format_value, from_epoch, is_midnight, is_number, is_temporal, nice_ticks,
    time_label_format, time_ticks, to_epoch, truncate,
)
from pipelines.dashboard.lvdash import Encoding, NumberFormat, Widget
from pipelines.dashboard.query import WidgetResult

CHAR_WIDTH = 6.4  # average width of an 11px label, for layout
PERCENT = NumberFormat(kind="number-percent")
MAX_VALUE_LABELS = 24  # bars get their value printed when there are at most this many
MAX_BAR_WIDTH = 72.0  # px; one bar on a wide widget stays a bar, not a wall
MAX_LINE_LABELS = 3  # lines get their last value printed when there are at most this many


@dataclass(frozen=True)
class Series:
    key: str  # the raw color value (what color mappings match) or the y field name
    label: str
    color: str
    points: tuple[tuple[Any, float | None], ...]  # (category or x value, measure)


@dataclass(frozen=True)
class Chart:
    svg: str
    legend: tuple[tuple[str, str], ...]  # (label, color); empty for a single unnamed series
    legend_title: str
    value_title: str  # what the measure axis shows, printed above the chart


@dataclass(frozen=True)
class Categories:
    """Distinct x values of a bar chart (or categorical line chart), in display order."""

    keys: tuple[str, ...]
    raw: tuple[Any, ...]
    labels: tuple[str, ...]

    def index(self) -> dict[str, int]:
        return {k: i for i, k in enumerate(self.keys)}


def _num(value: Any) -> float | None:
    return float(value) if is_number(value) else None


def build_series(result: WidgetResult, category: Encoding, values: Sequence[Encoding], color: Encoding | None) -> list[Series]:
    """Splits the rows into series: one per y field (`y.fields`), per color value, or a single one."""
    widget = result.widget
    cat_i = result.columns.index(category.field_name)
    if len(values) > 1 or color is None:
        out = []
        for n, enc in enumerate(values):
            i = result.columns.index(enc.field_name)
            points = tuple((r[cat_i], _num(r[i])) for r in result.rows)
            out.append(Series(enc.field_name, enc.display_name, _color(widget, enc.field_name, n), points))
        return out
    val_i = result.columns.index(values[0].field_name)
    col_i = result.columns.index(color.field_name)
    groups: dict[str, list[tuple[Any, float | None]]] = {}
    labels: dict[str, str] = {}
    for r in result.rows:
        key = "" if r[col_i] is None else str(r[col_i])
        groups.setdefault(key, []).append((r[cat_i], _num(r[val_i])))
        labels[key] = format_value(r[col_i])
    return [Series(k, labels[k], _color(widget, k, n), tuple(groups[k])) for n, k in enumerate(sorted(groups))]


def _color(widget: Widget, key: str, index: int) -> str:
    return widget.color_mappings.get(key) or widget.palette[index % len(widget.palette)]


def _legend(series: Sequence[Series], color: Encoding | None) -> tuple[tuple[tuple[str, str], ...], str]:
    if color is None and len(series) < 2:
        return (), ""
    return tuple((s.label, s.color) for s in series), (color.display_name if color else "")


def category_key(value: Any) -> str:
    return "\x00" if value is None else (value.isoformat() if is_temporal(value) else str(value))


def categories(values: Sequence[Any], keep_order: bool) -> Categories:
    """Distinct values; times and numbers sorted, text sorted unless the widget orders its rows."""
    seen: dict[str, Any] = {}
    for v in values:
        seen.setdefault(category_key(v), v)
    items = list(seen.items())
    present = [v for _, v in items if v is not None]
    temporal = bool(present) and all(is_temporal(v) for v in present)
    if temporal:
        items.sort(key=lambda kv: (kv[1] is None, to_epoch(kv[1]) if kv[1] is not None else 0))
    elif not keep_order:
        numeric = bool(present) and all(is_number(v) for v in present)
        items.sort(key=lambda kv: (kv[1] is None, float(kv[1]) if numeric and kv[1] is not None else 0, str(kv[1])))
    raw = tuple(v for _, v in items)
    labels = _time_labels(raw) if temporal else tuple(format_value(v) for v in raw)
    return Categories(tuple(k for k, _ in items), raw, labels)


def _time_labels(raw: Sequence[Any]) -> tuple[str, ...]:
    """Labels for time bands: as precise as the gaps between them need, no more."""
    present = [v for v in raw if v is not None]
    epochs = [to_epoch(v) for v in present]
    gaps = [b - a for a, b in zip(epochs, epochs[1:])] or [86400.0]
    dates_only = all(is_midnight(v) for v in present)
    if len(present) == 1 and not dates_only:
        return tuple(format_time(v, "%Y-%m-%d %H:%M") if v is not None else MISSING for v in raw)
    pattern = time_label_format(max(epochs) - min(epochs), min(gaps), dates_only)
    return tuple(format_time(v, pattern) if v is not None else MISSING for v in raw)


def _axis_number(value: float, fmt: NumberFormat | None) -> str:
    if fmt and fmt.kind == "number-percent":
        whole = abs(value * 100 - round(value * 100)) < 1e-9
        return format_number(value, NumberFormat(kind="number-percent", decimal_places=0 if whole else 1))
    return format_number(value, NumberFormat(kind="number", compact=True))


def value_ticks(values: Sequence[float], zoom: bool = False) -> list[float]:
    """Measure-axis ticks from zero (or the lowest negative value) to the largest value.

    With `zoom` (line charts), values in a narrow band far from zero (pass rates of 89-99%, say)
    get an axis that starts just below them, so their differences are visible at a glance.
    """
    low, high = min([0.0, *values]), max([0.0, *values])
    if zoom and values:
        lo, hi = min(values), max(values)
        if lo > 0 and hi > lo and hi - lo < 0.5 * hi:
            low = lo - (hi - lo) * 0.25
    if high == low:
        high = low + 1.0
    return nice_ticks(low, high, integer=bool(values) and all(float(v).is_integer() for v in values))


def _text(x: float, y: float, text: str, anchor: str = "middle", cls: str = "", tip: str = "", transform: str = "") -> str:
    attrs = f' class="{cls}"' if cls else ""
    if transform:
        attrs += f' transform="{transform}"'
    title = f"<title>{escape(tip)}</title>" if tip else ""
    return f'<text x="{x:.1f}" y="{y:.1f}" text-anchor="{anchor}"{attrs}>{escape(text)}{title}</text>'


def _line(x1: float, y1: float, x2: float, y2: float, cls: str) -> str:
    return f'<line class="{cls}" x1="{x1:.1f}" y1="{y1:.1f}" x2="{x2:.1f}" y2="{y2:.1f}"/>'


def _rect(x: float, y: float, w: float, h: float, color: str, tip: str) -> str:
    x, w = (x + w, -w) if w < 0 else (x, w)
    y, h = (y + h, -h) if h < 0 else (y, h)
    return (f'<rect x="{x:.1f}" y="{y:.1f}" width="{max(w, 0.5):.1f}" height="{max(h, 0.5):.1f}" '
            f'fill="{color}"><title>{escape(tip)}</title></rect>')


def _svg(width: int, height: int, parts: Sequence[str], title: str) -> str:
    return (f'<svg class="chart" viewBox="0 0 {width} {height}" width="{width}" height="{height}" '
            f'role="img" aria-label="{escape(title)}" xmlns="http://www.w3.org/2000/svg">{"".join(parts)}</svg>')


def _y_axis(ticks: Sequence[float], fmt: NumberFormat | None, left: float, right: float, py: Callable[[float], float]) -> list[str]:
    out = []
    for t in ticks:
        out.append(_line(left, py(t), right, py(t), "grid"))
        out.append(_text(left - 6, py(t) + 4, _axis_number(t, fmt), anchor="end", cls="tick"))
    return out


def _left_margin(ticks: Sequence[float], fmt: NumberFormat | None) -> float:
    return max(len(_axis_number(t, fmt)) for t in ticks) * CHAR_WIDTH + 14


# -- line --------------------------------------------------------------------------------------
def line_chart(result: WidgetResult, width: int, height: int) -> Chart:
    """One line per series over a time (or number, or category) axis, with a dot per point."""
    widget = result.widget
    x_enc, color, y_encs = widget.first("x"), widget.first("color"), widget.channel("y")
    assert x_enc is not None and y_encs, widget.name
    series = build_series(result, x_enc, y_encs, color)
    fmt = y_encs[0].format
    ys = [y for s in series for _, y in s.points if y is not None]
    if fmt and fmt.kind == "number-percent" and ys and 0.5 < max(ys) <= 1:
        ys.append(1.0)  # rates read against 100%
    ticks = value_ticks(ys, zoom=True)
    xs = [x for s in series for x, _ in s.points if x is not None]
    left, top, right, bottom = _left_margin(ticks, fmt), 10.0, 18.0, 36.0
    plot_w, plot_h = width - left - right, height - top - bottom

    def py(v: float) -> float:
        return top + plot_h - (v - ticks[0]) / (ticks[-1] - ticks[0]) * plot_h

    parts = _y_axis(ticks, fmt, left, width - right, py)
    px, x_text, x_labels = _x_scale(xs, x_enc, left, plot_w, keep_order=bool(widget.query and widget.query.orders))
    baseline = top + plot_h
    for x, label in x_labels:
        parts.append(_line(x, baseline, x, baseline + 4, "axis"))
        parts.append(_text(x, baseline + 16, label, cls="tick"))
    parts.append(_line(left, baseline, width - right, baseline, "axis"))
    dots, labels = [], []
    for s in series:
        points = sorted((p for p in s.points if p[0] is not None), key=lambda p: px(p[0]))
        segment: list[tuple[float, float]] = []
        segments = [segment]
        for x, y in points:
            if y is None:
                segment = []
                segments.append(segment)
                continue
            segment.append((px(x), py(y)))
            radius = 3.5 if len(points) <= 60 else 2.0
            tip = f"{s.label}\n{x_text(x)}: {format_number(y, fmt)}"
            dots.append(f'<circle cx="{px(x):.1f}" cy="{py(y):.1f}" r="{radius}" fill="{s.color}"><title>{escape(tip)}</title></circle>')
        last = [(x, y) for x, y in points if y is not None][-1:]
        if last and len(series) <= MAX_LINE_LABELS:
            x, y = last[0]
            near_edge = px(x) > left + plot_w - 30
            labels.append(_text(px(x) + (4 if near_edge else 0), py(y) - 8, format_number(y, fmt),
                                anchor="end" if near_edge else "middle", cls="value"))
        for seg in segments:
            if len(seg) > 1:
                d = " ".join(f"{'M' if i == 0 else 'L'}{a:.1f},{b:.1f}" for i, (a, b) in enumerate(seg))
                parts.append(f'<path d="{d}" fill="none" stroke="{s.color}" stroke-width="2" stroke-linejoin="round"/>')
    parts.extend(dots)
    parts.extend(labels)
    if x_enc.display_name:
        parts.append(_text(left + plot_w / 2, height - 3, x_enc.display_name, cls="axis-title"))
    legend, legend_title = _legend(series, color)
    value_title = y_encs[0].display_name if len(y_encs) == 1 else ""
    return Chart(_svg(width, height, parts, widget.title), legend, legend_title, value_title)


def _x_scale(xs: Sequence[Any], enc: Encoding, left: float, plot_w: float, keep_order: bool
             ) -> tuple[Callable[[Any], float], Callable[[Any], str], list[tuple[float, str]]]:
    """x position, tooltip text and tick labels for a line chart's x values."""
    temporal = bool(xs) and all(is_temporal(x) for x in xs)
    numeric = enc.scale == "quantitative" and bool(xs) and all(is_number(x) for x in xs)
    if not temporal and not numeric:
        cats = categories(xs, keep_order)
        step = plot_w / max(len(cats.keys), 1)
        where = {k: left + step * (i + 0.5) for i, k in enumerate(cats.keys)}
        limit = max(int(step / CHAR_WIDTH), 4)
        labels = [(where[k], truncate(label, limit)) for k, label in zip(cats.keys, cats.labels)]
        return (lambda x: where[category_key(x)]), format_value, _thin(labels, plot_w)
    values = [to_epoch(x) if temporal else float(x) for x in xs]
    lo, hi = min(values), max(values)
    pad = (hi - lo) * 0.04 if hi > lo else (3600.0 if temporal else 1.0)
    lo_p, hi_p = lo - pad, hi + pad

    def position(v: float) -> float:
        return left + (v - lo_p) / (hi_p - lo_p) * plot_w

    def px(x: Any) -> float:
        return position(to_epoch(x) if temporal else float(x))

    count = max(2, int(plot_w // 90))
    if temporal:
        dates_only = all(is_midnight(x) for x in xs)
        if hi == lo:
            return px, format_value, [(px(xs[0]), format_time(xs[0], "%Y-%m-%d" if dates_only else "%Y-%m-%d %H:%M"))]
        tick_values, step = time_ticks(lo, hi, count, dates_only)
        pattern = time_label_format(hi - lo, step, dates_only)
        labels = [(position(t), format_time(from_epoch(t), pattern)) for t in tick_values]
        return px, format_value, labels
    labels = [(position(t), format_number(t)) for t in nice_ticks(lo, hi, count) if lo_p <= t <= hi_p]
    return px, format_value, labels


def _thin(labels: list[tuple[float, str]], plot_w: float) -> list[tuple[float, str]]:
    widest = max((len(label) for _, label in labels), default=1) * CHAR_WIDTH + 10
    every = max(1, math.ceil(len(labels) / max(plot_w / widest, 1)))
    return labels[::every]


# -- bar ---------------------------------------------------------------------------------------
@dataclass(frozen=True)
class _Bars:
    """A bar chart's data laid out per category and series (values already summed per cell)."""

    cats: Categories
    series: tuple[Series, ...]
    cells: dict[tuple[int, str], float]  # (category index, series key) -> value
    grouped: bool
    fmt: NumberFormat | None

    def value(self, i: int, key: str) -> float | None:
        return self.cells.get((i, key))

    def stack_extent(self) -> list[float]:
        if self.grouped:
            return list(self.cells.values())
        out = []
        for i in range(len(self.cats.keys)):
            vals = [self.cells.get((i, s.key)) or 0.0 for s in self.series]
            out += [sum(v for v in vals if v > 0), sum(v for v in vals if v < 0)]
        return out


def bar_chart(result: WidgetResult, width: int, height: int) -> Chart:
    """Bars per category: stacked (Lakeview's default), grouped, or stacked to 100%."""
    widget = result.widget
    x_enc, color, y_encs = widget.first("x"), widget.first("color"), widget.channel("y")
    assert x_enc is not None and y_encs, widget.name
    horizontal = x_enc.scale == "quantitative" and y_encs[0].scale == "categorical" and len(y_encs) == 1
    category, measures = (y_encs[0], (x_enc,)) if horizontal else (x_enc, y_encs)
    series = build_series(result, category, measures, color)
    cats = categories([x for s in series for x, _ in s.points], keep_order=bool(widget.query and widget.query.orders))
    where = cats.index()
    cells: dict[tuple[int, str], float] = {}
    for s in series:
        for x, y in s.points:
            if y is not None:
                key = (where[category_key(x)], s.key)
                cells[key] = cells.get(key, 0.0) + y
    fmt = measures[0].format
    if widget.bar_layout == "stack-100":
        fmt = PERCENT
        for i in range(len(cats.keys)):
            total = sum(abs(v) for (j, _), v in cells.items() if j == i) or 1.0
            for s in series:
                if (i, s.key) in cells:
                    cells[(i, s.key)] /= total
    bars = _Bars(cats, tuple(series), cells, widget.bar_layout == "group" and len(series) > 1, fmt)
    draw = _horizontal_bars if horizontal else _vertical_bars
    parts = draw(bars, width, height)
    if not horizontal and category.display_name:
        parts.append(_text(width / 2, height - 3, category.display_name, cls="axis-title"))
    legend, legend_title = _legend(series, color)
    value_title = measures[0].display_name if len(measures) == 1 else ""
    return Chart(_svg(width, height, parts, widget.title), legend, legend_title, value_title)


def _vertical_bars(b: _Bars, width: int, height: int) -> list[str]:
    ticks = value_ticks(b.stack_extent())
    left, top, right = _left_margin(ticks, b.fmt), 16.0, 12.0
    n = max(len(b.cats.keys), 1)
    band = (width - left - right) / n
    longest = max((len(t) for t in b.cats.labels), default=1) * CHAR_WIDTH
    rotate = longest > band - 6
    label_room = min(longest, 140) * 0.6 + 8 if rotate else 8
    plot_h = height - top - 28 - label_room

    def py(v: float) -> float:
        return top + plot_h - (v - ticks[0]) / (ticks[-1] - ticks[0]) * plot_h

    parts = _y_axis(ticks, b.fmt, left, width - right, py)
    per_label = 16 if rotate else longest + 10
    every = max(1, math.ceil(n / max((width - left - right) / per_label, 1)))
    show_values = n * (len(b.series) if b.grouped else 1) <= MAX_VALUE_LABELS
    baseline = top + plot_h
    per_band = len(b.series) if b.grouped else 1
    for i, label in enumerate(b.cats.labels):
        inner = min(band * 0.72, MAX_BAR_WIDTH * per_band)
        start = left + band * i + (band - inner) / 2
        if b.grouped:
            w = inner / len(b.series)
            for j, s in enumerate(b.series):
                v = b.value(i, s.key)
                if v is None:
                    continue
                parts.append(_rect(start + j * w, py(0), w - 1, py(v) - py(0), s.color, f"{s.label}\n{label}: {format_number(v, b.fmt)}"))
                if show_values:
                    parts.append(_text(start + (j + 0.5) * w, min(py(v), py(0)) - 4, format_number(v, b.fmt), cls="value"))
        else:
            up = down = 0.0
            drawn = False
            for s in b.series:
                v = b.value(i, s.key)
                if v is None:
                    continue
                base = up if v >= 0 else down
                parts.append(_rect(start, py(base), inner, py(base + v) - py(base), s.color, f"{s.label}\n{label}: {format_number(v, b.fmt)}"))
                up, down = (up + v, down) if v >= 0 else (up, down + v)
                drawn = True
            if show_values and drawn:
                parts.append(_text(start + inner / 2, py(up) - 4, format_number(up + down, b.fmt), cls="value"))
        if i % every == 0:
            cx = start + inner / 2
            text = truncate(label, 24)
            if rotate:
                parts.append(_text(cx, baseline + 12, text, anchor="end", cls="tick", tip=label,
                                   transform=f"rotate(-35 {cx:.1f} {baseline + 12:.1f})"))
            else:
                parts.append(_text(cx, baseline + 15, text, cls="tick", tip=label))
    parts.append(_line(left, py(0), width - right, py(0), "axis"))
    return parts


def _horizontal_bars(b: _Bars, width: int, height: int) -> list[str]:
    ticks = value_ticks(b.stack_extent())
    widest = max((len(t) for t in b.cats.labels), default=4) * CHAR_WIDTH + 12
    left = min(widest, width * 0.42)
    max_chars = max(int((left - 12) / CHAR_WIDTH), 4)
    top, right, bottom = 6.0, 56.0, 22.0
    band = (height - top - bottom) / max(len(b.cats.keys), 1)
    plot_w = width - left - right

    def px(v: float) -> float:
        return left + (v - ticks[0]) / (ticks[-1] - ticks[0]) * plot_w

    parts = []
    for t in ticks:
        parts.append(_line(px(t), top, px(t), height - bottom, "grid"))
        parts.append(_text(px(t), height - bottom + 14, _axis_number(t, b.fmt), cls="tick"))
    show_values = len(b.cats.keys) * (len(b.series) if b.grouped else 1) <= MAX_VALUE_LABELS
    for i, label in enumerate(b.cats.labels):
        inner = min(band * 0.72, 30.0)
        start = top + band * i + (band - inner) / 2
        parts.append(_text(left - 6, start + inner / 2 + 4, truncate(label, max_chars), anchor="end", cls="tick", tip=label))
        if b.grouped:
            h = inner / len(b.series)
            for j, s in enumerate(b.series):
                v = b.value(i, s.key)
                if v is not None:
                    parts.append(_rect(px(0), start + j * h, px(v) - px(0), h - 1, s.color, f"{s.label}\n{label}: {format_number(v, b.fmt)}"))
                    if show_values:
                        parts.append(_text(max(px(v), px(0)) + 4, start + (j + 0.5) * h + 4, format_number(v, b.fmt), anchor="start", cls="value"))
            continue
        acc, drawn = 0.0, False
        for s in b.series:
            v = b.value(i, s.key)
            if v is not None:
                parts.append(_rect(px(acc), start, px(acc + v) - px(acc), inner, s.color, f"{s.label}\n{label}: {format_number(v, b.fmt)}"))
                acc += v
                drawn = True
        if show_values and drawn:
            parts.append(_text(max(px(acc), px(0)) + 4, start + inner / 2 + 4, format_number(acc, b.fmt), anchor="start", cls="value"))
    parts.append(_line(px(0), top, px(0), height - bottom, "axis"))
    return parts
