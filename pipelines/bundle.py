"""Reads the bundle (`databricks.yml` plus its `include`d resource files) and resolves `${...}`
references the way the Databricks CLI does, so the local runner uses the very same pipeline
definitions that `databricks bundle deploy` deploys.

Variable precedence, highest first: explicit overrides (the local settings file), environment
`BUNDLE_VAR_<name>`, the target's `variables`, the variable's `default`. A `lookup` variable is
resolved by the CLI against the workspace at deploy time: locally it needs an override (the local
settings file sets `warehouse_id: local`). The selected target's `resources` are merged into the
resources as the CLI merges them (mappings key by key, lists appended).
"""

from __future__ import annotations

import getpass
import glob
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

import yaml

from pipelines import yamltext
from pipelines.errors import BundleError

REFERENCE = re.compile(r"\$\{([A-Za-z0-9_.\[\]-]+)\}")
# A job's pipeline_task.pipeline_id as a bundle writes it: ${resources.pipelines.<key>.id}
PIPELINE_ID_REFERENCE = re.compile(r"^\$\{resources\.pipelines\.([A-Za-z0-9_-]+)\.id\}$")


def task_pipeline_key(task: Mapping[str, Any]) -> str | None:
    """The key of the bundle's pipeline a job task updates; None for a task that updates none of them."""
    match = PIPELINE_ID_REFERENCE.match(str((task.get("pipeline_task") or {}).get("pipeline_id", "")))
    return match.group(1) if match else None
BUNDLE_FILE = "databricks.yml"
LOCAL_SETTINGS_FILE = "lakewatch.local.yml"
LOCAL_TARGET = "local"


def _read_yaml(path: Path) -> Any:
    if not path.is_file():
        raise BundleError("BUNDLE_FILE_NOT_FOUND", {"path": str(path)})
    try:
        return yamltext.load(path.read_text()) or {}
    except yaml.YAMLError as e:
        raise BundleError("BUNDLE_INVALID_YAML", {"path": str(path), "reason": str(e).replace("\n", " ")}) from None


@dataclass(frozen=True)
class EventLogTarget:
    catalog: str
    schema: str
    name: str

    @property
    def full_name(self) -> str:
        return f"{self.catalog}.{self.schema}.{self.name}"


@dataclass(frozen=True)
class PipelineResource:
    """A pipeline resource with every reference resolved and paths made absolute."""

    key: str
    name: str
    catalog: str | None
    schema: str | None
    configuration: dict[str, str]
    library_globs: tuple[str, ...]  # absolute glob patterns, e.g. /repo/transformations/ingest/**
    root_path: str | None
    event_log: EventLogTarget | None
    source_file: Path
    raw: Mapping[str, Any]


@dataclass
class Bundle:
    root: Path
    target: str
    data: dict[str, Any]
    resource_files: dict[tuple[str, str], Path]
    overrides: dict[str, Any] = field(default_factory=dict)
    extra_context: dict[str, Any] = field(default_factory=dict)
    # The offline check resolves a variable the deployer supplies (no default, not set by the target)
    # or the CLI looks up to a marker (`<input var.x>`, `<warehouse named ...>`) instead of failing.
    inputs_as_markers: bool = False
    _variables: dict[str, Any] = field(default_factory=dict)

    @property
    def name(self) -> str:
        return str(self.data.get("bundle", {}).get("name", ""))

    # -- variables -------------------------------------------------------------------------
    def variable_definitions(self) -> dict[str, Any]:
        return dict(self.data.get("variables") or {})

    def target_definition(self) -> dict[str, Any]:
        return dict((self.data.get("targets") or {}).get(self.target) or {})

    def _raw_variable(self, name: str) -> Any:
        if name in self.overrides:
            return self.overrides[name]
        env = os.environ.get(f"BUNDLE_VAR_{name}")
        if env is not None:
            return env
        target_vars = self.target_definition().get("variables") or {}
        if name in target_vars:
            value = target_vars[name]
            if isinstance(value, Mapping) and "lookup" in value:
                return _Lookup(dict(value["lookup"]))
            if isinstance(value, Mapping) and "default" in value:
                return value["default"]
            return value
        definition = self.variable_definitions().get(name)
        if isinstance(definition, Mapping) and "lookup" in definition:
            return _Lookup(dict(definition["lookup"] or {}))
        if isinstance(definition, Mapping) and "default" in definition:
            return definition["default"]
        return _MISSING

    def required_inputs(self) -> list[str]:
        """Declared variables this target leaves to the deployer (no default, not set by the target,
        not a lookup), in declaration order."""
        saved = self.overrides
        self.overrides = {}
        try:
            return [name for name in self.variable_definitions() if self._raw_variable(name) is _MISSING
                    and f"BUNDLE_VAR_{name}" not in os.environ]
        finally:
            self.overrides = saved

    def variable(self, name: str, _stack: tuple[str, ...] = (), where: str | None = None) -> Any:
        if name in self._variables:
            return self._variables[name]
        if name in _stack:
            raise BundleError("BUNDLE_REFERENCE_CYCLE", {"cycle": " -> ".join((*_stack, name))})
        raw = self._raw_variable(name)
        if isinstance(raw, _Lookup):
            value = self._lookup_variable(name, raw, (*_stack, name), where)
            self._variables[name] = value
            return value
        if raw is _MISSING and self.inputs_as_markers and name in self.variable_definitions():
            self._variables[name] = f"<input var.{name}>"
            return self._variables[name]
        if raw is _MISSING:
            declared = name in self.variable_definitions()
            raise BundleError(
                "BUNDLE_UNRESOLVED_REFERENCE",
                {
                    "where": where or f"target '{self.target}'",
                    "reference": f"var.{name}",
                    "hint": f" (declared without a default and not set by the target: give it a default, "
                    f"set it in the target's variables or in {LOCAL_SETTINGS_FILE}, or export BUNDLE_VAR_{name})"
                    if declared
                    else f" (no such variable in {BUNDLE_FILE}: declare it under `variables`, or correct the name)",
                },
            )
        value = self._resolve(raw, f"variable '{name}'", (*_stack, name))
        self._variables[name] = value
        return value

    def _lookup_variable(self, name: str, lookup: "_Lookup", stack: tuple[str, ...], where: str | None) -> str:
        if len(lookup.spec) != 1:
            raise BundleError("BUNDLE_INVALID", {"where": f"variables.{name}.lookup",
                                                 "reason": "a lookup names exactly one kind of object"})
        [(kind, by_name)] = lookup.spec.items()
        resolved = self._resolve(by_name, f"variables.{name}.lookup.{kind}", stack)
        if self.inputs_as_markers:
            return f"<{kind} named '{resolved}'>"
        raise BundleError(
            "BUNDLE_UNRESOLVED_REFERENCE",
            {
                "where": where or f"target '{self.target}'",
                "reference": f"var.{name}",
                "hint": f" (the Databricks CLI looks up the {kind} named '{resolved}' at deploy time; locally set "
                f"{name} in {LOCAL_SETTINGS_FILE}, or export BUNDLE_VAR_{name})",
            },
        )

    # -- references ------------------------------------------------------------------------
    def _lookup(self, reference: str, where: str, stack: tuple[str, ...]) -> Any:
        parts = reference.split(".")
        head = parts[0]
        if head == "var" and len(parts) == 2:
            return self.variable(parts[1], stack, where)
        if head == "bundle":
            bundle = {**(self.data.get("bundle") or {}), "target": self.target}
            return self._walk(bundle, parts[1:], reference, where)
        if head == "workspace":
            return self._walk(self.workspace(), parts[1:], reference, where)
        if head == "resources" and len(parts) >= 4:
            kind, key, attribute = parts[1], parts[2], ".".join(parts[3:])
            resource = (self.data.get("resources") or {}).get(kind, {}).get(key)
            if resource is None:
                raise BundleError(
                    "BUNDLE_UNRESOLVED_REFERENCE",
                    {"where": where, "reference": reference, "hint": f" (no {kind} resource '{key}')"},
                )
            if attribute == "id":
                return f"<{kind}.{key}.id>"  # assigned by the workspace at deploy time
            return self._resolve(self._walk(resource, parts[3:], reference, where), where, stack)
        if head in self.extra_context:
            return self._walk(self.extra_context[head], parts[1:], reference, where)
        raise BundleError("BUNDLE_UNRESOLVED_REFERENCE", {"where": where, "reference": reference, "hint": ""})

    def _walk(self, value: Any, path: list[str], reference: str, where: str) -> Any:
        for part in path:
            if isinstance(value, Mapping) and part in value:
                value = value[part]
            else:
                raise BundleError("BUNDLE_UNRESOLVED_REFERENCE", {"where": where, "reference": reference, "hint": ""})
        return value

    def workspace(self) -> dict[str, Any]:
        """Workspace values as the local engine sees them: files live in the project root."""
        user = _local_user()
        configured = dict(self.data.get("workspace") or {})
        configured.update(self.target_definition().get("workspace") or {})
        root = str(self.root)
        return {
            **configured,
            "current_user": {"short_name": user, "userName": user},
            "file_path": root,
            "root_path": configured.get("root_path", root),
            "resource_path": root,
        }

    def _resolve(self, value: Any, where: str, stack: tuple[str, ...] = ()) -> Any:
        if isinstance(value, str):
            whole = REFERENCE.fullmatch(value)
            if whole:
                return self._lookup(whole.group(1), where, stack)

            def substitute(match: re.Match[str]) -> str:
                return str(self._lookup(match.group(1), where, stack))

            return REFERENCE.sub(substitute, value)
        if isinstance(value, Mapping):
            return {k: self._resolve(v, f"{where}.{k}", stack) for k, v in value.items()}
        if isinstance(value, list):
            return [self._resolve(v, f"{where}[{i}]", stack) for i, v in enumerate(value)]
        return value

    def resolve(self, value: Any, where: str) -> Any:
        """Resolves every `${...}` in a value (recursively); raises BundleError naming `where`."""
        return self._resolve(value, where)

    # -- resources -------------------------------------------------------------------------
    def resources(self, kind: str) -> dict[str, Any]:
        return dict((self.data.get("resources") or {}).get(kind) or {})

    def resource_file(self, kind: str, key: str) -> Path:
        return self.resource_files.get((kind, key), self.root / BUNDLE_FILE)

    def pipeline(self, key: str) -> PipelineResource:
        pipelines = self.resources("pipelines")
        if key not in pipelines:
            raise BundleError(
                "BUNDLE_PIPELINE_NOT_FOUND", {"name": key, "available": ", ".join(sorted(pipelines)) or "none"}
            )
        source = self.resource_file("pipelines", key)
        raw = self.resolve(pipelines[key], f"{source.relative_to(self.root)}: resources.pipelines.{key}")
        base = source.parent
        globs = []
        for library in raw.get("libraries") or []:
            if "glob" in library:
                globs.append(str((base / library["glob"]["include"]).resolve()) if not library["glob"]["include"].startswith("/")
                             else library["glob"]["include"])
            elif "file" in library:
                globs.append(str((base / library["file"]["path"]).resolve()))
        event_log = raw.get("event_log")
        root_path = raw.get("root_path")
        return PipelineResource(
            key=key,
            name=str(raw.get("name", key)),
            catalog=raw.get("catalog"),
            schema=raw.get("schema") or raw.get("target"),
            configuration={str(k): str(v) for k, v in (raw.get("configuration") or {}).items()},
            library_globs=tuple(globs),
            root_path=str((base / root_path).resolve()) if root_path else None,
            event_log=EventLogTarget(**{k: str(v) for k, v in event_log.items()}) if event_log else None,
            source_file=source,
            raw=raw,
        )


class _Missing:
    pass


@dataclass(frozen=True)
class _Lookup:
    spec: dict[str, Any]  # e.g. {"warehouse": "${var.warehouse_name}"}


_MISSING = _Missing()


def _local_user() -> str:
    try:
        return getpass.getuser()
    except Exception:  # noqa: BLE001 (no user database in some containers)
        return "local"


def _merge_resources(into: dict[str, Any], resources: Mapping[str, Any], path: Path,
                     files: dict[tuple[str, str], Path]) -> None:
    for kind, items in (resources or {}).items():
        bucket = into.setdefault(kind, {})
        for key, value in (items or {}).items():
            if key in bucket:
                raise BundleError(
                    "BUNDLE_INVALID",
                    {"where": str(path), "reason": f"resource {kind}.{key} is defined twice (also in {files[(kind, key)]})"},
                )
            bucket[key] = value
            files[(kind, key)] = path


def _merge_override(base: Any, override: Any) -> Any:
    """A target's resource override merged into the resource as the CLI merges configuration:
    mappings key by key, lists appended, anything else replaced."""
    if isinstance(base, Mapping) and isinstance(override, Mapping):
        merged = dict(base)
        for key, value in override.items():
            merged[key] = _merge_override(base[key], value) if key in base else value
        return merged
    if isinstance(base, list) and isinstance(override, list):
        return [*base, *override]
    return override


def load_bundle(
    root: Path,
    target: str | None = None,
    overrides: Mapping[str, Any] | None = None,
    extra_context: Mapping[str, Any] | None = None,
    inputs_as_markers: bool = False,
) -> Bundle:
    """Loads databricks.yml and its includes; picks `target` or the default target."""
    root = root.resolve()
    main_file = root / BUNDLE_FILE
    data = _read_yaml(main_file)
    if not isinstance(data, dict):
        raise BundleError("BUNDLE_INVALID", {"where": str(main_file), "reason": "the file must be a mapping"})
    files: dict[tuple[str, str], Path] = {}
    resources: dict[str, Any] = {}
    _merge_resources(resources, data.get("resources") or {}, main_file, files)
    for pattern in data.get("include") or []:
        for name in sorted(glob.glob(str(root / pattern))):
            path = Path(name)
            included = _read_yaml(path)
            if not isinstance(included, dict):
                raise BundleError("BUNDLE_INVALID", {"where": str(path), "reason": "the file must be a mapping"})
            _merge_resources(resources, included.get("resources") or {}, path, files)
            if included.get("variables"):
                data.setdefault("variables", {}).update(included["variables"])
            # A target an included file declares too is merged into the main file's, as the CLI
            # merges configuration (a dev-only resource in its own file keeps dev's mode and variables).
            declared = data.setdefault("targets", {}) if included.get("targets") else {}
            for target_name, settings in (included.get("targets") or {}).items():
                declared[target_name] = (_merge_override(declared[target_name], settings or {})
                                         if declared.get(target_name) else settings)
    data["resources"] = resources
    targets = data.get("targets") or {}
    if target is None:
        defaults = [name for name, t in targets.items() if (t or {}).get("default")]
        target = defaults[0] if defaults else (next(iter(targets)) if targets else "default")
    elif target not in targets and target != LOCAL_TARGET:
        raise BundleError("BUNDLE_UNKNOWN_TARGET", {"target": target, "available": ", ".join(targets) or "none"})
    for kind, items in ((targets.get(target) or {}).get("resources") or {}).items():
        bucket = resources.setdefault(kind, {})
        for key, value in (items or {}).items():
            bucket[key] = _merge_override(bucket[key], value) if key in bucket else value
    return Bundle(
        root=root,
        target=target,
        data=data,
        resource_files=files,
        overrides=dict(overrides or {}),
        extra_context=dict(extra_context or {}),
        inputs_as_markers=inputs_as_markers,
    )


@dataclass(frozen=True)
class LocalSettings:
    """`lakewatch.local.yml`: how the bundle runs on this machine."""

    base_target: str | None
    variables: dict[str, Any]
    configuration: dict[str, str]
    spark_conf: dict[str, str]
    # pipeline resource key -> configuration for that pipeline's local updates only
    pipeline_configuration: dict[str, dict[str, str]] = field(default_factory=dict)

    def configuration_of(self, pipeline_key: str) -> dict[str, str]:
        """Local configuration of one pipeline: the common entries, then its own."""
        return {**self.configuration, **self.pipeline_configuration.get(pipeline_key, {})}


def load_local_settings(root: Path) -> LocalSettings:
    path = root / LOCAL_SETTINGS_FILE
    data = _read_yaml(path) if path.is_file() else {}
    allowed = {"base_target", "variables", "configuration", "spark_conf", "pipelines"}
    unknown = set(data) - allowed
    if unknown:
        raise BundleError(
            "BUNDLE_INVALID",
            {"where": str(path), "reason": f"unknown key(s) {', '.join(sorted(unknown))}; allowed: {', '.join(sorted(allowed))}"},
        )
    return LocalSettings(
        base_target=data.get("base_target"),
        variables=dict(data.get("variables") or {}),
        configuration={str(k): str(v) for k, v in (data.get("configuration") or {}).items()},
        spark_conf={str(k): str(v) for k, v in (data.get("spark_conf") or {}).items()},
        pipeline_configuration=_pipeline_configuration(path, data.get("pipelines") or {}),
    )


def _pipeline_configuration(path: Path, data: Mapping[str, Any]) -> dict[str, dict[str, str]]:
    result = {}
    for key, entry in data.items():
        if not isinstance(entry, Mapping) or set(entry) - {"configuration"}:
            raise BundleError(
                "BUNDLE_INVALID",
                {"where": f"{path}: pipelines.{key}", "reason": "only `configuration` may be set per pipeline"},
            )
        result[str(key)] = {str(k): str(v) for k, v in (entry.get("configuration") or {}).items()}
    return result


def load_local_bundle(root: Path, home: Path, target: str | None = None,
                      variables: Mapping[str, Any] | None = None) -> tuple[Bundle, LocalSettings]:
    """The bundle as the local engine runs it: `target`'s values (default: the local settings'
    base_target), overridden by the local settings' variables, then by `variables` (`--var`, which
    wins as it does over BUNDLE_VAR_<name> in the Databricks CLI), with `${lakewatch.home}` pointing at
    the local state folder."""
    settings = load_local_settings(root)
    bundle = load_bundle(
        root,
        target=target or settings.base_target,
        overrides={**settings.variables, **(variables or {})},
        extra_context={"lakewatch": {"home": str(home)}},
    )
    unknown = set(settings.pipeline_configuration) - set(bundle.resources("pipelines"))
    if unknown:
        raise BundleError(
            "BUNDLE_INVALID",
            {"where": f"{root / LOCAL_SETTINGS_FILE}: pipelines",
             "reason": f"no pipeline resource {', '.join(sorted(unknown))} in the bundle"},
        )
    return bundle, settings
