"""The test tiers and what they share.

- `tests/unit/`: no JVM (`make test-fast`): parsing, configuration, the bundle, the CLI's parser, the
  docs, the import contracts, the update's bookkeeping as plain functions.
- `tests/sql/`: one classic SparkSession per worker, tuned for tests (local[1], UTC, UI off, 2 shuffle
  partitions, Delta): transformations, the rescue against Spark's own readers, the observability SQL
  over crafted event logs, small real streams.
- `tests/integration/`: real pipeline updates through the `lakewatch` CLI in subprocesses (each state
  folder its own engine), whose Delta tables the session above reads by path.

Each test is marked with its tier from its folder (`pytest -m unit`, `-m "not integration"`)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

# `make test` runs `pytest -n 2 --dist loadfile`: each module runs whole on one worker, so its
# module-scoped fixtures (a state folder and its engine, crafted tables) are set up once; the modules of
# a SHARED_FIXTURE_GROUPS group run together. pytest-xdist hands out the files with the most tests first
# (see the Makefile for why not longest first).


TESTS = Path(__file__).resolve().parent
TIERS = ("unit", "sql", "integration")
# Modules that share a session fixture too costly to build twice run on one pytest-xdist worker (a
# session fixture is built once per worker): test module -> its group.
SHARED_FIXTURE_GROUPS = {
    "tests/integration/test_own_data.py": "own_data and the demo",  # the own_data fixture
    "tests/integration/test_demo.py": "own_data and the demo",
}


def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """With `--dist loadfile`: whole modules per worker as usual, but the modules of one group of
    SHARED_FIXTURE_GROUPS together."""
    if config.getoption("dist", None) != "loadfile":
        return None
    from xdist.scheduler import LoadFileScheduling

    class SharedFixtureScheduling(LoadFileScheduling):
        def _split_scope(self, nodeid: str) -> str:
            module = nodeid.split("::", 1)[0]
            return SHARED_FIXTURE_GROUPS.get(module, module)

    return SharedFixtureScheduling(config, log)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Marks every test with its tier, the folder it lives in."""
    for item in items:
        parts = Path(str(item.path)).resolve().relative_to(TESTS).parts
        if parts and parts[0] in TIERS:
            item.add_marker(getattr(pytest.mark, parts[0]))
        if parts and parts[0] == "unit" and "spark" in getattr(item, "fixturenames", ()):
            raise pytest.UsageError(f"{item.nodeid} asks for the Spark session: tests/unit runs without a "
                                    "JVM; move the test to tests/sql")


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
