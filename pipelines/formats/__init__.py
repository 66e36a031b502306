"""Landing file formats: one module per format, one registry.

A format says, for a table (`TableSpec`) in `conf/tables.yml`:
- `reader_options`: Spark reader options that Auto Loader and Spark's own reader of the format share
  (`header`, `sep`, `multiLine`, ...), passed to `cloudFiles` on Databricks;
- `read_local`: the local engine's streaming read of a landing folder with Auto Loader's rescue
  semantics (typed columns, `_rescued_data`, `_corrupt_record`, `_source_file`,
  `_source_file_modification_time`), given Spark's file-source options (`maxFilesPerTrigger`, ...);
- `counter`: the name of the record count the local runner makes of each committed file for
  reconciliation (`count_records(counter, path)`), without Spark;
- `records_sql`: the same count on Databricks, a query over one landing folder with one row per
  file (`path_key`, `n`).

The formats: `json` (JSON lines, or one document per file with `multi_line`), `csv`, `parquet`.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Callable

from pipelines.formats.base import FileFormat

if TYPE_CHECKING:
    from pipelines.config import TableSpec


def _registry() -> dict[str, FileFormat]:
    from pipelines.formats import csv, json, parquet

    return {f.name: f for f in (json.FORMAT, csv.FORMAT, parquet.FORMAT)}


def file_format(table: "TableSpec") -> FileFormat:
    """The format of `table` (config validation admits only registered ones)."""
    return _registry()[table.format]


def count_records(counter: str | None, path: str | Path) -> int | None:
    """The records of one landing file as the local runner counts them (`FileFormat.counter`), None when
    the file cannot be read whole. `counter` is `<format module>:<variant>`; None counts JSON lines."""
    from pipelines.formats import csv, json, parquet

    counters: dict[str, Callable[[str | Path], int | None]] = {
        **json.COUNTERS, **csv.COUNTERS, **parquet.COUNTERS,
    }
    return counters[counter or json.LINES](path)
