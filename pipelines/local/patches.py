"""lakewatch's patches of the local engine: the one registry of what each changes in Spark, SDP, Delta
or Hadoop, which versions it was written for, and which a local JVM runs with.

Each patch is a jar of its own (built at setup, `python -m pipelines.local.patches`, into
`.cache/java`) and applies on its own: a patch turned off, written for another pyspark or Delta,
not built, or refused at setup because a class it rewrites is not in the shape it was written for
costs only its own improvement; the engine starts without it and runs the shipped classes. The
engine says which are active and which are not, and why: in its output when it starts (and so in
the output of the command that started it) and in `lakewatch engine status`.

`LAKEWATCH_PATCHES_OFF` turns patches off by name (comma-separated, or `all`) for the JVMs started
while it is set: an engine already running keeps what it started with (`lakewatch engine stop`).

The patch modules (localfs, delta_catalog, sdp_classes) build on javalib and know nothing of this
registry; this module lists them.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterable, Mapping, TypedDict

from pipelines.errors import LakewatchError
from pipelines.local import delta_catalog, jars, localfs, sdp_classes
from pipelines.local.javalib import BuildRefused, JavaLibrary, default_cache, failure_reason, with_class_path

OFF_ENV = "LAKEWATCH_PATCHES_OFF"
ALL = "all"
SPARK_VERSION = "4.2.0"  # the pyspark every patch was written for (its SDP classes, and the Hadoop it ships)
DELTA_VERSION = "4.4"  # the Delta release line the catalog patch was written for: any 4.4.x


@dataclass(frozen=True)
class Patch:
    """One jar of lakewatch's and what it changes in the engine."""

    name: str  # how LAKEWATCH_PATCHES_OFF and the reports name it
    improves: str  # what the engine gains with it
    changes: str  # the classes or settings of Spark, SDP, Delta or Hadoop it replaces
    written_for: Mapping[str, str]  # component -> version, or release line ("4.4": any 4.4.x)
    library: JavaLibrary
    conf: Callable[[Path], dict[str, str]]  # the settings that make a JVM use the jar
    needs: tuple[str, ...] = ()  # patches whose classes it calls


PATCHES: tuple[Patch, ...] = (
    Patch("local_fs", "Hadoop's local file system without a chmod or readlink process per file",
          "Hadoop's RawLocalFileSystem and RawLocalFs, as fs.file.impl and fs.AbstractFileSystem.file.impl",
          {"pyspark": SPARK_VERSION}, localfs.LIBRARY, localfs.spark_conf),
    Patch("unchanged_properties", "no Delta commit for an ALTER TABLE that changes nothing",
          "Delta's DeltaCatalog, as spark.sql.catalog.spark_catalog",
          {"pyspark": SPARK_VERSION, "delta": DELTA_VERSION}, delta_catalog.LIBRARY, delta_catalog.spark_conf),
    Patch("sdp_control", "an update's run stopped on Ctrl-C, and its flows waited for by the recovery",
          "nothing: it adds classes that call SDP's", {"pyspark": SPARK_VERSION}, sdp_classes.CONTROL,
          sdp_classes.spark_conf),
    Patch("resolution_pause", "graph resolution waits for its analyses without spinning",
          "SDP's DataflowGraphTransformer", {"pyspark": SPARK_VERSION}, sdp_classes.RESOLUTION_PAUSE,
          sdp_classes.spark_conf),
    Patch("scheduler_poll", "the flow scheduler looks at its flows every 10 ms, without spinning",
          "SDP's TriggeredGraphExecution", {"pyspark": SPARK_VERSION}, sdp_classes.SCHEDULER_POLL,
          sdp_classes.spark_conf),
    Patch("view_refresh", "a materialized view's refresh is one overwrite, so readers never see it empty",
          "SDP's DatasetManager and BatchTableWrite", {"pyspark": SPARK_VERSION}, sdp_classes.VIEW_REFRESH,
          sdp_classes.spark_conf, needs=("sdp_control",)),
    Patch("flow_starts", "a flow that reads no table starts without its query analysed again",
          "SDP's DataflowGraph", {"pyspark": SPARK_VERSION}, sdp_classes.FLOW_STARTS, sdp_classes.spark_conf),
)
NAMES = tuple(patch.name for patch in PATCHES)


class PatchRecord(TypedDict):
    """A patch's state in a JVM, as the engine records it (engine.json) and reports it."""

    name: str
    active: bool
    why: str | None  # why it is not active; None when it is
    jar: str | None  # the jar the JVM loads; None when not active


def runtime_versions() -> dict[str, str]:
    """The versions of what the patches change: pyspark's (SDP, Hadoop) and that of Delta's jars."""
    import pyspark

    return {"pyspark": pyspark.__version__, "delta": jars.DELTA_VERSION}


def turned_off(environ: Mapping[str, str] | None = None) -> set[str]:
    """The patches LAKEWATCH_PATCHES_OFF names; a name that is no patch is an error, not ignored."""
    text = (os.environ if environ is None else environ).get(OFF_ENV, "")
    names = {name.strip() for name in text.split(",") if name.strip()}
    if ALL in names:
        return set(NAMES)
    unknown = sorted(names - set(NAMES))
    if unknown:
        raise LakewatchError("CLI_INVALID_ARGUMENT", {
            "reason": f"{OFF_ENV} names no patch {', '.join(unknown)} (patches: {', '.join(NAMES)}, or {ALL})"})
    return names


def version_mismatch(patch: Patch, versions: Mapping[str, str]) -> str | None:
    """Why `patch` does not fit `versions` (written for another one), or None when it does."""
    for component, wanted in patch.written_for.items():
        found = versions.get(component, "unknown")
        if found != wanted and not found.startswith(f"{wanted}."):
            line = f"{wanted}.x" if wanted.count(".") < 2 else wanted
            return f"written for {component} {line}, this is {component} {found}"
    return None


def records(versions: Mapping[str, str] | None = None, environ: Mapping[str, str] | None = None,
            cache: Path | None = None) -> list[PatchRecord]:
    """Each patch's state for a JVM started now, in registry order."""
    versions = runtime_versions() if versions is None else versions
    off = turned_off(environ)
    folder = cache or default_cache()
    found: dict[str, PatchRecord] = {}
    for patch in PATCHES:
        jar = folder / patch.library.jar_name
        why = None
        if patch.name in off:
            why = f"turned off by {OFF_ENV}"
        if why is None:
            why = version_mismatch(patch, versions)
        if why is None:
            inactive = [need for need in patch.needs if not found[need]["active"]]
            why = f"needs {', '.join(inactive)}, which is not active" if inactive else None
        if why is None and patch.library.current_jar(jar) is None:
            failure = patch.library.build_failure(jar)
            why = f"not built: {failure}" if failure else "not built from the current sources; `make setup` builds it"
        found[patch.name] = {"name": patch.name, "active": why is None, "why": why,
                             "jar": str(jar) if why is None else None}
    return list(found.values())


def spark_conf(states: Iterable[PatchRecord] | None = None) -> dict[str, str]:
    """The settings of the active patches, in registry order: jars on the class path (or in `spark.jars`,
    to follow Delta's) and the classes they name. Merge them with `javalib.with_class_path`."""
    conf: dict[str, str] = {}
    by_name = {patch.name: patch for patch in PATCHES}
    for state in records() if states is None else states:
        if state["active"] and state["jar"]:
            conf = with_class_path(conf, by_name[state["name"]].conf(Path(state["jar"])))
    return conf


def summary(states: Iterable[PatchRecord]) -> str:
    """One line: how many patches are active, and each inactive one with why."""
    states = list(states)
    inactive = [state for state in states if not state["active"]]
    if not inactive:
        return f"lakewatch's engine patches: all {len(states)} active ({', '.join(s['name'] for s in states)})"
    why = "; ".join(f"{state['name']} ({state['why']})" for state in inactive)
    return f"lakewatch's engine patches: {len(states) - len(inactive)} of {len(states)} active; inactive: {why}"


def describe(states: Iterable[PatchRecord]) -> list[str]:
    """One line per patch: active or not (and why), what it improves and what it replaces."""
    by_name = {patch.name: patch for patch in PATCHES}
    lines = []
    for state in states:
        patch = by_name.get(state["name"])
        improves = f": {patch.improves}; replaces {patch.changes}" if patch else ""
        status = "active" if state["active"] else f"inactive, {state['why']}"
        lines.append(f"{state['name']} ({status}){improves}")
    return lines


def build(names: Iterable[str] | None = None) -> int:
    """Builds the jars of the patches (all, or those named) that fit this pyspark and Delta; a patch that
    cannot be built is said and skipped: the engine runs without it."""
    versions = runtime_versions()
    wanted = set(NAMES if names is None else names)
    for patch in PATCHES:
        if patch.name not in wanted:
            continue
        mismatch = version_mismatch(patch, versions)
        if mismatch:
            print(f"{patch.name}: not built ({mismatch}); local JVMs run without it", file=sys.stderr)
            continue
        started = time.monotonic()
        try:
            path = patch.library.build()
        except (OSError, subprocess.CalledProcessError, BuildRefused, LakewatchError) as e:
            print(f"{patch.name}: no {patch.library.jar_name} ({failure_reason(e)}); local JVMs run without it",
                  file=sys.stderr)
            continue
        print(f"{patch.name}: {path} ({time.monotonic() - started:.1f}s)")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Build lakewatch's engine patches (jars in .cache/java).")
    parser.add_argument("names", nargs="*", metavar="PATCH", help=f"patches to build (default: all): {', '.join(NAMES)}")
    args = parser.parse_args(argv)
    unknown = sorted(set(args.names) - set(NAMES))
    if unknown:
        parser.error(f"no patch named {', '.join(unknown)}")
    from pipelines.progress import step

    with step(f"setup: building the engine patches ({', '.join(args.names or NAMES)})"):
        return build(args.names or None)


if __name__ == "__main__":
    sys.exit(main())
