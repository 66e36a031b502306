"""The names of the observability pipeline's datasets, read from its definition files' names.

Kept apart from the observability modules so that the configuration (pipelines/config.py) can refuse an
ingest table named like an observability dataset without importing them: one `.sql` file per dataset in
transformations/observability/, plus the datasets its Python definition file declares.
"""

from __future__ import annotations

from pathlib import Path

OBSERVABILITY_DEFINITIONS = Path(__file__).resolve().parents[1] / "transformations" / "observability"


def observability_datasets() -> tuple[str, ...]:
    """Every dataset the observability pipeline publishes or keeps private, by name (the stems of its
    `.sql` definition files); empty when the folder is not there."""
    return tuple(sorted(p.stem for p in OBSERVABILITY_DEFINITIONS.glob("*.sql")))
