"""One classic SparkSession per test run, tuned for tests (local[1], UTC, UI off, 2 shuffle
partitions, Delta). Integration tests run the `lakewatch` CLI in subprocesses (each its own engine)
and read the Delta tables it wrote by path with this session."""

from __future__ import annotations

from pathlib import Path

import pytest

# Modules that share the demo's state folder run on one pytest-xdist worker; every other module is a
# group of its own, so its module-scoped fixtures (a state folder and its engine, crafted tables) are
# set up once (`make test` runs `pytest -n 2 --dist loadgroup`).
DEMO_MODULES = {"test_demo", "test_dashboard_page"}


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "xdist_group(name): tests that must run on one pytest-xdist worker")


# The longest groups are handed out first (pytest-xdist assigns groups in collection order), so the
# two workers finish close together.
LONGEST_FIRST = ["test_trust", "demo", "test_ingest_updates", "test_interruptions", "test_remote", "test_engine"]


def _group(item: pytest.Item) -> str:
    module = item.module.__name__.rsplit(".", 1)[-1]
    return "demo" if module in DEMO_MODULES else module


@pytest.hookimpl(tryfirst=True)  # before pytest-xdist reads the groups from the markers
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        item.add_marker(pytest.mark.xdist_group(_group(item)))
    rank = {g: i for i, g in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(_group(item), len(rank)))


@pytest.fixture(scope="session")
def spark(tmp_path_factory: pytest.TempPathFactory):
    from pipelines.local.session import classic_test_session

    session = classic_test_session(tmp_path_factory.mktemp("spark"))
    yield session
    session.stop()


@pytest.fixture(scope="session")
def project_root() -> Path:
    return Path(__file__).resolve().parents[1]
