"""The resident local engine with real processes: commands share one engine per state folder, two
state folders get two engines, a killed engine is detected and replaced, an idle one stops itself."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time

import pytest

from pipelines.local import engine
from pipelines.local.home import LocalHome
from pipelines.local.processes import pid_alive
from tests.integration.helpers import PROJECT_ROOT, Cli, cli_env, closed_as_failed, project_tables

pytestmark = pytest.mark.integration


def info(home) -> engine.EngineInfo:
    found = engine.read_info(LocalHome(home))
    assert found is not None, f"no engine recorded for {home}"
    return found


def test_commands_share_one_engine_and_a_killed_one_is_replaced(tmp_path):
    cli = Cli(tmp_path / "home")
    assert json.loads(cli.run("query", "--json", "SELECT 1 AS x").stdout) == [{"x": 1}]
    first = info(cli.home)
    assert json.loads(cli.run("query", "--json", "SELECT 2 AS x").stdout) == [{"x": 2}]
    assert info(cli.home).pid == first.pid  # the second command connected to the running engine
    assert "running" in cli.run("engine", "status").stdout

    # A mistyped table: one paragraph naming the error class; pyspark's own ERROR log line (JSON,
    # with the JVM stack) is not printed before it.
    typo = cli.run("query", "SELECT * FROM no_such_table", expect=2)
    assert typo.stdout == ""
    [line] = [line for line in typo.stderr.splitlines() if line.strip()]
    assert line.startswith("error: ") and "[TABLE_OR_VIEW_NOT_FOUND]" in line and "no_such_table" in line

    # A value that is not UTF-8 (a quarantined line's raw bytes): shown with U+FFFD, as Python decodes
    # the same bytes with errors='replace', in both output forms, not a UnicodeDecodeError.
    raw = b'{"order_id": 1, "status": "ok\xff\xfe"}'
    shown = raw.decode("utf-8", errors="replace")
    rows = json.loads(cli.run("query", "--json", f"SELECT CAST(unhex('{raw.hex()}') AS STRING) AS line").stdout)
    assert rows == [{"line": shown}]
    assert shown in cli.run("query", "--no-truncate", f"SELECT CAST(unhex('{raw.hex()}') AS STRING) AS line").stdout
    assert re.search(r"\|\s*a\s*\|\s*b\s*\|", cli.run("query", "SELECT 'a' AS x, 'b' AS x").stdout)  # a name twice

    os.kill(first.pid, signal.SIGKILL)  # the engine crashes (out of memory, killed)
    result = cli.run("query", "--json", "SELECT 3 AS x")
    assert json.loads(result.stdout) == [{"x": 3}]
    assert "gone (crashed or killed)" in result.stderr
    assert info(cli.home).pid != first.pid

    stopped = cli.run("engine", "stop").stdout
    assert "stopped the local engine" in stopped
    assert engine.read_info(LocalHome(cli.home)) is None
    assert "no local engine runs" in cli.run("engine", "status").stdout


def test_two_state_folders_get_two_engines_and_an_idle_engine_stops_itself(tmp_path):
    a, b = Cli(tmp_path / "a"), Cli(tmp_path / "b")
    b.run("query", "SELECT 1")
    a.run("engine", "start", "--idle-seconds", "15")
    assert info(a.home).pid != info(b.home).pid and info(a.home).port != info(b.home).port
    pid = info(a.home).pid
    deadline = time.monotonic() + 120
    while pid_alive(pid):
        assert time.monotonic() < deadline, "the idle engine did not stop by itself"
        time.sleep(0.5)
    assert engine.read_info(LocalHome(a.home)) is None
    assert engine.running(LocalHome(b.home)) is not None


def test_a_run_whose_engine_dies_fails_at_once_and_the_next_run_closes_its_update(tmp_path):
    cli = Cli(tmp_path / "home")
    cli.home.mkdir()
    _, conf = project_tables(cli.home, ("orders",))
    landing = cli.home / "landing" / "orders"
    landing.mkdir(parents=True)
    (landing / "o.json").write_text(json.dumps({"order_id": 1, "amount": 2.5}) + "\n")
    cli.run("engine", "start")
    jvm = subprocess.run(["pgrep", "-P", str(info(cli.home).pid), "java"], capture_output=True, text=True).stdout.split()
    assert len(jvm) == 1, jvm
    with subprocess.Popen([sys.executable, "-m", "pipelines.cli", "run", *conf], cwd=PROJECT_ROOT,
                          env=cli_env(cli.home), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) as run:
        for line in run.stderr:  # type: ignore[union-attr]  (the update's progress)
            if "RUNNING" in line:
                break
        os.kill(int(jvm[0]), signal.SIGKILL)  # the engine's JVM dies mid-update (killed, out of memory)
        # Spark Connect's own retry policy would wait at least 10 minutes for the server to come back.
        _, err = run.communicate(timeout=180)
    assert run.returncode == 2
    assert "[ENGINE_STOPPED]" in err and "its JVM exited (code -9" in err

    after = cli.run("run", *conf)  # a new engine; the interrupted update is closed first
    update = re.search(r"update (\S+) of 'lakewatch_ingest' was interrupted: its local engine \(pid \d+\) stopped: "
                       r"its JVM exited \(code -9", after.stderr)
    assert update is not None, after.stdout + after.stderr
    failed = closed_as_failed(cli, update[1])  # the event log says why, too
    assert "[UPDATE_INTERRUPTED] The update was interrupted: its local engine (pid" in failed and "code -9" in failed
