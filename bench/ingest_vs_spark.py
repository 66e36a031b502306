"""Benchmark: one `lakewatch run` over about a million landing rows against a bare Spark job.

Both read the very same files (the demo's mix of bad records, written once by the generator):
- lakewatch: `lakewatch run` as a whole process, on a cold engine (its start included) and on a warm
  one, over a fresh state each time: bronze with rescue, the quarantine sink, the clean table with
  expectations, the event log, file state;
- bare Spark: a whole Python process that starts its own JVM (local[2], the same Delta jars and
  tuning), reads each table's folder with Spark's reader of its format, JSON or CSV (the table's schema plus
  `_corrupt_record`, and the `_metadata` file path and modification time) as an availableNow stream
  and appends it to a Delta table: the least an ingest has to do.
- bare Spark with the pattern's writes: the same reads into bronze with lakewatch's bronze query
  (change data feed on, as lakewatch's local tables), then per table the two streams the Auto Loader
  observability pattern adds on bronze: the clean table (rows without `_corrupt_record`) and
  lakewatch's quarantine query into one shared sink. No rescue, no expectations, no event log. The
  difference to the bare job is the pattern's cost.
Where the bare jobs differ from lakewatch's run, besides what each leaves out: they start the clean
and quarantine streams once every bronze stream ended (SDP starts a table's as soon as its bronze
ended), and their JVM is a plain Spark driver (the engine's runs C1 only, the parallel collector and
the FAIR scheduler). Each bare job counts the rows it read from its streams' progress, not with a
query of its own.
- the same with lakewatch's own parts and without SDP: bronze read by lakewatch's local reader (the
  rescue of `_rescued_data`) and lakewatch's bronze, clean and quarantine queries. The difference to
  lakewatch is SDP, the expectations' counts and the observability (event log, file state).
Prints and appends to bench/RESULTS.md the wall times, rows/s and the ratios, the bare jobs' phases,
and each lakewatch flow's time from the warm run's event log.
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
from pipelines.config import SOURCE_FILE, SOURCE_FILE_MTIME, load_tables
from pipelines.formats.csv import reader_options
from pipelines.local.session import base_conf
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

landing, out, tables_file, mode = Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3], sys.argv[4]
pattern = mode in ("pattern", "rescue")
started = time.monotonic()
builder = SparkSession.builder.appName("bare-ingest")
conf = {**base_conf(), "spark.sql.warehouse.dir": str(out / "warehouse")}
for k, v in conf.items():
    builder = builder.config(k, v)
spark = builder.getOrCreate()
session_ready = time.monotonic()
if pattern:  # lakewatch's local bronze and clean tables have the change data feed on
    spark.conf.set("spark.databricks.delta.properties.defaults.enableChangeDataFeed", "true")
from pipelines.ingestion import bronze_query, clean_query, quarantine_query

tables = load_tables(tables_file).tables


def append(stream, name):
    return (stream.writeStream.format("delta").trigger(availableNow=True)
            .option("checkpointLocation", str(out / "checkpoints" / name)).start(str(out / "tables" / name)))


queries = []
for t in tables:
    assert t.format in ("json", "csv") and not t.multi_line, t  # what the demo's tables use
    if mode == "rescue":  # lakewatch's local reader, as LocalEngine.read_files calls it
        from pipelines.adapter import local_file_options
        from pipelines.formats import file_format
        options, _ = local_file_options(t, str(landing))
        source = file_format(t).read_local(spark, t, t.landing_path(str(landing)), options)
    else:  # Spark's own reader of the format
        reader = (spark.readStream.format(t.format)
                  .schema(f"{t.schema_ddl}, `_corrupt_record` STRING")
                  .option("mode", "PERMISSIVE").option("columnNameOfCorruptRecord", "_corrupt_record"))
        if t.format == "csv":
            reader = reader.options(**reader_options(t))
        source = reader.load(str(landing / t.landing))
        if not pattern:  # the least an ingest does: the rows and their file
            queries.append(append(source.select("*", "_metadata.file_path", "_metadata.file_modification_time"), t.name))
            continue
        source = source.select("*", F.col("_metadata.file_path").alias(SOURCE_FILE),
                               F.col("_metadata.file_modification_time").alias(SOURCE_FILE_MTIME))
    queries.append(append(bronze_query(source), t.name))
for q in queries:
    q.awaitTermination()
bronze_done = time.monotonic()
if pattern:  # lakewatch's clean and quarantine queries, all tables' quarantine into one sink
    from pipelines.ingestion import SINK_SCHEMA_DDL
    # created first, as SDP creates lakewatch's (three streams creating one table at once conflict)
    spark.createDataFrame([], SINK_SCHEMA_DDL).write.format("delta").save(str(out / "tables" / "corrupt_records_sink"))
    downstream = []
    for t in tables:
        bronze = spark.readStream.format("delta").load(str(out / "tables" / t.name))
        clean = clean_query(bronze, t) if mode == "rescue" else bronze.where("_corrupt_record IS NULL").drop("_corrupt_record")
        downstream.append(append(clean, f"{t.name}_clean"))
        quarantine = quarantine_query(bronze, t.name)
        downstream.append(quarantine.writeStream.format("delta").trigger(availableNow=True)
                          .option("checkpointLocation", str(out / "checkpoints" / f"{t.name}_to_corrupt_records_sink"))
                          .start(str(out / "tables" / "corrupt_records_sink")))
    for q in downstream:
        q.awaitTermination()
# rows read into bronze from the streams' own progress (a count would be a timed job of its own)
rows = sum(p["numInputRows"] for q in queries for p in q.recentProgress)
print(f"rows={rows}")
print(f"phases=session start {session_ready - started:.1f} s, bronze {bronze_done - session_ready:.1f} s, "
      f"clean and quarantine {time.monotonic() - bronze_done:.1f} s")
spark.stop()
'''


BARE = "bare Spark: its JSON and CSV readers + Delta append, availableNow"
BARE_PATTERN = "bare Spark with the pattern's writes: bronze, then clean and quarantine streams of it"
BARE_RESCUE = "the same, with lakewatch's local reader (rescue) and its bronze, clean and quarantine queries"

# Each flow of the newest update of the ingest pipeline: when it started running (seconds after the
# first flow did) and for how long, from its RUNNING event to its terminal one.
FLOW_TIMES_SQL = """
WITH flow_events AS (
  SELECT origin.flow_name AS flow, unix_micros(timestamp) / 1e6 AS at,
         get_json_object(details, '$.flow_progress.status') AS status
  FROM lakewatch.lakewatch_ingest_event_log
  WHERE event_type = 'flow_progress' AND level <> 'METRICS'
    AND origin.update_id = (SELECT max_by(origin.update_id, timestamp) FROM lakewatch.lakewatch_ingest_event_log
                            WHERE event_type = 'create_update')),
flows AS (
  SELECT flow, min(at) FILTER (WHERE status = 'RUNNING') AS started,
         max(at) FILTER (WHERE status IN ('COMPLETED', 'FAILED', 'STOPPED', 'SKIPPED', 'EXCLUDED')) AS ended
  FROM flow_events GROUP BY flow)
SELECT regexp_extract(flow, '[^.]+$', 0) AS flow, round(started - min(started) OVER (), 1) AS start,
       round(ended - started, 1) AS seconds
FROM flows WHERE started IS NOT NULL ORDER BY started, flow
"""


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
    if (work / "data").exists():
        raise SystemExit(f"{work} holds an earlier run's data (the generator would add to it): give a new --work")
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
    _, flows_json = run(lakewatch + ["query", "--json", FLOW_TIMES_SQL], warm_env)
    flows = json.loads(flows_json)
    subprocess.run(lakewatch + ["engine", "stop"], cwd=ROOT, env=warm_env, capture_output=True)
    phases = {}
    for name, mode in ((BARE, "plain"), (BARE_PATTERN, "pattern"), (BARE_RESCUE, "rescue")):
        bare_out = work / f"bare-{mode}"
        shutil.rmtree(bare_out, ignore_errors=True)
        results[name], bare = run([python, "-c", BARE_JOB, str(landing), str(bare_out), str(ROOT / "conf" / "tables.yml"),
                                   mode], env)
        phases[name] = bare.split("phases=")[-1].strip()
        if mode == "plain":
            bare_rows = bare.split("rows=")[-1].split()[0]
    bare_seconds = results[BARE]

    record([
        heading("Ingest versus bare Spark"),
        "",
        f"{lines} landing lines ({size / 1e6:.0f} MB, {len(manifest['files'])} files, the demo's mix of bad records; "
        f"generated in {generate_seconds:.0f} s); bare job read {bare_rows} rows.",
        "",
        *table(["process", "wall time", "rows/s", "ratio to bare Spark", "ratio to bare Spark with the pattern's writes"],
               [(name, f"{seconds:.1f} s", f"{lines / seconds:,.0f}", f"{seconds / bare_seconds:.2f}",
                 f"{seconds / results[BARE_PATTERN]:.2f}") for name, seconds in results.items()]),
        "",
        *[f"{name}: {text}" for name, text in phases.items()],
        *(["", f"warm update phases: {timings}"] if timings else []),
        "",
        "warm update, each flow's start after the first flow's and its time from RUNNING to its end (event log): "
        + ", ".join(f"{f['flow']} at {f['start']:.1f} s for {f['seconds']:.1f} s" for f in flows),
    ])
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
