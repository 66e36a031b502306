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
pipelines.local.localfs`) into `.cache/localfs/lakewatch-localfs.jar` (git-ignored); every local JVM
(the engine, the tests' classic session) then puts that jar on its class path and names the classes
in `fs.file.impl` and `fs.AbstractFileSystem.file.impl`. Without the jar (setup not run, no `javac`)
the settings are left out and Hadoop's own classes run, as before.

This is the local engine's only change to how files are written: the same files, the same
permissions, the same renames. A Spark Connect endpoint given with `--remote` keeps its own settings.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Mapping

PACKAGE = "lakewatch.hadoop"
FILE_SYSTEM = f"{PACKAGE}.NoShellLocalFileSystem"  # fs.file.impl (FileSystem API)
ABSTRACT_FILE_SYSTEM = f"{PACKAGE}.NoShellLocalFs"  # fs.AbstractFileSystem.file.impl (FileContext API)
SOURCES = Path(__file__).resolve().parent / "java"
JAR_NAME = "lakewatch-localfs.jar"
CLASS_PATH = "spark.driver.extraClassPath"


def default_jar() -> Path:
    """`.cache/localfs/lakewatch-localfs.jar` under the project root (git-ignored, like Delta's jars)."""
    return Path(__file__).resolve().parents[2] / ".cache" / "localfs" / JAR_NAME


def sources() -> list[Path]:
    return sorted(SOURCES.rglob("*.java"))


def sources_digest() -> str:
    """A digest of the Java sources and of the Hadoop API jar they compile against: the jar records it,
    so a jar built from other sources, or for another Hadoop (a pyspark upgrade), is not used."""
    digest = hashlib.sha256(hadoop_api_jar().name.encode() + b"\0")
    for path in sources():
        digest.update(path.relative_to(SOURCES).as_posix().encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()[:16]


def _stamp(jar: Path) -> Path:
    return jar.with_suffix(".sources")


def current_jar(jar: Path | None = None) -> Path | None:
    """The jar, when it exists and was built from the sources as they are now; else None."""
    path = jar or default_jar()
    stamp = _stamp(path)
    if path.is_file() and stamp.is_file() and stamp.read_text().strip() == sources_digest():
        return path
    return None


def with_class_path(conf: dict[str, str], user_conf: Mapping[str, str]) -> dict[str, str]:
    """`conf` with `user_conf` over it, where a user's `spark.driver.extraClassPath` (a JDBC driver,
    say) is added after the jar instead of replacing it: the file system settings name its classes."""
    merged = {**conf, **user_conf}
    ours, theirs = conf.get(CLASS_PATH), user_conf.get(CLASS_PATH)
    if ours and theirs and ours != theirs:
        merged[CLASS_PATH] = os.pathsep.join((ours, theirs))
    return merged


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


def hadoop_api_jar() -> Path:
    """The Hadoop client API jar pyspark ships: what the classes compile against."""
    import pyspark

    found = sorted((Path(pyspark.__file__).parent / "jars").glob("hadoop-client-api-*.jar"))
    if not found:
        raise FileNotFoundError("pyspark ships no hadoop-client-api jar")
    return found[-1]


def _tool(name: str) -> str:
    java_home = os.environ.get("JAVA_HOME")
    candidate = Path(java_home) / "bin" / name if java_home else None
    if candidate and candidate.is_file():
        return str(candidate)
    found = shutil.which(name)
    if not found:
        raise FileNotFoundError(f"no `{name}` on PATH or in JAVA_HOME (a JDK is needed to build {JAR_NAME})")
    return found


def build(jar: Path | None = None) -> Path:
    """Compiles the sources (Java 17) against pyspark's Hadoop API jar and writes the jar and its stamp."""
    path = jar or default_jar()
    path.parent.mkdir(parents=True, exist_ok=True)
    _stamp(path).unlink(missing_ok=True)  # a failed build leaves no jar that looks current
    with tempfile.TemporaryDirectory(prefix="lakewatch-localfs-", dir=path.parent) as tmp:
        classes = Path(tmp) / "classes"
        subprocess.run([_tool("javac"), "--release", "17", "-Xlint:all", "-Werror", "-d", str(classes),
                        "-cp", str(hadoop_api_jar()), *map(str, sources())], check=True)
        partial = Path(tmp) / JAR_NAME
        subprocess.run([_tool("jar"), "--create", "--file", str(partial), "-C", str(classes), "."], check=True)
        os.replace(partial, path)  # a new file: a running JVM keeps reading the one it opened
    _stamp(path).write_text(sources_digest() + "\n")
    return path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jar", type=Path, default=default_jar())
    args = parser.parse_args(argv)
    started = time.monotonic()
    try:
        path = build(args.jar)
    except (OSError, subprocess.CalledProcessError) as e:  # an optimisation: setup goes on without it
        print(f"no {JAR_NAME} ({type(e).__name__}: {e}); local JVMs use Hadoop's own local file system",
              file=sys.stderr)
        return 0
    print(f"local file system classes: {path} ({time.monotonic() - started:.1f}s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
