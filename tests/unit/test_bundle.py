"""Reading the bundle the way the Databricks CLI resolves it (pipelines/bundle.py)."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from pipelines.bundle import load_bundle, load_local_bundle
from pipelines.errors import BundleError

MAIN = """
bundle: {name: demo}
include: [resources/*.yml]
variables:
  catalog: {default: main}
  schema: {description: no default}
  landing: {default: "/Volumes/${var.catalog}/${var.schema}/landing"}
targets:
  dev:
    default: true
    variables: {schema: "dev_${workspace.current_user.short_name}"}
  prod:
    variables: {schema: prod}
"""

PIPELINE = """
resources:
  pipelines:
    ingest:
      name: ingest_${bundle.target}
      catalog: ${var.catalog}
      schema: ${var.schema}
      libraries:
        - glob: {include: ../transformations/ingest/**}
      configuration:
        landing: ${var.landing}
        root: ${workspace.file_path}
      event_log: {catalog: "${var.catalog}", schema: "${var.schema}", name: ingest_event_log}
"""


def make(tmp_path: Path, main: str = MAIN, pipeline: str = PIPELINE) -> Path:
    (tmp_path / "resources").mkdir()
    (tmp_path / "databricks.yml").write_text(textwrap.dedent(main))
    (tmp_path / "resources" / "ingest.pipeline.yml").write_text(textwrap.dedent(pipeline))
    return tmp_path


def test_default_target_and_nested_variables(tmp_path, monkeypatch):
    monkeypatch.setattr("pipelines.bundle._local_user", lambda: "ana")
    p = load_bundle(make(tmp_path)).pipeline("ingest")
    assert p.name == "ingest_dev"
    assert (p.catalog, p.schema) == ("main", "dev_ana")
    assert p.configuration["landing"] == "/Volumes/main/dev_ana/landing"
    assert p.configuration["root"] == str(tmp_path.resolve())
    assert p.library_globs == (str(tmp_path.resolve() / "transformations" / "ingest" / "**"),)
    assert p.event_log is not None and p.event_log.full_name == "main.dev_ana.ingest_event_log"


def test_precedence_override_then_environment_then_target(tmp_path, monkeypatch):
    root = make(tmp_path)
    monkeypatch.setenv("BUNDLE_VAR_catalog", "from_env")
    assert load_bundle(root, target="prod").pipeline("ingest").catalog == "from_env"
    assert load_bundle(root, target="prod", overrides={"catalog": "local"}).pipeline("ingest").catalog == "local"


def test_variable_without_value_is_named(tmp_path):
    main = MAIN.replace("    variables: {schema: prod}\n", "")
    with pytest.raises(BundleError) as info:
        load_bundle(make(tmp_path, main=main), target="prod").pipeline("ingest")
    assert info.value.error_class == "BUNDLE_UNRESOLVED_REFERENCE"
    assert "var.schema" in str(info.value) and "declared without a default" in str(info.value)


def test_undefined_variable_names_where_it_is_used(tmp_path):
    pipeline = PIPELINE.replace("${var.landing}", "${var.landng}")
    with pytest.raises(BundleError) as info:
        load_bundle(make(tmp_path, pipeline=pipeline)).pipeline("ingest")
    assert "var.landng" in str(info.value) and "configuration.landing" in str(info.value)


def test_reference_cycle(tmp_path):
    main = MAIN.replace("catalog: {default: main}", "catalog: {default: '${var.landing}'}")
    with pytest.raises(BundleError) as info:
        load_bundle(make(tmp_path, main=main)).pipeline("ingest")
    assert info.value.error_class == "BUNDLE_REFERENCE_CYCLE"


def test_unknown_pipeline_and_target(tmp_path):
    root = make(tmp_path)
    with pytest.raises(BundleError, match="BUNDLE_PIPELINE_NOT_FOUND"):
        load_bundle(root).pipeline("nope")
    with pytest.raises(BundleError, match="BUNDLE_UNKNOWN_TARGET"):
        load_bundle(root, target="staging")


def test_project_bundle_resolves_for_the_local_engine(project_root, tmp_path):
    bundle, settings = load_local_bundle(project_root, tmp_path)
    ingest = bundle.pipeline("lakewatch_ingest")
    assert ingest.catalog == "spark_catalog"
    assert ingest.configuration["lakewatch.landing_root"] == f"{tmp_path}/landing"
    assert settings.configuration["lakewatch.engine"] == "local"
    assert ingest.event_log is not None


def test_local_settings_configure_one_pipeline_and_name_an_unknown_one(tmp_path):
    root = make(tmp_path)
    (root / "lakewatch.local.yml").write_text(textwrap.dedent("""
        configuration: {shared: "1", tuned: common}
        pipelines:
          ingest: {configuration: {tuned: ingest only}}
    """))
    _, settings = load_local_bundle(root, tmp_path / "home")
    assert settings.configuration_of("ingest") == {"shared": "1", "tuned": "ingest only"}
    assert settings.configuration_of("other") == {"shared": "1", "tuned": "common"}
    (root / "lakewatch.local.yml").write_text("pipelines: {ingset: {configuration: {a: b}}}\n")
    with pytest.raises(BundleError, match="no pipeline resource ingset"):
        load_local_bundle(root, tmp_path / "home")


def test_lookup_variable_needs_a_local_value_and_is_a_marker_for_the_check(tmp_path):
    main = MAIN.replace("targets:", '  warehouse_name: {default: shared}\n'
                                    '  warehouse_id: {lookup: {warehouse: "${var.warehouse_name}"}}\ntargets:')
    root = make(tmp_path, main=main)
    with pytest.raises(BundleError) as info:
        load_bundle(root).variable("warehouse_id")
    assert "looks up the warehouse named 'shared' at deploy time" in str(info.value)
    assert load_bundle(root, overrides={"warehouse_id": "local"}).variable("warehouse_id") == "local"
    assert load_bundle(root, inputs_as_markers=True).variable("warehouse_id") == "<warehouse named 'shared'>"


def test_target_resources_are_merged_lists_appended(tmp_path):
    main = MAIN.replace("    variables: {schema: prod}\n", """    variables: {schema: prod}
    resources:
      pipelines:
        ingest:
          configuration: {extra: "1"}
          libraries: [{file: {path: ../transformations/more.py}}]
""")
    root = make(tmp_path, main=main)
    prod = load_bundle(root, target="prod").resources("pipelines")["ingest"]
    assert prod["configuration"]["extra"] == "1" and "landing" in prod["configuration"]
    assert len(prod["libraries"]) == 2
    assert "extra" not in load_bundle(root, target="dev").resources("pipelines")["ingest"]["configuration"]


def test_project_local_bundle_resolves_without_workspace_inputs(project_root, tmp_path):
    bundle, _ = load_local_bundle(project_root, tmp_path)
    assert bundle.variable("warehouse_id") == "local"
    for key in bundle.resources("pipelines"):
        assert bundle.pipeline(key).configuration["spark.sql.session.timeZone"] == "UTC"


def test_a_target_in_an_included_file_is_merged_into_the_main_file_s(tmp_path, monkeypatch):
    """A dev-only resource in a file of its own: dev keeps its default, its variables and the
    resources of every target, and gains the pipeline; prod does not (the CLI merges included targets)."""
    monkeypatch.setattr("pipelines.bundle._local_user", lambda: "ana")
    root = make(tmp_path)
    (root / "resources" / "example.pipeline.yml").write_text(textwrap.dedent("""
        targets:
          dev:
            resources:
              pipelines:
                example: {name: example, catalog: "${var.catalog}", schema: "${var.schema}"}
        """))
    dev = load_bundle(root)
    assert dev.target == "dev" and dev.pipeline("ingest").schema == "dev_ana"
    assert dev.pipeline("example").schema == "dev_ana"
    prod = load_bundle(root, target="prod")
    assert "example" not in prod.resources("pipelines") and prod.pipeline("ingest").schema == "prod"
