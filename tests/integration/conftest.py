"""Shared integration fixtures: one user's project with their own tables and then `lakewatch demo` in
it, per test session, reused by the modules that check the user's steps and what the demo leaves
behind (tables, observability, alerts, the dashboard page)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.integration.helpers import Cli, stop_engines
from tests.integration.own_project import run_user_steps


@pytest.fixture(scope="session", autouse=True)
def resident_engines():
    """Stops the resident engine of every state folder the tests used, when the session ends."""
    yield
    stop_engines()


@pytest.fixture(scope="session")
def own_data(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """A copied project after a user's own steps (add-table, the job, drift, an update, a full refresh)
    and then `lakewatch demo` in it: four ingest updates of every configured table (one failed on
    purpose) and the job's observability refresh. Run once per worker; tests/conftest.py keeps its two
    modules (test_own_data, test_demo) on one worker."""
    return run_user_steps(tmp_path_factory.mktemp("own_data"))


@pytest.fixture(scope="session")
def demo_home(own_data: dict[str, Any]) -> Path:
    """The demo's state folder, in the project of `own_data`."""
    return own_data["demo_home"]


@pytest.fixture(scope="session")
def demo_cli(own_data: dict[str, Any]) -> Cli:
    """The CLI on the demo's state folder, run in the demo's project (its conf/tables.yml)."""
    return Cli(own_data["demo_home"], project=own_data["project"].root)
