"""Delta Lake's jars for the local engine, resolved once by Spark's own dependency resolution.

Delta's Python package (delta-spark on PyPI) carries no jars. Its helper
`configure_spark_with_delta_pip` sets `spark.jars.packages` to `io.delta:delta-spark_<spark>_2.13:
<version>`, so Spark's launcher (SparkSubmit, through Ivy) resolves the jar and its dependencies at
every session start. lakewatch asks Spark to do exactly that once, at install time
(`python -m pipelines.local.jars`, run by `make setup`): with `spark.jars.packages` and
`spark.jars.ivy` pointing at a git-ignored cache the project owns (`.cache/ivy`), it launches
Spark's JVM gateway (no SparkContext), which resolves and retrieves the jars into `.cache/ivy/jars`.
The jars Spark resolved (its `spark.jars`) are recorded in `.cache/ivy/delta-jars.json`; every later
engine start passes them with `spark.jars` and starts offline, without resolving again.

Spark resolves Delta's transitive dependencies too, among them older copies of libraries Spark ships
itself (Hadoop client, Parquet, Jackson, log4j); only the jars whose artifact pyspark does not ship
are put on the engine's classpath, so Spark's own versions are the only ones loaded.

The jars' version is 4.4.0 while the Python package is 4.4.1: Maven has delta-spark_4.2_2.13 only up
to 4.4.0 (4.4.1 exists on PyPI only). The local engine uses Delta through SQL and the DataFrame API,
never through the Python `DeltaTable` class, so only the jars' version matters.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from pathlib import Path
from urllib.parse import urlparse
from urllib.request import url2pathname

DELTA_VERSION = "4.4.0"
# The coordinates configure_spark_with_delta_pip builds (artifact delta-spark_<spark major.minor>_2.13)
# for pyspark 4.2, at the jars' version.
DELTA_PACKAGES: tuple[str, ...] = (f"io.delta:delta-spark_4.2_2.13:{DELTA_VERSION}",)
RECORD_FILE = "delta-jars.json"
LOG_FILE = "resolve.log"


def default_cache_dir() -> Path:
    """`.cache/ivy` under the project root (the folder holding pyproject.toml): Spark's Ivy home."""
    return Path(__file__).resolve().parents[2] / ".cache" / "ivy"


def _missing(reason: str, cache: Path) -> Exception:
    from pipelines.errors import LakewatchError

    return LakewatchError("DELTA_JARS_MISSING", {"missing": reason, "cache": str(cache),
                                                 "packages": ", ".join(DELTA_PACKAGES)})


def jar_paths(cache_dir: Path | None = None) -> list[Path]:
    """Paths of the jars Spark resolved for Delta; raises DELTA_JARS_MISSING (with the command to
    run) when they were never resolved, were resolved for other coordinates, or a file is gone."""
    cache = (cache_dir or default_cache_dir()).resolve()
    record = cache / RECORD_FILE
    if not record.is_file():
        raise _missing(f"no {RECORD_FILE}: not resolved yet", cache)
    try:
        data = json.loads(record.read_text())
        packages, jars = tuple(data["packages"]), [str(j) for j in data["jars"]]
    except (ValueError, KeyError, TypeError) as e:
        raise _missing(f"{RECORD_FILE} is unreadable ({e})", cache) from None
    if packages != DELTA_PACKAGES:
        raise _missing(f"resolved for {', '.join(packages)}", cache)
    paths = [cache / j for j in jars]  # recorded relative to the cache (absolute if outside it)
    gone = [p.name for p in paths if not p.is_file()]
    if gone or not paths:
        raise _missing(f"missing {', '.join(gone) or 'every jar'}", cache)
    shipped = _shipped_artifacts()
    return [p for p in paths if artifact_of(p.name.split("_", 1)[-1]) not in shipped]


_VERSIONED_JAR = re.compile(r"^(?P<artifact>.+?)-(?P<version>\d[^/]*)\.jar$")


def artifact_of(file_name: str) -> str:
    """`parquet-hadoop-1.16.0.jar` -> `parquet-hadoop` (Ivy's file names carry `<org>_` before it)."""
    match = _VERSIONED_JAR.match(file_name)
    return match.group("artifact") if match else file_name


def _shipped_artifacts() -> set[str]:
    """Artifacts whose jar pyspark ships in its own `jars` folder."""
    import pyspark

    return {artifact_of(p.name) for p in (Path(pyspark.__file__).parent / "jars").glob("*.jar")}


def _path_of(uri: str) -> Path:
    parsed = urlparse(uri)
    return Path(url2pathname(parsed.path)) if parsed.scheme == "file" else Path(uri)


def _record(cache: Path, jars: list[Path], seconds: float) -> Path:
    def relative(p: Path) -> str:
        try:
            return str(p.resolve().relative_to(cache))
        except ValueError:
            return str(p.resolve())

    record = cache / RECORD_FILE
    partial = record.with_suffix(".part")
    partial.write_text(json.dumps({
        "packages": list(DELTA_PACKAGES),
        "jars": [relative(j) for j in jars],
        "resolved_seconds": round(seconds, 1),
    }, indent=2) + "\n")
    partial.replace(record)
    return record


def resolve(cache_dir: Path | None = None, quiet: bool = False, force: bool = False) -> list[Path]:
    """Resolves Delta's jars with Spark's own resolution into the cache, once (idempotent: returns
    the recorded jars when they are already there, unless `force`)."""
    from pipelines.errors import LakewatchError

    cache = (cache_dir or default_cache_dir()).resolve()
    if not force:
        try:
            return jar_paths(cache)
        except LakewatchError:
            pass
    from pyspark import SparkConf
    from pyspark.java_gateway import launch_gateway

    cache.mkdir(parents=True, exist_ok=True)
    log = cache / LOG_FILE
    if not quiet:
        print(f"resolving {', '.join(DELTA_PACKAGES)} with Spark's dependency resolution into {cache} "
              f"(once; log: {log})", file=sys.stderr, flush=True)
    conf = (SparkConf(loadDefaults=False)
            .set("spark.jars.packages", ",".join(DELTA_PACKAGES))
            .set("spark.jars.ivy", str(cache)))
    started = time.monotonic()
    with open(log, "wb") as output:
        try:
            # spark-submit resolves spark.jars.packages before it starts the gateway's JVM; the
            # resolved jars become the JVM's spark.jars property.
            gateway = launch_gateway(conf, popen_kwargs={"stdout": output, "stderr": output})
        except Exception as e:  # noqa: BLE001 (the JVM exited: resolution failed)
            output.flush()
            raise LakewatchError("DELTA_JARS_RESOLUTION_FAILED", {
                "packages": ", ".join(DELTA_PACKAGES), "cache": str(cache), "log": str(log),
                "reason": _failure(log) or str(e),
            }) from None
        try:
            resolved = str(gateway.jvm.java.lang.System.getProperty("spark.jars") or "")
        finally:
            _stop(gateway)
    jars = [_path_of(u) for u in resolved.split(",") if u.strip()]
    if not jars:
        raise LakewatchError("DELTA_JARS_RESOLUTION_FAILED", {
            "packages": ", ".join(DELTA_PACKAGES), "cache": str(cache), "log": str(log),
            "reason": "Spark resolved no jars",
        })
    _record(cache, jars, time.monotonic() - started)
    return jar_paths(cache)


def _stop(gateway: object) -> None:
    proc = getattr(gateway, "proc", None)
    try:
        gateway.shutdown()  # type: ignore[attr-defined]
    finally:
        if proc is not None:
            proc.stdin.close()  # the gateway JVM exits when its stdin closes
            try:
                proc.wait(timeout=30)
            except Exception:  # noqa: BLE001
                proc.kill()


def _failure(log: Path) -> str:
    """The lines of Spark's resolution log that say what could not be resolved."""
    try:
        lines = log.read_text(errors="replace").splitlines()
    except OSError:
        return ""
    keep = [line.strip() for line in lines
            if "unresolved dependency" in line or "not found" in line.lower() and "::" in line
            or line.startswith("Exception") or "RuntimeException" in line]
    return "; ".join(dict.fromkeys(keep))[:600]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description="Resolve Delta Lake's jars once with Spark's dependency resolution (spark.jars.packages).")
    parser.add_argument("--cache-dir", type=Path, default=None, help="Ivy home for the jars (default .cache/ivy)")
    parser.add_argument("--force", action="store_true", help="resolve again even if the jars are recorded")
    args = parser.parse_args(argv)
    from pipelines.errors import LakewatchError

    from pipelines.progress import step

    try:
        with step("setup: resolving Delta Lake's jars (Ivy, once)"):
            paths = resolve(args.cache_dir, force=args.force)
        for path in paths:
            print(path)
    except LakewatchError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
