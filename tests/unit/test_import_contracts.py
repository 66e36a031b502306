"""The package's import contracts (`[tool.importlinter]` in pyproject.toml): code deployed to Databricks
never imports the local engine, no import cycles, the layers from the CLI down. Checked with
import-linter over this checkout's `pipelines`, imports inside functions included; no JVM."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

LINT = "import sys; from importlinter.cli import lint_imports_command; sys.exit(lint_imports_command())"


def lint_imports(root: Path) -> subprocess.CompletedProcess[str]:
    """`lint-imports` over the `pipelines` package under `root`, with `root`'s pyproject.toml."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(root), os.environ.get("PYTHONPATH", "")])}
    return subprocess.run([sys.executable, "-c", LINT, "--no-cache"], cwd=root, env=env, capture_output=True,
                          text=True, timeout=300)


def test_the_import_contracts_hold(project_root: Path):
    result = lint_imports(project_root)
    report = result.stdout[result.stdout.find("Contracts"):] or result.stdout
    assert result.returncode == 0, (
        "an import breaks the package's layers (pyproject.toml [tool.importlinter]); `lint-imports` says:\n"
        f"{report}\n{result.stderr}")
    assert "0 broken" in result.stdout, result.stdout


def test_a_lazy_import_of_the_local_engine_in_deployed_code_breaks_a_contract(project_root: Path, tmp_path: Path):
    """The check is real: the same package with one import of pipelines.local inside a function of a
    deployed module fails it, naming the import."""
    shutil.copytree(project_root / "pipelines", tmp_path / "pipelines",
                    ignore=shutil.ignore_patterns("__pycache__", "java"))
    shutil.copy(project_root / "pyproject.toml", tmp_path / "pyproject.toml")
    rescue = tmp_path / "pipelines" / "rescue.py"
    rescue.write_text(rescue.read_text() + "\n\ndef _home():\n    from pipelines.local import home\n\n    return home\n")
    result = lint_imports(tmp_path)
    assert result.returncode == 1, result.stdout + result.stderr
    assert "Code deployed to Databricks never imports the local engine BROKEN" in result.stdout, result.stdout
    assert "pipelines.rescue -> pipelines.local.home" in result.stdout, result.stdout


def test_the_deployed_entry_points_load_without_the_local_engine(project_root: Path):
    """What the bundle's definition files and job tasks import leaves pipelines.local unloaded, and
    `lakewatch.engine` then knows Databricks' engine only (the local runner registers its own)."""
    entry_points = ["pipelines.ingestion", "pipelines.observability.pipeline", "pipelines.landing",
                    "pipelines.table_sizes"]
    code = (f"import importlib, json, sys\nfor m in {entry_points!r}: importlib.import_module(m)\n"
            "from pipelines import adapter\n"
            "print(json.dumps({'engines': sorted(adapter.ENGINES),"
            " 'local': sorted(m for m in sys.modules if m.startswith('pipelines.local'))}))")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(project_root), os.environ.get("PYTHONPATH", "")])}
    result = subprocess.run([sys.executable, "-c", code], cwd=project_root, env=env, capture_output=True, text=True,
                            timeout=300)
    assert result.returncode == 0, result.stderr
    loaded = json.loads(result.stdout.strip().splitlines()[-1])
    assert loaded == {"engines": ["databricks"], "local": []}, loaded


def test_test_modules_outside_a_package_have_names_of_their_own(project_root: Path):
    """pytest imports a test module of a folder without `__init__.py` by its bare name: two such
    modules of one name in the tiers `make test` collects together fail its collection."""
    loose = [p for p in (project_root / "tests").rglob("test_*.py") if not (p.parent / "__init__.py").exists()]
    names = [p.name for p in loose]
    assert len(loose) > 50 and len(names) == len(set(names)), sorted(n for n in names if names.count(n) > 1)
