"""Run the `lakewatch` CLI against a throwaway local home, and read what it wrote by path."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import subprocess
import sys
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

PROJECT_ROOT = Path(__file__).resolve().parents[2]
SCHEMA_DIR = "lakewatch.db"


# Every state folder a test ran the CLI on: its resident engine is stopped when the session ends.
HOMES_USED: set[Path] = set()
# A safety net: an engine a crashed test session leaves behind stops by itself after this.
TEST_ENGINE_IDLE_SECONDS = "300"


def cli_env(home: Path) -> dict[str, str]:
    HOMES_USED.add(home)
    return {**os.environ, "LAKEWATCH_HOME": str(home), "PYSPARK_PYTHON": sys.executable,
            "LAKEWATCH_ENGINE_IDLE_SECONDS": TEST_ENGINE_IDLE_SECONDS}


def stop_engines() -> None:
    from pipelines.local import engine
    from pipelines.local.home import LocalHome

    for home in sorted(HOMES_USED):
        engine.stop(LocalHome(home))


def forget_refreshes(home: Path) -> None:
    """Removes what the local runner recorded of each view's last refresh (`state/refreshes/`), so that
    the next refresh recomputes every view rather than planning unchanged ones NO_OP: for a test that
    needs a refresh with work under way (to stop it, or to make its views fail)."""
    for path in (home / "state" / "refreshes").glob("*.json"):
        path.unlink()


@dataclass
class Cli:
    home: Path
    project: Path = PROJECT_ROOT  # the project the command runs in (its conf/tables.yml, its code)

    def run(self, *args: str, expect: int | None = 0, timeout: int = 600,
            env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
        env = {**cli_env(self.home), **({"PYTHONPATH": str(self.project)} if self.project != PROJECT_ROOT else {}),
               **(env or {})}
        command = [sys.executable, "-m", "pipelines.cli", *args]
        with subprocess.Popen(command, cwd=self.project, env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) as process:
            try:
                stdout, stderr = process.communicate(timeout=timeout)
            except subprocess.TimeoutExpired:
                raise AssertionError(hang_report(self.home, process, args, timeout)) from None
        result = subprocess.CompletedProcess(command, process.returncode, stdout, stderr)
        if expect is not None and result.returncode != expect:
            raise AssertionError(
                f"lakewatch {' '.join(args)} exited {result.returncode}, expected {expect}\n"
                f"--- stdout\n{result.stdout[-4000:]}\n--- stderr\n{result.stderr[-4000:]}"
            )
        return result


def closed_as_failed(cli: Cli, update_id: str, *options: str) -> str:
    """The error message of the update's FAILED `update_progress` event, read back with the CLI's query
    (`options` such as `--remote URL` go before it); fails if the update also says COMPLETED."""
    progress = json.loads(cli.run(*options, "query", "--json", (
        "SELECT get_json_object(details, '$.update_progress.state') AS state, error.exceptions[0].message AS message "
        f"FROM lakewatch.lakewatch_ingest_event_log WHERE origin.update_id = '{update_id}' "
        "AND event_type = 'update_progress'")).stdout)
    states = {r["state"] for r in progress}
    assert "FAILED" in states and "COMPLETED" not in states, states
    [failed] = [r["message"] for r in progress if r["state"] == "FAILED"]
    return failed


def hang_report(home: Path, process: subprocess.Popen, args: tuple[str, ...], timeout: int) -> str:
    """What a CLI run that did not end in time was doing: its Python threads (the CLI prints them on
    SIGUSR1), the engine's JVM threads (jstack, saved whole in the home) and the engine log's tail.
    The process is killed after."""
    import signal
    import time

    from pipelines.local import engine
    from pipelines.local.home import LocalHome

    with contextlib.suppress(OSError):
        process.send_signal(signal.SIGUSR1)
    time.sleep(2)
    info = engine.read_info(LocalHome(home))
    threads = ""
    if info is not None:  # its pid is the Python process that serves; the JVM is its child
        try:
            jvms = subprocess.run(["pgrep", "-P", str(info.pid), "java"], capture_output=True, text=True).stdout.split()
            threads = "".join(subprocess.run(["jstack", pid], capture_output=True, text=True, timeout=60).stdout
                              for pid in jvms) or f"no JVM found under pid {info.pid}"
        except (OSError, subprocess.SubprocessError) as e:
            threads = f"jstack failed: {e}"
        (home / "hang-jstack.txt").write_text(threads)
    process.kill()
    stdout, stderr = process.communicate()
    log = Path(info.log_file) if info is not None else None
    log_tail = log.read_text(errors="replace").splitlines()[-40:] if log is not None and log.is_file() else []
    # The JVM threads that run pipelines, flows and Connect requests; the rest are Spark's idle pools.
    busy = [t for t in threads.split("\n\n") if any(k in t for k in (
        "pipelines", "Topological", "SparkConnectExecute", "stream execution", "MicroBatch"))]
    return "\n".join([
        f"lakewatch {' '.join(args)} did not end in {timeout}s; killed. Home: {home}",
        f"--- stdout (tail)\n{(stdout or '')[-3000:]}",
        f"--- stderr (tail; the Python threads)\n{(stderr or '')[-6000:]}",
        f"--- engine log {log} (tail)\n" + "\n".join(log_tail)[-6000:],
        "--- engine JVM threads that run pipelines and requests (all: hang-jstack.txt in the home)\n"
        + "\n\n".join(busy)[-8000:],
    ])


@dataclass
class LocalTables:
    """The local engine's Delta tables, read by path with the tests' own session."""

    spark: Any
    home: Path

    def path(self, name: str) -> str:
        if name == "corrupt_records_sink":
            return str(self.home / "sinks" / "lakewatch_ingest" / name)
        return str(self.home / "warehouse" / SCHEMA_DIR / name)

    def table(self, name: str):
        return self.spark.read.format("delta").load(self.path(name))

    def sql(self, query: str, **tables: str):
        """`query` with {name} placeholders replaced by delta.`<path>` of each named table."""
        return self.spark.sql(query.format(**{k: f"delta.`{self.path(v)}`" for k, v in tables.items()}))

    def manifest(self) -> dict:
        return json.loads((self.home / "landing" / "_manifest.json").read_text())


def local_path(uri: str) -> str:
    return uri.replace("file://", "").replace("file:", "")


def project_tables(home: Path, only: tuple[str, ...], edit: Any = None) -> tuple[Path, tuple[str, str]]:
    """A copy of the project's conf/tables.yml in `home` with only the tables named `only` (in the
    file's text, so comments stay), passed through `edit`; and the `--set` arguments that use it."""
    head, *entries = (PROJECT_ROOT / "conf" / "tables.yml").read_text().split("\n  - name: ")
    kept = [e for e in entries if e.split("\n", 1)[0].strip() in only]
    assert len(kept) == len(only), only
    text = "\n  - name: ".join([head, *kept]).rstrip() + "\n"
    path = home / "tables.yml"
    path.write_text(edit(text) if edit else text)
    return path, ("--set", f"lakewatch.tables_config={path}")


def malformed_csv_lines(text: str) -> list[str]:
    """Lines of a CSV file (with a header, the generator's quoting) whose field count differs from the
    header's, by Python's csv module."""
    import csv

    lines = [line for line in text.splitlines() if line.strip()]
    if not lines:
        return []
    width = len(next(csv.reader([lines[0]], escapechar="\\", doublequote=False)))
    return [line for line in lines[1:] if len(next(csv.reader([line], escapechar="\\", doublequote=False))) != width]


def corrupt_lines_on_disk(manifest: dict, table: str, batches: set[int] | None = None) -> Counter:
    """(file, sha256) of every landing record that is malformed, read straight from disk: a JSON line
    that is not a JSON object; a CSV line whose field count is not its header's."""
    import gzip

    found: Counter = Counter()
    for f in manifest["files"]:
        if f["table"] != table or not f["complete"] or (batches is not None and f["batch"] not in batches):
            continue
        data = Path(f["path"]).read_bytes()
        text = gzip.decompress(data).decode() if f["path"].endswith(".gz") else data.decode()
        if f["path"].removesuffix(".gz").endswith(".csv"):
            for line in malformed_csv_lines(text):
                found[(f["path"], hashlib.sha256(line.encode()).hexdigest())] += 1
            continue
        for line in text.splitlines():
            if not line.strip():
                continue
            try:
                is_object = isinstance(json.loads(line), dict)
            except json.JSONDecodeError:
                is_object = False
            if not is_object:
                found[(f["path"], hashlib.sha256(line.encode()).hexdigest())] += 1
    return found
