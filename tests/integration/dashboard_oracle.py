"""Runs the real dashboard's widgets both ways on a local home's engine and prints, as JSON, where they
differ: `run_widgets` (a dataset's widgets in one query, datasets concurrently) against each widget's
own query run alone with `run_widget` (the oracle: Spark running the SQL Lakeview would run): the
columns, every value with its type, the order of the rows, the truncation and the error.

A process of its own because the tests' process must not open a Spark Connect session; the test that
uses it is in test_demo.py. Usage: `LAKEWATCH_HOME=<home> python -m tests.integration.dashboard_oracle`.
"""

from __future__ import annotations

import json
import math
import re
import sys
import time
from decimal import Decimal
from typing import Any

from pipelines.dashboard.lvdash import load_dashboard
from pipelines.dashboard.query import WidgetResult, run_widget
from pipelines.dashboard.render import run_widgets
from pipelines.local.home import PROJECT_ROOT
from pipelines.local.project import LocalProject

LVDASH = PROJECT_ROOT / "dashboards" / "lakewatch.lvdash.json"


CLOCK = re.compile(r"\b(current_timestamp|current_date|now)\s*\(", re.IGNORECASE)


def same_value(a: Any, b: Any, tolerance: float = 0.0) -> bool:
    """Equal values of the same type; numbers within `tolerance` (for values computed from the clock)."""
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    if type(a) is not type(b):
        return False
    if tolerance and isinstance(a, (int, float, Decimal)) and not isinstance(a, bool):
        return abs(float(a) - float(b)) <= tolerance
    return a == b


def differences(new: WidgetResult, old: WidgetResult, tolerance: float = 0.0) -> list[str]:
    found = []
    for what in ("columns", "truncated", "error", "sql"):
        if getattr(new, what) != getattr(old, what):
            found.append(f"{what}: {getattr(new, what)!r} != {getattr(old, what)!r}")
    if len(new.rows) != len(old.rows):
        found.append(f"{len(new.rows)} rows != {len(old.rows)}")
    for n, (a, b) in enumerate(zip(new.rows, old.rows)):
        if len(a) != len(b) or not all(same_value(x, y, tolerance) for x, y in zip(a, b)):
            found.append(f"row {n}: {a!r} != {b!r}")
            break
    return found


def main() -> int:
    project = LocalProject(printer=lambda text: print(text, file=sys.stderr))
    project.use_schema()
    spark = project.spark
    dashboard = load_dashboard(LVDASH)
    started = time.monotonic()
    new = run_widgets(spark, dashboard)
    new_seconds = time.monotonic() - started
    started = time.monotonic()
    old = {w.name: run_widget(spark, w, dashboard.dataset(w.query.dataset_name))
           for _, w in dashboard.widgets() if w.query is not None}
    old_seconds = time.monotonic() - started
    # A dataset that reads the clock gives later queries other numbers: those may differ by the
    # seconds the two runs took (an upper bound in seconds, minutes or hours alike).
    clock = {w.name for _, w in dashboard.widgets() if w.query is not None
             and CLOCK.search(dashboard.dataset(w.query.dataset_name).query)}
    tolerance = {name: new_seconds + old_seconds if name in clock else 0.0 for name in old}
    report = {
        "widgets": list(old),
        "clock": sorted(clock),
        "new_order": list(new),
        "rows": {name: len(r.rows) for name, r in old.items()},
        "errors": {name: r.error for name, r in old.items() if r.error},
        "differences": {name: differences(new[name], old[name], tolerance[name]) if name in new else ["not run"]
                        for name in old if name not in new or differences(new[name], old[name], tolerance[name])},
        "seconds": {"batched": round(new_seconds, 2), "each_alone": round(old_seconds, 2)},
    }
    print(json.dumps(report, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
