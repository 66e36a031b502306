"""Offline checks of the bundle, since `databricks bundle validate` needs a live workspace.

- every resource loads into the `databricks-bundles` typed models, which reject unknown fields,
  wrong enum values and wrong types;
- the top level, the targets and the variables use only keys the bundle schema knows;
- every `${var.*}`, `${bundle.*}`, `${workspace.*}` and `${resources.*}` reference resolves, for
  every target;
- every path exists: pipeline library globs (and that they match files), root paths, dashboard files,
  the SQL files of job tasks;
- the rules the CLI enforces per target mode (production needs a root path or run_as; development
  cannot force schedules to run);
- deploy safety: no placeholder values (`<...>`) anywhere, a `bundle.databricks_cli_version` in the
  CLI's syntax with a floor that covers the features used, a target that runs as a principal deploys
  outside /Workspace/Shared (and a Shared root has `users` CAN_MANAGE, as the CLI asks), a root in a
  home folder has its owner CAN_MANAGE in `permissions`, the run_as service principal and the readers
  group hold their Unity Catalog grants, every grant's privileges apply to its securable, every
  pipeline pins its session time zone to UTC, no alert subscribes to (and no job pages) an empty
  notification destination, every job task that updates the ingest pipeline runs after a task that
  creates its landing folders (jobs/prepare_landing.py) with the pipeline's tables and landing root.
Each problem is one Finding naming the file, the place in it, what is wrong and the fix.
"""

from __future__ import annotations

from pathlib import Path
from typing import Iterable

import yaml

from pipelines.bundle import BUNDLE_FILE, load_bundle
from pipelines.bundle_check.deploy_safety import (check_cli_version, check_deploy_safety, check_first_run,
                                                  check_grants, check_placeholders)
from pipelines.bundle_check.finding import Finding
from pipelines.bundle_check.structure import check_models, check_paths, check_references, check_structure
from pipelines.errors import BundleError

__all__ = ["Finding", "check_bundle", "required_inputs"]


def required_inputs(root: Path) -> dict[str, list[str]]:
    """Per target: the variables the deployer must supply (no default, not set by the target)."""
    base = load_bundle(root)
    return {name: load_bundle(root, target=name).required_inputs() for name in (base.data.get("targets") or {})}


def check_bundle(root: Path, targets: Iterable[str] | None = None) -> list[Finding]:
    """All offline checks, for every target (or the given ones)."""
    try:
        findings = check_structure(root)
        findings += check_placeholders(root)
        findings += check_cli_version(root)
        base = load_bundle(root)
    except (BundleError, yaml.YAMLError) as e:
        return [Finding(str(root / BUNDLE_FILE), str(e))]
    findings += check_paths(base)
    for target in targets or list((base.data.get("targets") or {}).keys()):
        # Resources with the target's overrides (grants); variables the deployer supplies, and those
        # the CLI looks up, resolve to markers: they are inputs, not mistakes.
        bundle = load_bundle(root, target=target, inputs_as_markers=True)
        findings += check_models(bundle)
        findings += check_references(bundle)
        findings += check_deploy_safety(bundle)
        findings += check_first_run(bundle)
        findings += check_grants(bundle)
    return list(dict.fromkeys(findings))  # a resource's problem is reported once, not once per target
