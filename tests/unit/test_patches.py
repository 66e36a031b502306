"""The registry of lakewatch's engine patches (pipelines/local/patches.py): each patch applies on its own,
keyed by the versions it was written for, and can be turned off by name; what is left out is said.

Oracles: the settings a local JVM is started with (session.base_conf, what the engine and the tests'
session pass to Spark) against the jars setup built, and the Java sources on disk. No JVM here: that a
patch's classes really run is what test_sdp_classes, test_localfs and test_delta_catalog show, and that
the engine runs an update without any, tests/integration/test_patches.py."""

from __future__ import annotations

import os

import pytest

from pipelines.errors import LakewatchError
from pipelines.local import delta_catalog, javalib, patches, session

PLAIN_CATALOG = "org.apache.spark.sql.delta.catalog.DeltaCatalog"


@pytest.fixture(scope="module")
def built() -> dict[str, str]:
    """Each patch's jar, as setup built it."""
    jars = {}
    for patch in patches.PATCHES:
        jar = patch.library.current_jar()
        if jar is None:
            pytest.fail(f"make setup built no {patch.library.jar_name} from the current sources "
                        f"({patch.library.build_failure() or 'python -m pipelines.local.patches says why'})")
        jars[patch.name] = str(jar)
    return jars


def jvm_jars(conf: dict[str, str]) -> set[str]:
    """The jars a JVM started with `conf` loads besides Spark's: its class path and `spark.jars`."""
    return {*conf.get(javalib.CLASS_PATH, "").split(os.pathsep), *conf.get(javalib.JARS, "").split(",")} - {""}


def test_every_patch_is_active_by_default(built, monkeypatch):
    monkeypatch.delenv(patches.OFF_ENV, raising=False)
    assert [(r["name"], r["active"], r["why"]) for r in patches.records()] == [(n, True, None) for n in patches.NAMES]
    conf = session.base_conf()
    assert set(built.values()) <= jvm_jars(conf)
    assert conf[delta_catalog.SESSION_CATALOG] == delta_catalog.CATALOG_CLASS
    assert conf["spark.hadoop.fs.file.impl"] == "lakewatch.hadoop.NoShellLocalFileSystem"
    # Delta's jars first in spark.jars, then the catalog's (it extends Delta's catalog, loaded where Delta is).
    assert conf[javalib.JARS].split(",")[-1] == built["unchanged_properties"]


@pytest.mark.parametrize("name", patches.NAMES)
def test_a_patch_turned_off_by_name_leaves_out_its_own_jar_and_settings_only(built, monkeypatch, name):
    monkeypatch.setenv(patches.OFF_ENV, name)
    states = {r["name"]: r for r in patches.records()}
    assert states[name]["why"] == f"turned off by {patches.OFF_ENV}"
    depending = {p.name for p in patches.PATCHES if name in p.needs}
    assert {n for n, r in states.items() if not r["active"]} == {name, *depending}
    for other in depending:
        assert states[other]["why"] == f"needs {name}, which is not active"
    loaded = jvm_jars(session.base_conf())
    assert {n for n, jar in built.items() if jar in loaded} == set(patches.NAMES) - {name, *depending}


def test_all_turns_every_patch_off_and_the_shipped_classes_run(monkeypatch):
    monkeypatch.setenv(patches.OFF_ENV, "all")
    assert not any(r["active"] for r in patches.records())
    conf = session.base_conf()
    assert javalib.CLASS_PATH not in conf  # Spark's own jars only: Hadoop's and SDP's classes as shipped
    assert conf[delta_catalog.SESSION_CATALOG] == PLAIN_CATALOG
    assert "spark.hadoop.fs.file.impl" not in conf and "spark.hadoop.fs.AbstractFileSystem.file.impl" not in conf
    assert all("/.cache/ivy/" in jar for jar in conf[javalib.JARS].split(","))  # Delta's jars, nothing of ours


def test_a_name_that_is_no_patch_is_an_error_not_ignored(monkeypatch):
    monkeypatch.setenv(patches.OFF_ENV, "view_refresh, view_refersh")
    with pytest.raises(LakewatchError, match="names no patch view_refersh"):
        patches.records()


def test_a_patch_written_for_another_version_is_left_out_on_its_own(built):
    other_delta = {r["name"]: r for r in patches.records(versions={"pyspark": "4.2.0", "delta": "4.5.0"}, environ={})}
    assert {n for n, r in other_delta.items() if not r["active"]} == {"unchanged_properties"}
    assert other_delta["unchanged_properties"]["why"] == "written for delta 4.4.x, this is delta 4.5.0"
    assert all(r["active"] for r in patches.records(versions={"pyspark": "4.2.0", "delta": "4.4.7"}, environ={}))
    other_spark = patches.records(versions={"pyspark": "4.2.1", "delta": "4.4.0"}, environ={})
    assert {r["why"] for r in other_spark} == {"written for pyspark 4.2.0, this is pyspark 4.2.1"}
    assert patches.spark_conf(other_spark) == {}


def test_a_patch_not_built_is_said_and_left_out(tmp_path):
    """A folder without the jars: setup not run (or a jar built from other sources)."""
    states = patches.records(environ={}, cache=tmp_path)
    assert {r["why"] for r in states if r["name"] != "view_refresh"} == {
        "not built from the current sources; `make setup` builds it"}
    conf = javalib.with_class_path({**session.DELTA_CONF, javalib.JARS: str(tmp_path / "delta.jar")},
                                   patches.spark_conf(states))
    assert conf[javalib.JARS] == str(tmp_path / "delta.jar") and conf[delta_catalog.SESSION_CATALOG] == PLAIN_CATALOG


def test_every_java_source_belongs_to_one_patch_and_every_jar_is_its_own():
    """A class added under pipelines/local/java is built into a jar (or is the rewriter, run at setup),
    and no two patches share a jar or a source: turning one off cannot take another's classes along."""
    compiled = [source for patch in patches.PATCHES for source in patch.library.sources]
    rewriter = {source for patch in patches.PATCHES for source in patch.library.inputs}
    on_disk = {path.relative_to(javalib.SOURCES).as_posix() for path in javalib.SOURCES.rglob("*.java")}
    assert len(compiled) == len(set(compiled))
    assert set(compiled) | rewriter == on_disk and not set(compiled) & rewriter
    assert len({patch.library.jar_name for patch in patches.PATCHES}) == len(patches.PATCHES)


def test_the_reports_say_what_is_inactive_and_why():
    states = patches.records(versions={"pyspark": "4.2.0", "delta": "4.5.0"}, environ={patches.OFF_ENV: "flow_starts"})
    line = patches.summary(states)
    assert line.startswith(f"lakewatch's engine patches: {len(patches.NAMES) - 2} of {len(patches.NAMES)} active; ")
    assert "unchanged_properties (written for delta 4.4.x, this is delta 4.5.0)" in line
    assert f"flow_starts (turned off by {patches.OFF_ENV})" in line
    described = patches.describe(states)
    assert len(described) == len(patches.NAMES)
    assert described[0].startswith("local_fs (active): Hadoop's local file system")
