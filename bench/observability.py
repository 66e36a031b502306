"""Benchmark: an observability refresh over event logs of growing size.

A fresh state gets one real ingest update (so every table the observability pipeline reads exists),
then the ingest pipeline's event log is filled with synthetic updates built with the test builders
(tests/eventlog_builders.py: completed updates with bronze, quarantine and clean flows, expectations,
metrics), about 17 events each, newest first back over up to 30 days. For each size
(10 thousand, 100 thousand, 1 million events by default) it times, as whole processes on a warm engine:
- `lakewatch run lakewatch_observability` right after the events were appended;
- the same again with nothing new in the event log.
Prints and appends to bench/RESULTS.md both wall times and the time per thousand events.
Usage: `.venv/bin/python bench/observability.py [--sizes 10000,100000,1000000]`.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from record import heading, record, table  # noqa: E402

from pipelines.bundle import load_local_settings  # noqa: E402
from pipelines.eventlog.schema import EVENT_LOG_SCHEMA  # noqa: E402
from pipelines.local.home import LocalHome  # noqa: E402
from pipelines.local.connection import connect_local  # noqa: E402
from tests.eventlog_builders import completed_update, event_rows  # noqa: E402

EVENT_LOG = "spark_catalog.lakewatch.lakewatch_ingest_event_log"
BASE_UPDATES = 600  # one block of synthetic updates; bigger logs are copies of it, shifted back in time
SPAN_DAYS = 30


def cli(home: Path, *args: str) -> float:
    env = {**os.environ, "LAKEWATCH_HOME": str(home), "PYSPARK_PYTHON": sys.executable}
    started = time.monotonic()
    result = subprocess.run([sys.executable, "-m", "pipelines.cli", *args], cwd=ROOT, env=env,
                            capture_output=True, text=True)
    if result.returncode != 0:
        raise SystemExit(f"lakewatch {' '.join(args)} failed ({result.returncode}):\n{result.stdout[-3000:]}\n"
                         f"{result.stderr[-3000:]}")
    return time.monotonic() - started


def base_block(largest: int, now: datetime) -> tuple[list[tuple], timedelta]:
    """BASE_UPDATES updates ending now, spaced so that the largest size spans SPAN_DAYS."""
    per_update = len(event_rows(completed_update("probe", now, clean_failed=1)))
    spacing = timedelta(days=SPAN_DAYS) / max(1, largest // per_update)
    updates = [completed_update(f"bench-{i}", now - (BASE_UPDATES - i) * spacing, duration=40, rows=150,
                                quarantined=3, rescued=2, clean_failed=i % 3)
               for i in range(BASE_UPDATES)]
    return event_rows(*updates), BASE_UPDATES * spacing


def append_copies(spark, base_view: str, first: int, last: int, span: timedelta) -> None:
    """Appends copies first..last-1 of the base block, copy k shifted back by k spans, with its own
    event and update ids."""
    from pyspark.sql import functions as F

    copies = spark.range(first, last).withColumnRenamed("id", "copy")
    base = spark.table(base_view)
    shifted = base.crossJoin(copies).select(
        F.concat("id", F.lit("-"), F.col("copy").cast("string")).alias("id"),
        "sequence",
        F.col("origin").withField("update_id", F.concat("origin.update_id", F.lit("-"), F.col("copy").cast("string")))
        .alias("origin"),
        (F.col("timestamp") - F.make_dt_interval(secs=F.col("copy") * F.lit(span.total_seconds()))).alias("timestamp"),
        *[c for c in base.columns if c not in ("id", "sequence", "origin", "timestamp")],
    )
    shifted.select(*base.columns).write.mode("append").saveAsTable(EVENT_LOG)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", default="10000,100000,1000000")
    args = parser.parse_args()
    sizes = sorted(int(s) for s in args.sizes.split(","))
    home = Path(tempfile.mkdtemp(prefix="lakewatch-observability-bench-"))
    cli(home, "generate", "--batches", "1", "--rows", "150")
    cli(home, "run", "lakewatch_ingest")
    now = datetime.now(timezone.utc)
    rows, span = base_block(sizes[-1], now)
    local = connect_local(LocalHome(home), load_local_settings(ROOT).spark_conf)  # the engine the CLI started
    spark = local.spark
    spark.createDataFrame(rows, EVENT_LOG_SCHEMA).createOrReplaceTempView("bench_base_events")
    spark.sql("CACHE TABLE bench_base_events")
    results = []
    copies_done = 0
    for size in sizes:
        copies = max(1, round(size / len(rows)))
        append_copies(spark, "bench_base_events", copies_done, copies, span)
        copies_done = copies
        events = spark.table(EVENT_LOG).count()
        after_append = cli(home, "run", "lakewatch_observability")
        nothing_new = cli(home, "run", "lakewatch_observability")
        results.append((events, after_append, nothing_new))
        print(f"{events} events: refresh {after_append:.1f} s, again with nothing new {nothing_new:.1f} s", flush=True)
    local.stop()
    cli(home, "engine", "stop")
    record([
        heading("Observability refresh by event log size"),
        "",
        f"Synthetic completed updates (test builders, {len(rows) // BASE_UPDATES} events each) over up to "
        f"{SPAN_DAYS} days, appended to a state with one real ingest update; warm engine; whole processes.",
        "",
        *table(["events in the log", "refresh after the append", "per 1,000 events", "refresh with nothing new"],
               [(f"{n:,}", f"{a:.1f} s", f"{1000 * a / n:.3f} s", f"{b:.1f} s") for n, a, b in results]),
    ])
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
