"""The job's `snapshot_table_sizes` task (resources/lakewatch.job.yml, a Python file task on serverless
compute): appends the size, file count and Delta version of every ingest table (each `{table}_bronze`,
each clean `{table}`, `corrupt_records_sink`) to the snapshot table, one row per table. The observability
view `table_growth` reads it. The logic and why it is a Python task, not a SQL one: pipelines/table_sizes.py.

Parameters (the task's `parameters`, as command-line arguments):
  --catalog, --schema   where the ingest tables are
  --tables-config       conf/tables.yml, the configured tables
  --target              the snapshot table, catalog.schema.table (created by the first run)

`lakewatch job` runs this file on the local engine: it calls `main(parameters, spark, say)` with the
local session, as Databricks runs the file with the parameters as `sys.argv[1:]`.
"""

from __future__ import annotations

import sys
from typing import Any, Callable, Sequence


def main(argv: Sequence[str], spark: Any = None, say: Callable[[str], None] = print) -> Any:
    from pipelines.table_sizes import main as snapshot_main

    result = snapshot_main(argv, spark)
    say(f"snapshot {result.snapshot_id}: {result.measured} of {len(result.rows)} tables measured into {result.target}")
    for table, reason in result.not_measured:
        say(f"  {table}: not measured ({reason})")
    return result


if __name__ == "__main__":
    main(sys.argv[1:])
