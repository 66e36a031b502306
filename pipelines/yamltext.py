"""YAML documents read the one way: PyYAML's safe loader, in libyaml's C build when PyYAML has it.

Every command reads the bundle (about 27 files, 56 KB): 82 ms with the pure-Python loader, 5 ms with
libyaml's, the same documents (measured on this project's files, bench/RESULTS.md)."""

from __future__ import annotations

from typing import Any

import yaml

LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def load(text: str) -> Any:
    """The document in `text`; raises `yaml.YAMLError` (with its line and column) when it is not YAML."""
    return yaml.load(text, Loader=LOADER)  # noqa: S506 (a safe loader)
