"""Where the CLI writes: a verb's result on standard output (text, or one JSON document with `-o json`),
everything else (progress, notes, warnings, errors) on standard error; and the one readable paragraph
an error becomes.
"""

from __future__ import annotations

import base64
import json
import sys
from datetime import date, datetime, time
from decimal import Decimal
from typing import Any, Mapping

from pipelines.errors import LakewatchError, engine_message


def result(text: str) -> None:
    """A line of a verb's text result, on standard output."""
    print(text, flush=True)


def note(text: str) -> None:
    """Progress, notes and warnings, on standard error."""
    print(text, file=sys.stderr, flush=True)


def jsonable(value: Any) -> Any:
    """A value as JSON holds it exactly: DECIMAL as its text (a float would round it), timestamps,
    dates and times in ISO 8601, BINARY in base64, rows and structs as objects, maps with text keys."""
    if isinstance(value, Decimal):
        return str(value)
    if isinstance(value, (datetime, date, time)):
        return value.isoformat()
    if isinstance(value, (bytes, bytearray)):
        return base64.b64encode(bytes(value)).decode("ascii")
    if isinstance(value, float) and value != value:  # NaN, which JSON cannot hold
        return None
    if isinstance(value, Mapping):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    if hasattr(value, "asDict"):
        return jsonable(value.asDict(recursive=True))
    return value


def json_result(document: Any) -> None:
    """A verb's JSON result: one document on one line of standard output."""
    print(json.dumps(jsonable(document), default=str), flush=True)


def error_paragraph(error: BaseException, verbose: bool) -> str:
    """One readable paragraph for any error; the JVM stack trace only when verbose."""
    text = str(error)
    if "Another instance of Derby may have already booted" in text or "XSDB6" in text:
        from pipelines.local.home import LocalHome

        return str(LakewatchError("METASTORE_LOCKED", {"home": LocalHome.default().root}))
    if not verbose:
        text = engine_message(text)
    text = " ".join(text.split()) if not verbose else text.strip()
    if isinstance(error, LakewatchError):
        return text
    return f"{type(error).__name__}: {text}"
