"""Load a serialized AI/BI (Lakeview) dashboard, `.lvdash.json`, into small typed dataclasses.

The file is the one the bundle's `dashboards` resource deploys; this module reads it so the local
engine can render the very same dashboard. Validation is strict about what the renderer relies on
(a widget's dataset exists, every field feeds an encoding and every encoding names a field, the
widget type and spec version are ones Lakeview documents) and names the widget or dataset at fault,
so a broken dashboard fails here, before anything is deployed.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator, Mapping

# widgetType -> spec versions Lakeview serializes for it (reference §4.3).
SPEC_VERSIONS: dict[str, tuple[int, ...]] = {"counter": (2,), "line": (3,), "bar": (3,), "table": (1, 2),
                                             "filter-single-select": (2,), "filter-multi-select": (2,)}
# Field filters: on Databricks they filter the datasets they bind (on their page, or on every page from
# a PAGE_TYPE_GLOBAL_FILTERS page); the static local page lists their choices and filters nothing.
FILTER_KINDS = ("filter-single-select", "filter-multi-select")
PAGE_TYPES = ("PAGE_TYPE_CANVAS", "PAGE_TYPE_GLOBAL_FILTERS")
# Encoding channels that hold a single field, per widget type; tables use `columns`.
SINGLE_CHANNELS: dict[str, tuple[str, ...]] = {
    "counter": ("value", "period", "target"),
    "line": ("x", "y", "color"),
    "bar": ("x", "y", "color"),
    "table": (),
}
REQUIRED_CHANNELS: dict[str, tuple[str, ...]] = {"counter": ("value",), "line": ("x", "y"), "bar": ("x", "y"), "table": ("columns",)}
GRID_COLUMNS = {None: 6, "GRID_V1": 12}  # exports without layoutVersion use 6 columns
# Databricks' default visualization palette; `themeColorType: visualizationColors` positions are 1-based.
PALETTE = ("#077A9D", "#FFAB00", "#00A972", "#FF3621", "#8BCAE7", "#AB4057", "#99DDB4", "#FCA4A1", "#919191", "#BF7080")


class DashboardError(ValueError):
    """The `.lvdash.json` is malformed; the message names the page, widget or dataset at fault."""

    def __init__(self, where: str, reason: str) -> None:
        self.where = where
        self.reason = reason
        super().__init__(f"[DASHBOARD_INVALID] {where}: {reason}")


@dataclass(frozen=True)
class Dataset:
    name: str
    display_name: str
    query: str


@dataclass(frozen=True)
class Field:
    name: str
    expression: str


@dataclass(frozen=True)
class Order:
    expression: str
    descending: bool


@dataclass(frozen=True)
class WidgetQuery:
    dataset_name: str
    fields: tuple[Field, ...]
    disaggregated: bool
    orders: tuple[Order, ...] = ()
    filters: tuple[str, ...] = ()


@dataclass(frozen=True)
class NumberFormat:
    kind: str = "number"  # number | number-plain | number-percent | number-currency
    decimal_places: int | None = None
    exact: bool = False  # decimalPlaces type "exact"; "max" drops trailing zeros
    compact: bool = False
    currency: str | None = None


@dataclass(frozen=True)
class Encoding:
    """One field bound to a channel (`x`, `y`, `color`, `value`, `column`, ...)."""

    channel: str
    field_name: str
    display_name: str
    scale: str | None = None  # temporal | quantitative | categorical
    format: NumberFormat | None = None


@dataclass(frozen=True)
class Position:
    x: int
    y: int
    width: int
    height: int


@dataclass(frozen=True)
class Widget:
    name: str
    kind: str  # text | counter | line | bar | table | filter-single-select | filter-multi-select
    position: Position
    title: str = ""
    description: str = ""
    text: tuple[str, ...] = ()
    query: WidgetQuery | None = None
    encodings: tuple[Encoding, ...] = ()
    bar_layout: str = "stack"  # stack | group | stack-100
    palette: tuple[str, ...] = PALETTE
    color_mappings: Mapping[str, str] = field(default_factory=dict)  # series value -> hex color
    labels: bool = False  # `encodings.label.show`: values printed on the marks
    bindings: tuple[tuple[str, str], ...] = ()  # a filter's (dataset, field) pairs; its query lists the first's values

    def channel(self, name: str) -> tuple[Encoding, ...]:
        return tuple(e for e in self.encodings if e.channel == name)

    def first(self, name: str) -> Encoding | None:
        found = self.channel(name)
        return found[0] if found else None


@dataclass(frozen=True)
class Page:
    name: str
    display_name: str
    widgets: tuple[Widget, ...]  # in reading order: by row, then column
    columns: int = 6  # width of the page's grid
    global_filters: bool = False  # PAGE_TYPE_GLOBAL_FILTERS: its filters apply to every page


@dataclass(frozen=True)
class Dashboard:
    datasets: tuple[Dataset, ...]
    pages: tuple[Page, ...]

    def dataset(self, name: str) -> Dataset:
        for d in self.datasets:
            if d.name == name:
                return d
        raise KeyError(name)

    def widgets(self) -> Iterator[tuple[Page, Widget]]:
        for page in self.pages:
            for widget in page.widgets:
                yield page, widget


# -- parsing -----------------------------------------------------------------------------------
def load_dashboard(path: Path) -> Dashboard:
    """Reads and validates a `.lvdash.json` file."""
    try:
        raw = json.loads(Path(path).read_text())
    except FileNotFoundError:
        raise DashboardError(str(path), "the file does not exist") from None
    except json.JSONDecodeError as e:
        raise DashboardError(str(path), f"not valid JSON ({e})") from None
    return parse_dashboard(raw)


def parse_dashboard(raw: Any) -> Dashboard:
    """Validates the parsed JSON of a serialized dashboard and builds the typed model."""
    top = _mapping(raw, "the dashboard")
    datasets = tuple(_dataset(d, i) for i, d in enumerate(_list(top.get("datasets"), "the dashboard's 'datasets'")))
    names = [d.name for d in datasets]
    for name in names:
        if names.count(name) > 1:
            raise DashboardError(f"dataset '{name}'", "the name is used by more than one dataset")
    by_name = {d.name: d for d in datasets}
    pages = tuple(_page(p, i, by_name) for i, p in enumerate(_list(top.get("pages"), "the dashboard's 'pages'")))
    if not pages:
        raise DashboardError("the dashboard", "it has no pages")
    seen: dict[str, str] = {}
    for page in pages:
        for w in page.widgets:
            if w.name in seen:
                pages = f"page '{page.name}'" if seen[w.name] == page.name else f"pages '{seen[w.name]}' and '{page.name}'"
                raise DashboardError(f"widget '{w.name}'", f"the name is used by more than one widget ({pages})")
            seen[w.name] = page.name
    return Dashboard(datasets, pages)


def _dataset(raw: Any, index: int) -> Dataset:
    d = _mapping(raw, f"dataset #{index + 1}")
    name = _string(d.get("name"), f"dataset #{index + 1}", "name")
    where = f"dataset '{name}'"
    if "asset_name" in d:
        raise DashboardError(where, "datasets over an asset_name are not supported; write the query in queryLines")
    if d.get("parameters"):
        raise DashboardError(where, "dataset parameters are not supported by the local renderer")
    if "queryLines" in d:
        lines = _list(d["queryLines"], f"{where} 'queryLines'")
        if not all(isinstance(line, str) for line in lines):
            raise DashboardError(where, "'queryLines' must be a list of strings")
        query = "".join(lines)
    elif "query" in d:
        query = _string(d["query"], where, "query")
    else:
        raise DashboardError(where, "it has neither 'queryLines' nor 'query'")
    if not query.strip():
        raise DashboardError(where, "the query is empty")
    return Dataset(name=name, display_name=str(d.get("displayName") or name), query=query)


def _page(raw: Any, index: int, datasets: Mapping[str, Dataset]) -> Page:
    p = _mapping(raw, f"page #{index + 1}")
    name = _string(p.get("name"), f"page #{index + 1}", "name")
    where = f"page '{name}'"
    page_type = p.get("pageType", "PAGE_TYPE_CANVAS")
    if page_type not in PAGE_TYPES:
        raise DashboardError(where, f"pageType {page_type!r} is not rendered locally ({' or '.join(PAGE_TYPES)})")
    layout_version = p.get("layoutVersion")
    if layout_version not in GRID_COLUMNS:
        raise DashboardError(where, f"unknown layoutVersion {layout_version!r}")
    columns = GRID_COLUMNS[layout_version]
    widgets = [_layout_item(item, where, columns, datasets) for item in _list(p.get("layout"), f"{where} 'layout'")]
    widgets.sort(key=lambda w: (w.position.y, w.position.x))
    global_filters = page_type == "PAGE_TYPE_GLOBAL_FILTERS"
    if global_filters and any(w.kind not in FILTER_KINDS for w in widgets):
        raise DashboardError(where, "a PAGE_TYPE_GLOBAL_FILTERS page holds filter widgets only")
    return Page(name=name, display_name=str(p.get("displayName") or name), widgets=tuple(widgets), columns=columns,
                global_filters=global_filters)


def _layout_item(raw: Any, page_where: str, columns: int, datasets: Mapping[str, Dataset]) -> Widget:
    item = _mapping(raw, f"a layout item of {page_where}")
    w = _mapping(item.get("widget"), f"a layout item of {page_where}: 'widget'")
    name = _string(w.get("name"), f"a widget of {page_where}", "name")
    where = f"widget '{name}' ({page_where})"
    position = _position(item.get("position"), where, columns)
    if "multilineTextboxSpec" in w or "textbox_spec" in w:
        if "multilineTextboxSpec" in w:
            lines = _list(_mapping(w["multilineTextboxSpec"], f"{where} 'multilineTextboxSpec'").get("lines"), f"{where} text 'lines'")
        else:
            lines = [_string(w["textbox_spec"], where, "textbox_spec")]
        if not all(isinstance(line, str) for line in lines):
            raise DashboardError(where, "text lines must be strings")
        return Widget(name=name, kind="text", position=position, text=tuple(lines))

    spec = _mapping(w.get("spec"), f"{where} 'spec'")
    kind = spec.get("widgetType")
    if kind not in SPEC_VERSIONS:
        raise DashboardError(where, f"unknown widgetType {kind!r}; the local renderer draws {', '.join(SPEC_VERSIONS)} and text widgets")
    if spec.get("version") not in SPEC_VERSIONS[kind]:
        raise DashboardError(where, f"a {kind} widget has spec version {spec.get('version')!r}, expected {' or '.join(map(str, SPEC_VERSIONS[kind]))}")
    if kind in FILTER_KINDS:
        return _filter_widget(name, kind, position, w, spec, where, datasets)
    query = _widget_query(w.get("queries"), where, datasets)
    encodings = _encodings(_mapping(spec.get("encodings"), f"{where} 'encodings'"), kind, where)
    _check_fields_match(query, encodings, where)
    mark = spec.get("mark") or {}
    palette = tuple(mark.get("colors") or PALETTE)
    color_enc = (spec.get("encodings") or {}).get("color") or {}
    mappings = {str(m.get("value")): _color(m.get("color"), palette) for m in (color_enc.get("scale") or {}).get("mappings") or []}
    layout = mark.get("layout", "stack")
    if layout not in ("stack", "group", "stack-100"):
        raise DashboardError(where, f"unknown bar layout {layout!r} (stack, group or stack-100)")
    title, description = _frame_text(spec)
    return Widget(
        name=name, kind=kind, position=position, title=title, description=description,
        query=query, encodings=encodings, bar_layout=layout, palette=palette, color_mappings=mappings,
        labels=((spec.get("encodings") or {}).get("label") or {}).get("show") is True,
    )


def _filter_widget(name: str, kind: str, position: Position, w: Mapping[str, Any], spec: Mapping[str, Any],
                   where: str, datasets: Mapping[str, Dataset]) -> Widget:
    """A field filter: one query per dataset it binds (named by `queryName` in `encodings.fields`), each
    defining the field it filters on. Parameter filters (`parameterName`) are refused: datasets here
    take no parameters."""
    queries: dict[str, WidgetQuery] = {}
    for raw in _list(w.get("queries"), f"{where} 'queries'"):
        item = _mapping(raw, f"{where} query")
        query_name = _string(item.get("name"), f"{where} query", "name")
        queries[query_name] = _query(item.get("query"), where, datasets)
    bound = _list(_mapping(spec.get("encodings"), f"{where} 'encodings'").get("fields"), f"{where} encoding 'fields'")
    if not bound:
        raise DashboardError(where, "a filter binds at least one field")
    bindings: list[tuple[str, str]] = []
    for raw in bound:
        e = _mapping(raw, f"{where} encoding 'fields'")
        if "parameterName" in e:
            raise DashboardError(where, "parameter filters are not supported: the local renderer's datasets take no parameters")
        field_name = _string(e.get("fieldName"), f"{where} encoding 'fields'", "fieldName")
        query_name = _string(e.get("queryName"), f"{where} encoding 'fields'", "queryName")
        if query_name not in queries:
            raise DashboardError(where, f"encoding field '{field_name}' names query '{query_name}', which the widget does not define ({', '.join(sorted(queries))})")
        query = queries[query_name]
        if field_name not in {f.name for f in query.fields}:
            raise DashboardError(where, f"query '{query_name}' does not define the field '{field_name}' it filters on")
        if not bindings:  # the first binding's values are the choices shown
            [shown] = [f for f in query.fields if f.name == field_name]
            choices = WidgetQuery(query.dataset_name, (shown,), False, (Order(shown.expression, False),))
            encoding = Encoding("field", field_name, str(e.get("displayName") or field_name))
        bindings.append((query.dataset_name, field_name))
    title, description = _frame_text(spec)
    return Widget(name=name, kind=kind, position=position, title=title, description=description,
                  query=choices, encodings=(encoding,), bindings=tuple(bindings))


def _frame_text(spec: Mapping[str, Any]) -> tuple[str, str]:
    """A widget's title and description, each empty when its frame does not show it."""
    frame = spec.get("frame") or {}
    return (str(frame.get("title") or "") if frame.get("showTitle", True) else "",
            str(frame.get("description") or "") if frame.get("showDescription", False) else "")


def _widget_query(raw: Any, where: str, datasets: Mapping[str, Dataset]) -> WidgetQuery:
    queries = _list(raw, f"{where} 'queries'")
    if len(queries) != 1:
        raise DashboardError(where, f"expected exactly one query, found {len(queries)}")
    return _query(_mapping(queries[0], f"{where} query").get("query"), where, datasets)


def _query(raw: Any, where: str, datasets: Mapping[str, Dataset]) -> WidgetQuery:
    q = _mapping(raw, f"{where} 'query'")
    dataset_name = _string(q.get("datasetName"), where, "datasetName")
    if dataset_name not in datasets:
        raise DashboardError(where, f"datasetName '{dataset_name}' is not a dataset of the dashboard ({', '.join(sorted(datasets))})")
    fields = []
    for f in _list(q.get("fields"), f"{where} 'fields'"):
        f = _mapping(f, f"{where} field")
        fields.append(Field(_string(f.get("name"), f"{where} field", "name"), _string(f.get("expression"), f"{where} field", "expression")))
    if not fields:
        raise DashboardError(where, "the query has no fields")
    names = [f.name for f in fields]
    for n in names:
        if names.count(n) > 1:
            raise DashboardError(where, f"field '{n}' is defined more than once")
    disaggregated = q.get("disaggregated", False)
    if not isinstance(disaggregated, bool):
        raise DashboardError(where, "'disaggregated' must be true or false")
    orders = []
    for o in q.get("orders") or []:
        o = _mapping(o, f"{where} order")
        direction = str(o.get("direction", "ASC")).upper()
        if direction not in ("ASC", "DESC"):
            raise DashboardError(where, f"order direction {direction!r} is not ASC or DESC")
        orders.append(Order(_string(o.get("expression"), f"{where} order", "expression"), direction == "DESC"))
    filters = tuple(_string(_mapping(f, f"{where} filter").get("expression"), f"{where} filter", "expression") for f in q.get("filters") or [])
    return WidgetQuery(dataset_name, tuple(fields), disaggregated, tuple(orders), filters)


def _encodings(enc: Mapping[str, Any], kind: str, where: str) -> tuple[Encoding, ...]:
    out: list[Encoding] = []
    for channel in REQUIRED_CHANNELS[kind]:
        if channel not in enc:
            raise DashboardError(where, f"a {kind} widget needs the encoding '{channel}'")
    if kind == "table":
        for c in _list(enc.get("columns"), f"{where} 'columns'"):
            out.append(_encoding("column", c, where))
        if not out:
            raise DashboardError(where, "the table has no columns")
        return tuple(out)
    for channel in SINGLE_CHANNELS[kind]:
        if channel not in enc:
            continue
        e = _mapping(enc[channel], f"{where} encoding '{channel}'")
        if channel == "y" and "fields" in e:  # several measures, one series each
            if not _list(e["fields"], f"{where} encoding 'y.fields'") or "color" in enc:
                raise DashboardError(where, "'y.fields' needs at least one field and no 'color' encoding")
            for f in e["fields"]:
                f = dict(_mapping(f, f"{where} encoding 'y.fields'"))
                f.setdefault("scale", e.get("scale"))
                f.setdefault("format", e.get("format"))
                out.append(_encoding("y", f, where))
        else:
            out.append(_encoding(channel, e, where))
    for extra in enc.get("extra") or []:
        out.append(_encoding("extra", extra, where))
    return tuple(out)


def _encoding(channel: str, raw: Any, where: str) -> Encoding:
    e = _mapping(raw, f"{where} encoding '{channel}'")
    field_name = _string(e.get("fieldName"), f"{where} encoding '{channel}'", "fieldName")
    scale = (e.get("scale") or {}).get("type")
    if scale not in (None, "temporal", "quantitative", "categorical"):
        raise DashboardError(where, f"encoding '{channel}' has an unknown scale type {scale!r}")
    display = e.get("displayName") or e.get("title") or (e.get("axis") or {}).get("title") or field_name
    return Encoding(channel, field_name, str(display), scale, _format(e.get("format") or e.get("numberFormat"), where))


def _format(raw: Any, where: str) -> NumberFormat | None:
    if raw is None:
        return None
    if isinstance(raw, str):  # table v1 columns: a numeral.js pattern such as "0,0.00" or "0.0%"
        decimals = raw.rstrip("%").partition(".")[2]
        return NumberFormat(kind="number-percent" if raw.endswith("%") else "number", decimal_places=len(decimals), exact=True)
    f = _mapping(raw, f"{where} format")
    kind = f.get("type", "number")
    if kind not in ("number", "number-plain", "number-percent", "number-currency"):
        raise DashboardError(where, f"unknown number format type {kind!r}")
    decimals = f.get("decimalPlaces") or {}
    places = decimals.get("places")
    return NumberFormat(kind=kind, decimal_places=places if isinstance(places, int) else None,
                        exact=decimals.get("type") == "exact",
                        compact=f.get("abbreviation") == "compact", currency=f.get("currencyCode"))


def _check_fields_match(query: WidgetQuery, encodings: tuple[Encoding, ...], where: str) -> None:
    """Lakeview binds encodings to query fields by name: each must find the other."""
    defined = {f.name for f in query.fields}
    used = {e.field_name for e in encodings}
    for e in encodings:
        if e.field_name not in defined:
            raise DashboardError(where, f"encoding '{e.channel}' uses field '{e.field_name}', which the query does not define ({', '.join(sorted(defined))})")
    for f in query.fields:
        if f.name not in used:
            raise DashboardError(where, f"field '{f.name}' is not used by any encoding")


def _position(raw: Any, where: str, columns: int) -> Position:
    p = _mapping(raw, f"{where} 'position'")
    values = {}
    for key in ("x", "y", "width", "height"):
        v = p.get(key)
        if not isinstance(v, int) or isinstance(v, bool) or v < 0:
            raise DashboardError(where, f"position '{key}' must be a non-negative integer, found {v!r}")
        values[key] = v
    pos = Position(**values)
    if pos.width < 1 or pos.height < 1 or pos.x + pos.width > columns:
        raise DashboardError(where, f"position {values} does not fit the page's {columns}-column grid")
    return pos


def _color(raw: Any, palette: tuple[str, ...]) -> str:
    if isinstance(raw, str):
        return raw
    if isinstance(raw, Mapping) and isinstance(raw.get("position"), int):
        return palette[(raw["position"] - 1) % len(palette)]
    return PALETTE[0]


def _mapping(raw: Any, what: str) -> Mapping[str, Any]:
    if not isinstance(raw, Mapping):
        raise DashboardError(what, f"expected an object, found {type(raw).__name__}")
    return raw


def _list(raw: Any, what: str) -> list:
    if not isinstance(raw, list):
        raise DashboardError(what, f"expected a list, found {type(raw).__name__}")
    return raw


def _string(raw: Any, where: str, key: str) -> str:
    if not isinstance(raw, str) or not raw:
        raise DashboardError(where, f"'{key}' must be a non-empty string, found {raw!r}")
    return raw
