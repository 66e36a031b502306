"""A user's own files, step by step as docs/getting-started.md ("Your own data") shows them, then the
demo in the same project: tables added from sample files (JSON lines, CSV, Parquet) with `lakewatch
add-table`, the landing root pointed at the folder holding the files (read where they are), the job
run, the schema drift of one file listed and applied with `lakewatch drift`, an update and a full
refresh; then `lakewatch demo`, refused on the user's state folder and run in its own.

The project is a copy of this checkout in a temporary folder (conf/tables.yml is the user's to change,
and tests must not change the checkout's), with the default state folders `.lakewatch/` and
`.lakewatch-demo/` in it. test_own_data checks the user's steps and that the demo left the user's files
and tables alone; test_demo checks what the demo left in its own state folder (one demo for both:
tests/conftest.py runs the two modules on one worker)."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import yaml

from tests.integration.helpers import HOMES_USED, PROJECT_ROOT, TEST_ENGINE_IDLE_SECONDS

COPIED = ("databricks.yml", "lakewatch.local.yml", "pyproject.toml", "conf", "resources", "transformations",
          "jobs", "dashboards", "pipelines")
SHIPMENTS, DRIFTED = 150, 40  # records per JSON file; records of the second file with the extra field
STOCK, READINGS = 240, 200
START = datetime(2026, 3, 1, 8, 0, tzinfo=timezone.utc)


def shipment(i: int, priority: bool = False) -> dict:
    record = {"shipment_id": i, "order_id": 1000 + i % 70, "shipped_at": (START + timedelta(minutes=i)).isoformat(),
              "weight_kg": round(0.5 + i * 0.25, 2), "carrier": ("dhl", "ups", "post")[i % 3], "delivered": i % 4 == 0}
    if priority:
        record["priority"] = i % 3 + 1
    return record


def write_lines(path: Path, records: list[dict]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in records))


def write_exports(exports: Path) -> dict[str, int]:
    """The user's files: JSON lines (the second file with an extra field on some lines), CSV, Parquet.
    Returns the records written per table."""
    write_lines(exports / "shipments" / "ship-001.json", [shipment(i) for i in range(SHIPMENTS)])
    write_lines(exports / "shipments" / "ship-002.json",
                [shipment(i, priority=i < SHIPMENTS + DRIFTED) for i in range(SHIPMENTS, 2 * SHIPMENTS)])
    stock = exports / "stock_levels"
    stock.mkdir(parents=True)
    for part in range(2):
        lines = ["sku,warehouse_id,quantity,counted_on"]
        for i in range(part * STOCK // 2, (part + 1) * STOCK // 2):
            lines.append(f"SKU-{i:04d},{i % 4 + 1},{i * 7 % 500},2026-03-{i % 28 + 1:02d}")
        (stock / f"stock-{part}.csv").write_text("\n".join(lines) + "\n")
    readings = exports / "sensor_readings"
    readings.mkdir(parents=True)
    table = pa.table({
        "reading_id": pa.array(range(READINGS), pa.int64()),
        "sensor": pa.array([f"s{i % 9}" for i in range(READINGS)]),
        "value": pa.array([i / 7 for i in range(READINGS)], pa.float64()),
        "read_at": pa.array([START + timedelta(seconds=i) for i in range(READINGS)], pa.timestamp("us", tz="UTC")),
    })
    pq.write_table(table, readings / "readings.parquet")
    return {"shipments": 2 * SHIPMENTS, "stock_levels": STOCK, "sensor_readings": READINGS}


def copy_project(target: Path) -> Path:
    target.mkdir(parents=True)
    for name in COPIED:
        source = PROJECT_ROOT / name
        if source.is_dir():
            shutil.copytree(source, target / name, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy2(source, target / name)
    (target / ".cache").symlink_to((PROJECT_ROOT / ".cache").resolve())  # Delta's jars, the engine patches
    return target


class Project:
    """`lakewatch` run in the copied project, as its user runs it (no LAKEWATCH_HOME)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        HOMES_USED.update({root / ".lakewatch", root / ".lakewatch-demo"})

    def run(self, *args: str, expect: int = 0, env: dict[str, str] | None = None, split: bool = False) -> Any:
        """The command's output (standard output then error), or with `split` the pair of them."""
        base = {k: v for k, v in os.environ.items() if k not in ("LAKEWATCH_HOME", "LAKEWATCH_REMOTE")}
        full = {**base, "PYTHONPATH": str(self.root), "PYSPARK_PYTHON": sys.executable,
                "LAKEWATCH_ENGINE_IDLE_SECONDS": TEST_ENGINE_IDLE_SECONDS, **(env or {})}
        done = subprocess.run([sys.executable, "-m", "pipelines.cli", *args], cwd=self.root, env=full,
                              capture_output=True, text=True, timeout=1200)
        assert done.returncode == expect, (f"lakewatch {' '.join(args)} exited {done.returncode}, expected {expect}\n"
                                           f"--- stdout\n{done.stdout[-4000:]}\n--- stderr\n{done.stderr[-4000:]}")
        return (done.stdout, done.stderr) if split else done.stdout + done.stderr

    def query(self, *options: str, sql: str) -> list[dict]:
        out = self.run(*options, "query", "--json", sql)
        return json.loads(next(line for line in out.splitlines() if line.startswith("[")))


def hashes(folder: Path) -> dict[str, str]:
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


def bronze_counts(project: Project, root: list[str], names) -> dict[str, int]:
    sql = " UNION ALL ".join(f"SELECT '{n}' AS t, count(*) AS n FROM {n}_bronze" for n in names)
    return {r["t"]: r["n"] for r in project.query(*root, sql=sql)}


DEMO_ROWS = 150  # rows per table and batch of the demo
DEMO_HOME = ".lakewatch-demo"  # the demo's default state folder, in the project


def run_user_steps(base: Path) -> dict[str, Any]:
    """Every step in a new project under `base`, then the demo; what each printed and what the test
    counted, by step."""
    project = Project(copy_project(base / "project"))
    exports = base / "exports"
    written = write_exports(exports)
    root = ["--landing-root", str(exports)]
    steps = {"before": (project.root / "conf" / "tables.yml").read_text()}
    steps["add"] = [
        project.run(*root, "add-table", "shipments", "--from", str(exports / "shipments" / "ship-001.json")),
        project.run(*root, "add-table", "stock_levels", "--from", str(exports / "stock_levels")),
        project.run(*root, "add-table", "sensor_readings", "--from", str(exports / "sensor_readings")),
    ]
    steps["config"] = yaml.safe_load((project.root / "conf" / "tables.yml").read_text())
    steps["add_json"] = project.run(*root, "add-table", "shipments", "--from", str(exports / "shipments" / "ship-001.json"),
                                    "--replace", "--dry-run", "-o", "json", split=True)
    steps["check"] = project.run(*root, "check")
    steps["job"] = project.run(*root, "job")
    steps["bronze"] = project.query(*root, sql=(
        "SELECT 'shipments' AS t, count(*) AS n, count(DISTINCT shipment_id) AS k FROM shipments_bronze UNION ALL "
        "SELECT 'stock_levels', count(*), count(DISTINCT sku) FROM stock_levels_bronze UNION ALL "
        "SELECT 'sensor_readings', count(*), count(DISTINCT reading_id) FROM sensor_readings_bronze"))
    steps["drift"] = project.run(*root, "drift", "shipments")
    steps["drift_json"] = project.run(*root, "drift", "-o", "json", split=True)
    steps["apply"] = project.run(*root, "drift", "shipments", "--apply")
    steps["after_apply"] = project.run(*root, "drift", "shipments")
    # new files after the schema change fill the new column
    write_lines(exports / "shipments" / "ship-003.json",
                [shipment(i, priority=True) for i in range(2 * SHIPMENTS, 2 * SHIPMENTS + 30)])
    written["shipments"] += 30
    steps["run"] = project.run(*root, "run")
    filled = ("SELECT count(*) AS n, count(priority) AS filled, "
              "count_if(get_json_object(_rescued_data, '$.priority') IS NOT NULL) AS rescued FROM shipments_bronze")
    steps["filled"] = project.query(*root, sql=f"{filled} WHERE _source_file LIKE '%ship-003.json'")
    # a full refresh of the table reads every file again: the rows from before the change fill the column
    project.run(*root, "run", "--full-refresh", "shipments_bronze,shipments,shipments_rejected")
    steps["refreshed"] = project.query(*root, sql=filled)
    # the demo, after the user's tables: its own state folder and landing root
    steps["files_before"] = hashes(exports)
    steps["counts_before"] = bronze_counts(project, root, written)
    steps["home_before"] = sorted(p.name for p in (project.root / ".lakewatch").iterdir())
    project.run(*root, "engine", "stop")
    steps["refused"] = project.run("demo", expect=2, env={"LAKEWATCH_HOME": str(project.root / ".lakewatch")})
    steps["demo"] = project.run("demo", "--rows", str(DEMO_ROWS))
    # the demo's engine stays up: test_demo queries the demo's state next
    steps["files_after"] = hashes(exports)
    steps["counts_after"] = bronze_counts(project, root, written)
    project.run(*root, "engine", "stop")  # the user's engine is not needed after this
    return {"project": project, "exports": exports, "written": written, "demo_home": project.root / DEMO_HOME,
            **steps}
