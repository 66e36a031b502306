"""The class data sharing archive: used when there is one, never a reason for a JVM not to start."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from pipelines.local import cds
from pipelines.local.processes import child_pids


def test_the_option_names_the_archive_only_when_it_exists(tmp_path, monkeypatch):
    monkeypatch.delenv(cds.DUMP_ENV, raising=False)
    archive = tmp_path / "engine.jsa"
    assert cds.java_options(archive) == ""
    archive.write_bytes(b"x")
    assert cds.java_options(archive) == f"-XX:SharedArchiveFile={archive}"
    monkeypatch.setenv(cds.DUMP_ENV, str(tmp_path / "new.jsa"))
    assert cds.java_options(archive) == f"-XX:ArchiveClassesAtExit={tmp_path / 'new.jsa'}"


def test_a_jvm_given_an_archive_that_is_not_one_still_starts(tmp_path):
    """What the option relies on: the JVM checks the archive and, when it does not match, runs
    without it (a stale archive after a JDK or pyspark upgrade)."""
    java = shutil.which("java")
    assert java, "Spark needs java on PATH"
    garbage = tmp_path / "engine.jsa"
    garbage.write_bytes(b"not a class data sharing archive" * 100)
    result = subprocess.run([java, f"-XX:SharedArchiveFile={garbage}", "-version"], capture_output=True, text=True,
                            timeout=60)
    assert result.returncode == 0, result.stderr


def test_the_test_sessions_jvm_maps_the_archive_when_setup_recorded_one(spark):
    """Oracle: the kernel's memory map of the JVM this test run's Spark session runs in."""
    pid = spark.sparkContext._gateway.proc.pid  # spark-submit's process: the JVM, or its parent
    maps = "".join(Path(f"/proc/{p}/maps").read_text() for p in [pid, *child_pids(pid)])
    archive = cds.default_archive()
    if not archive.is_file():
        pytest.fail(f"make setup recorded no archive at {archive} (python -m pipelines.local.cds_record says why)")
    assert str(archive.resolve()) in maps  # the kernel names the file itself, its links resolved
