"""How lakewatch's own Java classes become jars: compiled with the JDK's `javac` against the jars they
extend, optionally rewritten further, and stamped with a digest of what they were built from.

Which jars exist and what each does is pipelines/local/patches.py's registry; this module knows none
of them. A jar is used only when its stamp (a digest of its sources and of the names of the jars it
compiled against) matches the sources as they are now, so a jar built from older sources or for
another pyspark or Delta is left out. A build that fails records why beside the jar (`.failed`), for
the engine to say. The jars live in `.cache/java` (git-ignored, like Delta's jars).
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Mapping, Sequence

SOURCES = Path(__file__).resolve().parent / "java"
# [path]: jars on the class path name jars in their manifests that pyspark does not ship.
JAVAC_OPTIONS = ("--release", "17", "-Xlint:all,-path", "-Werror")

CLASS_PATH = "spark.driver.extraClassPath"  # ahead of Spark's jars: Hadoop's and SDP's classes are replaced here
JARS = "spark.jars"  # after Delta's jars, loaded where Spark loads them


class BuildRefused(Exception):
    """A library's build found the classes it rewrites not in the shape it was written for."""


def with_class_path(conf: Mapping[str, str], user_conf: Mapping[str, str]) -> dict[str, str]:
    """`conf` with `user_conf` over it, where a later `spark.driver.extraClassPath` (a JDBC driver, say)
    or `spark.jars` is added after the earlier one instead of replacing it: lakewatch's settings name
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
    """Java sources (paths under SOURCES) and the jar built from them."""

    name: str  # the jar's file name without `.jar`
    sources: tuple[str, ...]  # compiled into the jar
    class_path: Callable[[], Sequence[Path]]  # the jars it compiles against
    after_compile: Callable[[Path], None] | None = None  # adds to the compiled classes before the jar is made
    inputs: tuple[str, ...] = ()  # further sources that shape the jar without being in it (a rewriter)

    @property
    def jar_name(self) -> str:
        return f"{self.name}.jar"

    def default_jar(self) -> Path:
        return default_cache() / self.jar_name

    def source_paths(self) -> list[Path]:
        return [SOURCES / path for path in self.sources]

    def sources_digest(self) -> str:
        """A digest of the sources, of the further inputs and of the names of the jars they compile
        against (a pyspark or Delta upgrade changes the names, so the jar is rebuilt instead of used)."""
        digest = hashlib.sha256()
        for jar in self.class_path():
            digest.update(jar.name.encode() + b"\0")
        for role, paths in (("source", self.sources), ("input", self.inputs)):
            for relative in paths:
                digest.update(f"{role} {relative}".encode() + b"\0" + (SOURCES / relative).read_bytes())
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

    def build_failure(self, jar: Path | None = None) -> str | None:
        """Why the last build from the sources as they are now made no jar, or None (built, or never tried)."""
        record = _failure_record(jar or self.default_jar())
        try:
            digest, _, reason = record.read_text().partition("\n")
            return reason.strip() if digest == self.sources_digest() else None
        except FileNotFoundError:
            return None

    def build(self, jar: Path | None = None) -> Path:
        """Compiles the sources (Java 17), runs `after_compile`, and writes the jar and its stamp; on
        failure records why (`build_failure`) and raises."""
        path = jar or self.default_jar()
        digest = self.sources_digest()
        path.parent.mkdir(parents=True, exist_ok=True)
        _stamp(path).unlink(missing_ok=True)  # a failed build leaves no jar that looks current
        _failure_record(path).unlink(missing_ok=True)
        try:
            with tempfile.TemporaryDirectory(prefix=f"{self.name}-", dir=path.parent) as tmp:
                classes = Path(tmp) / "classes"
                classes.mkdir()
                if self.sources:
                    class_path = os.pathsep.join(str(p) for p in self.class_path())
                    subprocess.run([java_tool("javac"), *JAVAC_OPTIONS, "-d", str(classes), "-cp", class_path,
                                    *map(str, self.source_paths())], check=True)
                if self.after_compile:
                    self.after_compile(classes)
                partial = Path(tmp) / self.jar_name
                subprocess.run([java_tool("jar"), "--create", "--file", str(partial), "-C", str(classes), "."],
                               check=True)
                os.replace(partial, path)  # a new file: a running JVM keeps reading the one it opened
        except (OSError, subprocess.CalledProcessError, BuildRefused) as e:
            path.unlink(missing_ok=True)
            _failure_record(path).write_text(f"{digest}\n{failure_reason(e)}\n")
            raise
        _stamp(path).write_text(digest + "\n")
        return path


def failure_reason(error: Exception) -> str:
    """A build failure in one line."""
    if isinstance(error, BuildRefused):
        return f"refused: {error}"
    if isinstance(error, subprocess.CalledProcessError):
        return f"{Path(str(error.cmd[0])).name} exited {error.returncode}"
    return f"{type(error).__name__}: {error}"


def _stamp(jar: Path) -> Path:
    return jar.with_suffix(".sources")


def _failure_record(jar: Path) -> Path:
    return jar.with_suffix(".failed")


def java_tool(name: str) -> str:
    """The JDK's tool `name` (javac, jar, java, javap): from JAVA_HOME, else from PATH."""
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


def package_sources(package: str) -> tuple[str, ...]:
    """Every Java source of `package` (e.g. lakewatch.hadoop), as paths under SOURCES."""
    folder = SOURCES / Path(*package.split("."))
    return tuple(path.relative_to(SOURCES).as_posix() for path in sorted(folder.rglob("*.java")))
