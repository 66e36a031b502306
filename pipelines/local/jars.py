"""Delta Lake's jars for the local engine, fetched once from Maven Central into a git-ignored cache.

Delta's Python package (delta-spark on PyPI) carries no jars. Its helper asks Spark to resolve them
with Ivy at every session start; here they are downloaded once, checked against Maven Central's
SHA-1 files, and passed to the session with `spark.jars`, so a session starts offline.

Maven Central serves delta-spark_4.2_2.13 up to 4.4.0 (4.4.1 exists on PyPI only), so the jars are
4.4.0 while the Python package is 4.4.1; the local engine uses Delta through SQL and the DataFrame
API only, never through the Python `DeltaTable` class, so only the jars' version matters.
"""

from __future__ import annotations

import argparse
import hashlib
import sys
import urllib.request
from dataclasses import dataclass
from pathlib import Path

MAVEN_CENTRAL = "https://repo1.maven.org/maven2"


@dataclass(frozen=True)
class MavenArtifact:
    group: str
    artifact: str
    version: str

    @property
    def file_name(self) -> str:
        return f"{self.artifact}-{self.version}.jar"

    @property
    def url(self) -> str:
        return f"{MAVEN_CENTRAL}/{self.group.replace('.', '/')}/{self.artifact}/{self.version}/{self.file_name}"


DELTA_VERSION = "4.4.0"
DELTA_ARTIFACTS: tuple[MavenArtifact, ...] = (
    MavenArtifact("io.delta", "delta-spark_4.2_2.13", DELTA_VERSION),
    MavenArtifact("io.delta", "delta-storage", DELTA_VERSION),
)


def default_cache_dir() -> Path:
    """`.cache/jars` under the project root (the folder holding pyproject.toml)."""
    return Path(__file__).resolve().parents[2] / ".cache" / "jars"


def jar_paths(cache_dir: Path | None = None) -> list[Path]:
    """Paths of the cached jars; raises with the command to run when any is missing."""
    cache = cache_dir or default_cache_dir()
    paths = [cache / a.file_name for a in DELTA_ARTIFACTS]
    missing = [p.name for p in paths if not p.is_file()]
    if missing:
        from pipelines.errors import LakewatchError

        raise LakewatchError(
            "DELTA_JARS_MISSING",
            {"missing": ", ".join(missing), "cache": str(cache)},
        )
    return paths


def _download(url: str) -> bytes:
    with urllib.request.urlopen(url, timeout=120) as response:  # noqa: S310 (fixed https host)
        return response.read()


def fetch(cache_dir: Path | None = None, quiet: bool = False) -> list[Path]:
    """Downloads the missing jars and verifies each against its published SHA-1. Idempotent."""
    cache = cache_dir or default_cache_dir()
    cache.mkdir(parents=True, exist_ok=True)
    for artifact in DELTA_ARTIFACTS:
        target = cache / artifact.file_name
        if target.is_file():
            continue
        if not quiet:
            print(f"fetching {artifact.url}", file=sys.stderr)
        data = _download(artifact.url)
        expected = _download(artifact.url + ".sha1").decode().split()[0].strip()
        actual = hashlib.sha1(data).hexdigest()  # noqa: S324 (Maven Central publishes SHA-1)
        if actual != expected:
            raise RuntimeError(f"checksum mismatch for {artifact.url}: {actual} != {expected}")
        partial = target.with_suffix(".part")
        partial.write_bytes(data)
        partial.replace(target)
    return jar_paths(cache)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Fetch Delta Lake jars from Maven Central.")
    parser.add_argument("--cache-dir", type=Path, default=None)
    args = parser.parse_args(argv)
    for path in fetch(args.cache_dir):
        print(path)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
