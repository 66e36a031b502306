"""Changes to conf/tables.yml made by the command line (`lakewatch add-table`, `lakewatch drift --apply`),
written as a YAML round trip (ruamel.yaml): the file's comments, key order, quoting and other tables stay
as they are, and only the entry concerned changes.

Every change is validated before anything is written: the new text is parsed and checked exactly as a
run loads the file (`config.parse_tables`), and a refused change leaves the file untouched. The file is
replaced atomically (a temporary file in the same folder, then a rename).
"""

from __future__ import annotations

import io
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping, Sequence

from ruamel.yaml import YAML
from ruamel.yaml.comments import CommentedMap, CommentedSeq

from pipelines import yamltext
from pipelines.config import TablesConfig, parse_tables
from pipelines.errors import ConfigError, LakewatchError


@dataclass(frozen=True)
class SuggestedExpectation:
    """An expectation to write into a new entry (name, SQL condition, action warn|drop|fail)."""

    name: str
    condition: str
    action: str


@dataclass(frozen=True)
class NewTable:
    """A table entry to add: the keys conf/tables.yml takes, plus comments to write next to columns."""

    name: str
    format: str
    landing: str
    columns: Sequence[tuple[str, str]]  # (name, Spark SQL type), in order
    expectations: Sequence[SuggestedExpectation] = ()
    comment: str | None = None
    options: Mapping[str, object] | None = None  # format options such as header, delimiter, multi_line
    column_notes: Mapping[str, str] | None = None  # column -> a suggestion, written as a YAML comment
    header_note: str | None = None  # written as a comment line above the entry


def _yaml() -> YAML:
    yaml = YAML(typ="rt")
    yaml.preserve_quotes = True
    yaml.width = 4096  # long conditions and comments stay on one line
    yaml.indent(mapping=2, sequence=4, offset=2)
    return yaml


def _read(path: Path) -> CommentedMap:
    if not path.is_file():
        raise ConfigError("CONFIG_FILE_NOT_FOUND", {"path": str(path)})
    document = _yaml().load(path.read_text(encoding="utf-8"))
    if not isinstance(document, CommentedMap) or not isinstance(document.get("tables"), CommentedSeq):
        raise LakewatchError("TABLES_FILE_UNCHANGED", {
            "path": str(path), "reason": "it has no `tables:` list to add to; write `tables:` and one entry first"})
    return document


def _text(document: CommentedMap) -> str:
    out = io.StringIO()
    _yaml().dump(document, out)
    return out.getvalue()


def _validated(path: Path, text: str, landing_root: str | None) -> TablesConfig:
    """The configuration `text` declares, checked as a run checks it (each landing against the landing
    root, when given); raises its ConfigError."""
    config = parse_tables(str(path), yamltext.load(text))
    if landing_root is not None:
        config.landing_paths(landing_root)
    return config


def _write(path: Path, text: str) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


def entry_map(table: NewTable) -> CommentedMap:
    """The YAML mapping of a new table entry, in the key order of the file's own entries."""
    entry = CommentedMap()
    entry["name"] = table.name
    entry["format"] = table.format
    entry["landing"] = table.landing
    if table.comment:
        entry["comment"] = table.comment
    for key, value in (table.options or {}).items():
        entry[key] = value
    schema = CommentedMap()
    for name, data_type in table.columns:
        schema[name] = data_type
    for name, note in (table.column_notes or {}).items():
        if name in schema:
            schema.yaml_add_eol_comment(note, name, column=0)
    entry["schema"] = schema
    if table.expectations:
        expectations = CommentedSeq()
        for e in table.expectations:
            item = CommentedMap()
            item["name"], item["condition"], item["action"] = e.name, e.condition, e.action
            expectations.append(item)
        entry["expectations"] = expectations
    return entry


def entry_text(table: NewTable) -> str:
    """The entry as it will appear in the file (for showing it before writing)."""
    document = CommentedMap()
    document["tables"] = CommentedSeq([entry_map(table)])
    text = _text(document)
    body = text.split("\n", 1)[1]
    header = "".join(f"  # {line}\n" for line in (table.header_note or "").splitlines())
    return header + body


def add_table(path: Path, table: NewTable, replace: bool = False, landing_root: str | None = None) -> TablesConfig:
    """Appends the entry (or replaces the one of the same name, in its place, with `replace`), validates
    the whole file as a run does and writes it; nothing is written when anything is refused."""
    document = _read(path)
    tables: CommentedSeq = document["tables"]
    entry = entry_map(table)
    index = next((i for i, t in enumerate(tables) if isinstance(t, Mapping) and t.get("name") == table.name), None)
    if index is not None and not replace:
        raise LakewatchError("TABLE_EXISTS", {"name": table.name, "path": str(path)})
    note = table.header_note or ""
    if index is None:
        tables.append(entry)
        # a blank line, then the note as comment lines, above the new entry
        tables.yaml_set_comment_before_after_key(len(tables) - 1, before="\n" + note, indent=2)
    else:
        # the blank line above the entry stays where it is (it belongs to the entry before); the one
        # below it went with the old entry's last line
        tables[index] = entry
        if note:
            tables.yaml_set_comment_before_after_key(index, before=note, indent=2)
        if index + 1 < len(tables):
            tables.yaml_set_comment_before_after_key(index + 1, before="\n", indent=2)
    text = _text(document)
    config = _validated(path, text, landing_root)
    _write(path, text)
    return config


def add_columns(path: Path, table: str, columns: Sequence[tuple[str, str]],
                landing_root: str | None = None) -> TablesConfig:
    """Adds columns at the end of a table's schema; validates and writes as `add_table` does."""
    document = _read(path)
    entry = next((t for t in document["tables"] if isinstance(t, Mapping) and t.get("name") == table), None)
    if entry is None:
        raise LakewatchError("CLI_INVALID_ARGUMENT", {"reason": f"no table '{table}' in {path}"})
    schema = entry.get("schema")
    if not isinstance(schema, CommentedMap):
        raise LakewatchError("TABLES_FILE_UNCHANGED", {
            "path": str(path), "reason": f"table '{table}' has no schema mapping to add columns to"})
    known = {str(k).lower() for k in schema}
    for name, data_type in columns:
        if name.lower() in known:
            raise ConfigError("CONFIG_INVALID_SCHEMA", {
                "table": table, "reason": f"column '{name}' is declared already (names are case-insensitive)"})
        schema[name] = data_type
        known.add(name.lower())
    text = _text(document)
    config = _validated(path, text, landing_root)
    _write(path, text)
    return config
