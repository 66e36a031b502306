"""The job's `prepare_landing` task (resources/lakewatch.job.yml, a Python file task on serverless
compute, the job's first task): creates each configured table's landing folder under the landing root
when it is missing, so the first ingest update after a deploy finds every folder it reads. Folders that
exist are left alone (no write then). Why, what it needs and what it refuses: pipelines/landing.py.

Parameters (the task's `parameters`, as command-line arguments):
  --tables-config   conf/tables.yml, the configured tables (the ingest pipeline's lakewatch.tables_config)
  --landing-root    the landing root (the ingest pipeline's lakewatch.landing_root)

`lakewatch job` runs this file on the local engine: it calls `main(parameters, spark, say)`, as
Databricks runs the file with the parameters as `sys.argv[1:]`.
"""

from __future__ import annotations

import sys
from typing import Any, Callable, Sequence


def main(argv: Sequence[str], spark: Any = None, say: Callable[[str], None] = print) -> Any:
    from pipelines.landing import main as prepare

    return prepare(argv, say)  # a folder it cannot create raises LandingPreparationError: the task fails


if __name__ == "__main__":
    main(sys.argv[1:])
