"""Bad days for the runner, with real processes on one state folder: a second run while one is in
progress is refused; the first run is then killed with SIGKILL after a micro-batch committed; the next
run takes the stale lock over, closes the killed update as Databricks closes an update whose compute
died, and ingests the rest. Truth: the landing files themselves, counted by the test."""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import re
import signal
import subprocess
import sys
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import pytest

from pipelines.config import load_tables
from pipelines.generator import Mix, generate_batch, load_column_settings
from tests.integration.helpers import PROJECT_ROOT, Cli, LocalTables, cli_env, local_path

pytestmark = pytest.mark.integration

TABLES = ("orders", "customers")
FILES_PER_TABLE = 6
UPDATE_LINE = re.compile(r"^update (?P<id>[0-9a-f-]{36}) of 'lakewatch_ingest': (?P<state>[A-Z]+)", re.M)


@dataclass
class Interrupted:
    tables: LocalTables
    refused: subprocess.CompletedProcess
    killed_pid: int
    killed_output: str
    committed_at_kill: dict[str, int]
    rerun: subprocess.CompletedProcess


def _checkpoint_commits(home: Path, table: str) -> list[int]:
    folder = home / "storage" / "lakewatch_ingest" / "_checkpoints" / "spark_catalog" / "lakewatch" / f"{table}_bronze"
    return [int(p.name) for p in folder.glob(f"{table}_bronze/*/commits/*") if p.name.isdigit()]


def lines_on_disk(path: str) -> list[str]:
    """The file's lines that hold anything (what an ingest must account for), read without Spark."""
    data = Path(path).read_bytes()
    text = (gzip.decompress(data) if path.endswith(".gz") else data).decode("utf-8")
    return [line for line in text.splitlines() if line.strip()]


def landing_files(home: Path, table: str) -> list[str]:
    return sorted(str(p) for p in (home / "landing" / table).rglob("*") if p.is_file() and not p.name.startswith(("_", ".")))


@pytest.fixture(scope="module")
def interrupted(spark, tmp_path_factory) -> Interrupted:
    home = tmp_path_factory.mktemp("interrupted_home")
    cli = Cli(home)
    config = (PROJECT_ROOT / "conf" / "tables.yml").read_text().replace(
        "    format: json\n", "    format: json\n    max_files_per_trigger: 1\n")
    assert config.count("max_files_per_trigger") == len(TABLES)
    tables_file = home / "tables.yml"
    tables_file.write_text(config)
    conf = ("--set", f"lakewatch.tables_config={tables_file}")
    generate_batch(spark, load_tables(tables_file), home / "landing", rows=600, seed=5,
                   mix=Mix(malformed=0.05, type_mismatch=0.05, unknown_field=0.05, case_variant=0.03, empty_file=0.0),
                   files_per_batch=FILES_PER_TABLE, column_settings=load_column_settings(PROJECT_ROOT / "conf" / "generator.yml"))
    cli.run("engine", "start")  # so the run under test spends its time in the update, not in the JVM start

    first = subprocess.Popen([sys.executable, "-m", "pipelines.cli", "run", *conf], cwd=PROJECT_ROOT,
                             env=cli_env(home), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    deadline = time.monotonic() + 300
    while not any(_checkpoint_commits(home, t) for t in TABLES):
        assert first.poll() is None, f"the run ended before a micro-batch committed:\n{first.stdout.read()}"
        assert time.monotonic() < deadline, "no micro-batch committed within 5 minutes"
        time.sleep(0.05)
    refused = cli.run("run", *conf, expect=2)
    assert first.poll() is None, "the first run finished before it could be killed: make the batches slower"
    committed = {t: len(_checkpoint_commits(home, t)) for t in TABLES}
    os.kill(first.pid, signal.SIGKILL)
    first.wait(timeout=60)
    killed_output = first.stdout.read()
    rerun = cli.run("run", *conf)
    cli.run("run", "lakewatch_observability")
    return Interrupted(LocalTables(spark, home), refused, first.pid, killed_output, committed, rerun)


def test_a_second_run_is_refused_with_the_holder_named(interrupted):
    error = interrupted.refused.stderr
    assert "[RUN_IN_PROGRESS]" in error
    assert f"pid {interrupted.killed_pid}" in error and "lakewatch run" in error


def test_the_run_was_killed_mid_update(interrupted):
    assert any(n > 0 for n in interrupted.committed_at_kill.values())
    assert "starting update" in interrupted.killed_output
    assert not UPDATE_LINE.search(interrupted.killed_output), "the killed run must not have finished its update"


def test_the_next_run_takes_the_stale_lock_over_and_closes_the_killed_update(interrupted):
    out = interrupted.rerun.stdout
    assert "took over the run lock" in out and f"pid {interrupted.killed_pid}" in out
    assert "was interrupted" in out
    assert UPDATE_LINE.search(out)["state"] == "COMPLETED"


@pytest.mark.parametrize("table", TABLES)
def test_every_landing_line_is_in_bronze_exactly_once(interrupted, table):
    home = interrupted.tables.home
    expected = Counter({path: len(lines_on_disk(path)) for path in landing_files(home, table)})
    rows = interrupted.tables.table(f"{table}_bronze").groupBy("_source_file").count().collect()
    actual = Counter({local_path(r["_source_file"]): r["count"] for r in rows})
    assert +expected == actual


@pytest.mark.parametrize("table", TABLES)
def test_every_corrupt_line_is_quarantined_exactly_once(interrupted, table):
    home = interrupted.tables.home
    expected: Counter = Counter()
    for path in landing_files(home, table):
        for line in lines_on_disk(path):
            try:
                is_object = isinstance(json.loads(line), dict)
            except ValueError:
                is_object = False
            if not is_object:
                expected[(path, hashlib.sha256(line.encode()).hexdigest())] += 1
    assert expected, "the generated files must hold corrupt lines"
    rows = (interrupted.tables.table("corrupt_records_sink").where(f"source_table = '{table}'")
            .groupBy("_source_file", "_record_hash").count().collect())
    assert Counter({(local_path(r["_source_file"]), r["_record_hash"]): r["count"] for r in rows}) == expected


def test_update_status_shows_the_killed_update_failed_by_the_interruption_then_a_completed_one(interrupted):
    rows = interrupted.tables.table("update_status").where("pipeline_name = 'lakewatch_ingest'").orderBy("start_time").collect()
    assert [r["final_state"] for r in rows] == ["FAILED", "COMPLETED"]
    killed = rows[0]
    assert killed["first_error_class"] == "UPDATE_INTERRUPTED"
    assert "interrupted" in killed["first_error_message"]
    assert killed["end_time"] is not None and killed["duration_seconds"] is not None


@pytest.mark.parametrize("table", TABLES)
def test_rows_written_over_both_updates_equal_bronze(interrupted, table):
    """Every committed micro-batch is counted once: by the killed runner or by the recovery."""
    metrics = interrupted.tables.sql(
        "SELECT sum(CAST(get_json_object(details, '$.flow_progress.metrics.num_output_rows') AS BIGINT)) AS rows, "
        "count(*) AS events, count(DISTINCT origin.batch_id) AS batches "
        "FROM {log} WHERE level = 'METRICS' AND origin.flow_name LIKE '%.{table}_bronze' AND origin.batch_id IS NOT NULL"
        .replace("{table}", table), log="lakewatch_ingest_event_log").collect()[0]
    assert metrics["events"] == metrics["batches"], "a micro-batch was reported twice"
    assert metrics["rows"] == interrupted.tables.table(f"{table}_bronze").count()
