"""Benchmark: how long the commands a user types take, as whole processes.

- `lakewatch query "SELECT 1"` on a warm engine (the median of several);
- an ingest update with nothing new to ingest, on a warm engine, after the demo (the median of several);
- `make demo` and `make test` (`--make` only: they take minutes).
Appends a dated block to bench/RESULTS.md. Usage: `.venv/bin/python bench/commands.py [--make] [--repeat 5]`.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from record import heading, record, table

ROOT = Path(__file__).resolve().parents[1]


def timed(command: list[str], env: dict[str, str]) -> tuple[float, str]:
    started = time.monotonic()
    result = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True)
    if result.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed ({result.returncode}):\n{result.stdout[-2000:]}\n{result.stderr[-2000:]}")
    return time.monotonic() - started, result.stdout


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--make", action="store_true", help="also time `make demo` and `make test`")
    args = parser.parse_args()
    home = Path(tempfile.mkdtemp(prefix="lakewatch-commands-"))
    env = {**os.environ, "LAKEWATCH_HOME": str(home), "PYSPARK_PYTHON": sys.executable}
    cli = [sys.executable, "-m", "pipelines.cli"]
    rows = []
    demo_seconds, _ = timed(cli + ["demo", "--rows", "150"], env)
    rows.append(("`lakewatch demo --rows 150` (engine start included)", f"{demo_seconds:.1f} s", "one run"))
    query = [timed(cli + ["query", "SELECT 1"], env)[0] for _ in range(args.repeat)]
    rows.append(('warm `lakewatch query "SELECT 1"`', f"{statistics.median(query):.2f} s",
                 f"median of {args.repeat}, min {min(query):.2f} s"))
    empty, phases = [], ""
    for _ in range(args.repeat):
        seconds, out = timed(cli + ["--verbose", "run"], env)
        empty.append(seconds)
        phases = next((l.strip() for l in out.splitlines() if l.strip().startswith("timings:")), phases)
    rows.append(("warm `lakewatch run` with nothing new", f"{statistics.median(empty):.1f} s",
                 f"median of {args.repeat}, min {min(empty):.1f} s; last run's {phases}"))
    timed(cli + ["engine", "stop"], env)
    if args.make:
        for target in ("demo", "test"):
            seconds, _ = timed(["make", target], {k: v for k, v in os.environ.items() if k != "LAKEWATCH_HOME"})
            rows.append((f"`make {target}` (installed already)", f"{seconds:.0f} s", "one run"))
    record([heading("Commands"), "", *table(["command", "wall time", "notes"], rows)])
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
