"""Shared integration fixtures: one `lakewatch demo` run per test session, reused by every module that
checks what the demo leaves behind (tables, observability, alerts, the dashboard page)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.integration.helpers import Cli, stop_engines

DEMO_TIMEOUT_SECONDS = 1200  # the demo takes about 4 minutes on 2 cores


@pytest.fixture(scope="session", autouse=True)
def resident_engines():
    """Stops the resident engine of every state folder the tests used, when the session ends."""
    yield
    stop_engines()


@pytest.fixture(scope="session")
def demo_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A local home after `lakewatch demo`: four ingest updates (one failed on purpose) and the
    observability tables refreshed. Runs the demo once; fails with its output if it exits non-zero."""
    home = tmp_path_factory.mktemp("demo_home")
    Cli(home).run("demo", "--rows", "150", timeout=DEMO_TIMEOUT_SECONDS)
    return home
