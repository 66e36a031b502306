"""Small dashboards in the `.lvdash.json` serialized format, for the dashboard's tests."""

from __future__ import annotations


def field(name: str, expression: str) -> dict:
    return {"name": name, "expression": expression}


def widget(name: str, dataset: str, fields: list[dict], spec: dict, x: int = 0, y: int = 0, w: int = 6, h: int = 4,
           disaggregated: bool = False, orders: list[dict] | None = None) -> dict:
    query = {"datasetName": dataset, "fields": fields, "disaggregated": disaggregated}
    if orders:
        query["orders"] = orders
    return {"widget": {"name": name, "queries": [{"name": "main_query", "query": query}], "spec": spec},
            "position": {"x": x, "y": y, "width": w, "height": h}}


def small_dashboard() -> dict:
    """One page with a widget of each kind over `update_status`, in the serialized format."""
    return {
        "datasets": [{"name": "upd", "displayName": "updates",
                      "queryLines": ["SELECT update_id, start_time, duration_seconds, final_state,\n",
                                     "  CASE WHEN final_state = 'COMPLETED' THEN 1.0 ELSE 0.0 END AS ok\n",
                                     "FROM update_status\n"]}],
        "pages": [{"name": "p1", "displayName": "Runs", "pageType": "PAGE_TYPE_CANVAS", "layout": [
            {"widget": {"name": "intro", "multilineTextboxSpec": {"lines": ["## Runs\n", "Updates **by state**"]}},
             "position": {"x": 0, "y": 0, "width": 6, "height": 1}},
            widget("rate", "upd", [field("avg(ok)", "AVG(`ok`)")],
                   {"version": 2, "widgetType": "counter", "frame": {"showTitle": True, "title": "Success rate"},
                    "encodings": {"value": {"fieldName": "avg(ok)", "format": {"type": "number-percent"}}}},
                   y=1, w=2, h=2),
            widget("count", "upd", [field("count(*)", "COUNT(`*`)")],
                   {"version": 2, "widgetType": "counter", "encodings": {"value": {"fieldName": "count(*)"}}},
                   x=2, y=1, w=2, h=2),
            widget("by-day", "upd", [field("daily(start_time)", 'DATE_TRUNC("DAY", `start_time`)'),
                                     field("final_state", "`final_state`"),
                                     field("sum(duration_seconds)", "SUM(`duration_seconds`)")],
                   {"version": 3, "widgetType": "bar", "encodings": {
                       "x": {"fieldName": "daily(start_time)", "scale": {"type": "temporal"}, "displayName": "Day"},
                       "y": {"fieldName": "sum(duration_seconds)", "scale": {"type": "quantitative"}},
                       "color": {"fieldName": "final_state", "scale": {"type": "categorical", "mappings": [
                           {"value": "FAILED", "color": {"themeColorType": "visualizationColors", "position": 4}}]}},
                       "label": {"show": True}}},
                   y=3, w=3),
            widget("trend", "upd", [field("start_time", "`start_time`"), field("final_state", "`final_state`"),
                                    field("max(duration_seconds)", "MAX(`duration_seconds`)")],
                   {"version": 3, "widgetType": "line", "encodings": {
                       "x": {"fieldName": "start_time", "scale": {"type": "temporal"}},
                       "y": {"fieldName": "max(duration_seconds)", "scale": {"type": "quantitative"}},
                       "color": {"fieldName": "final_state", "scale": {"type": "categorical"}}}},
                   x=3, y=3, w=3),
            widget("latest", "upd", [field("update_id", "`update_id`"), field("final_state", "`final_state`")],
                   {"version": 1, "widgetType": "table", "encodings": {"columns": [
                       {"fieldName": "update_id", "title": "Update"}, {"fieldName": "final_state", "title": "State"}]}},
                   y=7, disaggregated=True, orders=[{"direction": "DESC", "expression": "`start_time`"}]),
        ]}],
    }
