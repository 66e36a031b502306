"""One classic SparkSession per test run, tuned for tests (local[1], UTC, UI off, 2 shuffle
partitions, Delta). Integration tests run the `lakewatch` CLI in subprocesses (each its own engine)
and read the Delta tables it wrote by path with this session."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

# `make test` runs `pytest -n 2 --dist loadfile`: each module runs whole on one worker, so its
# module-scoped fixtures (a state folder and its engine, crafted tables) are set up once. pytest-xdist
# hands out the files with the most tests first (see the Makefile for why not longest first).


@pytest.fixture(scope="session")
def spark(tmp_path_factory: pytest.TempPathFactory):
    from pipelines.local.session import classic_test_session

    session = classic_test_session(tmp_path_factory.mktemp("spark"))
    yield session
    session.stop()


@pytest.fixture(scope="session")
def project_root() -> Path:
    return Path(__file__).resolve().parents[1]


@pytest.fixture(autouse=True)
def _classic_functions_only(request: pytest.FixtureRequest):
    """Fails the test that opens a Spark Connect session in this process: that switches pyspark's
    functions to Connect columns for every later test on the worker, whose classic session then
    fails far from the cause. Connect clients belong in subprocesses (the CLI, or `python -c`)."""
    yield
    if os.environ.get("SPARK_CONNECT_MODE_ENABLED"):
        os.environ.pop("SPARK_CONNECT_MODE_ENABLED")
        pytest.fail(f"{request.node.nodeid} opened a Spark Connect session in the test process; "
                    "run Connect clients in a subprocess")
