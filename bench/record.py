"""What every benchmark script shares: the heading of a results block and appending it to
bench/RESULTS.md."""

from __future__ import annotations

import os
import platform
from datetime import datetime, timezone
from pathlib import Path

RESULTS = Path(__file__).resolve().parent / "RESULTS.md"


def heading(title: str) -> str:
    """`## <title>, <UTC time>, <machine>, <cores> cores, Python <version>`."""
    return (f"## {title}, {datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC, {platform.node()}, "
            f"{os.cpu_count()} cores, Python {platform.python_version()}")


def table(columns: list[str], rows: list[tuple]) -> list[str]:
    """A Markdown table's lines."""
    return [f"| {' | '.join(columns)} |", f"| {' | '.join('---' for _ in columns)} |",
            *[f"| {' | '.join(str(c) for c in row)} |" for row in rows]]


def record(lines: list[str]) -> None:
    """Prints a results block and appends it to bench/RESULTS.md."""
    text = "\n".join(["", *lines]) + "\n"
    print(text)
    with RESULTS.open("a") as f:
        f.write(text)
