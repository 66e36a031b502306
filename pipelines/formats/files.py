"""What every local format reader shares: the text stream of a landing folder and the source file's
path and modification time (`_metadata`, as Auto Loader gives them)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Mapping

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame, SparkSession


def metadata_columns() -> list["Column"]:
    from pyspark.sql import functions as F

    from pipelines.config import SOURCE_FILE, SOURCE_FILE_MTIME

    return [
        F.col("_metadata.file_path").alias(SOURCE_FILE),
        F.col("_metadata.file_modification_time").alias(SOURCE_FILE_MTIME),
    ]


def text_stream(spark: "SparkSession", path: str, options: Mapping[str, str], whole_files: bool = False) -> "DataFrame":
    """Spark's text file stream of `path` with the file-source `options`: a row per line (CR, LF and
    CRLF end one), or with `whole_files` a row per file holding its whole text (`wholetext`)."""
    reader = spark.readStream.format("text")
    for key, value in options.items():
        reader = reader.option(key, value)
    if whole_files:
        reader = reader.option("wholetext", "true")
    return reader.load(path)
