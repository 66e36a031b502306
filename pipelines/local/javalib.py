"""lakewatch's own Java classes for the local engine: each package under `pipelines/local/java` is one
small jar, compiled by `make setup` (`python -m pipelines.local.javalib`) with the JDK's `javac`.

Three libraries, each loaded where what it extends is loaded:
- `lakewatch.hadoop` (pipelines/local/localfs.py): Hadoop's local file system without a process per
  call. On `spark.driver.extraClassPath`, beside Hadoop's own classes.
- `lakewatch.catalog` (pipelines/local/delta_catalog.py): Delta's catalog without a commit for an
  ALTER TABLE that changes nothing. In `spark.jars`, beside Delta's jars (which Spark loads there).
- `lakewatch.sdp` (pipelines/local/sdp_classes.py): five of SDP's own classes, rewritten so that SDP
  waits without spinning or oversleeping, refreshes a materialized view in one overwrite and starts a
  flow that reads no table without analysing it again. On `spark.driver.extraClassPath`, ahead of
  Spark's jars.

A jar is used only when its stamp (a digest of its sources and of the names of the jars it compiled
against) matches the sources as they are now, so a jar built from older sources or for another pyspark
or Delta is left out, and the JVM runs Spark's and Delta's own classes, as it would without the jar.
The jars live in `.cache/java` (git-ignored, like Delta's jars).
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
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Mapping, Sequence

from pipelines.errors import LakewatchError

SOURCES = Path(__file__).resolve().parent / "java"
# [path]: jars on the class path name jars in their manifests that pyspark does not ship.
JAVAC_OPTIONS = ("--release", "17", "-Xlint:all,-path", "-Werror")


CLASS_PATH = "spark.driver.extraClassPath"  # where lakewatch.hadoop goes
JARS = "spark.jars"  # where lakewatch.catalog goes, after Delta's jars


def with_class_path(conf: dict[str, str], user_conf: Mapping[str, str]) -> dict[str, str]:
    """`conf` with `user_conf` over it, where a user's `spark.driver.extraClassPath` (a JDBC driver,
    say) or `spark.jars` is added after lakewatch's instead of replacing it: lakewatch's settings name
    classes in its own jars, and Delta's jars are in `spark.jars`."""
    merged = {**conf, **user_conf}
    for key, separator in ((CLASS_PATH, os.pathsep), (JARS, ",")):
        ours, theirs = conf.get(key), user_conf.get(key)
        if ours and theirs and ours != theirs:
            merged[key] = separator.join((ours, theirs))
    return merged


def default_cache() -> Path:
    """`.cache/java` under the project root."""
    return Path(__file__).resolve().parents[2] / ".cache" / "java"


@dataclass(frozen=True)
class JavaLibrary:
    """One package of Java sources and the jar built from it."""

    name: str  # the jar's file name without `.jar`
    package: str  # the Java package, e.g. lakewatch.hadoop
    class_path: Callable[[], Sequence[Path]]  # the jars it compiles against
    after_compile: Callable[[Path], None] | None = None  # adds to the compiled classes before the jar is made

    @property
    def jar_name(self) -> str:
        return f"{self.name}.jar"

    def default_jar(self) -> Path:
        return default_cache() / self.jar_name

    def sources(self) -> list[Path]:
        return sorted((SOURCES / Path(*self.package.split("."))).rglob("*.java"))

    def sources_digest(self) -> str:
        """A digest of the sources and of the names of the jars they compile against (a pyspark or
        Delta upgrade changes the names, so the jar is rebuilt instead of used)."""
        digest = hashlib.sha256()
        for jar in self.class_path():
            digest.update(jar.name.encode() + b"\0")
        for path in self.sources():
            digest.update(path.relative_to(SOURCES).as_posix().encode() + b"\0" + path.read_bytes())
        return digest.hexdigest()[:16]

    def current_jar(self, jar: Path | None = None) -> Path | None:
        """The jar, when it exists and was built from the sources as they are now; else None."""
        path = jar or self.default_jar()
        stamp = _stamp(path)
        try:
            if path.is_file() and stamp.is_file() and stamp.read_text().strip() == self.sources_digest():
                return path
        except FileNotFoundError:  # a jar it compiles against is missing (setup not run)
            return None
        return None

    def build(self, jar: Path | None = None) -> Path:
        """Compiles the sources (Java 17) and writes the jar and its stamp."""
        path = jar or self.default_jar()
        path.parent.mkdir(parents=True, exist_ok=True)
        _stamp(path).unlink(missing_ok=True)  # a failed build leaves no jar that looks current
        class_path = os.pathsep.join(str(p) for p in self.class_path())
        with tempfile.TemporaryDirectory(prefix=f"{self.name}-", dir=path.parent) as tmp:
            classes = Path(tmp) / "classes"
            subprocess.run([_tool("javac"), *JAVAC_OPTIONS, "-d", str(classes), "-cp", class_path,
                            *map(str, self.sources())], check=True)
            if self.after_compile:
                self.after_compile(classes)
            partial = Path(tmp) / self.jar_name
            subprocess.run([_tool("jar"), "--create", "--file", str(partial), "-C", str(classes), "."], check=True)
            os.replace(partial, path)  # a new file: a running JVM keeps reading the one it opened
        _stamp(path).write_text(self.sources_digest() + "\n")
        return path


def _stamp(jar: Path) -> Path:
    return jar.with_suffix(".sources")


def _tool(name: str) -> str:
    java_home = os.environ.get("JAVA_HOME")
    candidate = Path(java_home) / "bin" / name if java_home else None
    if candidate and candidate.is_file():
        return str(candidate)
    found = shutil.which(name)
    if not found:
        raise FileNotFoundError(f"no `{name}` on PATH or in JAVA_HOME (a JDK is needed to build lakewatch's jars)")
    return found


def pyspark_jars(prefix: str = "") -> list[Path]:
    """The jars pyspark ships whose names start with `prefix`, sorted."""
    import pyspark

    return sorted((Path(pyspark.__file__).parent / "jars").glob(f"{prefix}*.jar"))


def pyspark_jar(prefix: str) -> Path:
    """The newest jar pyspark ships whose name starts with `prefix`."""
    found = pyspark_jars(prefix)
    if not found:
        raise FileNotFoundError(f"pyspark ships no {prefix}*.jar")
    return found[-1]


def libraries() -> list[JavaLibrary]:
    from pipelines.local import delta_catalog, localfs, sdp_classes

    return [localfs.LIBRARY, delta_catalog.LIBRARY, sdp_classes.LIBRARY]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.parse_args(argv)
    for library in libraries():
        started = time.monotonic()
        try:
            path = library.build()
        except (OSError, subprocess.CalledProcessError, LakewatchError) as e:  # an optimisation: setup goes on without it
            print(f"no {library.jar_name} ({type(e).__name__}: {e}); local JVMs run without {library.package}",
                  file=sys.stderr)
            continue
        print(f"{library.package}: {path} ({time.monotonic() - started:.1f}s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
