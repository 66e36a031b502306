"""The bundle's shape, offline: keys the bundle schema knows, resources that load into the
`databricks-bundles` typed models, references that resolve, paths that exist, a dashboard file that
the Lakeview model reads."""

from __future__ import annotations

import glob
from pathlib import Path
from typing import Any, Callable, Mapping


from pipelines import yamltext
from pipelines.bundle import BUNDLE_FILE, Bundle
from pipelines.errors import BundleError
from pipelines.bundle_check.finding import Finding, relative, unknown_keys

# Keys of the bundle JSON schema (databricks/cli bundle/schema/jsonschema.json, v1.13 and later).
TOP_LEVEL_KEYS = ("artifacts", "bundle", "environments", "experimental", "include", "permissions", "presets",
                  "python", "resources", "run_as", "scripts", "sync", "targets", "variables", "workspace")
TARGET_KEYS = ("artifacts", "bundle", "cluster_id", "compute_id", "default", "git", "mode", "permissions",
               "presets", "resources", "run_as", "sync", "variables", "workspace")
VARIABLE_KEYS = ("default", "description", "lookup", "type")
PRESET_KEYS = ("artifacts_dynamic_version", "jobs_max_concurrent_runs", "name_prefix", "pipelines_development",
               "source_linked_deployment", "tags", "trigger_pause_status")
MODES = ("development", "production")


def _models() -> dict[str, Callable[[Any], Any]]:
    from databricks.bundles.alerts import Alert
    from databricks.bundles.dashboards import Dashboard
    from databricks.bundles.jobs import Job
    from databricks.bundles.pipelines import Pipeline
    from databricks.bundles.schemas import Schema
    from databricks.bundles.volumes import Volume

    return {"pipelines": Pipeline.from_dict, "jobs": Job.from_dict, "alerts": Alert.from_dict,
            "dashboards": Dashboard.from_dict, "schemas": Schema.from_dict, "volumes": Volume.from_dict}


def check_structure(root: Path) -> list[Finding]:
    """Top-level, target, variable and preset keys of databricks.yml and the included files."""
    findings: list[Finding] = []
    files = included_files(root)
    main = files[0][1]
    for file, data in files:
        findings += unknown_keys(file, data, TOP_LEVEL_KEYS)
    for file, data in files:
        if not isinstance(data, Mapping):
            continue
        for name, variable in (data.get("variables") or {}).items():
            findings += unknown_keys(f"{file}: variables.{name}", variable or {}, VARIABLE_KEYS)
        for name, target in (data.get("targets") or {}).items():
            where = f"{file}: targets.{name}"
            findings += unknown_keys(where, target or {}, TARGET_KEYS)
            target = target or {}
            findings += unknown_keys(f"{where}.presets", target.get("presets") or {}, PRESET_KEYS)
            declared = set((main.get("variables") or {}))
            for var in (target.get("variables") or {}):
                if var not in declared:
                    findings.append(Finding(f"{where}.variables.{var}", "sets a variable databricks.yml does not declare"))
            mode = target.get("mode")
            if mode is not None and mode not in MODES:
                findings.append(Finding(f"{where}.mode", f"'{mode}' is not one of {', '.join(MODES)}"))
            if mode == "production" and not (target.get("workspace") or {}).get("root_path") and not target.get("run_as"):
                findings.append(Finding(where, "mode production needs workspace.root_path (or run_as)"))
            if mode == "development" and (target.get("presets") or {}).get("trigger_pause_status") == "UNPAUSED":
                findings.append(Finding(f"{where}.presets", "mode development cannot set trigger_pause_status: UNPAUSED"))
    return findings


def included_files(root: Path) -> list[tuple[str, Any]]:
    main = yamltext.load((root / BUNDLE_FILE).read_text()) or {}
    files = [(BUNDLE_FILE, main)]
    for pattern in main.get("include") or []:
        for name in sorted(glob.glob(str(root / pattern))):
            files.append((relative(root, Path(name)), yamltext.load(Path(name).read_text()) or {}))
    return files


def check_models(bundle: Bundle) -> list[Finding]:
    """Every resource against the typed models (unresolved `${...}` are accepted where values go)."""
    findings: list[Finding] = []
    models = _models()
    for kind, items in (bundle.data.get("resources") or {}).items():
        for key, raw in (items or {}).items():
            where = f"{relative(bundle.root, bundle.resource_file(kind, key))}: resources.{kind}.{key}"
            model = models.get(kind)
            if model is None:
                findings.append(Finding(where, f"resource type '{kind}' is not checked by lakewatch (supported: "
                                               f"{', '.join(models)})"))
                continue
            try:
                model(raw)
            except Exception as e:  # noqa: BLE001 (the model's message is the finding)
                findings.append(Finding(where, f"{type(e).__name__}: {e}"))
    return findings


def check_references(bundle: Bundle) -> list[Finding]:
    findings: list[Finding] = []
    for kind, items in (bundle.data.get("resources") or {}).items():
        for key, raw in (items or {}).items():
            where = f"{relative(bundle.root, bundle.resource_file(kind, key))}: resources.{kind}.{key}"
            try:
                bundle.resolve(raw, where)
            except BundleError as e:
                findings.append(Finding(f"target {bundle.target}", e.text))
    return findings


def _glob_base(pattern: str) -> str:
    parts = Path(pattern).parts
    fixed = [p for p in parts if not glob.has_magic(p)]
    return str(Path(*parts[: len(fixed)])) if fixed else "."


def check_paths(bundle: Bundle) -> list[Finding]:
    findings: list[Finding] = []
    for key, raw in bundle.resources("pipelines").items():
        source = bundle.resource_file("pipelines", key)
        where = f"{relative(bundle.root, source)}: resources.pipelines.{key}"
        for i, library in enumerate(raw.get("libraries") or []):
            pattern = (library.get("glob") or {}).get("include") or (library.get("file") or {}).get("path")
            if not pattern or "${" in pattern:
                continue
            full = (source.parent / pattern)
            base = Path(_glob_base(str(full)))
            if not base.exists():
                findings.append(Finding(f"{where}.libraries[{i}]", f"'{pattern}': folder {relative(bundle.root, base.resolve())} does not exist"))
            elif not [p for p in glob.glob(str(full), recursive=True) if Path(p).is_file()]:
                findings.append(Finding(f"{where}.libraries[{i}]", f"'{pattern}' matches no file"))
        root_path = raw.get("root_path")
        if root_path and "${" not in root_path and not (source.parent / root_path).is_dir():
            findings.append(Finding(f"{where}.root_path", f"'{root_path}' is not a folder"))
    for key, raw in bundle.resources("jobs").items():
        source = bundle.resource_file("jobs", key)
        for i, task in enumerate(raw.get("tasks") or []):
            path = ((task.get("sql_task") or {}).get("file") or {}).get("path")
            if path and "${" not in path and not (source.parent / path).is_file():
                findings.append(Finding(f"{relative(bundle.root, source)}: resources.jobs.{key}.tasks[{i}].sql_task.file.path",
                                        f"'{path}' does not exist"))
            python = (task.get("spark_python_task") or {})
            path = python.get("python_file")
            if path and "${" not in path and str(python.get("source", "WORKSPACE")).upper() != "GIT" \
                    and not (source.parent / path).is_file():
                findings.append(Finding(f"{relative(bundle.root, source)}: resources.jobs.{key}.tasks[{i}].spark_python_task"
                                        ".python_file", f"'{path}' does not exist"))
    for kind in ("dashboards", "alerts"):
        for key, raw in bundle.resources(kind).items():
            source = bundle.resource_file(kind, key)
            path = raw.get("file_path")
            if path and "${" not in path and not (source.parent / path).is_file():
                findings.append(Finding(f"{relative(bundle.root, source)}: resources.{kind}.{key}.file_path",
                                        f"'{path}' does not exist"))
            elif path and "${" not in path and kind == "dashboards":
                findings += check_dashboard(bundle.root, source.parent / path)
    return findings


def check_dashboard(root: Path, path: Path) -> list[Finding]:
    """The `.lvdash.json` against lakewatch's typed Lakeview model (`dashboard.lvdash`, built on the
    shapes of real exports): every page, dataset, widget, query, encoding and field the renderer and
    Lakeview rely on; the finding names the widget or dataset at fault."""
    from pipelines.dashboard.lvdash import DashboardError, load_dashboard

    try:
        load_dashboard(path)
    except DashboardError as e:
        return [Finding(f"{relative(root, path)}: {e.where}", f"{e.reason} [DASHBOARD_INVALID]")]
    return []
