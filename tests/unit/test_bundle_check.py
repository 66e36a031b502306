"""Offline bundle checks: the project's bundle passes; broken copies fail with clear messages."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from pipelines.bundle_check import check_bundle
from pipelines.local.job import _should_run

BUNDLE_PARTS = ("databricks.yml", "resources", "transformations", "conf", "dashboards", "pipelines")


@pytest.fixture
def copy(project_root: Path, tmp_path: Path) -> Path:
    for part in BUNDLE_PARTS:
        source = project_root / part
        if source.is_dir():
            shutil.copytree(source, tmp_path / part, ignore=shutil.ignore_patterns("__pycache__"))
        elif source.exists():
            shutil.copy(source, tmp_path / part)
    return tmp_path


def edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text, f"{old!r} not in {path}"
    path.write_text(text.replace(old, new, 1))


def messages(root: Path) -> list[str]:
    return [str(f) for f in check_bundle(root)]


def test_project_bundle_passes(project_root):
    assert messages(project_root) == []


def test_unknown_key_in_a_resource_names_file_resource_and_key(copy):
    edit(copy / "resources" / "lakewatch_ingest.pipeline.yml", "      serverless: true", "      serverless: true\n      severless: true")
    [message] = messages(copy)
    assert "resources/lakewatch_ingest.pipeline.yml: resources.pipelines.lakewatch_ingest" in message
    assert "'severless'" in message


def test_bad_enum_in_an_alert(copy):
    edit(copy / "resources" / "alerts" / "lakewatch_backlog.alert.yml", "comparison_operator: GREATER_THAN",
         "comparison_operator: ABOVE")
    [message] = messages(copy)
    assert "lakewatch_backlog" in message and "'ABOVE' is not a valid ComparisonOperator" in message


def test_dangling_resource_reference_is_reported_for_every_target(copy):
    edit(copy / "resources" / "lakewatch.job.yml", "resources.pipelines.lakewatch_observability.id",
         "resources.pipelines.lakewatch_observabilty.id")
    found = messages(copy)
    assert len(found) == 2  # dev and prod
    assert all("tasks[1].pipeline_task.pipeline_id" in m and "no pipelines resource 'lakewatch_observabilty'" in m
               for m in found)


def test_undeclared_variable(copy):
    edit(copy / "resources" / "alerts" / "lakewatch_no_rows.alert.yml", "${var.warehouse_id}", "${var.warehouse}")
    assert any("'${var.warehouse}'" in m and "no such variable" in m for m in messages(copy))


def test_unknown_target_key_and_missing_library_path(copy):
    edit(copy / "databricks.yml", "    mode: development", "    mode: development\n    defualt: true")
    shutil.rmtree(copy / "transformations" / "observability")
    found = messages(copy)
    assert any("targets.dev: unknown key 'defualt'" in m for m in found)
    assert any("lakewatch_observability.libraries[0]" in m and "does not exist" in m for m in found)


def test_production_rules(copy):
    edit(copy / "databricks.yml", "      root_path: /Workspace/Shared/.bundle/${bundle.name}/${bundle.target}\n", "")
    edit(copy / "databricks.yml", "    run_as:\n      service_principal_name: ${var.service_principal}\n", "")
    assert any("mode production needs workspace.root_path" in m for m in messages(copy))


@pytest.mark.parametrize("run_if, upstream, runs", [
    ("ALL_SUCCESS", ["SUCCESS"], True),
    ("ALL_SUCCESS", ["FAILED"], False),
    ("ALL_DONE", ["FAILED"], True),
    ("AT_LEAST_ONE_FAILED", ["SUCCESS", "FAILED"], True),
    ("NONE_FAILED", ["EXCLUDED"], True),
])
def test_job_run_if(run_if, upstream, runs):
    assert _should_run(run_if, upstream) is runs
