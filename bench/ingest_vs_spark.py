"""Benchmark: one `lakewatch run` over about a million landing rows against a bare Spark job.

Both read the very same files (the demo's mix of bad records, written once by the generator):
- lakewatch: `lakewatch run` as a whole process, on a cold engine (its start included) and on a warm
  one, over a fresh state each time: bronze with rescue, the quarantine sink, the clean table with
  expectations, the event log, file state;
- bare Spark: a whole Python process that starts its own JVM (local[2], the same Delta jars and
  tuning), reads each table's folder with Spark's reader of its format, JSON or CSV (the table's schema plus
  `_corrupt_record`, and the `_metadata` file path and modification time) as an availableNow stream
  and appends it to a Delta table: the least an ingest has to do.
Prints and appends to bench/RESULTS.md both wall times, rows/s and the ratio.
Usage: `.venv/bin/python bench/ingest_vs_spark.py [--rows 500000] [--files 4] [--work DIR]`.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from record import heading, record, table

ROOT = Path(__file__).resolve().parents[1]

BARE_JOB = r'''
import sys, time
from pathlib import Path
from pipelines.config import load_tables
from pipelines.formats.csv import reader_options
from pipelines.local.session import base_conf
from pyspark.sql import SparkSession

landing, out, tables_file = Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3]
builder = SparkSession.builder.appName("bare-ingest")
conf = {**base_conf(), "spark.sql.warehouse.dir": str(out / "warehouse")}
for k, v in conf.items():
    builder = builder.config(k, v)
spark = builder.getOrCreate()
queries = []
for t in load_tables(tables_file).tables:
    assert t.format in ("json", "csv") and not t.multi_line, t  # what the demo's tables use
    reader = (spark.readStream.format(t.format)
              .schema(f"{t.schema_ddl}, `_corrupt_record` STRING")
              .option("mode", "PERMISSIVE").option("columnNameOfCorruptRecord", "_corrupt_record"))
    if t.format == "csv":
        reader = reader.options(**reader_options(t))
    stream = (reader
              .load(str(landing / t.landing))
              .select("*", "_metadata.file_path", "_metadata.file_modification_time"))
    queries.append(stream.writeStream.format("delta").trigger(availableNow=True)
                   .option("checkpointLocation", str(out / "checkpoints" / t.name))
                   .start(str(out / "tables" / t.name)))
for q in queries:
    q.awaitTermination()
rows = sum(spark.read.format("delta").load(str(out / "tables" / t.name)).count()
           for t in load_tables(tables_file).tables)
print(f"rows={rows}")
spark.stop()
'''


def run(command: list[str], env: dict[str, str]) -> tuple[float, str]:
    started = time.monotonic()
    result = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True)
    seconds = time.monotonic() - started
    if result.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed ({result.returncode}):\n{result.stdout[-3000:]}\n{result.stderr[-3000:]}")
    return seconds, result.stdout


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=500_000, help="records per table (each table of conf/tables.yml)")
    parser.add_argument("--files", type=int, default=4, help="files per table")
    parser.add_argument("--work", type=Path, default=None)
    args = parser.parse_args()
    work = args.work or Path(tempfile.mkdtemp(prefix="lakewatch-ingest-bench-"))
    python = sys.executable
    lakewatch = [python, "-m", "pipelines.cli"]
    data_home = work / "data"
    env = {**os.environ, "PYSPARK_PYTHON": python, "LAKEWATCH_HOME": str(data_home)}
    generate_seconds, _ = run(lakewatch + ["generate", "--batches", "1", "--rows", str(args.rows),
                                           "--files-per-batch", str(args.files)], env)
    landing = data_home / "landing"
    subprocess.run(lakewatch + ["engine", "stop"], cwd=ROOT, env=env, capture_output=True)
    manifest = json.loads((landing / "_manifest.json").read_text())
    lines = sum(sum(f["lines"].values()) for f in manifest["files"])
    size = sum(Path(f["path"]).stat().st_size for f in manifest["files"])

    def fresh_home(name: str) -> dict[str, str]:
        home = work / name
        shutil.rmtree(home, ignore_errors=True)
        (home / "landing").mkdir(parents=True)
        for table_dir in landing.iterdir():
            if table_dir.is_dir():
                os.symlink(table_dir, home / "landing" / table_dir.name)
        return {**env, "LAKEWATCH_HOME": str(home)}

    results = {}
    cold_env = fresh_home("cold")
    results["lakewatch run, cold engine (engine start included)"], _ = run(lakewatch + ["run"], cold_env)
    subprocess.run(lakewatch + ["engine", "stop"], cwd=ROOT, env=cold_env, capture_output=True)
    warm_env = fresh_home("warm")
    run(lakewatch + ["engine", "start"], warm_env)
    results["lakewatch run, warm engine"], out = run(lakewatch + ["--verbose", "run"], warm_env)
    timings = next((l.strip() for l in out.splitlines() if l.strip().startswith("timings:")), "")
    subprocess.run(lakewatch + ["engine", "stop"], cwd=ROOT, env=warm_env, capture_output=True)
    bare_out = work / "bare"
    shutil.rmtree(bare_out, ignore_errors=True)
    results["bare Spark: its JSON and CSV readers + Delta append, availableNow"], bare = run(
        [python, "-c", BARE_JOB, str(landing), str(bare_out), str(ROOT / "conf" / "tables.yml")], env)
    bare_seconds = results["bare Spark: its JSON and CSV readers + Delta append, availableNow"]

    record([
        heading("Ingest versus bare Spark"),
        "",
        f"{lines} landing lines ({size / 1e6:.0f} MB, {len(manifest['files'])} files, the demo's mix of bad records; "
        f"generated in {generate_seconds:.0f} s); bare job read {bare.strip().split('rows=')[-1]} rows.",
        "",
        *table(["process", "wall time", "rows/s", "ratio to bare Spark"],
               [(name, f"{seconds:.1f} s", f"{lines / seconds:,.0f}", f"{seconds / bare_seconds:.2f}")
                for name, seconds in results.items()]),
        *(["", f"warm update phases: {timings}"] if timings else []),
    ])
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
