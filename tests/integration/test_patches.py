"""The local engine without any of lakewatch's patches (pipelines/local/patches.py): it starts on Spark's,
SDP's, Delta's and Hadoop's classes as shipped, runs a real ingest update, and says what it left out.

With every patch (the default) every other integration test runs; this is the other path. Oracles: the
kernel's view of the engine's JVM (its command line: class path and settings), the update's own exit
code and tables, and what the engine and `lakewatch engine status` say."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pipelines.local import engine, patches
from pipelines.local.processes import child_pids
from pipelines.local.home import LocalHome
from tests.integration.helpers import Cli

pytestmark = pytest.mark.integration


def jvm_command_line(home: Path) -> str:
    """The command line of the engine's JVM (the engine process's child running java)."""
    info = engine.read_info(LocalHome(home))
    assert info is not None, f"no engine recorded for {home}"
    for pid in child_pids(info.pid):
        command = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
        if "java" in command.split(" ", 1)[0]:
            return command
    raise AssertionError(f"the engine (pid {info.pid}) has no JVM child")


def test_an_update_runs_on_the_engine_with_every_patch_off(tmp_path):
    cli = Cli(tmp_path / "home")
    off = {patches.OFF_ENV: patches.ALL}
    started = cli.run("engine", "start", env=off)
    said = started.stdout + started.stderr
    assert f"lakewatch's engine patches: 0 of {len(patches.NAMES)} active; inactive: " in said
    assert f"view_refresh (turned off by {patches.OFF_ENV})" in said
    cli.run("generate", "--rows", "20", "--files-per-batch", "1", env=off)
    cli.run("run", env=off)

    command = jvm_command_line(cli.home)
    assert "/.cache/java/" not in command  # no jar of lakewatch's: Spark's, SDP's, Hadoop's classes as shipped
    assert "NoShell" not in command and "spark.sql.catalog.spark_catalog=org.apache.spark.sql.delta.catalog.DeltaCatalog" in command

    bronze = json.loads(cli.run("query", "--json", "SHOW TABLES IN lakewatch LIKE '*_bronze'", env=off).stdout)
    assert bronze, "the update created no bronze table"
    for row in bronze:
        [count] = json.loads(cli.run("query", "--json", f"SELECT count(*) AS n FROM lakewatch.{row['tableName']}", env=off).stdout)
        assert count["n"] > 0, row

    status = cli.run("engine", "status", env=off).stdout
    for name in patches.NAMES:
        assert f"{name} (inactive, turned off by {patches.OFF_ENV})" in status
