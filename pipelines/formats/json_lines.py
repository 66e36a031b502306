"""The records of a JSON-lines landing file, counted without Spark (the local runner's count for
reconciliation; `json.LINE_RECORDS_SQL` is the same count in SQL, for Databricks).

A landing file is split into lines at CR, LF or CRLF (as Hadoop's line reader does); a line counts
when it holds anything but spaces and tabs (the only whitespace JSON allows on a line besides the line
ends). A line holding a JSON array of objects counts one per object, as Spark's reader (and the local
rescue) makes a row of each; any other line counts one (an empty array is one corrupt row locally).
Gzip and bzip2 files are counted after decompression; a file that cannot be read whole (an
incomplete upload) is not counted (None), and counted once it can be.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import IO, Iterator

from pipelines.formats.files import open_landing_file, readable

_CONTENT_LINE = re.compile(rb"[^\r\n]*[^ \t\r\n][^\r\n]*")
_CHUNK = 8 << 20
_BOM = b"\xef\xbb\xbf"
_DECODER = json.JSONDecoder()


def _chunks(stream: IO[bytes]) -> Iterator[bytes]:
    while True:
        chunk = stream.read(_CHUNK)
        if not chunk:
            return
        yield chunk


def _body(line: bytes) -> bytes:
    """The line without the byte-order mark at its start, which Spark's reader skips when something
    follows it."""
    return line[len(_BOM):] if line.startswith(_BOM) and len(line) > len(_BOM) else line


def _records(lines: list[bytes]) -> int:
    """Rows the lines make: none for a byte-order mark and blanks, one each, but one per object for a
    line holding a JSON array of objects (text after the array is ignored, as Spark's reader ignores it)."""
    count = sum(1 for line in lines if _body(line).strip(b" \t"))
    for line in lines:
        text = _body(line).strip(b" \t")
        if not text.startswith(b"["):
            continue
        try:
            value, _ = _DECODER.raw_decode(text.decode("utf-8"))
        except ValueError:  # not JSON, or not UTF-8: one corrupt row
            continue
        if isinstance(value, list) and value and all(isinstance(v, dict) for v in value):
            count += len(value) - 1
    return count


def count_content_lines(path: str | Path) -> int | None:
    """Lines with content in the file (see the module docstring); None when it cannot be read whole
    or is compressed with a codec this count does not read."""
    if not readable(path):
        return None
    count = 0
    carry = b""
    try:
        with open_landing_file(path) as stream:
            for chunk in _chunks(stream):
                data = carry + chunk
                cut = max(data.rfind(b"\n"), data.rfind(b"\r"))
                # A trailing CR may be the first half of CRLF: keep it with the rest of the line.
                if cut == len(data) - 1 and data.endswith(b"\r"):
                    cut = max(data.rfind(b"\n", 0, cut), data.rfind(b"\r", 0, cut))
                complete, carry = (data[:cut + 1], data[cut + 1:]) if cut >= 0 else (b"", data)
                count += _records(_CONTENT_LINE.findall(complete))
        count += _records(_CONTENT_LINE.findall(carry))
    except (OSError, EOFError, ValueError):
        return None
    return count
