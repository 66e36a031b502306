"""Benchmark: render every chart widget of the real dashboard from synthetic query results.

No Spark: each line and bar widget of `dashboards/lakewatch.lvdash.json` gets rows made up from its
encodings (time axes: 40 points, categories: 8, three series by `color`, or one per `y.fields`), and
`render_widget` draws it as the page would. Prints the wall time of the whole set (a first call,
which starts the renderer, and a second) and the time per chart.
Usage: `.venv/bin/python bench/dashboard_charts.py`.
"""

from __future__ import annotations

import sys
import time
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from pipelines.dashboard.lvdash import Encoding, Widget, load_dashboard  # noqa: E402
from pipelines.dashboard.query import WidgetResult  # noqa: E402
from pipelines.dashboard.render import render_widget  # noqa: E402

LVDASH = ROOT / "dashboards" / "lakewatch.lvdash.json"
POINTS, CATEGORIES, SERIES = 40, 8, 3


def axis_values(enc: Encoding) -> list[Any]:
    """What a widget's x (or category y) field returns: times, hours or labels."""
    if enc.scale == "temporal":
        step = timedelta(days=1) if enc.field_name.startswith(("daily", "weekly")) else timedelta(hours=3)
        return [datetime(2026, 11, 1) + i * step for i in range(POINTS)]
    return [f"category {i}" for i in range(CATEGORIES)]


def synthetic_result(widget: Widget) -> WidgetResult:
    """Rows for every combination of axis value and series, columns in the query's field order."""
    assert widget.query is not None
    x, y, color = widget.first("x"), widget.channel("y"), widget.first("color")
    assert x is not None and y
    category = y[0] if x.scale == "quantitative" else x
    columns = tuple(f.name for f in widget.query.fields)
    rows = []
    for i, value in enumerate(axis_values(category)):
        for s in range(SERIES if color else 1):
            record: dict[str, Any] = {category.field_name: value}
            if color:
                record[color.field_name] = f"series_{s}"
            for n, enc in enumerate(widget.encodings):
                record.setdefault(enc.field_name, 0.5 + ((i * 7 + s * 3 + n) % 11) / 25)
            rows.append(tuple(record[c] for c in columns))
    return WidgetResult(widget, "", columns, tuple(rows), False, 0.0)


def main() -> None:
    import argparse

    argparse.ArgumentParser(description=__doc__.splitlines()[0]).parse_args()
    dashboard = load_dashboard(LVDASH)
    charts = [(page, w) for page, w in dashboard.widgets() if w.kind in ("line", "bar")]
    results = [(page, synthetic_result(w)) for page, w in charts]
    for attempt in ("first", "second"):
        started = time.perf_counter()
        size = sum(len(render_widget(r.widget, r, page.columns)) for page, r in results)
        seconds = time.perf_counter() - started
        print(f"{attempt}: {len(results)} charts, {sum(len(r.rows) for _, r in results)} rows, "
              f"{seconds:.2f} s ({seconds / len(results) * 1000:.0f} ms per chart), {size / 1024:.0f} KiB of HTML")


if __name__ == "__main__":
    main()
