"""Offline bundle checks: the project's bundle passes; broken copies fail with clear messages."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any, Callable

import pytest
import yaml

from pipelines.bundle_check import check_bundle, required_inputs
from pipelines.local.job import _should_run

BUNDLE_PARTS = ("databricks.yml", "resources", "transformations", "conf", "dashboards", "pipelines", "jobs")


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


# Builders: change a copy's YAML structurally (comments are lost, which the check does not read).
def rewrite(path: Path, change: Callable[[dict[str, Any]], None]) -> None:
    data = yaml.safe_load(path.read_text())
    change(data)
    path.write_text(yaml.safe_dump(data, sort_keys=False))


def rewrite_main(root: Path, change: Callable[[dict[str, Any]], None]) -> None:
    rewrite(root / "databricks.yml", change)


def prod(data: dict[str, Any]) -> dict[str, Any]:
    return data["targets"]["prod"]


def grant(data: dict[str, Any], kind: str, key: str, principal: str) -> dict[str, Any]:
    """The prod grant of `principal` (a `${var.*}` reference) on a schema or volume resource."""
    [found] = [g for g in prod(data)["resources"][kind][key]["grants"] if g["principal"] == principal]
    return found


SP, READERS = "${var.service_principal}", "${var.readers_group}"


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
    tasks = yaml.safe_load((copy / "resources" / "lakewatch.job.yml").read_text())["resources"]["jobs"]["lakewatch_job"]
    [index] = [i for i, task in enumerate(tasks["tasks"]) if task["task_key"] == "observability"]
    assert len(found) == 2  # dev and prod
    assert all(f"tasks[{index}].pipeline_task.pipeline_id" in m and "no pipelines resource 'lakewatch_observabilty'" in m
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


def task_index(root: Path, task_key: str) -> int:
    job = yaml.safe_load((root / "resources" / "lakewatch.job.yml").read_text())["resources"]["jobs"]["lakewatch_job"]
    [index] = [i for i, task in enumerate(job["tasks"]) if task["task_key"] == task_key]
    return index


def test_missing_sql_file_of_a_job_task(copy):
    (copy / "jobs" / "archive_event_log.sql").unlink()
    index = task_index(copy, "archive_event_log")
    assert (f"resources/lakewatch.job.yml: resources.jobs.lakewatch_job.tasks[{index}].sql_task.file.path: "
            "'../jobs/archive_event_log.sql' does not exist") in messages(copy)


def test_missing_python_file_of_a_job_task(copy):
    (copy / "jobs" / "snapshot_table_sizes.py").unlink()
    index = task_index(copy, "snapshot_table_sizes")
    assert (f"resources/lakewatch.job.yml: resources.jobs.lakewatch_job.tasks[{index}].spark_python_task.python_file: "
            "'../jobs/snapshot_table_sizes.py' does not exist") in messages(copy)


def job_tasks(data: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {t["task_key"]: t for t in data["resources"]["jobs"]["lakewatch_job"]["tasks"]}


def test_the_ingest_task_without_the_landing_folders_prepared(copy):
    """First-run safety: the ingest update runs after the task that creates the landing
    folders; without that dependency, the first update after a deploy fails on a missing folder."""
    rewrite(copy / "resources" / "lakewatch.job.yml", lambda d: job_tasks(d)["ingest"].pop("depends_on"))
    found = messages(copy)
    index = task_index(copy, "ingest")
    assert any(f"resources.jobs.lakewatch_job.tasks[{index}] (ingest, target dev)" in m
               and "depends on no task that runs jobs/prepare_landing.py" in m
               and "the first update after a deploy fails on a landing folder that does not exist yet" in m
               for m in found), found
    assert any("(ingest, target prod)" in m for m in found)


def test_the_landing_folders_prepared_under_another_root(copy):
    def elsewhere(data):
        parameters = job_tasks(data)["prepare_landing"]["spark_python_task"]["parameters"]
        parameters[parameters.index("--landing-root") + 1] = "/Volumes/${var.catalog}/${var.schema}/other"

    rewrite(copy / "resources" / "lakewatch.job.yml", elsewhere)
    found = messages(copy)
    assert any("(ingest, target prod)" in m and "but its prepare_landing task prepares other folders" in m
               and "`--tables-config` and `--landing-root` as the pipeline's lakewatch.tables_config and "
               "lakewatch.landing_root" in m for m in found), found


def test_the_landing_folders_prepared_for_another_tables_file(copy):
    def other_tables(data):
        parameters = job_tasks(data)["prepare_landing"]["spark_python_task"]["parameters"]
        parameters[parameters.index("--tables-config") + 1] = "${workspace.file_path}/conf/other.yml"

    rewrite(copy / "resources" / "lakewatch.job.yml", other_tables)
    assert any("(ingest, target dev)" in m and "prepares other folders" in m for m in messages(copy))


def test_production_rules(copy):
    def no_root_no_run_as(data):
        del prod(data)["workspace"]["root_path"], prod(data)["run_as"]

    rewrite_main(copy, no_root_no_run_as)
    assert any("mode production needs workspace.root_path" in m for m in messages(copy))


# -- deploy safety: each rule fails on a broken copy, naming the place and the fix ----------------

def test_placeholder_value_in_a_target(copy):
    rewrite_main(copy, lambda d: prod(d)["variables"].update(warehouse_name="<production-warehouse>"))
    [message] = messages(copy)
    assert "databricks.yml: targets.prod.variables.warehouse_name" in message
    assert "'<production-warehouse>' is a placeholder" in message and "leave the variable without a default" in message


def test_placeholder_default_of_a_variable(copy):
    rewrite_main(copy, lambda d: d["variables"]["service_principal"].update(default="<service-principal-id>"))
    assert any("variables.service_principal.default" in m and "placeholder" in m for m in messages(copy))


def test_cli_version_floor_missing(copy):
    rewrite_main(copy, lambda d: d["bundle"].pop("databricks_cli_version"))
    [message] = messages(copy)
    assert "bundle.databricks_cli_version: not set" in message and '">= 0.297.0"' in message


def test_cli_version_floor_too_old(copy):
    rewrite_main(copy, lambda d: d["bundle"].update(databricks_cli_version=">= 0.250.0, < 2.0.0"))
    [message] = messages(copy)
    assert "allows a CLI older than 0.297.0" in message and "alerts v0.279.0" in message


@pytest.mark.parametrize("constraint", [">=0.297.0,<2.0.0", "== 0.297.0", "~> 0.297.0", ">=  0.297.0", "^0.297"])
def test_cli_version_constraint_the_cli_refuses(copy, constraint):
    """The CLI accepts only its own constraint syntax (verify_cli_version.go) and refuses the bundle
    otherwise, whatever the version."""
    rewrite_main(copy, lambda d: d["bundle"].update(databricks_cli_version=constraint))
    [message] = messages(copy)
    assert f"'{constraint}' is not a constraint the CLI accepts" in message


@pytest.mark.parametrize("constraint", [">= 0.297.0", ">=0.297.0", "0.297.0", ">= 0.297.0, < 2.0.0", ">= 1.0.0-0"])
def test_cli_version_constraints_the_cli_accepts(copy, constraint):
    rewrite_main(copy, lambda d: d["bundle"].update(databricks_cli_version=constraint))
    assert messages(copy) == []


def test_cli_version_floor_before_run_as_with_a_dashboard(copy):
    """Before v0.297.0 the CLI refuses run_as other than the deploying identity for any dashboard (and
    before v0.287.0 for alerts): prod deployed by a person would fail."""
    rewrite_main(copy, lambda d: d["bundle"].update(databricks_cli_version=">= 0.286.0"))
    [message] = messages(copy)
    assert "allows a CLI older than 0.297.0" in message and "run_as with a dashboard v0.297.0" in message


def test_prod_root_under_shared_while_running_as_a_principal(copy):
    rewrite_main(copy, lambda d: prod(d)["workspace"].update(
        root_path="/Workspace/Shared/.bundle/${bundle.name}/${bundle.target}"))
    [message] = messages(copy)
    assert "targets.prod.workspace.root_path" in message and "writable by all workspace users" in message
    assert "/Workspace/Users/${var.service_principal}/.bundle/" in message


def test_root_owner_missing_from_permissions(copy):
    """The prod root is the service principal's home folder, where it holds CAN_MANAGE: a `permissions`
    block without it makes the CLI warn (folder permissions not configured in the bundle) and recommend
    declaring the deploying identity."""
    def drop_the_service_principal(data):
        prod(data)["permissions"] = [p for p in prod(data)["permissions"] if p.get("service_principal_name") != SP]

    rewrite_main(copy, drop_the_service_principal)
    [message] = messages(copy)
    assert "targets.prod.permissions" in message and "home folder" in message
    assert "- service_principal_name: ${var.service_principal}" in message and "CAN_MANAGE" in message
    # A user's home folder: the user is named.
    rewrite_main(copy, lambda d: prod(d)["workspace"].update(root_path="/Workspace/Users/ops@example.com/.bundle/x"))
    assert any("targets.prod.permissions" in m and "- user_name: ops@example.com" in m for m in messages(copy))


def test_shared_root_without_users_can_manage(copy):
    """The CLI warns on any /Workspace/Shared root unless group users holds CAN_MANAGE."""
    def shared_root_without_run_as(data):
        del prod(data)["run_as"]
        prod(data)["workspace"]["root_path"] = "/Workspace/Shared/.bundle/${bundle.name}/${bundle.target}"

    rewrite_main(copy, shared_root_without_run_as)
    [message] = messages(copy)
    assert "targets.prod.workspace.root_path" in message and "writable by all workspace users" in message
    assert "group_name: users" in message


def test_service_principal_grant_missing_on_the_schema(copy):
    rewrite_main(copy, lambda d: grant(d, "schemas", "lakewatch", SP)["privileges"].remove("CREATE_MATERIALIZED_VIEW"))
    [message] = messages(copy)
    assert "targets.prod: resources.schemas.lakewatch.grants" in message
    assert "run_as service principal" in message and "lacks CREATE_MATERIALIZED_VIEW" in message


def test_service_principal_grant_missing_on_the_volume(copy):
    rewrite_main(copy, lambda d: prod(d)["resources"].pop("volumes"))
    [message] = messages(copy)
    assert "resources.volumes.landing.grants" in message and "lacks READ_VOLUME, WRITE_VOLUME" in message


def test_service_principal_reads_the_volume_but_cannot_write_there(copy):
    """The job's prepare_landing task creates a missing landing folder as the run_as service principal
    (and clean_source deletes or moves files there): READ_VOLUME alone fails the first job run when the
    principal does not own the volume."""
    rewrite_main(copy, lambda d: grant(d, "volumes", "landing", SP).update(privileges=["READ_VOLUME"]))
    [message] = messages(copy)
    assert "targets.prod: resources.volumes.landing.grants" in message and "lacks WRITE_VOLUME" in message
    assert "privileges [READ_VOLUME, WRITE_VOLUME]" in message


def test_a_privilege_of_another_securable(copy):
    """The models accept any Unity Catalog privilege on any securable; Unity Catalog does not."""
    def wrong_securables(data):
        grant(data, "schemas", "lakewatch", READERS)["privileges"].append("USE_CATALOG")
        grant(data, "volumes", "landing", SP)["privileges"].append("CREATE_TABLE")

    rewrite_main(copy, wrong_securables)
    found = messages(copy)
    assert any("resources.schemas.lakewatch.grants[1]" in m and "USE_CATALOG cannot be granted on a schema" in m
               for m in found)
    assert any("resources.volumes.landing.grants[0]" in m and "CREATE_TABLE cannot be granted on a volume" in m
               for m in found)


def test_a_grant_without_privileges(copy):
    rewrite_main(copy, lambda d: grant(d, "volumes", "landing", SP).update(privileges=[]))
    assert any("resources.volumes.landing.grants[0]: no privileges" in m for m in messages(copy))


def test_readers_grant_missing(copy):
    def drop_readers(data):
        grants = prod(data)["resources"]["schemas"]["lakewatch"]["grants"]
        grants.remove(grant(data, "schemas", "lakewatch", READERS))

    rewrite_main(copy, drop_readers)
    [message] = messages(copy)
    assert "readers group" in message and "lacks USE_SCHEMA, SELECT" in message


def test_readers_hold_no_more_than_they_need(copy):
    rewrite_main(copy, lambda d: grant(d, "schemas", "lakewatch", READERS)["privileges"].append("MODIFY"))
    [message] = messages(copy)
    assert "has more than it needs (MODIFY)" in message


def test_time_zone_not_pinned(copy):
    rewrite(copy / "resources" / "lakewatch_observability.pipeline.yml",
            lambda d: d["resources"]["pipelines"]["lakewatch_observability"]["configuration"].pop(
                "spark.sql.session.timeZone"))
    [message] = messages(copy)
    assert "resources.pipelines.lakewatch_observability.configuration" in message
    assert "spark.sql.session.timeZone is not set: set it to UTC" in message


def test_alert_subscribed_to_an_empty_destination(copy):
    pages = [{"user_email": "${var.notification_email}"}, {"destination_id": "${var.alert_destination_id}"}]
    rewrite_main(copy, lambda d: prod(d)["variables"].update(alert_subscriptions=pages))
    found = messages(copy)
    assert len(found) == len(list((copy / "resources" / "alerts").glob("*.yml")))
    assert all("subscriptions[1] (target prod)" in m and "destination_id is empty" in m for m in found)
    # Set, it passes.
    rewrite_main(copy, lambda d: prod(d)["variables"].update(alert_destination_id="0d4e9c1b-destination"))
    assert messages(copy) == []


def test_job_pages_an_empty_destination(copy):
    rewrite_main(copy, lambda d: prod(d)["variables"].update(job_failure_webhooks=[{"id": "${var.alert_destination_id}"}]))
    [message] = messages(copy)
    assert "lakewatch.job.yml: resources.jobs.lakewatch_job.webhook_notifications.on_failure[0] (target prod)" in message
    assert "destination id is empty" in message
    # Set, it passes.
    rewrite_main(copy, lambda d: prod(d)["variables"].update(alert_destination_id="0d4e9c1b-destination"))
    assert messages(copy) == []


def test_required_inputs_per_target(project_root):
    inputs = required_inputs(project_root)
    assert inputs["dev"] == ["warehouse_name"]
    assert set(inputs["prod"]) == {"warehouse_name", "service_principal", "managers_group", "readers_group",
                                   "notification_email"}


@pytest.mark.parametrize("run_if, upstream, runs", [
    ("ALL_SUCCESS", ["SUCCESS"], True),
    ("ALL_SUCCESS", ["FAILED"], False),
    ("ALL_DONE", ["FAILED"], True),
    ("AT_LEAST_ONE_FAILED", ["SUCCESS", "FAILED"], True),
    ("NONE_FAILED", ["EXCLUDED"], True),
])
def test_job_run_if(run_if, upstream, runs):
    assert _should_run(run_if, upstream) is runs


def test_a_dashboard_widget_on_a_missing_dataset_is_named(copy):
    """`lakewatch check` reads the dashboard with the typed Lakeview model: a widget whose query names a
    dataset the dashboard lacks is reported with the widget's name."""
    path = copy / "dashboards" / "lakewatch.lvdash.json"
    data = json.loads(path.read_text())
    widget = data["pages"][0]["layout"][1]["widget"]
    widget["queries"][0]["query"]["datasetName"] = "no_such_dataset"
    path.write_text(json.dumps(data))
    found = [m for m in messages(copy) if "lakewatch.lvdash.json" in m]
    assert len(found) == 1
    assert f"widget '{widget['name']}'" in found[0] and "datasetName 'no_such_dataset' is not a dataset" in found[0]


def test_a_dashboard_that_is_not_json_is_reported(copy):
    (copy / "dashboards" / "lakewatch.lvdash.json").write_text("{not json")
    assert any("lakewatch.lvdash.json" in m and "not valid JSON" in m for m in messages(copy))
