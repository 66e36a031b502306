"""The dashboard's definition, without Spark: the real `.lvdash.json` is valid, lays its widgets on the
grid, reads only published observability tables and shows every figure an alert reads; the bundle
points it at the observability pipeline's schema; malformed dashboards fail with the widget or
dataset named; numbers and time axes read at a glance. (Queries and the page: tests/sql/test_dashboard.py.)"""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path

import pytest
import yaml

from pipelines.dashboard.formatting import format_number, time_label_format
from pipelines.dashboard.lvdash import DashboardError, NumberFormat, load_dashboard, parse_dashboard
from pipelines.observability.catalog import PUBLISHED, REPORTED
from tests.dashboard_builders import field, small_dashboard

ROOT = Path(__file__).resolve().parents[2]
LVDASH = ROOT / "dashboards" / "lakewatch.lvdash.json"
PUBLISHED_NAMES = {t.name for t in PUBLISHED}
REPORTED_NAMES = {t.name for t in REPORTED}  # published for people, not only for other tables
TABLE_REFERENCE = re.compile(r"\b(?:FROM|JOIN)\s+([A-Za-z_`][\w.`]*)", re.IGNORECASE)


# -- the real dashboard ------------------------------------------------------------------------
def test_real_dashboard_has_its_pages_on_one_grid_without_overlaps():
    dashboard = load_dashboard(LVDASH)
    assert [p.display_name for p in dashboard.pages] == [
        "Pipelines", "Run status", "Throughput", "Latency and backlog", "Data quality", "Schema drift and quarantine", "Errors",
        "Reconciliation and gaps", "Filters"]
    assert [p.global_filters for p in dashboard.pages] == [False] * 8 + [True]
    raw = json.loads(LVDASH.read_text())
    assert {p.get("layoutVersion") for p in raw["pages"]} == {None}  # the 6-column grid of exports, everywhere
    for page in dashboard.pages:
        taken: dict[tuple[int, int], str] = {}
        for w in page.widgets:
            assert w.position.x + w.position.width <= 6, w.name
            for x in range(w.position.x, w.position.x + w.position.width):
                for y in range(w.position.y, w.position.y + w.position.height):
                    assert (x, y) not in taken, f"{w.name} overlaps {taken[(x, y)]} on page {page.name}"
                    taken[(x, y)] = w.name
        kinds = {w.kind for w in page.widgets}
        assert page.global_filters or ("text" in kinds and kinds & {"line", "bar"}), page.name


def test_real_dashboard_uses_the_documented_widget_versions_and_encodings():
    raw = json.loads(LVDASH.read_text())
    versions = {"counter": 2, "line": 3, "bar": 3, "table": 1, "filter-multi-select": 2}
    for page in raw["pages"]:
        for item in page["layout"]:
            w = item["widget"]
            if "multilineTextboxSpec" in w:
                assert "spec" not in w and "queries" not in w
                continue
            spec = w["spec"]
            assert spec["version"] == versions[spec["widgetType"]], w["name"]
            if spec["widgetType"].startswith("filter-"):  # one query per bound dataset, each field bound to its own
                assert [f["queryName"] for f in spec["encodings"]["fields"]] == [q["name"] for q in w["queries"]]
                continue
            assert [q["name"] for q in w["queries"]] == ["main_query"]
    for d in raw["datasets"]:
        assert all(line.endswith("\n") for line in d["queryLines"]), d["name"]


def test_dataset_queries_read_only_published_tables_unqualified():
    dashboard = load_dashboard(LVDASH)
    used = set()
    for d in dashboard.datasets:
        names = {n.strip("`") for n in TABLE_REFERENCE.findall(d.query)}
        assert names, d.name
        assert all("." not in n for n in names), f"dataset {d.name} qualifies a table: {names}"
        assert names <= PUBLISHED_NAMES, f"dataset {d.name} reads {names - PUBLISHED_NAMES}, not published tables"
        used |= names
    assert used == REPORTED_NAMES  # every observability table for people appears on the dashboard


def test_the_new_figures_have_a_widget():
    """The reconciliation, the metrics_missing counter and the measurement gaps are on the dashboard."""
    dashboard = load_dashboard(LVDASH)
    fields = {(w.query.dataset_name, f.name) for _, w in dashboard.widgets() if w.query is not None
              for f in w.query.fields}
    assert {("health", "metrics_missing"), ("health", "files_not_reconciled"), ("reconciliation", "status"),
            ("gaps", "sum(metrics_missing)")} <= fields


def test_every_health_metric_an_alert_reads_has_a_widget():
    """Whoever an alert pages opens the dashboard next: the figure it fired on is there to read."""
    from pipelines.alerts import load_alerts
    from pipelines.bundle import load_bundle
    from pipelines.observability.catalog import HEALTH_METRIC_NAMES

    bundle = load_bundle(ROOT, overrides={"warehouse_id": "local"})  # the lookup needs a workspace
    read = {name for spec in load_alerts(bundle) for name in HEALTH_METRIC_NAMES
            if f"'{name}'" in spec.query_text}
    dashboard = load_dashboard(LVDASH)
    shown = {f.name for _, w in dashboard.widgets() if w.query is not None and w.query.dataset_name == "health"
             for f in w.query.fields}
    assert "hours_since_rows_ingested" in read  # the test sees the alerts' metrics at all
    assert read - shown == set()


def test_resource_points_the_datasets_at_the_pipelines_catalog_and_schema():
    from databricks.bundles.dashboards import Dashboard

    from pipelines.bundle import load_bundle

    bundle = load_bundle(ROOT, overrides={"warehouse_name": "analytics", "warehouse_id": "1234"})  # a deploy looks it up
    (key, raw), = bundle.resources("dashboards").items()
    Dashboard.from_dict(raw)  # the typed model rejects unknown keys
    assert (bundle.resource_file("dashboards", key).parent / raw["file_path"]).resolve() == LVDASH
    resolved = bundle.resolve(raw, "dashboard")
    observability = bundle.pipeline("lakewatch_observability")  # the pipeline that publishes the tables
    assert (resolved["dataset_catalog"], resolved["dataset_schema"]) == (observability.catalog, observability.schema)
    assert raw["warehouse_id"] == "${var.warehouse_id}"
    assert yaml.safe_load((ROOT / "databricks.yml").read_text())["variables"]["warehouse_id"]


# -- validation --------------------------------------------------------------------------------
def broken(change) -> DashboardError:
    raw = copy.deepcopy(small_dashboard())
    change(raw)
    with pytest.raises(DashboardError) as info:
        parse_dashboard(raw)
    return info.value


def layout(raw: dict, index: int) -> dict:
    return raw["pages"][0]["layout"][index]["widget"]


def test_dangling_dataset_name_is_named():
    error = broken(lambda raw: layout(raw, 1)["queries"][0]["query"].update(datasetName="nope"))
    assert "widget 'rate'" in str(error) and "datasetName 'nope'" in str(error) and "upd" in str(error)


def test_field_that_no_encoding_uses_is_named():
    error = broken(lambda raw: layout(raw, 2)["queries"][0]["query"]["fields"].append(field("sum(x)", "SUM(`x`)")))
    assert "widget 'count'" in str(error) and "field 'sum(x)' is not used by any encoding" in str(error)


def test_encoding_of_a_field_the_query_lacks_is_named():
    error = broken(lambda raw: layout(raw, 4)["spec"]["encodings"]["color"].update(fieldName="state"))
    assert "widget 'trend'" in str(error) and "encoding 'color' uses field 'state'" in str(error)


def test_unknown_widget_type_and_wrong_version_are_named():
    error = broken(lambda raw: layout(raw, 3)["spec"].update(widgetType="sunburst"))
    assert "widget 'by-day'" in str(error) and "unknown widgetType 'sunburst'" in str(error)
    error = broken(lambda raw: layout(raw, 3)["spec"].update(version=2))
    assert "widget 'by-day'" in str(error) and "spec version 2, expected 3" in str(error)


def test_layout_outside_the_grid_and_duplicate_names_are_rejected():
    error = broken(lambda raw: raw["pages"][0]["layout"][3]["position"].update(x=4))
    assert "widget 'by-day'" in str(error) and "6-column grid" in str(error)
    error = broken(lambda raw: layout(raw, 2).update(name="rate"))
    assert "widget 'rate'" in str(error) and "more than one widget" in str(error)


def test_dataset_without_a_query_is_named():
    error = broken(lambda raw: raw["datasets"][0].pop("queryLines"))
    assert "dataset 'upd'" in str(error) and "queryLines" in str(error)


# -- numbers and axes ---------------------------------------------------------------------------
@pytest.mark.parametrize("value, fmt, expected", [
    (1538.0, None, "1,538"),
    (24.378, None, "24.38"),
    (0.0120563, None, "0.0121"),
    (1234567.8, None, "1,234,568"),
    (0.89375, NumberFormat("number-percent", 1), "89.4%"),
    (0.75, NumberFormat("number-percent", 1), "75%"),
    (0.75, NumberFormat("number-percent", 1, exact=True), "75.0%"),
    (29287, NumberFormat(compact=True, decimal_places=1), "29.3K"),
    (55.0, NumberFormat(compact=True, decimal_places=1), "55"),
    (9.0, NumberFormat(decimal_places=1, exact=True), "9.0"),
    (None, None, "—"),
])
def test_numbers_read_at_a_glance(value, fmt, expected):
    assert format_number(value, fmt) == expected


def test_time_labels_follow_the_span():
    assert time_label_format(77, 15, all_dates=False) == "%H:%M:%S"
    assert time_label_format(3 * 3600, 1800, all_dates=False) == "%H:%M"
    assert time_label_format(3 * 86400, 86400, all_dates=True) == "%b %d"


def test_the_pipeline_filter_binds_every_dataset_with_a_pipeline_column():
    """The global Pipeline filter reaches each dataset that selects `pipeline_name` (read from the
    datasets' own SQL), so a dataset given the column later is not left unfiltered by mistake."""
    dashboard = load_dashboard(LVDASH)
    [(page, pipeline_filter)] = [(p, w) for p, w in dashboard.widgets() if w.kind.startswith("filter-")]
    with_column = {d.name for d in dashboard.datasets if re.search(r"\bpipeline_name\b", d.query)}
    assert page.global_filters and len(with_column) >= 10
    assert {d for d, _ in pipeline_filter.bindings} == with_column
    assert {f for _, f in pipeline_filter.bindings} == {"pipeline_name"}


def state_filter(**field_binding: str) -> dict:
    """A page of global filters with one multi-select on `final_state` of dataset `upd`."""
    binding = {"fieldName": "final_state", "queryName": "q_upd", **field_binding}
    return {"name": "filters", "displayName": "Filters", "pageType": "PAGE_TYPE_GLOBAL_FILTERS", "layout": [
        {"widget": {"name": "state-filter", "queries": [{"name": "q_upd", "query": {
            "datasetName": "upd", "fields": [field("final_state", "`final_state`")], "disaggregated": False}}],
            "spec": {"version": 2, "widgetType": "filter-multi-select", "encodings": {"fields": [binding]},
                     "frame": {"showTitle": True, "title": "State"}}},
         "position": {"x": 0, "y": 0, "width": 2, "height": 2}}]}


def test_a_global_filter_lists_its_first_dataset_s_values_and_keeps_its_bindings():
    raw = copy.deepcopy(small_dashboard())
    raw["pages"].append(state_filter())
    page = parse_dashboard(raw).pages[-1]
    [w] = page.widgets
    assert page.global_filters and (w.kind, w.title, w.bindings) == ("filter-multi-select", "State", (("upd", "final_state"),))
    assert w.query is not None and (w.query.dataset_name, [f.name for f in w.query.fields], w.query.disaggregated) == (
        "upd", ["final_state"], False)


@pytest.mark.parametrize("binding, message", [
    ({"queryName": "nope"}, "names query 'nope', which the widget does not define"),
    ({"fieldName": "status"}, "query 'q_upd' does not define the field 'status' it filters on"),
    ({"parameterName": "state"}, "parameter filters are not supported"),
])
def test_a_filter_bound_to_what_its_queries_lack_is_named(binding, message):
    error = broken(lambda raw: raw["pages"].append(state_filter(**binding)))
    assert "widget 'state-filter'" in str(error) and message in str(error)


def test_a_global_filters_page_holds_filters_only():
    def change(raw):
        page = state_filter()
        page["layout"].append(copy.deepcopy(raw["pages"][0]["layout"][1]))
        page["layout"][-1]["position"].update(x=2, y=0)
        page["layout"][-1]["widget"]["name"] = "rate-2"
        raw["pages"].append(page)
    assert "holds filter widgets only" in str(broken(change))
