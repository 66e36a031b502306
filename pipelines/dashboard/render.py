"""Render a `.lvdash.json` to ONE static, self-contained HTML page from the tables a session sees.

Every data widget's query runs with the given SparkSession (classic or Spark Connect); the caller has
already made the observability schema current (`USE <catalog>.<schema>`), just as the bundle's
`dataset_catalog`/`dataset_schema` do on Databricks. The page has inline CSS and inline SVG only: no
network, no script (each chart is a Vega-Lite specification drawn to SVG beforehand, `vegalite.py`).
Pages become sections on the page's grid (the dashboard's own positions), and each widget element
carries `data-widget` (its name) and `data-rows` (rows its query returned), so a test can check
that every widget shows data.
"""

from __future__ import annotations

import html
import re
import time
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Mapping

from pipelines.dashboard.formatting import MISSING, format_number, format_value, is_number, is_temporal, truncate
from pipelines.dashboard.lvdash import FILTER_KINDS, GRID_COLUMNS, Dashboard, NumberFormat, Page, Widget, load_dashboard
from pipelines.dashboard.batch import DatasetWidgets, run_datasets
from pipelines.dashboard.query import WidgetResult
from pipelines.dashboard.vegalite import chart_svg

PAGE_WIDTH = 1360  # px of the widget grid
GAP = 16  # px between grid cells
ROW_HEIGHT = 64  # px of one grid row
TABLE_ROWS = 200  # rows a table widget shows at most
CELL_CHARS = 140  # characters a table cell shows before it is cut (the full text is its tooltip)
SHORT_CELL = 40  # cells up to this many characters do not wrap
STATE_CLASSES = {"COMPLETED": "good", "FAILED": "bad", "ERROR": "bad", "CANCELED": "muted", "SKIPPED": "muted",
                 "STOPPED": "muted", "EXCLUDED": "muted", "RUNNING": "info"}


@dataclass(frozen=True)
class RenderedDashboard:
    html: str
    results: Mapping[str, WidgetResult]  # by widget name; text widgets have none
    seconds: float

    def failed(self) -> list[WidgetResult]:
        return [r for r in self.results.values() if r.error]


def run_widgets(spark: Any, dashboard: Dashboard) -> dict[str, WidgetResult]:
    """Runs every data widget's query; the results are in page order.

    The widgets of one dataset run together in one query and datasets run concurrently (`batch`);
    each widget's rows, their order and a failing widget's error are those of its own query.
    """
    groups: dict[str, list[Widget]] = {}
    for _, widget in dashboard.widgets():
        if widget.query is not None:
            groups.setdefault(widget.query.dataset_name, []).append(widget)
    found = run_datasets(spark, [DatasetWidgets(dashboard.dataset(name), tuple(widgets)) for name, widgets in groups.items()])
    return {w.name: found[w.name] for _, w in dashboard.widgets() if w.query is not None}


def render_dashboard(spark: Any, lvdash_path: Path, title: str | None = None) -> RenderedDashboard:
    """Loads the dashboard, runs its widgets and renders the page (in memory)."""
    started = time.monotonic()
    dashboard = load_dashboard(lvdash_path)
    results = run_widgets(spark, dashboard)
    seconds = time.monotonic() - started
    page = render_html(dashboard, results, title or default_title(lvdash_path), source=Path(lvdash_path).name, seconds=seconds)
    return RenderedDashboard(page, results, seconds)


def write_dashboard(spark: Any, lvdash_path: Path, output: Path, title: str | None = None) -> Path:
    """Renders the `.lvdash.json` with `spark` and writes one self-contained HTML file to `output`."""
    rendered = render_dashboard(spark, lvdash_path, title)
    output = Path(output)
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text(rendered.html, encoding="utf-8")
    return output


def default_title(lvdash_path: Path) -> str:
    return Path(lvdash_path).name.removesuffix(".json").removesuffix(".lvdash")


# -- page --------------------------------------------------------------------------------------
def render_html(dashboard: Dashboard, results: Mapping[str, WidgetResult], title: str, source: str = "",
                seconds: float | None = None, now: datetime | None = None) -> str:
    now = now or datetime.now(timezone.utc)
    failed = [r for r in results.values() if r.error]
    meta = [f"rendered {now.strftime('%Y-%m-%d %H:%M')} UTC"]
    if source:
        meta.append(f"from {html.escape(source)}")
    meta.append(f"{len(results)} widgets, {sum(len(r.rows) for r in results.values()):,} rows")
    if seconds is not None:
        meta.append(f"queries took {seconds:.1f} s")
    nav = "".join(f'<a href="#page-{_id(p.name)}">{html.escape(p.display_name)}</a>' for p in dashboard.pages)
    banner = ""
    if failed:
        items = "".join(f"<li><b>{html.escape(r.widget.title or r.widget.name)}</b>: {html.escape(r.error or '')}</li>" for r in failed)
        banner = f'<div class="banner" role="alert">{len(failed)} widget(s) could not be shown:<ul>{items}</ul></div>'
    pages = "".join(render_page(p, results) for p in dashboard.pages)
    return (
        "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
        "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
        f"<title>{html.escape(title)}</title><style>{CSS}</style></head><body>"
        f"<header><h1>{html.escape(title)}</h1><p class=\"meta\">{' · '.join(meta)}</p><nav>{nav}</nav></header>"
        f"<main>{banner}{pages}</main>"
        "<footer>Static rendering of the AI/BI dashboard the bundle deploys; each widget runs its own query "
        "over its dataset, as Lakeview does. Hover a point or bar for its exact value.</footer>"
        "</body></html>\n"
    )


def render_page(page: Page, results: Mapping[str, WidgetResult]) -> str:
    widgets = "".join(render_widget(w, results.get(w.name), page.columns) for w in page.widgets)
    note = ('<p class="note">On Databricks these filters apply to every page; this static page shows every '
            'value.</p>' if page.global_filters else "")
    return (f'<section class="page" id="page-{_id(page.name)}" data-page="{html.escape(page.name)}">'
            f'<h2>{html.escape(page.display_name)}</h2>{note}'
            f'<div class="grid" style="grid-template-columns: repeat({page.columns}, 1fr)">{widgets}</div></section>')


def widget_size(widget: Widget, columns: int) -> tuple[int, int]:
    """The widget's size in px on the page grid."""
    col = (PAGE_WIDTH - (columns - 1) * GAP) / columns
    w, h = widget.position.width, widget.position.height
    return int(w * col + (w - 1) * GAP), int(h * ROW_HEIGHT + (h - 1) * GAP)


def render_widget(widget: Widget, result: WidgetResult | None, columns: int = GRID_COLUMNS[None]) -> str:
    p = widget.position
    style = f"grid-column: {p.x + 1} / span {p.width}; grid-row: {p.y + 1} / span {p.height}"
    name = html.escape(widget.name)
    if widget.kind == "text":
        return f'<div class="widget widget-text" data-widget="{name}" data-kind="text" style="{style}">{markdown(widget.text)}</div>'
    assert result is not None, f"widget {widget.name} was not run"
    width, height = widget_size(widget, columns)
    header = ""
    if widget.title:
        header += f'<h3 title="{html.escape(widget.title)}">{html.escape(widget.title)}</h3>'
    if widget.description:
        header += f'<p class="desc">{html.escape(widget.description)}</p>'
    attrs = f'data-widget="{name}" data-kind="{widget.kind}" data-rows="{len(result.rows)}"'
    if result.error:
        body = f'<div class="error" data-error="1">Query failed: {html.escape(result.error)}</div>'
        attrs += ' data-error="1"'
    elif not result.rows:
        body = '<div class="empty">No data</div>'
    else:
        body = _body(widget, result, width - 28, height - 28 - (26 if widget.title else 0) - (18 if widget.description else 0))
    return f'<div class="widget widget-{widget.kind}" {attrs} style="{style}">{header}{body}</div>'


def _body(widget: Widget, result: WidgetResult, width: int, height: int) -> str:
    if widget.kind == "counter":
        return counter_html(widget, result)
    if widget.kind in FILTER_KINDS:
        return filter_html(widget, result)
    if widget.kind == "table":
        return table_html(widget, result)
    return f'<div class="plot">{chart_svg(result, width, max(height, 120))}</div>'


def counter_html(widget: Widget, result: WidgetResult) -> str:
    """The first row's value, big; Lakeview counters show one number."""
    value_enc = widget.first("value")
    assert value_enc is not None
    value = result.records()[0][value_enc.field_name]
    text = format_value(value, value_enc.format)
    parts = [f'<div class="counter-value{" missing" if value is None else ""}" title="{html.escape(value_enc.display_name)}">{html.escape(text)}</div>']
    target = widget.first("target")
    if target is not None:
        parts.append(f'<div class="counter-target">target {html.escape(format_value(result.records()[0][target.field_name], target.format))}</div>')
    return "".join(parts)


def filter_html(widget: Widget, result: WidgetResult) -> str:
    """A filter's choices (the first bound dataset's values) and what it binds; nothing is filtered here."""
    field = widget.encodings[0]
    choices = "".join(f'<li>{html.escape(format_value(v, None))}</li>' for v in result.column(field.field_name))
    bound = ", ".join(sorted({d for d, _ in widget.bindings}))
    return (f'<ul class="choices" title="{html.escape(field.display_name)}">{choices}</ul>'
            f'<p class="note">{"One" if widget.kind == "filter-single-select" else "Any"} of the values above; '
            f'filters {html.escape(bound)}.</p>')


def table_html(widget: Widget, result: WidgetResult) -> str:
    """The rows (at most TABLE_ROWS, and the page says so), numbers right-aligned, states as badges."""
    columns = widget.channel("column")
    index = [result.columns.index(c.field_name) for c in columns]
    numeric = [c.format is not None or _numeric(result, i) for c, i in zip(columns, index)]
    head = "".join(f'<th{" class=num" if n else ""}>{html.escape(c.display_name)}</th>' for c, n in zip(columns, numeric))
    body = []
    for row in result.rows[:TABLE_ROWS]:
        cells = "".join(_cell(row[i], c.format, n) for i, c, n in zip(index, columns, numeric))
        body.append(f"<tr>{cells}</tr>")
    note = ""
    if len(result.rows) > TABLE_ROWS or result.truncated:
        total = f"more than {len(result.rows):,}" if result.truncated else f"{len(result.rows):,}"
        note = f'<p class="note">Showing the first {TABLE_ROWS:,} of {total} rows.</p>'
    return f'<div class="table-wrap"><table><thead><tr>{head}</tr></thead><tbody>{"".join(body)}</tbody></table></div>{note}'


def _numeric(result: WidgetResult, i: int) -> bool:
    values = [r[i] for r in result.rows[:TABLE_ROWS] if r[i] is not None]
    return bool(values) and all(is_number(v) for v in values)


def _cell(value: Any, fmt: NumberFormat | None, numeric: bool) -> str:
    if value is None:
        return f'<td class="missing{" num" if numeric else ""}">{MISSING}</td>'
    if is_number(value):
        return f'<td class="num">{html.escape(format_number(value, fmt))}</td>'
    text = format_value(value, fmt)
    state = STATE_CLASSES.get(text) if isinstance(value, str) else None
    if state:
        return f'<td><span class="state {state}">{html.escape(text)}</span></td>'
    if is_temporal(value):
        return f'<td class="time">{html.escape(text)}</td>'
    short = truncate(text, CELL_CHARS)
    tip = f' title="{html.escape(truncate(text, 4000))}"' if short != text else ""
    cls = ' class="short"' if len(short) <= SHORT_CELL else ""
    return f"<td{cls}{tip}>{html.escape(short)}</td>"


# -- text widgets ------------------------------------------------------------------------------
def markdown(lines: tuple[str, ...]) -> str:
    """The small Markdown subset text widgets use: headings, paragraphs, lists, **bold**, *italic*, `code`."""
    text = "".join(line if line.endswith("\n") else line + "\n" for line in lines)
    blocks, items = [], []
    for raw in text.splitlines():
        line = raw.strip()
        if line.startswith(("- ", "* ")):
            items.append(f"<li>{_inline(line[2:])}</li>")
            continue
        if items:
            blocks.append("<ul>" + "".join(items) + "</ul>")
            items = []
        if not line:
            continue
        heading = re.match(r"^(#{1,4})\s+(.*)$", line)
        if heading:
            level = min(len(heading.group(1)) + 2, 6)
            blocks.append(f"<h{level}>{_inline(heading.group(2))}</h{level}>")
        else:
            blocks.append(f"<p>{_inline(line)}</p>")
    if items:
        blocks.append("<ul>" + "".join(items) + "</ul>")
    return "".join(blocks)


def _inline(text: str) -> str:
    out = html.escape(text, quote=False)
    out = re.sub(r"`([^`]+)`", r"<code>\1</code>", out)
    out = re.sub(r"\*\*([^*]+)\*\*", r"<strong>\1</strong>", out)
    out = re.sub(r"(?<![*\w])\*([^*]+)\*(?![*\w])", r"<em>\1</em>", out)
    return out


def _id(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_-]+", "-", name)


CSS = """
:root { --fg: #1b2631; --muted: #5f6b76; --line: #e3e7eb; --bg: #f4f6f8; --card: #fff; --good: #00875a; --bad: #d92d20; }
* { box-sizing: border-box; }
body { margin: 0; background: var(--bg); color: var(--fg); font: 14px/1.4 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; }
header, main, footer { max-width: %dpx; margin: 0 auto; padding: 0 4px; }
header { padding-top: 20px; }
h1 { font-size: 24px; margin: 0 0 4px; }
.meta { color: var(--muted); margin: 0 0 10px; font-size: 13px; }
nav { display: flex; flex-wrap: wrap; gap: 8px; margin-bottom: 8px; }
nav a { color: #0b5cad; text-decoration: none; background: var(--card); border: 1px solid var(--line); border-radius: 14px; padding: 3px 12px; font-size: 13px; }
h2 { font-size: 19px; margin: 26px 0 10px; padding-bottom: 6px; border-bottom: 2px solid var(--line); }
.grid { display: grid; gap: %dpx; grid-auto-rows: %dpx; }
.widget { background: var(--card); border: 1px solid var(--line); border-radius: 8px; padding: 14px; min-width: 0; min-height: 0;
  display: flex; flex-direction: column; overflow: hidden; }
.widget h3 { font-size: 14px; font-weight: 600; margin: 0 0 6px; white-space: nowrap; overflow: hidden; text-overflow: ellipsis; }
.widget .desc { color: var(--muted); font-size: 12px; margin: -4px 0 6px; white-space: nowrap; overflow: hidden; text-overflow: ellipsis; }
.widget-text { background: transparent; border: none; padding: 4px 2px; color: var(--muted); }
.widget-text h3, .widget-text h4, .widget-text h5 { color: var(--fg); margin: 0 0 4px; }
.widget-text p { margin: 0 0 4px; }
.widget-text code, td code { background: #eef1f4; border-radius: 3px; padding: 0 3px; font-size: 12px; }
.counter-value { font-size: 40px; font-weight: 650; line-height: 1.1; margin-top: auto; margin-bottom: auto; font-variant-numeric: tabular-nums; }
.counter-value.missing { color: var(--muted); }
.counter-target { color: var(--muted); font-size: 12px; }
.plot { flex: 1; min-height: 0; }
svg.chart { width: 100%%; height: 100%%; display: block; }
.table-wrap { flex: 1; overflow: auto; min-height: 0; border-top: 1px solid var(--line); }
table { border-collapse: collapse; width: 100%%; font-size: 12.5px; }
th { position: sticky; top: 0; background: #f8fafb; text-align: left; font-weight: 600; padding: 5px 8px; border-bottom: 1px solid var(--line); white-space: nowrap; }
td { padding: 4px 8px; border-bottom: 1px solid #f0f2f4; vertical-align: top; overflow-wrap: anywhere; }
th.num, td.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
td.short { white-space: nowrap; }
td.time { white-space: nowrap; font-variant-numeric: tabular-nums; }
td.missing { color: #a0a8b0; }
.state { border-radius: 9px; padding: 0 7px; font-size: 11.5px; font-weight: 600; }
.state.good { background: #e3f6ee; color: var(--good); } .state.bad { background: #fde8e7; color: var(--bad); }
.state.muted { background: #eef1f4; color: var(--muted); } .state.info { background: #e6f0fb; color: #0b5cad; }
.note { color: var(--muted); font-size: 12px; margin: 4px 0 0; }
.empty { color: var(--muted); margin: auto; }
.choices { list-style: none; margin: 4px 0; padding: 0; display: flex; flex-wrap: wrap; gap: 6px; }
.choices li { border: 1px solid var(--line); border-radius: 12px; padding: 2px 10px; }
.error { color: var(--bad); font-size: 12px; overflow: auto; }
.banner { background: #fde8e7; border: 1px solid #f5b5b0; color: #8a1c12; border-radius: 8px; padding: 10px 14px; margin: 16px 0; }
footer { color: var(--muted); font-size: 12px; padding: 24px 4px 40px; }
""" % (PAGE_WIDTH, GAP, ROW_HEIGHT)
