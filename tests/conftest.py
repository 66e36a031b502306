"""One classic SparkSession per test run, tuned for tests (local[1], UTC, UI off, 2 shuffle
partitions, Delta). Integration tests run the `lakewatch` CLI in subprocesses (each its own engine)
and read the Delta tables it wrote by path with this session."""

from __future__ import annotations

from pathlib import Path

import pytest

# `make test` runs `pytest -n 2 --dist loadfile --no-loadscope-reorder`: each module runs whole on one
# worker, so its module-scoped fixtures (a state folder and its engine, crafted tables) are set up once.
# Modules are handed out in collection order (without the flag pytest-xdist 3.8 hands out the files
# with the most tests first), so the longest go first and the two workers finish close together.
LONGEST_FIRST = ["test_trust", "test_demo", "test_ingest_updates", "test_interruptions", "test_remote", "test_formats", "test_engine"]


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    rank = {name: i for i, name in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.module.__name__.rsplit(".", 1)[-1], len(rank)))


@pytest.fixture(scope="session")
def spark(tmp_path_factory: pytest.TempPathFactory):
    from pipelines.local.session import classic_test_session

    session = classic_test_session(tmp_path_factory.mktemp("spark"))
    yield session
    session.stop()


@pytest.fixture(scope="session")
def project_root() -> Path:
    return Path(__file__).resolve().parents[1]
