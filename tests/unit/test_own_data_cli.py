"""Your own files through the command line, without a JVM (in-process, on a copy of the project's bundle,
the engine never started): `check` validates conf/tables.yml as a run does and lists the landing
folders under any landing root; `add-table` refuses before the engine what it can tell from the file
names, writing nothing; the demo refuses a state folder it did not make, removing nothing."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

from pipelines.cli import main
from tests.project_copy import engineless_project


@pytest.fixture
def project(tmp_path: Path, project_root: Path, monkeypatch: pytest.MonkeyPatch) -> SimpleNamespace:
    root, created = engineless_project(tmp_path, project_root, monkeypatch,
                                       ("resources", "conf", "jobs", "transformations", "dashboards"))
    yield SimpleNamespace(root=root, home=tmp_path / "home", tables=root / "conf" / "tables.yml", tmp=tmp_path)
    assert created and all(p._local is None for p in created)


def run(capsys, project: SimpleNamespace, *args: str) -> tuple[int, str]:
    code = main(["--home", str(project.home), *args])
    out = capsys.readouterr()
    return code, out.out + out.err


def test_check_lists_the_landing_folders_under_any_landing_root(capsys, project):
    exports = project.tmp / "exports"
    (exports / "orders").mkdir(parents=True)
    code, out = run(capsys, project, "--landing-root", str(exports), "check")
    assert code == 0, out
    assert f"landing root: {exports}\n" in out
    assert f"{exports / 'orders'}  exists" in out
    assert f"{exports / 'payments'}  missing (the job creates it)" in out


def test_check_refuses_an_invalid_tables_yml_with_the_error_a_run_gives(capsys, project):
    text = project.tables.read_text()
    project.tables.write_text(text.replace("currency: STRING", "currency: VARCHAR(3)", 1))
    check_code, check_out = run(capsys, project, "check")
    run_code, run_out = run(capsys, project, "run")
    assert check_code == run_code == 2
    error = next(line for line in run_out.splitlines() if line.startswith("error: [CONFIG_UNSUPPORTED_TYPE]"))
    assert error in check_out.splitlines()


@pytest.mark.parametrize("args, error_class", [
    (("add-table", "orders", "--from", "{samples}/a.json"), "TABLE_EXISTS"),
    (("add-table", "shipments", "--from", "{samples}/missing"), "SAMPLES_NOT_FOUND"),
    (("add-table", "shipments", "--from", "{samples}/a.json", "{samples}/b.csv"), "SAMPLES_MIXED_FORMATS"),
    (("add-table", "shipments", "--from", "{samples}/c.dat"), "SAMPLES_UNKNOWN_FORMAT"),
    (("add-table", "shipments", "--format", "csv", "--from", "{samples}/a.json"), "SAMPLES_MIXED_FORMATS"),
])
def test_add_table_refuses_before_the_engine_and_writes_nothing(capsys, project, args, error_class):
    samples = project.tmp / "samples"
    samples.mkdir()
    for name in ("a.json", "b.csv", "c.dat"):
        (samples / name).write_text('{"a": 1}\n')
    before = project.tables.read_text()
    code, out = run(capsys, project, *[a.format(samples=samples) for a in args])
    assert code == 2 and f"error: [{error_class}]" in out, out
    assert project.tables.read_text() == before


def test_the_demo_refuses_a_state_folder_it_did_not_make_and_removes_nothing(capsys, project):
    project.home.mkdir()
    (project.home / "warehouse").mkdir()
    (project.home / "warehouse" / "table.parquet").write_text("data")
    code, out = run(capsys, project, "demo")
    assert code == 2 and "error: [DEMO_HOME_IN_USE]" in out and ".lakewatch-demo" in out, out
    assert [p.name for p in project.home.rglob("*")] == ["warehouse", "table.parquet"]
