"""The table configuration: which tables to ingest, declared once (name, format, schema, landing,
expectations). Loading validates everything up front and fails with one clear message."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Sequence

import yaml

from pipelines.errors import ConfigError
from pipelines.expectations import NAME_PATTERN, Action, Expectation

TABLE_NAME_PATTERN = re.compile(r"^[a-z][a-z0-9_]*$")
# Leaves room for the longest suffix ('_bronze') within Unity Catalog's 255-character limit.
TABLE_NAME_MAX_LENGTH = 128
COLUMN_NAME_PATTERN = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
SUPPORTED_FORMATS = ("json",)

# Columns lakewatch adds to every bronze table (declared schema must not use these names).
RESCUED_DATA = "_rescued_data"
CORRUPT_RECORD = "_corrupt_record"
SOURCE_FILE = "_source_file"
SOURCE_FILE_MTIME = "_source_file_modification_time"
INGESTED_AT = "_ingested_at"
RECORD_HASH = "_record_hash"
RESERVED_COLUMNS = (RESCUED_DATA, CORRUPT_RECORD, SOURCE_FILE, SOURCE_FILE_MTIME, INGESTED_AT, RECORD_HASH)

CORRUPT_RECORDS_SINK = "corrupt_records_sink"

_SIMPLE_TYPES = {
    "STRING", "BOOLEAN", "TINYINT", "SMALLINT", "INT", "INTEGER", "BIGINT", "LONG", "FLOAT",
    "DOUBLE", "DATE", "TIMESTAMP", "TIMESTAMP_NTZ", "BINARY",
}
_DECIMAL = re.compile(r"^DECIMAL\s*\(\s*(\d+)\s*,\s*(\d+)\s*\)$")
_COMPLEX = re.compile(r"^(ARRAY|MAP|STRUCT)\s*<.*>$", re.DOTALL)

_TOP_KEYS = ("tables",)
_TABLE_KEYS = ("name", "format", "schema", "landing", "expectations", "comment", "max_files_per_trigger")
_TABLE_REQUIRED = ("name", "format", "schema", "landing")
_EXPECTATION_KEYS = ("name", "condition", "action")


@dataclass(frozen=True)
class Column:
    name: str
    data_type: str


@dataclass(frozen=True)
class TableSpec:
    """One table to ingest. `landing` is relative to the pipeline's landing root unless absolute."""

    name: str
    format: str
    columns: tuple[Column, ...]
    landing: str
    expectations: tuple[Expectation, ...] = ()
    comment: str | None = None
    max_files_per_trigger: int | None = None  # files per micro-batch (Auto Loader's cloudFiles.maxFilesPerTrigger)

    @property
    def source_name(self) -> str:
        return f"{self.name}_source"

    @property
    def bronze_name(self) -> str:
        return f"{self.name}_bronze"

    @property
    def clean_name(self) -> str:
        return self.name

    @property
    def sink_flow_name(self) -> str:
        return f"{self.name}_to_{CORRUPT_RECORDS_SINK}"

    @property
    def schema_ddl(self) -> str:
        return ", ".join(f"`{c.name}` {c.data_type}" for c in self.columns)

    @property
    def column_names(self) -> tuple[str, ...]:
        return tuple(c.name for c in self.columns)

    def landing_path(self, landing_root: str) -> str:
        if self.landing.startswith("/") or "://" in self.landing:
            return self.landing
        return landing_root.rstrip("/") + "/" + self.landing

    def dataset_names(self) -> tuple[str, ...]:
        return (self.source_name, self.bronze_name, self.clean_name)


@dataclass(frozen=True)
class TablesConfig:
    path: str
    tables: tuple[TableSpec, ...] = field(default_factory=tuple)

    def table(self, name: str) -> TableSpec:
        for t in self.tables:
            if t.name == name:
                return t
        raise KeyError(name)


def _describe(value: Any) -> str:
    return type(value).__name__ if value is not None else "nothing"


def _check_keys(where: str, data: Any, allowed: Sequence[str], required: Sequence[str]) -> Mapping[str, Any]:
    if not isinstance(data, Mapping):
        raise ConfigError("CONFIG_NOT_A_MAPPING", {"where": where, "found": _describe(data)})
    for key in data:
        if key not in allowed:
            raise ConfigError(
                "CONFIG_UNKNOWN_KEY", {"where": where, "key": key, "allowed": ", ".join(allowed)}
            )
    for key in required:
        if key not in data or data[key] in (None, ""):
            raise ConfigError("CONFIG_MISSING_KEY", {"where": where, "key": key})
    return data


def _valid_type(data_type: str) -> bool:
    t = data_type.strip().upper()
    return t in _SIMPLE_TYPES or bool(_DECIMAL.match(t)) or bool(_COMPLEX.match(t))


def parse_columns(table: str, schema: Any) -> tuple[Column, ...]:
    """Schema as a mapping of column name to Spark SQL type, in column order."""
    if not isinstance(schema, Mapping) or not schema:
        raise ConfigError(
            "CONFIG_INVALID_SCHEMA",
            {"table": table, "reason": "write it as a mapping of column name to type, "
             "e.g. `order_id: BIGINT`"},
        )
    columns = []
    seen: set[str] = set()
    for name, data_type in schema.items():
        name = str(name)
        if not COLUMN_NAME_PATTERN.match(name):
            raise ConfigError(
                "CONFIG_INVALID_SCHEMA",
                {"table": table, "reason": f"column name '{name}' must be letters, digits and underscores"},
            )
        if name.lower() in seen:
            raise ConfigError(
                "CONFIG_INVALID_SCHEMA",
                {"table": table, "reason": f"column '{name}' is declared twice (names are case-insensitive)"},
            )
        seen.add(name.lower())
        if name in RESERVED_COLUMNS:
            raise ConfigError("CONFIG_RESERVED_COLUMN", {"table": table, "column": name})
        if not isinstance(data_type, str) or not _valid_type(data_type):
            raise ConfigError(
                "CONFIG_INVALID_SCHEMA",
                {"table": table, "reason": f"column '{name}' has type '{data_type}', which is not a "
                 "Spark SQL type (e.g. STRING, BIGINT, DOUBLE, DECIMAL(10,2), TIMESTAMP, DATE, BOOLEAN)"},
            )
        columns.append(Column(name, data_type.strip().upper()))
    return tuple(columns)


def parse_expectations(table: str, data: Any) -> tuple[Expectation, ...]:
    if data is None:
        return ()
    if not isinstance(data, list):
        raise ConfigError(
            "CONFIG_INVALID_EXPECTATION",
            {"where": f"list of table '{table}'", "reason": "expectations must be a list"},
        )
    result = []
    names: set[str] = set()
    for i, item in enumerate(data):
        where = f"#{i + 1} of table '{table}'"
        _check_keys(f"Expectation {where}", item, _EXPECTATION_KEYS, ("name", "condition"))
        name = str(item["name"])
        if not NAME_PATTERN.match(name):
            raise ConfigError(
                "CONFIG_INVALID_EXPECTATION",
                {"where": where, "reason": f"name '{name}' must be letters, digits and underscores"},
            )
        if name in names:
            raise ConfigError(
                "CONFIG_INVALID_EXPECTATION", {"where": where, "reason": f"name '{name}' is used twice"}
            )
        names.add(name)
        action_text = str(item.get("action", "warn")).lower()
        try:
            action = Action(action_text)
        except ValueError:
            raise ConfigError(
                "CONFIG_INVALID_EXPECTATION",
                {"where": where, "reason": f"action '{action_text}' is not one of warn, drop, fail"},
            ) from None
        condition = item["condition"]
        if not isinstance(condition, str) or not condition.strip():
            raise ConfigError(
                "CONFIG_INVALID_EXPECTATION", {"where": where, "reason": "condition must be SQL text"}
            )
        result.append(Expectation(name, condition.strip(), action))
    return tuple(result)


def parse_table(path: str, index: int, data: Any) -> TableSpec:
    _check_keys(f"Table #{index + 1} in {path}", data, _TABLE_KEYS, ())
    label = f"Table '{data.get('name', f'#{index + 1}')}' in {path}"
    _check_keys(label, data, _TABLE_KEYS, _TABLE_REQUIRED)
    name = str(data["name"])
    if not TABLE_NAME_PATTERN.match(name) or len(name) > TABLE_NAME_MAX_LENGTH:
        raise ConfigError(
            "CONFIG_INVALID_TABLE_NAME", {"name": name, "max_length": TABLE_NAME_MAX_LENGTH}
        )
    fmt = str(data["format"]).lower()
    if fmt not in SUPPORTED_FORMATS:
        raise ConfigError(
            "CONFIG_UNSUPPORTED_FORMAT",
            {"table": name, "format": fmt, "supported": ", ".join(SUPPORTED_FORMATS)},
        )
    return TableSpec(
        name=name,
        format=fmt,
        columns=parse_columns(name, data["schema"]),
        landing=str(data["landing"]),
        expectations=parse_expectations(name, data.get("expectations")),
        comment=data.get("comment"),
        max_files_per_trigger=_positive_int(name, "max_files_per_trigger", data.get("max_files_per_trigger")),
    )


def _positive_int(table: str, key: str, value: Any) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ConfigError("CONFIG_INVALID_OPTION", {"table": table, "key": key, "value": value,
                                                    "reason": "a whole number of at least 1"})
    return value


def parse_tables(path: str, data: Any) -> TablesConfig:
    _check_keys(f"The top level of {path}", data, _TOP_KEYS, ())
    items = data.get("tables")
    if not items:
        raise ConfigError("CONFIG_NO_TABLES", {"path": path})
    if not isinstance(items, list):
        raise ConfigError("CONFIG_NOT_A_MAPPING", {"where": f"'tables' in {path}", "found": _describe(items)})
    tables = [parse_table(path, i, item) for i, item in enumerate(items)]
    from pipelines.observability.tables import TABLES as OBSERVABILITY_TABLES

    reserved = {o.name for o in OBSERVABILITY_TABLES}
    datasets: dict[str, str] = {}
    for t in tables:
        if t.name in reserved:
            raise ConfigError(
                "CONFIG_RESERVED_TABLE_NAME", {"name": t.name, "reason": "an observability table has that name"}
            )
        if t.name == CORRUPT_RECORDS_SINK:
            raise ConfigError(
                "CONFIG_RESERVED_TABLE_NAME", {"name": t.name, "reason": "it is the quarantine sink's name"}
            )
        for d in t.dataset_names():
            if d in datasets:
                if datasets[d] == t.name:
                    raise ConfigError("CONFIG_DUPLICATE_TABLE", {"name": t.name, "path": path})
                raise ConfigError(
                    "CONFIG_RESERVED_TABLE_NAME",
                    {"name": t.name, "reason": f"its dataset '{d}' collides with one of table '{datasets[d]}'"},
                )
            datasets[d] = t.name
    return TablesConfig(path=path, tables=tuple(tables))


def load_tables(path: str | Path) -> TablesConfig:
    """Reads and validates the table configuration file."""
    p = Path(path)
    if not p.is_file():
        raise ConfigError("CONFIG_FILE_NOT_FOUND", {"path": str(p)})
    try:
        data = yaml.safe_load(p.read_text())
    except yaml.YAMLError as e:
        raise ConfigError("CONFIG_INVALID_YAML", {"path": str(p), "reason": str(e).replace("\n", " ")}) from None
    return parse_tables(str(p), data)
