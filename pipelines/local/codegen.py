"""Whether an update's expressions are compiled to Java code or interpreted, from how much it reads.

Spark generates and compiles Java code for every projection it evaluates outside whole-stage code
(Delta's log replay, its per-file statistics, each micro-batch's projections): code text for wide
schemas, formatted and hashed at every query, even when the compiled class is cached. On the small
batches of a local update that costs more than it saves: a large share of an ingest update's engine
CPU on small tables. On large ones the compiled code wins (interpreted statistics and
projections over every row). So an update whose landing backlog is small interprets those
expressions (`spark.sql.codegen.factoryMode` NO_CODEGEN); whole-stage code generation, which
does the per-row work of a large read, is left as configured. Measured in bench/RESULTS.md.

The choice goes into the update's pipeline configuration, which open-source SDP applies to every
flow it runs: set on the session alone, it does not reach all of them (the streaming
flows' file reads and Delta writes still generate code). So it is chosen before the definitions
are registered, from each table's landing folder and its bronze flow's checkpoint. Spark's own
default is set explicitly for a large update, so an interpreted choice of an earlier update on the
same session (a job's) does not carry over.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from pipelines.adapter import LANDING_ROOT_KEY, TABLES_CONFIG_KEY
from pipelines.config import load_tables
from pipelines.local import checkpoints

FACTORY_MODE = "spark.sql.codegen.factoryMode"
INTERPRETED = "NO_CODEGEN"
COMPILED = "FALLBACK"  # Spark's default: compiled, interpreted when compiling fails

# Landing bytes an update reads below which interpreted expressions cost less (bench/RESULTS.md).
SMALL_UPDATE_BYTES = 4 * 1024 * 1024


@dataclass(frozen=True)
class CodegenChoice:
    settings: dict[str, str]  # configuration the update runs with (empty: the configuration's own)
    reason: str


def choose(backlog_bytes: Iterable[int | None], configured: Mapping[str, str],
           threshold: int = SMALL_UPDATE_BYTES) -> CodegenChoice:
    """The code generation settings of one update. `backlog_bytes`: bytes each file source has left to
    read (None: unknown). A factory mode set in the pipeline's configuration is kept; an unknown
    backlog gets Spark's default, as a large one does."""
    if FACTORY_MODE in configured:
        return CodegenChoice({}, f"{FACTORY_MODE} is set in the pipeline configuration")
    sizes = list(backlog_bytes)
    if any(size is None for size in sizes):
        return CodegenChoice({FACTORY_MODE: COMPILED}, "the backlog of a file source is unknown")
    total = sum(sizes)  # type: ignore[arg-type]  (no None left)
    if total >= threshold:
        return CodegenChoice({FACTORY_MODE: COMPILED}, f"{total} landing bytes to read: compiled expressions")
    return CodegenChoice({FACTORY_MODE: INTERPRETED}, f"{total} landing bytes to read: interpreted expressions")


def landing_backlogs(configuration: Mapping[str, str], storage: Path, catalog: str | None,
                     schema: str | None) -> list[int | None]:
    """Landing bytes each table's file source has left to read, known before the definitions are
    registered: every configured table's landing folder against the live checkpoint of its bronze
    flow. A missing folder has nothing to read (the flow reports it); None: not measurable."""
    tables_file, root = configuration.get(TABLES_CONFIG_KEY), configuration.get(LANDING_ROOT_KEY)
    if not tables_file or not root:
        return []  # the pipeline reads no landing files (e.g. observability)
    try:
        tables = load_tables(tables_file).tables
    except Exception:  # noqa: BLE001 (registration reports a bad tables file; here it is unknown)
        return [None]
    backlogs: list[int | None] = []
    for table in tables:
        flow = table.bronze_name  # the file source's flow, named after the bronze table it writes
        checkpoint_root = checkpoints.flow_checkpoint_root(storage, flow, flow, catalog, schema, False)
        try:
            latest = checkpoints.latest_checkpoint(checkpoint_root)
            backlogs.append(checkpoints.backlog(table.landing_path(root), latest).bytes)
        except FileNotFoundError:
            backlogs.append(0)
        except Exception:  # noqa: BLE001 (an unreadable checkpoint or landing path: unknown)
            backlogs.append(None)
    return backlogs
