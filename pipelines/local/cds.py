"""A class data sharing archive for the local engine's JVM: its classes, parsed and verified once.

Every JVM that runs Spark (the resident engine, the tests' classic session) loads and verifies some
tens of thousands of classes from Spark's, Hive's, Hadoop's and Delta's jars before its first query.
Java's class data sharing (CDS) keeps them, already parsed and verified, in a memory-mapped archive:
`make setup` records one (`python -m pipelines.local.cds`) by starting a real engine on a throwaway
state folder with `-XX:ArchiveClassesAtExit`, running a small Delta workload through Spark Connect,
and stopping it; the JVM writes the classes it loaded when it exits. Later JVMs start with
`-XX:SharedArchiveFile`. Measured on the 2-core machine (bench/RESULTS.md): about half the engine
start's CPU.

The JVM checks the archive against itself (same JDK, same class path) and, when they differ, says
so on its output and starts without it: an archive can make a start faster, never make it fail.
Should recording fail, setup goes on and every JVM starts as it did without one.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

DUMP_ENV = "LAKEWATCH_CDS_DUMP"  # set while recording: the path the engine's JVM writes at exit
EXIT_TIMEOUT_SECONDS = 180.0


def default_archive() -> Path:
    """`.cache/cds/engine.jsa` under the project root (git-ignored, like Delta's jars)."""
    return Path(__file__).resolve().parents[2] / ".cache" / "cds" / "engine.jsa"


def java_options(archive: Path | None = None) -> str:
    """The JVM option that uses the archive (or, while recording, writes it); empty without one."""
    dump = os.environ.get(DUMP_ENV)
    if dump:
        return f"-XX:ArchiveClassesAtExit={dump}"
    path = archive or default_archive()
    return f"-XX:SharedArchiveFile={path}" if path.is_file() else ""


# A small workload through Spark Connect that loads what every update needs: the catalog (Hive on
# Derby), Delta's writer, reader and log, JSON reading with `_metadata`, aggregation and a join.
WORKLOAD = (
    "CREATE SCHEMA IF NOT EXISTS cds",
    "CREATE TABLE cds.t (id BIGINT, name STRING, at TIMESTAMP) USING delta",
    "INSERT INTO cds.t SELECT id, CAST(id AS STRING), current_timestamp() FROM range(100)",
    "SELECT name, count(*) FROM cds.t GROUP BY name ORDER BY 2 DESC LIMIT 5",
    "SELECT a.id FROM cds.t a JOIN cds.t b ON a.id = b.id WHERE a.id < 3",
    "DESCRIBE HISTORY cds.t",
)


def child_pids(pid: int) -> list[int]:
    """Pids of the processes whose parent is `pid` (the engine's JVM is its Python process's child)."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            found.append(int(stat.parent.name))
    return found


def _wait_gone(pids: list[int], timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not any(Path(f"/proc/{p}").exists() for p in pids):
            return True
        time.sleep(0.2)
    return False


def record(archive: Path) -> None:
    """Starts an engine on a throwaway state folder with the dump option, runs WORKLOAD, stops it,
    waits for its JVM to exit and moves the archive into place."""
    from pipelines.local import engine
    from pipelines.local.home import LocalHome

    archive.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="lakewatch-cds-") as tmp:
        home = LocalHome(Path(tmp) / "home")
        partial = Path(tmp) / "engine.jsa"
        os.environ[DUMP_ENV] = str(partial)
        try:
            home.create()
            info = engine.ensure_running(home, {})
            spark = engine.connect(info.url)
            landing = Path(tmp) / "in.json"
            landing.write_text('{"a": 1, "b": "x"}\n{"a": 2\n')
            for statement in WORKLOAD:
                spark.sql(statement).collect()
            spark.read.json(str(landing)).select("*", "_metadata.file_path").collect()
            spark.stop()
            jvms = child_pids(info.pid)
            engine.stop(home)
            if not _wait_gone(jvms, EXIT_TIMEOUT_SECONDS):
                raise TimeoutError(f"the engine's JVM did not exit within {EXIT_TIMEOUT_SECONDS:.0f}s")
        finally:
            os.environ.pop(DUMP_ENV, None)
            engine.stop(home)
        if not partial.is_file() or partial.stat().st_size == 0:
            raise RuntimeError(f"the JVM wrote no archive (its output: {engine.engine_dir(home) / 'engine.out'})")
        shutil.move(str(partial), archive)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--archive", type=Path, default=default_archive())
    args = parser.parse_args(argv)
    started = time.monotonic()
    args.archive.unlink(missing_ok=True)
    try:
        record(args.archive)
    except Exception as e:  # noqa: BLE001 (an optimisation: setup goes on without it)
        print(f"no class data sharing archive ({type(e).__name__}: {e}); the engine starts without one",
              file=sys.stderr)
        return 0
    size = args.archive.stat().st_size / 1e6
    print(f"class data sharing archive: {args.archive} ({size:.0f} MB, {time.monotonic() - started:.0f}s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
