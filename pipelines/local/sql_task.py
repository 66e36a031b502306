"""Runs a job's SQL file task (`sql_task.file`) on the local engine, as a SQL warehouse runs it.

The file holds statements separated by semicolons; they run in order in one session, and the first
that fails fails the task (later ones do not run). Each `{{name}}` in the file stands for the task
parameter `name` as a string literal, as Databricks substitutes the task's `parameters` (the form
databricks/cli's default-sql template uses: `USE IDENTIFIER({{schema}})`); a `{{name}}` without a
parameter fails the task before anything runs.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

PARAMETER = re.compile(r"\{\{\s*([A-Za-z_][A-Za-z0-9_.-]*)\s*\}\}")


class SqlTaskError(Exception):
    """A SQL file task that could not run: a missing file or parameter, or a failed statement."""

    def __init__(self, message: str, statement: int | None = None) -> None:
        super().__init__(message)
        self.statement = statement  # 1-based number of the failing statement, when one failed


@dataclass
class SqlTaskResult:
    path: Path
    statements: int = 0  # statements that ran
    seconds: float = 0.0
    # num_inserted_rows (and the like) of the statements that report them, e.g. a MERGE
    metrics: dict[str, int] = field(default_factory=dict)


def sql_literal(value: Any) -> str:
    """`value` as a Spark SQL string literal."""
    text = str(value).replace("\\", "\\\\").replace("'", "\\'")
    return f"'{text}'"


def split_statements(text: str) -> list[str]:
    """The statements of a SQL file: split on `;` outside quotes, backquotes and comments; comments
    and empty statements dropped."""
    statements: list[str] = []
    current: list[str] = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c == "-" and text.startswith("--", i):
            end = text.find("\n", i)
            i = n if end < 0 else end  # the newline stays
            continue
        if c == "/" and text.startswith("/*", i):
            end = text.find("*/", i + 2)
            i = n if end < 0 else end + 2
            current.append(" ")
            continue
        if c in "'\"`":
            j = i + 1
            while j < n and text[j] != c:
                j += 2 if text[j] == "\\" and c != "`" else 1
            current.append(text[i:j + 1])
            i = j + 1
            continue
        if c == ";":
            statements.append("".join(current))
            current = []
        else:
            current.append(c)
        i += 1
    statements.append("".join(current))
    return [s.strip() for s in statements if s.strip()]


def render(text: str, parameters: Mapping[str, Any], where: str = "the SQL file") -> str:
    """`text` with every `{{name}}` replaced by its parameter's value as a string literal."""
    missing = sorted({m.group(1) for m in PARAMETER.finditer(text)} - set(parameters))
    if missing:
        raise SqlTaskError(f"{where} refers to parameter(s) {', '.join(missing)}, which the task does not set "
                           f"(sql_task.parameters: {', '.join(sorted(parameters)) or 'none'})")
    return PARAMETER.sub(lambda m: sql_literal(parameters[m.group(1)]), text)


def run_sql_file(spark: Any, path: Path, parameters: Mapping[str, Any]) -> SqlTaskResult:
    """Runs every statement of `path` with `parameters`; raises SqlTaskError naming the statement
    that failed."""
    if not path.is_file():
        raise SqlTaskError(f"the SQL file {path} does not exist")
    # Comments are dropped first: a `{{name}}` in a comment is text, not a parameter.
    statements = split_statements(path.read_text())
    render("\n".join(statements), parameters, str(path))  # every parameter set, before anything runs
    statements = [render(s, parameters) for s in statements]
    result = SqlTaskResult(path)
    started = time.monotonic()
    for number, statement in enumerate(statements, start=1):
        try:
            rows = spark.sql(statement).collect()
        except Exception as e:  # noqa: BLE001 (every failure fails the task, naming the statement)
            first_line = " ".join(statement.split())[:80]
            raise SqlTaskError(f"statement {number} of {path.name} ({first_line} ...) failed: "
                               f"{str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__}",
                               number) from e
        result.statements = number
        if len(rows) == 1 and hasattr(rows[0], "asDict"):
            for key, value in rows[0].asDict().items():
                if key.startswith("num_") and isinstance(value, int):
                    result.metrics[key] = result.metrics.get(key, 0) + value
    result.seconds = time.monotonic() - started
    return result
