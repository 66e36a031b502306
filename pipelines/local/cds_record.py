"""Records the local engine's class data sharing archive (see `cds`), as `make setup` does.

`python -m pipelines.local.cds_record [--archive PATH]`.

It starts a real engine on a throwaway state folder with `-XX:ArchiveClassesAtExit`, runs a small Delta
workload through Spark Connect, and stops it; the JVM writes the classes it loaded when it exits.
Should recording fail, setup goes on and every JVM starts as it does without an archive.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

from pipelines.local import engine
from pipelines.local.cds import DUMP_ENV, default_archive
from pipelines.local.home import LocalHome
from pipelines.local.processes import child_pids

EXIT_TIMEOUT_SECONDS = 180.0


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
    from pipelines.progress import step

    try:
        with step("setup: recording the class data sharing archive (starts a throwaway engine)"):
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
