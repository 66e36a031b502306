"""What every local format reader shares: the text stream of a landing folder and the source file's
path and modification time (`_metadata`, as Auto Loader gives them); and, for the record counts made
without Spark, a landing file opened and read with the codecs Spark's text reader decompresses by
extension (gzip, bzip2)."""

from __future__ import annotations

import bz2
import gzip
import re
from pathlib import Path
from typing import IO, TYPE_CHECKING, Mapping

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


# Codecs Spark reads by extension that the counts made without Spark do not read: such a file is not
# counted (NULL) rather than counted wrong.
_UNREAD_CODECS = re.compile(r"\.(deflate|lz4|snappy|zst|zstd|br)$")


def readable(path: str | Path) -> bool:
    """Whether `open_landing_file` reads the file's codec."""
    return not _UNREAD_CODECS.search(Path(path).name.lower())


def open_landing_file(path: str | Path) -> IO[bytes]:
    """The file's bytes as a stream, gzip and bzip2 decompressed (by the name's extension)."""
    p = Path(path)
    name = p.name.lower()
    if name.endswith(".gz"):
        return gzip.open(p, "rb")
    if name.endswith(".bz2"):
        return bz2.open(p, "rb")
    return p.open("rb")


def read_whole(path: str | Path) -> bytes | None:
    """The file's bytes, gzip and bzip2 decompressed; None when it cannot be read whole (an incomplete
    upload) or is compressed with a codec this does not read."""
    if not readable(path):
        return None
    try:
        with open_landing_file(path) as stream:
            return stream.read()
    except (OSError, EOFError, ValueError):
        return None
