"""A class data sharing archive for the local engine's JVM: its classes, parsed and verified once.

Every JVM that runs Spark (the resident engine, the tests' classic session) loads and verifies some
tens of thousands of classes from Spark's, Hive's, Hadoop's and Delta's jars before its first query.
Java's class data sharing (CDS) keeps them, already parsed and verified, in a memory-mapped archive:
`make setup` records one (`python -m pipelines.local.cds_record`), and later JVMs start with
`-XX:SharedArchiveFile` (`java_options`) and map it instead of parsing and verifying the classes again.

The JVM checks the archive against itself (same JDK, same class path) and, when they differ, says
so on its output and starts without it: an archive can make a start faster, never make it fail.
"""

from __future__ import annotations

import os
from pathlib import Path

DUMP_ENV = "LAKEWATCH_CDS_DUMP"  # set while recording: the path the engine's JVM writes at exit


def default_archive() -> Path:
    """`.cache/cds/engine.jsa` under the project root (git-ignored, like Delta's jars)."""
    return Path(__file__).resolve().parents[2] / ".cache" / "cds" / "engine.jsa"


def java_options(archive: Path | None = None) -> str:
    """The JVM option that uses the archive (or, while recording, writes it); empty without one."""
    dump = os.environ.get(DUMP_ENV)
    if dump:
        return f"-XX:ArchiveClassesAtExit={dump}"
    path = archive or default_archive()
    return f"-XX:SharedArchiveFile={path}" if path.is_file() else ""
