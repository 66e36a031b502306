"""Hadoop's local file system for the local engine, without a process per call (the `local_fs` patch).

Hadoop's `RawLocalFileSystem`, when Hadoop's native library is missing (pyspark ships none), starts
a `chmod` process for every file it creates (`setPermission`) and a `readlink` process for every link
status it is asked for (each rename through `FileContext`, which Delta's log store and Spark's
streaming checkpoints use): thousands of processes in an update.

`pipelines/local/java/lakewatch/hadoop` holds four small classes that do the same with Java's own file
API and leave what it cannot do the same way (a symbolic link's status) to Hadoop. Setup compiles them
against the Hadoop API jar pyspark ships into `.cache/java/lakewatch-localfs.jar` (git-ignored); a
local JVM (the engine, the tests' classic session) then puts that jar on its class path and names the
classes in `fs.file.impl` and `fs.AbstractFileSystem.file.impl`. Without the jar (setup not run, no
`javac`, the patch turned off) the settings are left out and Hadoop's own classes run.

Why classes of our own: the Hadoop that Spark 4.2 ships has no setting that avoids those processes
(`setPermission` runs `chmod` unless the native library is loaded; `readlink` and its `Stat` are shell
commands, and `RawLocalFileSystem` chooses between them with a constant, not a setting). The
published "bare naked local file system" library replaces only `fs.file.impl`: `FileContext` still
runs `chmod` and `readlink`, and its `setPermission` drops the sticky bit and a directory's set-group-ID
bit, which chmod keeps.

The same files, the same permissions, the same renames. A Spark Connect endpoint given with `--remote`
keeps its own settings.
"""

from __future__ import annotations

from pathlib import Path

from pipelines.local.javalib import CLASS_PATH, JavaLibrary, package_sources, pyspark_jar

PACKAGE = "lakewatch.hadoop"
FILE_SYSTEM = f"{PACKAGE}.NoShellLocalFileSystem"  # fs.file.impl (FileSystem API)
ABSTRACT_FILE_SYSTEM = f"{PACKAGE}.NoShellLocalFs"  # fs.AbstractFileSystem.file.impl (FileContext API)


def hadoop_api_jar() -> Path:
    """The Hadoop client API jar pyspark ships: what the classes compile against."""
    return pyspark_jar("hadoop-client-api-")


LIBRARY = JavaLibrary("lakewatch-localfs", package_sources(PACKAGE), lambda: [hadoop_api_jar()])
JAR_NAME = LIBRARY.jar_name


def current_jar(jar: Path | None = None) -> Path | None:
    """The jar, when it exists and was built from the sources as they are now; else None."""
    return LIBRARY.current_jar(jar)


def spark_conf(jar: Path) -> dict[str, str]:
    """The settings that make a local JVM use the classes of `jar`."""
    return {
        CLASS_PATH: str(jar),
        "spark.hadoop.fs.file.impl": FILE_SYSTEM,
        "spark.hadoop.fs.AbstractFileSystem.file.impl": ABSTRACT_FILE_SYSTEM,
    }
