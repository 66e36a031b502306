"""Offline checks of the bundle, since `databricks bundle validate` needs a live workspace.

- every resource loads into the `databricks-bundles` typed models, which reject unknown fields,
  wrong enum values and wrong types;
- the top level, the targets and the variables use only keys the bundle schema knows;
- every `${var.*}`, `${bundle.*}`, `${workspace.*}` and `${resources.*}` reference resolves, for
  every target;
- every path exists: pipeline library globs (and that they match files), root paths, dashboard files;
- the rules the CLI enforces per target mode (production needs a root path or run_as; development
  cannot force schedules to run).
Each problem is one Finding naming the file, the place in it and what is wrong.
"""

from __future__ import annotations

import glob
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping

import yaml

from pipelines.bundle import BUNDLE_FILE, Bundle, load_bundle
from pipelines.errors import BundleError

# Keys of the bundle JSON schema (databricks/cli bundle/schema/jsonschema.json, v1.13 and later).
TOP_LEVEL_KEYS = ("artifacts", "bundle", "environments", "experimental", "include", "permissions", "presets",
                  "python", "resources", "run_as", "scripts", "sync", "targets", "variables", "workspace")
TARGET_KEYS = ("artifacts", "bundle", "cluster_id", "compute_id", "default", "git", "mode", "permissions",
               "presets", "resources", "run_as", "sync", "variables", "workspace")
VARIABLE_KEYS = ("default", "description", "lookup", "type")
PRESET_KEYS = ("artifacts_dynamic_version", "jobs_max_concurrent_runs", "name_prefix", "pipelines_development",
               "source_linked_deployment", "tags", "trigger_pause_status")
MODES = ("development", "production")


@dataclass(frozen=True)
class Finding:
    where: str
    message: str

    def __str__(self) -> str:
        return f"{self.where}: {self.message}"


def _models() -> dict[str, Callable[[Any], Any]]:
    from databricks.bundles.alerts import Alert
    from databricks.bundles.dashboards import Dashboard
    from databricks.bundles.jobs import Job
    from databricks.bundles.pipelines import Pipeline
    from databricks.bundles.schemas import Schema
    from databricks.bundles.volumes import Volume

    return {"pipelines": Pipeline.from_dict, "jobs": Job.from_dict, "alerts": Alert.from_dict,
            "dashboards": Dashboard.from_dict, "schemas": Schema.from_dict, "volumes": Volume.from_dict}


def _unknown(where: str, data: Any, allowed: Iterable[str]) -> list[Finding]:
    if not isinstance(data, Mapping):
        return [Finding(where, f"must be a mapping, found {type(data).__name__}")]
    allowed = tuple(allowed)
    return [Finding(where, f"unknown key '{k}' (allowed: {', '.join(allowed)})") for k in data if k not in allowed]


def _rel(bundle_root: Path, path: Path) -> str:
    try:
        return str(path.relative_to(bundle_root))
    except ValueError:
        return str(path)


def check_structure(root: Path) -> list[Finding]:
    """Top-level, target, variable and preset keys of databricks.yml and the included files."""
    findings: list[Finding] = []
    main = yaml.safe_load((root / BUNDLE_FILE).read_text()) or {}
    findings += _unknown(BUNDLE_FILE, main, TOP_LEVEL_KEYS)
    files = [(BUNDLE_FILE, main)]
    for pattern in main.get("include") or []:
        for name in sorted(glob.glob(str(root / pattern))):
            data = yaml.safe_load(Path(name).read_text()) or {}
            findings += _unknown(_rel(root, Path(name)), data, TOP_LEVEL_KEYS)
            files.append((_rel(root, Path(name)), data))
    for file, data in files:
        if not isinstance(data, Mapping):
            continue
        for name, variable in (data.get("variables") or {}).items():
            findings += _unknown(f"{file}: variables.{name}", variable or {}, VARIABLE_KEYS)
        for name, target in (data.get("targets") or {}).items():
            where = f"{file}: targets.{name}"
            findings += _unknown(where, target or {}, TARGET_KEYS)
            target = target or {}
            findings += _unknown(f"{where}.presets", target.get("presets") or {}, PRESET_KEYS)
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


def check_models(bundle: Bundle) -> list[Finding]:
    """Every resource against the typed models (unresolved `${...}` are accepted where values go)."""
    findings: list[Finding] = []
    models = _models()
    for kind, items in (bundle.data.get("resources") or {}).items():
        for key, raw in (items or {}).items():
            where = f"{_rel(bundle.root, bundle.resource_file(kind, key))}: resources.{kind}.{key}"
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
            where = f"{_rel(bundle.root, bundle.resource_file(kind, key))}: resources.{kind}.{key}"
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
        where = f"{_rel(bundle.root, source)}: resources.pipelines.{key}"
        for i, library in enumerate(raw.get("libraries") or []):
            pattern = (library.get("glob") or {}).get("include") or (library.get("file") or {}).get("path")
            if not pattern or "${" in pattern:
                continue
            full = (source.parent / pattern)
            base = Path(_glob_base(str(full)))
            if not base.exists():
                findings.append(Finding(f"{where}.libraries[{i}]", f"'{pattern}': folder {_rel(bundle.root, base.resolve())} does not exist"))
            elif not [p for p in glob.glob(str(full), recursive=True) if Path(p).is_file()]:
                findings.append(Finding(f"{where}.libraries[{i}]", f"'{pattern}' matches no file"))
        root_path = raw.get("root_path")
        if root_path and "${" not in root_path and not (source.parent / root_path).is_dir():
            findings.append(Finding(f"{where}.root_path", f"'{root_path}' is not a folder"))
    for kind in ("dashboards", "alerts"):
        for key, raw in bundle.resources(kind).items():
            source = bundle.resource_file(kind, key)
            path = raw.get("file_path")
            if path and "${" not in path and not (source.parent / path).is_file():
                findings.append(Finding(f"{_rel(bundle.root, source)}: resources.{kind}.{key}.file_path",
                                        f"'{path}' does not exist"))
    return findings


def check_bundle(root: Path, targets: Iterable[str] | None = None) -> list[Finding]:
    """All offline checks, for every target (or the given ones)."""
    try:
        findings = check_structure(root)
        base = load_bundle(root)
    except (BundleError, yaml.YAMLError) as e:
        return [Finding(str(root / BUNDLE_FILE), str(e))]
    findings += check_models(base)
    findings += check_paths(base)
    for target in targets or list((base.data.get("targets") or {}).keys()):
        findings += check_references(load_bundle(root, target=target))
    return findings
