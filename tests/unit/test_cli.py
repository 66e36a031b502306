"""The CLI's answers to bad input: one clear paragraph, exit code 2, before any engine starts."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from pipelines.cli import error_paragraph
from pipelines.errors import LakewatchError


def lakewatch(tmp_path, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "LAKEWATCH_HOME": str(tmp_path / "home")}
    return subprocess.run([sys.executable, "-m", "pipelines.cli", *args], capture_output=True, text=True,
                          env=env, timeout=120)


@pytest.mark.parametrize("args, expected", [
    (("run", "nope"), "[BUNDLE_PIPELINE_NOT_FOUND] The bundle has no pipeline resource 'nope'"),
    (("generate", "--mix", "malformed=2"), "--mix malformed must be between 0 and 1"),
    (("generate", "--table", "invoices"), "no table 'invoices'"),
    (("run", "--set", "novalue"), "--set expects key=value"),
])
def test_bad_input_is_one_paragraph_and_exit_2(tmp_path, args, expected):
    result = lakewatch(tmp_path, *args)
    assert result.returncode == 2
    assert expected in result.stderr
    assert result.stderr.startswith("error: ") and result.stderr.count("\n") == 1
    assert not (tmp_path / "home" / "metastore_db").exists()  # no engine was started


def test_connect_errors_drop_the_jvm_stack_unless_verbose():
    error = RuntimeError("[TABLE_OR_VIEW_NOT_FOUND] no table x.\n\nJVM stacktrace:\norg.apache.Foo\n\tat a.b(C.java:1)")
    assert error_paragraph(error, verbose=False) == "RuntimeError: [TABLE_OR_VIEW_NOT_FOUND] no table x."
    assert "at a.b(C.java:1)" in error_paragraph(error, verbose=True)


def test_a_locked_catalog_is_explained():
    error = RuntimeError("Failed to start database 'metastore_db' ... Another instance of Derby may have already booted the database")
    assert "[METASTORE_LOCKED]" in error_paragraph(error, verbose=False)
    assert error_paragraph(LakewatchError("QUERY_FAILED", {"reason": "x"}), verbose=False) == "[QUERY_FAILED] The query failed: x"
