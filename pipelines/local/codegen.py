"""Whether an update's expressions are compiled to Java code or interpreted, from how much it reads.

Spark generates and compiles Java code for every projection it evaluates outside whole-stage code
(Delta's log replay, its per-file statistics, each micro-batch's projections): code text for wide
schemas, formatted and hashed at every query, even when the compiled class is cached. On the small
batches of a local update that costs more than it saves: about a third of an ingest update's engine
CPU for 150 rows per table. On large ones the compiled code wins (interpreted statistics and
projections over every row). So an update whose landing backlog is small interprets those
expressions (`spark.sql.codegen.factoryMode` NO_CODEGEN); whole-stage code generation, which
does the per-row work of a large read, is left as configured. Measured in bench/RESULTS.md.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

FACTORY_MODE = "spark.sql.codegen.factoryMode"
INTERPRETED = "NO_CODEGEN"

# Landing bytes an update reads below which interpreted expressions cost less (bench/RESULTS.md).
SMALL_UPDATE_BYTES = 4 * 1024 * 1024


@dataclass(frozen=True)
class CodegenChoice:
    settings: dict[str, str]  # session settings to apply for the update (empty: leave Spark's own)
    reason: str


def choose(backlog_bytes: Iterable[int | None], configured: Mapping[str, str],
           threshold: int = SMALL_UPDATE_BYTES) -> CodegenChoice:
    """The code generation settings of one update. `backlog_bytes`: bytes each file source has left to
    read (None: unknown). A factory mode set in the pipeline's configuration is kept; an unknown
    backlog keeps Spark's default, as a large one does."""
    if FACTORY_MODE in configured:
        return CodegenChoice({}, f"{FACTORY_MODE} is set in the pipeline configuration")
    sizes = list(backlog_bytes)
    if any(size is None for size in sizes):
        return CodegenChoice({}, "the backlog of a file source is unknown")
    total = sum(sizes)  # type: ignore[arg-type]  (no None left)
    if total >= threshold:
        return CodegenChoice({}, f"{total} landing bytes to read: compiled expressions")
    return CodegenChoice({FACTORY_MODE: INTERPRETED}, f"{total} landing bytes to read: interpreted expressions")
