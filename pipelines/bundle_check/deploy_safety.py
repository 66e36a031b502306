"""Deploy safety, offline: no placeholder left, a CLI version floor that covers the features used,
run_as, root paths and permissions as the CLI and Unity Catalog need them, grants that apply to their
securables, a session time zone pinned to UTC, the first run's order of tasks."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Iterable, Mapping


from pipelines import yamltext
from pipelines.bundle import BUNDLE_FILE, Bundle, task_pipeline_key
from pipelines.errors import BundleError
from pipelines.bundle_check.finding import Finding, relative
from pipelines.bundle_check.structure import included_files

# The oldest CLI that deploys the bundle as written (databricks/cli CHANGELOG): alerts as resources
# v0.279.0, dashboard dataset_catalog/dataset_schema v0.281.0, presets.trigger_pause_status applied to
# alerts v0.286.0, run_as applied to alerts v0.287.0, run_as other than the deploying identity with a
# dashboard (embed_credentials false) v0.297.0 (an error before: bundle/config/mutator/resourcemutator/run_as.go).
MIN_CLI_VERSION = (0, 297, 0)
CLI_FEATURES = ("alerts v0.279.0, dashboard dataset_catalog v0.281.0, alert pause preset v0.286.0, run_as for alerts "
                "v0.287.0, run_as with a dashboard v0.297.0")
# The constraint syntax the CLI accepts (bundle/config/mutator/verify_cli_version.go): one version or
# two separated by ", ", each with an optional >=, <=, >, < or != and at most one space after it.
_CLI_VERSION = r"(\d+\.\d+\.\d+(\-[A-Za-z0-9_]+)?|\d+\.\d+.\*|\d+\.\*)"
_CLI_OPERATOR = r"(>=|<=|>|<|!=)?"
CLI_CONSTRAINT = re.compile(f"^{_CLI_OPERATOR} ?{_CLI_VERSION}(, {_CLI_OPERATOR} ?{_CLI_VERSION})?$")
PLACEHOLDER = re.compile(r"<[A-Za-z][\w .@/-]*>")
TIME_ZONE_KEY = "spark.sql.session.timeZone"
TIME_ZONE = "UTC"
SHARED_ROOTS = ("/Workspace/Shared", "/Shared")
# A root under someone's home folder: that user or service principal holds CAN_MANAGE there.
HOME_ROOT = re.compile(r"^(?:/Workspace)?/Users/([^/]+)/")
# Least privilege for the principal that runs the pipelines and the job: it owns what they create. On
# the landing volume it reads the files and writes: the job's prepare_landing task creates a missing
# landing folder (Unity Catalog: creating files needs READ VOLUME and WRITE VOLUME), and a table's
# clean_source deletes or moves files (Auto Loader's CF_CLEAN_SOURCE_UNAUTHORIZED_WRITE_PERMISSION).
RUNNER_GRANTS = {"schemas": ("USE_SCHEMA", "CREATE_TABLE", "CREATE_MATERIALIZED_VIEW"),
                 "volumes": ("READ_VOLUME", "WRITE_VOLUME")}
# The privileges Unity Catalog grants on each securable a bundle `grants` block can name: the CLI's
# own per-securable lists (SchemaGrantPrivilege, VolumeGrantPrivilege in bundle/config/resources,
# v0.287.0). The CLI now types every grant with the SDK's list of all privileges, so a privilege of
# another securable (USE_CATALOG on a schema, CREATE_TABLE on a volume) passes the models and fails
# at deploy.
GRANT_PRIVILEGES = {
    "schemas": ("ALL_PRIVILEGES", "APPLY_TAG", "CREATE_FUNCTION", "CREATE_MATERIALIZED_VIEW", "CREATE_MODEL",
                "CREATE_TABLE", "CREATE_VOLUME", "EXECUTE", "EXTERNAL_USE_SCHEMA", "MANAGE", "MODIFY", "READ_VOLUME",
                "REFRESH", "SELECT", "USE_SCHEMA", "WRITE_VOLUME"),
    "volumes": ("ALL_PRIVILEGES", "APPLY_TAG", "MANAGE", "READ_VOLUME", "WRITE_VOLUME"),
}
READERS_VARIABLE = "readers_group"
READER_PRIVILEGES = ("USE_SCHEMA", "SELECT")


def _strings(value: Any, path: str) -> Iterable[tuple[str, str]]:
    if isinstance(value, str):
        yield path, value
    elif isinstance(value, Mapping):
        for key, item in value.items():
            yield from _strings(item, f"{path}.{key}" if path else str(key))
    elif isinstance(value, list):
        for i, item in enumerate(value):
            yield from _strings(item, f"{path}[{i}]")


def check_placeholders(root: Path) -> list[Finding]:
    """No value is a placeholder such as `<your-sql-warehouse-id>`: it would deploy as it is."""
    findings = []
    for file, data in included_files(root):
        for path, value in _strings(data, ""):
            if path.endswith(".description") or path.endswith(".comment"):
                continue
            match = PLACEHOLDER.search(value)
            if match:
                findings.append(Finding(f"{file}: {path}", f"'{match.group(0)}' is a placeholder and would deploy as it "
                                        "is: set the real value, or leave the variable without a default (a required "
                                        "input of the deploy) or make it a lookup"))
    return findings


def _version(text: str) -> tuple[int, ...]:
    return tuple(int(part) for part in text.split("."))


def check_cli_version(root: Path) -> list[Finding]:
    """`bundle.databricks_cli_version` sets a floor at least as new as the features the bundle uses."""
    main = yamltext.load((root / BUNDLE_FILE).read_text()) or {}
    where = f"{BUNDLE_FILE}: bundle.databricks_cli_version"
    floor = ".".join(map(str, MIN_CLI_VERSION))
    constraint = str(((main.get("bundle") or {}).get("databricks_cli_version")) or "")
    if not constraint:
        return [Finding(where, f'not set: add `databricks_cli_version: ">= {floor}"` under `bundle` ({CLI_FEATURES}); '
                               "an older CLI would reject or silently mis-deploy parts of the bundle")]
    if not CLI_CONSTRAINT.fullmatch(constraint):
        return [Finding(where, f"'{constraint}' is not a constraint the CLI accepts (it refuses the bundle): write "
                               f"\">= {floor}\" (at most one space after an operator of >=, <=, >, <, !=; two "
                               "constraints separated by \", \")")]
    lower = [_version(v) for op, v in re.findall(r"(>=|>|!=|<=|<)?\s*(\d+\.\d+\.\d+)", constraint)
             if op in ("", ">=", ">")]
    if not lower or max(lower) < MIN_CLI_VERSION:
        return [Finding(where, f"'{constraint}' allows a CLI older than {floor}: require \">= {floor}\" "
                               f"({CLI_FEATURES})")]
    return []


def _principal(run_as: Any) -> tuple[str | None, bool]:
    """(principal, is a service principal) of a run_as block."""
    if not isinstance(run_as, Mapping):
        return None, False
    if run_as.get("service_principal_name"):
        return str(run_as["service_principal_name"]), True
    return (str(run_as["user_name"]), False) if run_as.get("user_name") else (None, False)


def _granted(grants: Any, principal: str) -> set[str]:
    return {str(p) for g in (grants or []) if isinstance(g, Mapping) and str(g.get("principal")) == principal
            for p in (g.get("privileges") or [])}


def check_deploy_safety(bundle: Bundle) -> list[Finding]:
    """Per target (resolved, required inputs as markers): root, grants, time zone, alert and job destinations."""
    findings: list[Finding] = []
    target = bundle.target_definition()
    where = f"{BUNDLE_FILE}: targets.{bundle.target}"
    try:
        run_as = bundle.resolve(target.get("run_as") or bundle.data.get("run_as"), f"{where}.run_as")
        root_path = bundle.resolve((target.get("workspace") or {}).get("root_path")
                                   or (bundle.data.get("workspace") or {}).get("root_path"), f"{where}.workspace")
    except BundleError:
        return findings  # reported by check_references
    try:
        permissions = bundle.resolve(target.get("permissions") or bundle.data.get("permissions") or [],
                                     f"{where}.permissions")
    except BundleError:
        permissions = []  # reported by check_references
    permissions = [p for p in permissions if isinstance(p, Mapping)]
    principal, is_service_principal = _principal(run_as)
    shared = bool(root_path) and str(root_path).rstrip("/").startswith(SHARED_ROOTS)
    if shared and principal:
        findings.append(Finding(f"{where}.workspace.root_path", f"'{root_path}' is under /Workspace/Shared, writable by "
                                "all workspace users (the CLI warns), while the target runs as a principal: use "
                                "/Workspace/Users/${var.service_principal}/.bundle/${bundle.name}/${bundle.target}"))
    elif shared and not any(p.get("group_name") == "users" and p.get("level") == "CAN_MANAGE" for p in permissions):
        findings.append(Finding(f"{where}.workspace.root_path", f"'{root_path}' is under /Workspace/Shared, writable by "
                                "all workspace users: the CLI warns unless `permissions` lists `group_name: users` "
                                "with CAN_MANAGE; move the root to /Workspace/Users/<deploying identity>/.bundle/..."))
    home = HOME_ROOT.match(str(root_path or ""))
    if permissions and home:
        # The CLI compares the root folder's ACL with `permissions` (a warning for any principal the
        # bundle does not declare) and recommends declaring the deploying identity with CAN_MANAGE.
        owner = home.group(1)
        if not any(p.get("level") == "CAN_MANAGE" and owner in (p.get("user_name"), p.get("service_principal_name"))
                   for p in permissions):
            raw_owner = HOME_ROOT.match(str((target.get("workspace") or {}).get("root_path") or ""))
            key = "service_principal_name" if (is_service_principal and owner == principal) else "user_name"
            name = raw_owner.group(1) if raw_owner else owner
            findings.append(Finding(
                f"{where}.permissions",
                f"the bundle root is the home folder of {owner}, who holds CAN_MANAGE there, but `permissions` does "
                f"not list it: the CLI warns that the folder has permissions not configured in the bundle and "
                f"recommends declaring the deploying identity; add `- {key}: {name}` with `level: CAN_MANAGE`"))
    if is_service_principal:
        for kind, needed in RUNNER_GRANTS.items():
            for key, raw in bundle.resources(kind).items():
                try:
                    grants = bundle.resolve(raw.get("grants") or [], f"resources.{kind}.{key}.grants")
                except BundleError:
                    continue
                missing = [p for p in needed if p not in _granted(grants, principal)]
                if missing:
                    findings.append(Finding(
                        f"{where}: resources.{kind}.{key}.grants",
                        f"the run_as service principal ({principal}) lacks {', '.join(missing)}: add "
                        f"`- principal: ${{var.service_principal}}` with privileges [{', '.join(needed)}] under "
                        f"targets.{bundle.target}.resources.{kind}.{key}.grants"))
        findings += _reader_grants(bundle, where)
    for key, raw in bundle.resources("pipelines").items():
        zone = (raw.get("configuration") or {}).get(TIME_ZONE_KEY)
        if zone != TIME_ZONE:
            file = relative(bundle.root, bundle.resource_file("pipelines", key))
            findings.append(Finding(f"{file}: resources.pipelines.{key}.configuration",
                                    f"{TIME_ZONE_KEY} is {repr(zone) if zone else 'not set'}: set it to {TIME_ZONE} "
                                    "(the daily tables and the file arrival days depend on the session time zone)"))
    for key, raw in bundle.resources("alerts").items():
        file = relative(bundle.root, bundle.resource_file("alerts", key))
        try:
            notification = bundle.resolve((raw.get("evaluation") or {}).get("notification") or {}, f"{file}: {key}")
        except BundleError:
            continue
        for i, subscription in enumerate(notification.get("subscriptions") or []):
            if isinstance(subscription, Mapping) and "destination_id" in subscription \
                    and not str(subscription["destination_id"] or "").strip():
                findings.append(Finding(
                    f"{file}: resources.alerts.{key}.evaluation.notification.subscriptions[{i}] (target {bundle.target})",
                    "destination_id is empty: set alert_destination_id for this target, or take the destination "
                    "out of alert_subscriptions"))
    for key, raw in bundle.resources("jobs").items():
        file = relative(bundle.root, bundle.resource_file("jobs", key))
        try:
            webhooks = bundle.resolve(raw.get("webhook_notifications") or {}, f"{file}: {key}")
        except BundleError:
            continue
        for event, hooks in (webhooks.items() if isinstance(webhooks, Mapping) else ()):
            for i, hook in enumerate(hooks if isinstance(hooks, list) else []):
                if not (isinstance(hook, Mapping) and str(hook.get("id") or "").strip()):
                    findings.append(Finding(
                        f"{file}: resources.jobs.{key}.webhook_notifications.{event}[{i}] (target {bundle.target})",
                        "the notification destination id is empty: set the destination's id (e.g. "
                        "alert_destination_id) for this target, or take it out of job_failure_webhooks"))
    return findings


def check_first_run(bundle: Bundle) -> list[Finding]:
    """Every job task that updates a pipeline reading landing folders (its configuration names the
    landing root and the tables) depends, directly or through other tasks, on a task that runs
    jobs/prepare_landing.py with that pipeline's tables configuration and landing root: a bundle
    creates the landing volume, not the folders in it, and the first update would fail on a missing
    one (pipelines/landing.py)."""
    from pipelines.adapter import LANDING_ROOT_KEY, TABLES_CONFIG_KEY
    from pipelines.landing import TASK_FILE, prepares, preparing_tasks

    findings: list[Finding] = []
    pipelines = bundle.resources("pipelines")
    for job_key, job in bundle.resources("jobs").items():
        file = relative(bundle.root, bundle.resource_file("jobs", job_key))
        for i, task in enumerate(job.get("tasks") or []):
            if not isinstance(task, Mapping):
                continue
            pipeline_key = task_pipeline_key(task)
            configuration = (pipelines.get(pipeline_key) or {}).get("configuration") or {} if pipeline_key else {}
            if LANDING_ROOT_KEY not in configuration or TABLES_CONFIG_KEY not in configuration:
                continue
            where = f"{file}: resources.jobs.{job_key}.tasks[{i}] ({task.get('task_key')}, target {bundle.target})"
            try:
                tables = str(bundle.resolve(configuration[TABLES_CONFIG_KEY], where))
                root = str(bundle.resolve(configuration[LANDING_ROOT_KEY], where))
            except BundleError:
                continue  # reported by check_references
            preparers = preparing_tasks(bundle, job_key, str(task.get("task_key")))
            if not preparers:
                findings.append(Finding(where, (
                    f"updates {pipeline_key}, which reads each table's landing folder under {LANDING_ROOT_KEY}, "
                    f"but depends on no task that runs {TASK_FILE}: the first update after a deploy fails on a "
                    "landing folder that does not exist yet (a bundle creates the volume, not the folders in it). "
                    "Add a spark_python_task running ../jobs/prepare_landing.py with --tables-config and "
                    f"--landing-root as the pipeline's, and `depends_on: [{{task_key: <that task>}}]` here")))
            elif not any(prepares(bundle, job_key, t, tables, root) for t in preparers):
                findings.append(Finding(where, (
                    f"updates {pipeline_key}, which reads the tables of {tables} under {root}, but its "
                    f"{', '.join(str(t.get('task_key')) for t in preparers)} task prepares other folders: give it "
                    f"`--tables-config` and `--landing-root` as the pipeline's {TABLES_CONFIG_KEY} and "
                    f"{LANDING_ROOT_KEY}")))
    return findings


def check_grants(bundle: Bundle) -> list[Finding]:
    """Every grant names a principal and privileges that Unity Catalog grants on its securable."""
    findings: list[Finding] = []
    for kind, valid in GRANT_PRIVILEGES.items():
        for key, raw in bundle.resources(kind).items():
            for i, grant in enumerate(raw.get("grants") or []):
                where = f"target {bundle.target}: resources.{kind}.{key}.grants[{i}]"
                if not isinstance(grant, Mapping):
                    continue  # reported by check_models
                if not str(grant.get("principal") or "").strip():
                    findings.append(Finding(where, "no principal: name the user, group or service principal"))
                privileges = grant.get("privileges") or []
                if not privileges:
                    findings.append(Finding(where, "no privileges: the CLI requires at least one"))
                wrong = [str(p) for p in privileges if "${" not in str(p) and str(p) not in valid]
                if wrong:
                    findings.append(Finding(where, f"{', '.join(wrong)} cannot be granted on a "
                                                   f"{kind.rstrip('s')} (Unity Catalog refuses it at deploy): "
                                                   f"use {', '.join(valid)}"))
    return findings


def _reader_grants(bundle: Bundle, where: str) -> list[Finding]:
    if READERS_VARIABLE not in bundle.variable_definitions():
        return [Finding(f"{BUNDLE_FILE}: variables", f"no `{READERS_VARIABLE}` variable: declare the group that reads "
                        f"the tables and views the dashboard, and grant it {' + '.join(READER_PRIVILEGES)} on the schema")]
    try:
        readers = str(bundle.variable(READERS_VARIABLE))
    except BundleError:
        return []  # reported by check_references
    findings = []
    for key, raw in bundle.resources("schemas").items():
        try:
            granted = _granted(bundle.resolve(raw.get("grants") or [], f"resources.schemas.{key}.grants"), readers)
        except BundleError:
            continue
        missing = [p for p in READER_PRIVILEGES if p not in granted]
        extra = sorted(granted - set(READER_PRIVILEGES))
        if missing or extra:
            problem = (f"lacks {', '.join(missing)}" if missing else "") + (" and " if missing and extra else "") + \
                (f"has more than it needs ({', '.join(extra)})" if extra else "")
            findings.append(Finding(
                f"{where}: resources.schemas.{key}.grants",
                f"the readers group ({readers}) {problem}: grant `- principal: ${{var.{READERS_VARIABLE}}}` exactly "
                f"[{', '.join(READER_PRIVILEGES)}] under targets.{bundle.target}.resources.schemas.{key}.grants"))
    return findings
