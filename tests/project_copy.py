"""A copy of the project's bundle that the CLI's `main` runs on in-process, the engine never started:
for tests of what the command line refuses or writes before any Spark session exists."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

BUNDLE_FILES = ("databricks.yml", "lakewatch.local.yml")


def engineless_project(tmp_path: Path, project_root: Path, monkeypatch: pytest.MonkeyPatch,
                       folders: tuple[str, ...]) -> tuple[Path, list[Any]]:
    """Copies the bundle files and `folders` into `tmp_path/project`, makes every LocalProject that
    `main` creates use that root (kept in the returned list, so a test can check none started an
    engine), and fails the test should anything connect to an engine."""
    from pipelines.local import project as project_module

    root = tmp_path / "project"
    root.mkdir()
    for name in BUNDLE_FILES:
        shutil.copy(project_root / name, root / name)
    for name in folders:
        shutil.copytree(project_root / name, root / name, ignore=shutil.ignore_patterns("__pycache__"))
    created: list[Any] = []

    class Project(project_module.LocalProject):
        def __init__(self, **kwargs: Any) -> None:
            super().__init__(root=root, **kwargs)
            created.append(self)

    def no_engine(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("the engine was started")

    monkeypatch.setattr(project_module, "LocalProject", Project)
    monkeypatch.setattr("pipelines.local.connection.connect_local", no_engine)
    monkeypatch.setattr("pipelines.local.connection.connect_remote", no_engine)
    monkeypatch.delenv("LAKEWATCH_HOME", raising=False)
    return root, created
