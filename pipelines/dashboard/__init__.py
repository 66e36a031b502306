"""The AI/BI dashboard, locally: load the bundle's `.lvdash.json` and render it to one static HTML page.

`lvdash` reads and validates the serialized Lakeview dashboard, `query` builds and runs each
widget's query the way Lakeview does, `batch` runs the widgets of a dataset together in one query
with the same results, `vegalite` draws each chart from a Vega-Lite specification
derived from the widget (to SVG, offline, with vl-convert), and `render` writes the page.
"""

from pipelines.dashboard.lvdash import DashboardError, load_dashboard
from pipelines.dashboard.render import write_dashboard

__all__ = ["DashboardError", "load_dashboard", "write_dashboard"]
