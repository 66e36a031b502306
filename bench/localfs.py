"""Hadoop's local file system against lakewatch's (pipelines/local/localfs.py): the same Delta work in
one classic Spark session per run, alternating, each run a fresh JVM: Delta appends of one row, then
a stream of the table into another Delta table with a checkpoint, one micro-batch per append. Reports
wall time, the JVM's CPU including the processes it started (`/proc/<pid>/stat` fields 14-17), and
the processes the JVM started (Java Flight Recorder's `jdk.ProcessStart`). Appends a block to
bench/RESULTS.md.

    .venv/bin/python bench/localfs.py [--commits 40] [--runs 3]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.record import heading, record, table  # noqa: E402

HADOOP = {  # Hadoop's own classes (its defaults), on the same class path
    "spark.hadoop.fs.file.impl": "org.apache.hadoop.fs.LocalFileSystem",
    "spark.hadoop.fs.AbstractFileSystem.file.impl": "org.apache.hadoop.fs.local.LocalFs",
}
VARIANTS = ("hadoop", "lakewatch")


def jvm_cpu_seconds(pid: int) -> float:
    """utime + stime + cutime + cstime of a process, in seconds (children count once reaped)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return sum(int(v) for v in fields[11:15]) / os.sysconf("SC_CLK_TCK")


def child(variant: str, commits: int, out: Path) -> None:
    from pyspark.sql import SparkSession

    from pipelines.local import localfs
    from pipelines.local.processes import child_pids
    from pipelines.local.session import SMALL_DATA_TUNING, base_conf

    if localfs.current_jar() is None:
        raise SystemExit("no current lakewatch-localfs.jar: run make setup")
    with tempfile.TemporaryDirectory(prefix="lakewatch-bench-localfs-") as tmp:
        conf = {**base_conf(), "spark.master": "local[1]", "spark.sql.warehouse.dir": f"{tmp}/warehouse",
                **SMALL_DATA_TUNING, **(HADOOP if variant == "hadoop" else {})}
        builder = SparkSession.builder.appName(f"bench-localfs-{variant}")
        for key, value in conf.items():
            builder = builder.config(key, value)
        spark = builder.getOrCreate()
        pid = spark.sparkContext._gateway.proc.pid
        jvm_pid = next((p for p in [pid, *child_pids(pid)] if "java" in Path(f"/proc/{p}/cmdline").read_text()), pid)
        source, target = f"{tmp}/source", f"{tmp}/target"
        spark.range(1).write.format("delta").save(source)  # warm-up: classes loaded, not timed
        jvm = spark._jvm
        recording = jvm.jdk.jfr.Recording()
        recording.enable("jdk.ProcessStart")
        recording.start()
        cpu, wall = jvm_cpu_seconds(jvm_pid), time.perf_counter()
        for i in range(commits):
            spark.range(i, i + 1).write.format("delta").mode("append").save(source)
        query = (spark.readStream.format("delta").option("maxFilesPerTrigger", 1).load(source).writeStream
                 .format("delta").option("checkpointLocation", f"{tmp}/checkpoint").trigger(availableNow=True)
                 .start(target))
        query.awaitTermination()
        wall, cpu = time.perf_counter() - wall, jvm_cpu_seconds(jvm_pid) - cpu
        recording.stop()
        dump = jvm.java.io.File(f"{tmp}/processes.jfr").toPath()
        recording.dump(dump)
        started = Counter(Path(e.getString("command").split(" ", 1)[0]).name
                          for e in jvm.jdk.jfr.consumer.RecordingFile.readAllEvents(dump))
        rows = spark.read.format("delta").load(target).count()
        spark.stop()
    out.write_text(json.dumps({"wall": wall, "cpu": cpu, "processes": dict(started), "rows": rows}))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--commits", type=int, default=40)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--child", choices=VARIANTS)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    if args.child:
        child(args.child, args.commits, args.out)
        return
    results: list[tuple] = []
    for run in range(args.runs):
        for variant in VARIANTS:
            with tempfile.NamedTemporaryFile(suffix=".json") as out:
                subprocess.run([sys.executable, __file__, "--child", variant, "--commits", str(args.commits),
                                "--out", out.name], check=True, cwd=ROOT)
                r = json.loads(Path(out.name).read_text())
            processes = ", ".join(f"{c} {n}" for c, n in sorted(r["processes"].items())) or "none"
            results.append((run + 1, variant, f"{r['wall']:.2f} s", f"{r['cpu']:.2f} s", processes, r["rows"]))
            print(results[-1], flush=True)
    record([heading("Local file system: Hadoop's against lakewatch's"), "",
            f"{args.commits} Delta appends of one row, then a stream of them into another Delta table "
            f"(one file per micro-batch, checkpointed), one classic session (local[1]) per run, runs alternating.",
            "", *table(["run", "file system", "wall", "JVM CPU with its children", "processes started", "rows streamed"],
                       results)])


if __name__ == "__main__":
    main()
