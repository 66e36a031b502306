"""Benchmark: `lakewatch dashboard` as a whole process on a warm engine.

Builds a demo state (`lakewatch demo --rows 150`) unless `--home` names one that exists, renders the
dashboard once to warm the engine, then times `lakewatch dashboard` `--repeat` times and prints the
min, median and max wall time and the widgets' own query time the command reports. With several
`--source` checkouts (each runs in its own folder, so its `pipelines` package and project files are used) the runs alternate
between them, A B A B, so load from other processes falls on each alike; the first source is the
baseline of the ratio. Prints a Markdown block; `--record` also appends it to bench/RESULTS.md.

Usage: `.venv/bin/python bench/dashboard.py [--home DIR] [--repeat 5] [--source OLD --source .] [--record]`.
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from record import heading, record, table

ROOT = Path(__file__).resolve().parents[1]


def run(command: list[str], env: dict[str, str], cwd: Path = ROOT) -> tuple[float, str]:
    """Runs `command` in `cwd` (`python -m` imports the package of its working directory first)."""
    started = time.monotonic()
    result = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True)
    if result.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed ({result.returncode}):\n{result.stdout[-2000:]}\n{result.stderr[-2000:]}")
    return time.monotonic() - started, result.stdout


def environment(home: Path, source: Path) -> dict[str, str]:
    return {**os.environ, "LAKEWATCH_HOME": str(home), "PYTHONPATH": str(source), "PYSPARK_PYTHON": sys.executable,
            "PYTHONDONTWRITEBYTECODE": "1"}


def queries_seconds(output: str) -> float | None:
    """The widgets' query time the command prints: `(<n> widgets in <s>s; ...)`."""
    found = re.search(r"widgets in (\d+(?:\.\d+)?)s", output)
    return float(found.group(1)) if found else None


def spread(values: list[float]) -> str:
    return f"{min(values):.1f} / {statistics.median(values):.1f} / {max(values):.1f} s"


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--home", type=Path, default=None, help="a demo state to reuse (built when missing)")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--source", type=Path, action="append", default=None,
                        help="a checkout whose `pipelines` runs (repeatable; default: this one)")
    parser.add_argument("--stop", action="store_true", help="stop the engine at the end")
    parser.add_argument("--record", action="store_true", help="append the block to bench/RESULTS.md")
    args = parser.parse_args()
    sources = [s.resolve() for s in (args.source or [ROOT])]
    home = (args.home or Path(tempfile.mkdtemp(prefix="lakewatch-dashboard-"))).resolve()
    cli = [sys.executable, "-m", "pipelines.cli"]
    if not (home / "warehouse").exists():
        run(cli + ["demo", "--rows", "150"], environment(home, ROOT))
    for source in sources:
        run(cli + ["dashboard", "--output", str(home / "bench-dashboard.html")], environment(home, source), source)  # warm
    wall: dict[Path, list[float]] = {s: [] for s in sources}
    reported: dict[Path, list[float]] = {s: [] for s in sources}
    for _ in range(args.repeat):
        for source in sources:
            seconds, out = run(cli + ["dashboard", "--output", str(home / "bench-dashboard.html")], environment(home, source),
                               source)
            wall[source].append(seconds)
            queries = queries_seconds(out)
            if queries is not None:
                reported[source].append(queries)
    if args.stop:
        run(cli + ["engine", "stop"], environment(home, ROOT))
    base = statistics.median(wall[sources[0]])
    rows = [(str(s), spread(wall[s]), spread(reported[s]) if reported[s] else "-",
             f"{statistics.median(wall[s]) / base:.2f}") for s in sources]
    lines = [heading("Dashboard"), "",
             f"`lakewatch dashboard` on a warm engine, {args.repeat} runs per source, alternating; state {home}", "",
             *table(["source", "wall min / median / max", "queries (reported) min / median / max", "median vs first"], rows)]
    if args.record:
        record(lines)
    else:
        print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
