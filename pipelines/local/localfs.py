"""Hadoop's local file system for the local engine, without a process per call.

Hadoop's `RawLocalFileSystem`, when Hadoop's native library is missing (pyspark ships none), starts
a `chmod` process for every file it creates (`setPermission`) and a `readlink` process for every link
status it is asked for (each rename through `FileContext`, which Delta's log store and Spark's
streaming checkpoints use). Java Flight Recorder's `jdk.ProcessStart` events on the engine: an
observability refresh of the demo's tables started about 3,700 processes, an ingest update with
nothing new about 900; each costs about 2 ms on this machine (bench/RESULTS.md).

`pipelines/local/java/lakewatch/hadoop` holds four small classes that do the same with Java's own file
API and leave what it cannot do the same way (a sticky bit, a symbolic link) to Hadoop.
`make setup` compiles them against the Hadoop API jar pyspark ships (`python -m
pipelines.local.javalib`) into `.cache/java/lakewatch-localfs.jar` (git-ignored); every local JVM
(the engine, the tests' classic session) then puts that jar on its class path and names the classes
in `fs.file.impl` and `fs.AbstractFileSystem.file.impl`. Without the jar (setup not run, no `javac`)
the settings are left out and Hadoop's own classes run, as before.

This is the local engine's only change to how files are written: the same files, the same
permissions, the same renames. A Spark Connect endpoint given with `--remote` keeps its own settings.
"""

from __future__ import annotations

from pathlib import Path

from pipelines.local.javalib import CLASS_PATH, JavaLibrary, pyspark_jar

PACKAGE = "lakewatch.hadoop"
FILE_SYSTEM = f"{PACKAGE}.NoShellLocalFileSystem"  # fs.file.impl (FileSystem API)
ABSTRACT_FILE_SYSTEM = f"{PACKAGE}.NoShellLocalFs"  # fs.AbstractFileSystem.file.impl (FileContext API)


def hadoop_api_jar() -> Path:
    """The Hadoop client API jar pyspark ships: what the classes compile against."""
    return pyspark_jar("hadoop-client-api-")


LIBRARY = JavaLibrary("lakewatch-localfs", PACKAGE, lambda: [hadoop_api_jar()])
JAR_NAME = LIBRARY.jar_name


def current_jar(jar: Path | None = None) -> Path | None:
    """The jar, when it exists and was built from the sources as they are now; else None."""
    return LIBRARY.current_jar(jar)


def spark_conf(jar: Path | None = None) -> dict[str, str]:
    """The settings that make a local JVM use the classes: empty when the jar is missing or stale."""
    path = current_jar(jar)
    if path is None:
        return {}
    return {
        CLASS_PATH: str(path),
        "spark.hadoop.fs.file.impl": FILE_SYSTEM,
        "spark.hadoop.fs.AbstractFileSystem.file.impl": ABSTRACT_FILE_SYSTEM,
    }
