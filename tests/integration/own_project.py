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

import gzip
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


def shown_as_run(shown: list[str], base: Path) -> list[str]:
    """A documented command's arguments with the test's folders for the reader's: `~` is `base`,
    `/tmp/landing` (a landing root shown) the user's exports under it."""
    stand_ins = {"/tmp/landing": str(base / "exports")}
    args = []
    for word in shown:
        word = str(base) + word[1:] if word.startswith("~") else word
        for shown_path, path in stand_ins.items():
            word = word.replace(shown_path, path)
        args.append(word)
    return args


def verb(shown: list[str]) -> str:
    """The verb of a documented command's arguments (its first word that is not an option)."""
    return next((w for w in shown if not w.startswith("-")), "")


def documented_writes() -> list[list[str]]:
    """The commands docs/cli.md shows, in its order, but those run on the demo's state (read-only,
    test_demo), the `--remote` one (test_remote) and `demo` (the last step here): `generate` first,
    so that the updates after it have the generated tables' files, and `engine` last."""
    from tests.docs_commands import ROOT, read_only_on_demo_state, shell_blocks

    on_demo = {tuple(shown) for _, _, shown in read_only_on_demo_state()}
    shown = [words[1:] for block in shell_blocks(ROOT / "docs" / "cli.md") for words in block
             if Path(words[0]).name == "lakewatch"]
    kept = [a for a in shown if tuple(a) not in on_demo and "--remote" not in a and a[:1] != ["demo"]]
    return sorted(kept, key=lambda a: {"generate": 0, "engine": 2}.get(verb(a), 1))


class DocumentedRuns:
    """Runs documented commands in the project as shown (`shown_as_run`); keeps what each printed,
    by the command as shown, and runs a command shown twice (in two documents) once."""

    def __init__(self, project: Project, base: Path) -> None:
        self.project, self.base = project, base
        self.outputs: dict[tuple[str, ...], tuple[str, str]] = {}

    def __call__(self, shown: list[str], expect: int = 0) -> tuple[str, str]:
        key = tuple(shown)
        if key not in self.outputs:
            self.outputs[key] = self.project.run(*shown_as_run(shown, self.base), expect=expect, split=True)
        return self.outputs[key]

    def text(self, shown: list[str]) -> str:
        out, err = self(shown)
        return out + err


def write_samples(samples: Path) -> None:
    """docs/cli.md's `add-table events --from ~/samples/events.json.gz`: a gzip of JSON lines."""
    samples.mkdir(parents=True, exist_ok=True)
    lines = "".join(json.dumps({"event_id": i, "kind": ("view", "click")[i % 2], "at": (START + timedelta(seconds=i)).isoformat()})
                    + "\n" for i in range(50))
    (samples / "events.json.gz").write_bytes(gzip.compress(lines.encode()))


def run_user_steps(base: Path) -> dict[str, Any]:
    """Every step in a new project under `base`, then the demo; what each printed and what the test
    counted, by step. The steps are the commands docs/getting-started.md ("Your own data") and the
    README show, run as shown (`~` is `base`), with the test's own between them; then every command
    docs/cli.md shows that writes (`documented_writes`)."""
    from tests.docs_commands import ROOT, section_blocks

    project = Project(copy_project(base / "project"))
    exports = base / "exports"
    written = write_exports(exports)
    write_samples(base / "samples")
    root = ["--landing-root", str(exports)]
    documented = DocumentedRuns(project, base)
    add, first_run, drift = section_blocks(ROOT / "docs" / "getting-started.md", "## Your own data")
    [readme] = section_blocks(ROOT / "README.md", "## Your own data")
    steps: dict[str, Any] = {"before": (project.root / "conf" / "tables.yml").read_text()}
    # 2. add tables (the guide's two, and a Parquet one of the test's)
    steps["add"] = [documented.text(shown) for shown in add]
    steps["add"].append(project.run(*root, "add-table", "sensor_readings", "--from", str(exports / "sensor_readings")))
    steps["config"] = yaml.safe_load((project.root / "conf" / "tables.yml").read_text())
    steps["add_json"] = project.run(*root, "add-table", "shipments", "--from", str(exports / "shipments" / "ship-001.json"),
                                    "--replace", "--dry-run", "-o", "json", split=True)
    # 3. check, the job, an update (nothing new for it)
    steps["check"], steps["job"], steps["first_run"] = (documented.text(shown) for shown in first_run)
    steps["bronze"] = project.query(*root, sql=(
        "SELECT 'shipments' AS t, count(*) AS n, count(DISTINCT shipment_id) AS k FROM shipments_bronze UNION ALL "
        "SELECT 'stock_levels', count(*), count(DISTINCT sku) FROM stock_levels_bronze UNION ALL "
        "SELECT 'sensor_readings', count(*), count(DISTINCT reading_id) FROM sensor_readings_bronze"))
    steps["readme"] = [documented.text(shown) for shown in readme]  # the README's steps (most ran above)
    # 5. schema drift: list it, apply it, a full refresh reads the files again and fills the column
    shown_drift, shown_apply, shown_refresh = drift
    steps["drift"] = documented.text(shown_drift)
    steps["drift_json"] = project.run(*root, "drift", "-o", "json", split=True)
    steps["apply"] = documented.text(shown_apply)
    steps["after_apply"] = project.run(*root, "drift", "shipments")
    documented(shown_refresh)
    filled = ("SELECT count(*) AS n, count(priority) AS filled, "
              "count_if(get_json_object(_rescued_data, '$.priority') IS NOT NULL) AS rescued FROM shipments_bronze")
    steps["refreshed"] = project.query(*root, sql=filled)
    # the landing root in lakewatch.local.yml (the guide's other way), for the commands without the flag;
    # new files after the schema change fill the new column
    settings = project.root / "lakewatch.local.yml"
    settings.write_text(settings.read_text().replace("  landing_root: ${lakewatch.home}/landing",
                                                     f"  landing_root: {exports}"))
    write_lines(exports / "shipments" / "ship-003.json",
                [shipment(i, priority=True) for i in range(2 * SHIPMENTS, 2 * SHIPMENTS + 30)])
    written["shipments"] += 30
    steps["run"] = documented.text(["run"])
    steps["filled"] = project.query(sql=f"{filled} WHERE _source_file LIKE '%ship-003.json'")
    steps["counts_before_writes"] = bronze_counts(project, root, written)
    # every other command docs/cli.md shows that writes; `drift --apply` changes conf/tables.yml for
    # orders, put back before the demo (whose orders files carry that field as drift)
    tables_yml = (project.root / "conf" / "tables.yml").read_text()
    writes = documented_writes()
    engine_commands = [shown for shown in writes if verb(shown) == "engine"]
    for shown in writes:
        if shown not in engine_commands:  # run last: a query after `engine stop` would start it again
            documented(shown)
    steps["applied_to_orders"] = yaml.safe_load((project.root / "conf" / "tables.yml").read_text())
    steps["orders_quarantine"] = project.query(sql=(
        "SELECT _source_file, _record_hash FROM corrupt_records_sink WHERE source_table = 'orders'"))
    (project.root / "conf" / "tables.yml").write_text(tables_yml)
    # the demo, after the user's tables: its own state folder and landing root
    steps["files_before"] = hashes(exports)
    steps["counts_before"] = bronze_counts(project, root, written)
    steps["home_before"] = sorted(p.name for p in (project.root / ".lakewatch").iterdir())
    steps["refused"] = project.run("demo", expect=2, env={"LAKEWATCH_HOME": str(project.root / ".lakewatch")})
    # docs/cli.md's `demo --rows 150`, with its JSON result
    steps["demo_json"], steps["demo"] = project.run("demo", "--rows", str(DEMO_ROWS), "-o", "json", split=True)
    documented.outputs[("demo", "--rows", str(DEMO_ROWS))] = (steps["demo_json"], steps["demo"])
    # the demo's engine stays up: test_demo queries the demo's state next
    steps["files_after"] = hashes(exports)
    steps["counts_after"] = bronze_counts(project, root, written)
    for shown in engine_commands:  # docs/cli.md's engine commands, with the user's engine up
        documented(shown)
    if not any(shown[-1:] == ["stop"] for shown in engine_commands):
        project.run(*root, "engine", "stop")  # the user's engine is not needed after this
    return {"project": project, "exports": exports, "written": written, "demo_home": project.root / DEMO_HOME,
            "documented": documented.outputs, **steps}
