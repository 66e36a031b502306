"""A finding of the offline bundle checks, and the helpers every check uses to name where it is."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Mapping


@dataclass(frozen=True)
class Finding:
    where: str
    message: str

    def __str__(self) -> str:
        return f"{self.where}: {self.message}"


def unknown_keys(where: str, data: Any, allowed: Iterable[str]) -> list[Finding]:
    if not isinstance(data, Mapping):
        return [Finding(where, f"must be a mapping, found {type(data).__name__}")]
    allowed = tuple(allowed)
    return [Finding(where, f"unknown key '{k}' (allowed: {', '.join(allowed)})") for k in data if k not in allowed]


def relative(bundle_root: Path, path: Path) -> str:
    try:
        return str(path.relative_to(bundle_root))
    except ValueError:
        return str(path)
