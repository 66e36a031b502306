"""Benchmark: how long local updates take, and how much memory the engine uses.

Runs on a throwaway home: engine start, then for each size an ingest update of freshly generated
files, then one observability update; times come from the event log (update start to end) and from
the wall clock, peak memory from the JVM's and this process's VmHWM. Appends a dated block to
bench/RESULTS.md. Usage: `.venv/bin/python bench/run_update.py [--rows 1000,10000] [--home DIR]`.
"""

from __future__ import annotations

import argparse
import os
import platform
import subprocess
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def vm_hwm_kib(pid: int) -> int | None:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    except OSError:
        return None
    return None


def java_children(parent: int) -> list[int]:
    """The JVMs started by `parent` (the resident engine's process starts its JVM)."""
    out = subprocess.run(["ps", "-o", "pid=,ppid=,comm=", "-e"], capture_output=True, text=True).stdout
    return [int(p) for p, pp, c in (l.split(None, 2) for l in out.splitlines() if l.strip()) if int(pp) == parent and "java" in c]


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", default="1000,10000", help="records per table per batch, one update per value")
    parser.add_argument("--home", type=Path, default=None)
    args = parser.parse_args()
    home = args.home or Path(tempfile.mkdtemp(prefix="lakewatch-bench-"))
    os.environ["LAKEWATCH_HOME"] = str(home)

    from pipelines.generator import generate_batch, load_column_settings
    from pipelines.local.home import LocalHome
    from pipelines.local.project import LocalProject
    from pipelines.local.update.types import UpdateRequest

    lines = []
    t0 = time.monotonic()
    project = LocalProject(home=LocalHome(home), printer=lambda s: None)
    try:  # a session left open keeps pyspark's listener thread, and so this process, alive
        spark = project.spark
        start_seconds = time.monotonic() - t0
        lines.append(f"| engine start (JVM, Spark Connect, Delta) and connect | {start_seconds:.1f} s | |")
        runner = project.runner()
        tables = project.tables()
        settings = load_column_settings(ROOT / "conf" / "generator.yml")
        for rows in [int(r) for r in args.rows.split(",")]:
            g0 = time.monotonic()
            written = generate_batch(spark, tables, project.landing_root(), rows=rows, seed=3, column_settings=settings)
            generate_seconds = time.monotonic() - g0
            u0 = time.monotonic()
            result = runner.run_update(UpdateRequest("lakewatch_ingest"))
            wall = time.monotonic() - u0
            bronze_rows = sum(f.rows_written or 0 for f in result.flows.values() if f.short_name.endswith("_bronze"))
            lines.append(f"| generate {len(tables.tables)} tables x {rows} records ({len(written)} files) | {generate_seconds:.1f} s | |")
            lines.append(f"| ingest update, {bronze_rows} new bronze rows | {wall:.1f} s | {result.state}, "
                         f"{bronze_rows / wall:.0f} rows/s end to end |")
        o0 = time.monotonic()
        obs = runner.run_update(UpdateRequest("lakewatch_observability", cause="JOB_TASK"))
        lines.append(f"| observability update ({len(obs.flows)} flows) | {time.monotonic() - o0:.1f} s | {obs.state} |")
        from pipelines.local import engine

        info = engine.read_info(LocalHome(home))
        jvm = [vm_hwm_kib(p) for p in java_children(info.pid)] if info else []
        py = vm_hwm_kib(os.getpid())
    except BaseException:
        project.close()
        raise
    project.close()
    engine.stop(LocalHome(home))
    memory = f"JVM peak RSS {max(j for j in jvm if j) / 1024:.0f} MiB" if any(jvm) else "JVM peak RSS not read"
    lines.append(f"| memory | | {memory}; Python peak RSS {(py or 0) / 1024:.0f} MiB |")

    header = [
        "",
        f"## {datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC, {platform.node()}, {os.cpu_count()} cores, "
        f"Python {platform.python_version()}",
        "",
        "| step | time | notes |",
        "| --- | --- | --- |",
    ]
    text = "\n".join(header + lines) + "\n"
    print(text)
    results = ROOT / "bench" / "RESULTS.md"
    if not results.exists():
        results.write_text("# Benchmark results\n\nWritten by `bench/run_update.py` (`make bench`); newest last.\n")
    with results.open("a") as f:
        f.write(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
