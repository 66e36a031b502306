"""The shape every landing file format has (`FileFormat`); the registry is `pipelines.formats`."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable, Mapping

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

    from pipelines.config import TableSpec

LocalReader = Callable[["SparkSession", "TableSpec", str, Mapping[str, str]], "DataFrame"]
PathKey = Callable[[str], str]


@dataclass(frozen=True)
class FileFormat:
    name: str  # `format` in tables.yml, and Auto Loader's cloudFiles.format
    reader_options: Callable[["TableSpec"], dict[str, str]]
    read_local: LocalReader
    counter: Callable[["TableSpec"], str]
    records_sql: Callable[["TableSpec", str, PathKey], str]  # (table, folder as a SQL literal, path_key)
