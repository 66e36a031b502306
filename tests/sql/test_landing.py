"""First-run safety: the job's prepare_landing task creates each configured table's landing
folder before the ingest update, so a first deploy does not fail on a folder that is not there.

Oracles independent of pipelines/landing.py: the folders on disk (os.path, os.stat), the table list read
from the YAML file with yaml itself, and Spark's own file stream on the folder, which refuses a missing
folder ([PATH_NOT_FOUND]) and reads the one the task created."""

from __future__ import annotations

import errno
import os
import signal
from pathlib import Path
from types import SimpleNamespace

import pytest
import yaml

from pipelines import cancellation
from pipelines.bundle import load_local_bundle
from pipelines.errors import ConfigError
from pipelines.landing import (
    CREATED,
    EXISTS,
    NOT_CHECKED,
    LandingPreparationError,
    prepare_landing_folders,
    report,
)
from pipelines.local.job import run_job

SCHEMA = {"id": "BIGINT", "name": "STRING"}


def tables_file(tmp_path: Path, *landings: str) -> str:
    path = tmp_path / "tables.yml"
    path.write_text(yaml.safe_dump({"tables": [
        {"name": f"t{i}", "format": "json", "landing": landing, "schema": SCHEMA}
        for i, landing in enumerate(landings)]}))
    return str(path)


def stream_rows(spark, folder: str, checkpoint: Path) -> int:
    """Rows Spark's own text file stream reads from `folder` in one availableNow run."""
    name = f"landing_{checkpoint.name}"
    query = (spark.readStream.format("text").load(folder).writeStream.format("memory").queryName(name)
             .option("checkpointLocation", str(checkpoint)).trigger(availableNow=True).start())
    query.awaitTermination(120)
    assert query.exception() is None
    return spark.table(name).count()


def test_spark_refuses_a_missing_folder_and_streams_the_one_the_task_created(spark, tmp_path):
    root = tmp_path / "landing"
    config = tables_file(tmp_path, "orders", "customers/eu")
    folders = [str(root / "orders"), str(root / "customers" / "eu")]
    for folder in folders:  # what the first update after a deploy would meet
        with pytest.raises(Exception, match=r"PATH_NOT_FOUND"):
            spark.readStream.format("text").load(folder)

    done = prepare_landing_folders(config, str(root))

    assert [(f.table, f.folder, f.state) for f in done] == [("t0", folders[0], CREATED), ("t1", folders[1], CREATED)]
    assert all(os.path.isdir(f) for f in folders)
    # The first update after a deploy: the stream starts on the empty folder and ends without error.
    assert stream_rows(spark, folders[1], tmp_path / "empty") == 0


def test_existing_folders_and_their_files_are_left_alone(tmp_path):
    root = tmp_path / "landing"
    config = tables_file(tmp_path, "orders", "payments")
    (root / "orders").mkdir(parents=True)
    delivered = root / "orders" / "f.json"
    delivered.write_text('{"id": 1}\n')
    before = os.stat(root / "orders").st_mtime_ns, delivered.read_text(), os.stat(delivered).st_mtime_ns

    first = prepare_landing_folders(config, str(root))
    assert [f.state for f in first] == [EXISTS, CREATED]
    assert (os.stat(root / "orders").st_mtime_ns, delivered.read_text(), os.stat(delivered).st_mtime_ns) == before
    created = os.stat(root / "payments").st_mtime_ns

    again = prepare_landing_folders(config, str(root))  # every later job run: nothing to write
    assert [f.state for f in again] == [EXISTS, EXISTS]
    assert os.stat(root / "payments").st_mtime_ns == created and sorted(os.listdir(root)) == ["orders", "payments"]
    assert report(again)[-1] == "landing folders: 0 created, 2 already there"


def test_a_file_where_a_folder_should_be_fails_and_names_it(tmp_path):
    root = tmp_path / "landing"
    root.mkdir()
    (root / "orders").write_text("not a folder")
    config = tables_file(tmp_path, "orders", "payments")
    with pytest.raises(LandingPreparationError) as info:
        prepare_landing_folders(config, str(root))
    assert f"table 't0': {root / 'orders'} is a file, not a folder" in str(info.value)
    assert f"(created: {root / 'payments'})" in str(info.value)  # the others are still created
    assert os.path.isfile(root / "orders") and os.path.isdir(root / "payments")


def test_a_folder_that_cannot_be_created_names_the_grant(tmp_path, monkeypatch):
    """On Databricks, creating a folder in a volume without WRITE VOLUME is refused; simulated here (the
    tests run as root, whom file modes do not stop)."""
    def refused(path, exist_ok=False):
        raise PermissionError(errno.EACCES, "Permission denied", str(path))

    monkeypatch.setattr("pipelines.landing.os.makedirs", refused)
    with pytest.raises(LandingPreparationError) as info:
        prepare_landing_folders(tables_file(tmp_path, "orders"), str(tmp_path / "landing"))
    message = str(info.value)
    assert f"cannot create the landing folder {tmp_path / 'landing' / 'orders'} (Permission denied)" in message
    assert "needs WRITE VOLUME (with READ VOLUME) on the landing volume" in message


def test_a_landing_outside_the_root_creates_nothing(tmp_path):
    root = tmp_path / "landing"
    with pytest.raises(ConfigError) as info:
        prepare_landing_folders(tables_file(tmp_path, "orders", "../elsewhere"), str(root))
    assert info.value.error_class == "CONFIG_INVALID_LANDING"
    assert not root.exists() and not (tmp_path / "elsewhere").exists()


def test_a_folder_behind_a_uri_is_not_created_and_said(tmp_path):
    done = prepare_landing_folders(tables_file(tmp_path, "orders"), "s3://bucket/landing")
    assert [(f.folder, f.state) for f in done] == [("s3://bucket/landing/orders", NOT_CHECKED)]
    lines = report(done)
    assert any(line.startswith("warning: table 't0': s3://bucket/landing/orders") for line in lines)
    assert lines[-1] == "landing folders: 0 created, 0 already there, 1 not checked"
    assert not Path("s3:").exists()


def test_the_bundle_job_creates_the_folders_before_its_ingest_update(project_root, tmp_path):
    """The bundle's own job, as `lakewatch job` runs it: the prepare_landing task (jobs/prepare_landing.py
    with the parameters the bundle resolves) runs first, and when the ingest update starts, every landing
    folder of conf/tables.yml exists under the local landing root."""
    home = tmp_path / "home"
    bundle, _ = load_local_bundle(project_root, home)
    job = bundle.resources("jobs")["lakewatch_job"]
    job["tasks"] = [t for t in job["tasks"] if t["task_key"] in ("prepare_landing", "ingest")]
    configured = yaml.safe_load((project_root / "conf" / "tables.yml").read_text())["tables"]
    expected = [home / "landing" / t["landing"] for t in configured]
    seen: list[tuple[str, list[bool]]] = []

    def run_update(request):
        seen.append((request.pipeline, [p.is_dir() for p in expected]))
        return SimpleNamespace(ok=True, state="COMPLETED", canceled=None)

    runner = SimpleNamespace(spark=None, run_update=run_update)
    said: list[str] = []
    assert not any(p.exists() for p in expected)
    result = run_job(runner, bundle, "lakewatch_job", say=said.append)
    assert [(t.task_key, t.state) for t in result.tasks] == [("prepare_landing", "SUCCESS"), ("ingest", "SUCCESS")]
    assert seen == [("lakewatch_ingest", [True] * len(expected))]
    assert f"landing folders: {len(expected)} created, 0 already there" in said

    said.clear()
    run_job(runner, bundle, "lakewatch_job", say=said.append)
    assert f"landing folders: 0 created, {len(expected)} already there" in said


def test_the_job_does_not_start_the_ingest_update_when_a_folder_cannot_be_created(project_root, tmp_path):
    home = tmp_path / "home"
    bundle, _ = load_local_bundle(project_root, home)
    job = bundle.resources("jobs")["lakewatch_job"]
    job["tasks"] = [t for t in job["tasks"] if t["task_key"] in ("prepare_landing", "ingest")]
    (home / "landing").mkdir(parents=True)
    (home / "landing" / "orders").write_text("")
    updates: list[str] = []
    runner = SimpleNamespace(spark=None, run_update=lambda r: updates.append(r.pipeline))
    said: list[str] = []
    result = run_job(runner, bundle, "lakewatch_job", say=said.append)
    assert [(t.task_key, t.state) for t in result.tasks] == [("prepare_landing", "FAILED"), ("ingest", "EXCLUDED")]
    assert updates == [] and not result.ok
    assert f"table 'orders': {home / 'landing' / 'orders'} is a file, not a folder" in result.tasks[0].error


def test_a_job_whose_update_is_canceled_runs_no_later_task(project_root, tmp_path):
    """SIGTERM or Ctrl-C during the ingest task (its update CANCELED): the job run is canceled, so the
    bundle job's later tasks (the observability refresh, even its ALL_DONE ones) do not run."""
    home = tmp_path / "home"
    bundle, _ = load_local_bundle(project_root, home)
    tasks = [t["task_key"] for t in bundle.resources("jobs")["lakewatch_job"]["tasks"]]
    stop = cancellation.Canceled(signal.SIGTERM)
    updates: list[str] = []

    def run_update(request):
        updates.append(request.pipeline)
        return SimpleNamespace(ok=False, state="CANCELED", canceled=stop)

    said: list[str] = []
    result = run_job(SimpleNamespace(spark=None, run_update=run_update), bundle, "lakewatch_job", say=said.append)
    assert updates == ["lakewatch_ingest"]
    assert result.tasks[-1].task_key == "ingest" and result.tasks[-1].state == "CANCELED"
    assert result.canceled is stop and not result.ok
    later = tasks[tasks.index("ingest") + 1:]
    assert later and f"job lakewatch_job: canceled ({stop.why}); not run: {', '.join(later)}" in said
