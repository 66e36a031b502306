"""The table configuration: which tables to ingest, declared once (name, format, schema, landing,
expectations). Loading validates everything up front and fails with one clear message.

Schema types are Spark SQL types, checked in pure Python by `pipelines.sqltypes` (no engine needed)
and stored normalized (`decimal(10, 2)` becomes `DECIMAL(10,2)`); types a JSON source cannot fill
(CHAR/VARCHAR, INTERVAL, VOID, TIME, ...) are refused with the reason and the fix.

Landing rule: `landing` is a folder relative to the pipeline's landing root (the `landing_root`
bundle variable, `lakewatch.landing_root` in the pipeline configuration): one or more names
separated by `/`, without empty, `.` or `..` segments. Absolute paths and URIs (`/Volumes/...`,
`s3://...`, `dbfs:/...`) are refused even when they point inside the root: the same tables.yml
serves every target, and the targets' roots differ (a dev volume, the prod volume, `.lakewatch/landing`
locally), so an absolute path would bind a table to one target. When an absolute landing lies inside
the root, the message names the relative path to write instead. The check needs the root, so it runs
where the root is known: `TableSpec.landing_path(root)`, which every caller (the pipeline definition
on both engines, the generator, the local CLI before the engine starts) goes through.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Sequence

import yaml

from pipelines import sqltypes, yamltext
from pipelines.dataset_names import observability_datasets
from pipelines.errors import ConfigError
from pipelines.expectations import NAME_PATTERN, Action, Expectation
from pipelines.table_options import (
    CLEAN_OFF,
    FORMAT_KEYS,
    SOURCE_KEYS,
    landing_problem,
    parse_format_options,
    parse_source_options,
    positive_hours,
)

TABLE_NAME_PATTERN = re.compile(r"^[a-z][a-z0-9_]*$")
# Leaves room for the longest suffix ('_rejected') within Unity Catalog's 255-character limit.
TABLE_NAME_MAX_LENGTH = 128
COLUMN_NAME_PATTERN = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
SUPPORTED_FORMATS = ("json", "csv", "parquet")

# Columns lakewatch adds to every bronze table (declared schema must not use these names).
RESCUED_DATA = "_rescued_data"
CORRUPT_RECORD = "_corrupt_record"
SOURCE_FILE = "_source_file"
SOURCE_FILE_MTIME = "_source_file_modification_time"
INGESTED_AT = "_ingested_at"
RECORD_HASH = "_record_hash"
# Columns of a table's rejected rows (`{table}_rejected`) beside the clean table's.
FAILED_EXPECTATIONS = "_failed_expectations"
REJECTED_AT = "_rejected_at"
RESERVED_COLUMNS = (RESCUED_DATA, CORRUPT_RECORD, SOURCE_FILE, SOURCE_FILE_MTIME, INGESTED_AT, RECORD_HASH,
                    FAILED_EXPECTATIONS, REJECTED_AT)

CORRUPT_RECORDS_SINK = "corrupt_records_sink"

_TOP_KEYS = ("tables",)
_TABLE_KEYS = ("name", "format", "schema", "landing", "expectations", "comment", "max_hours_without_rows",
               *SOURCE_KEYS, *FORMAT_KEYS)
_TABLE_REQUIRED = ("name", "format", "schema", "landing")
_EXPECTATION_KEYS = ("name", "condition", "action")


@dataclass(frozen=True)
class Column:
    name: str
    data_type: str


@dataclass(frozen=True)
class TableSpec:
    """One table to ingest. `landing` is relative to the pipeline's landing root (see the module)."""

    name: str
    format: str
    columns: tuple[Column, ...]
    landing: str
    expectations: tuple[Expectation, ...] = ()
    comment: str | None = None
    max_files_per_trigger: int | None = None  # files per micro-batch (Auto Loader's cloudFiles.maxFilesPerTrigger)
    max_bytes_per_trigger: int | None = None  # bytes per micro-batch, a soft limit (cloudFiles.maxBytesPerTrigger)
    use_notifications: bool = False  # cloudFiles.useNotifications (Databricks only)
    use_managed_file_events: bool = False  # cloudFiles.useManagedFileEvents (Databricks only)
    clean_source: str = CLEAN_OFF  # OFF | DELETE | MOVE (cloudFiles.cleanSource)
    clean_source_move_destination: str | None = None  # relative to the landing root, like `landing`
    clean_source_retention: str | None = None  # cloudFiles.cleanSource.retentionDuration (Databricks only)
    # format: csv (Spark's CSV reader options of the same names; `sep` is `delimiter`)
    header: bool = True  # the first line with content of each file names the columns
    delimiter: str = ","
    quote: str = '"'
    escape: str = "\\"
    # format: json
    multi_line: bool = False  # each file is one JSON document (an object, or an array of objects)
    # observability: hours this table may go without new rows before lakewatch_table_without_rows pages
    # (None: no limit of its own; lakewatch_no_rows still watches the pipeline as a whole)
    max_hours_without_rows: float | None = None

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
    def rejected_name(self) -> str:
        """The streaming table of the rows the table's `drop` expectations remove."""
        return f"{self.name}_rejected"

    @property
    def replay_name(self) -> str:
        """The Delta table of rejected rows queued to go through the clean table again (`lakewatch
        replay`): a plain table the pipeline reads, not one of its datasets."""
        return f"{self.name}_replay"

    @property
    def replay_flow_name(self) -> str:
        """The append flow that sends the queued rows into the clean table."""
        return f"{self.name}_replayed"

    @property
    def drop_expectations(self) -> tuple[Expectation, ...]:
        return tuple(e for e in self.expectations if e.action == Action.DROP)

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
        """The table's landing folder under the root; raises CONFIG_INVALID_LANDING when `landing`
        is not a plain relative folder (it would leave the root, or bind the table to one target)."""
        root = str(landing_root).rstrip("/") or str(landing_root)  # "/" stays "/"
        problem = landing_problem(self.landing, root)
        if problem:
            what, fix = problem
            raise ConfigError(
                "CONFIG_INVALID_LANDING",
                {"table": self.name, "landing": self.landing, "problem": what, "root": root, "fix": fix},
            )
        return f"{root.rstrip('/')}/{self.landing}"

    def dataset_names(self) -> tuple[str, ...]:
        """The datasets the ingest pipeline declares for the table: the rejected rows' table only when
        a `drop` expectation can reject any."""
        rejected = (self.rejected_name,) if self.drop_expectations else ()
        return (self.source_name, self.bronze_name, self.clean_name, *rejected)

    def streaming_tables(self) -> tuple[str, ...]:
        """The table's streaming tables, bronze first: a full refresh of bronze needs the others too,
        since their streams read bronze and cannot follow a truncated table."""
        return self.dataset_names()[1:]

    def move_destination_path(self, landing_root: str) -> str | None:
        """Where clean_source MOVE puts committed files (a folder under the landing root), else None."""
        if self.clean_source_move_destination is None:
            return None
        root = str(landing_root).rstrip("/") or str(landing_root)
        return f"{root.rstrip('/')}/{self.clean_source_move_destination}"


@dataclass(frozen=True)
class TablesConfig:
    path: str
    tables: tuple[TableSpec, ...] = field(default_factory=tuple)

    def table(self, name: str) -> TableSpec:
        for t in self.tables:
            if t.name == name:
                return t
        raise KeyError(name)

    def landing_paths(self, landing_root: str) -> dict[str, str]:
        """Table name -> landing folder under the root; raises for the first invalid landing."""
        return {t.name: t.landing_path(landing_root) for t in self.tables}


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


def _type_text(value: Any) -> str:
    return value if isinstance(value, str) else repr(value)


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
        columns.append(Column(name, parse_column_type(table, name, data_type)))
    return tuple(columns)


def parse_column_type(table: str, column: str, data_type: Any) -> str:
    """The normalized Spark SQL type of a column; refuses text that is not a type, and types a JSON
    source cannot fill or bronze cannot store."""
    parameters = {"table": table, "column": column, "type": _type_text(data_type)}
    if not isinstance(data_type, str):
        found = "nothing" if data_type is None else f"a YAML {type(data_type).__name__}"
        raise ConfigError("CONFIG_INVALID_TYPE", {**parameters, "reason": f"the type must be text, found {found}"})
    try:
        parsed = sqltypes.parse_type(data_type)
        sqltypes.check_json_type(parsed, data_type, column)
    except sqltypes.UnsupportedTypeError as e:
        raise ConfigError("CONFIG_UNSUPPORTED_TYPE", {**parameters, "reason": e.problem}) from None
    except sqltypes.SqlTypeError as e:
        raise ConfigError("CONFIG_INVALID_TYPE", {**parameters, "reason": e.problem}) from None
    return parsed.sql()


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
    columns = parse_columns(name, data["schema"])
    format_options = parse_format_options(name, fmt, data)
    if fmt == "csv":
        for c in columns:
            if c.data_type.startswith(("STRUCT<", "ARRAY<", "MAP<")):
                raise ConfigError("CONFIG_UNSUPPORTED_TYPE", {
                    "table": name, "column": c.name, "type": c.data_type,
                    "reason": "a CSV field is text and Spark's CSV reader cannot fill a STRUCT, ARRAY or MAP column; "
                              "declare it STRING and parse it downstream (from_json)"})
    return TableSpec(
        name=name,
        format=fmt,
        columns=columns,
        landing=str(data["landing"]),
        expectations=parse_expectations(name, data.get("expectations")),
        comment=data.get("comment"),
        max_hours_without_rows=positive_hours(name, "max_hours_without_rows", data.get("max_hours_without_rows")),
        **parse_source_options(name, data),
        **format_options,
    )


def _inside(folder: str, other: str) -> bool:
    """Whether relative folder `folder` is `other` or lies under it."""
    return folder == other or folder.startswith(other.rstrip("/") + "/")


def parse_tables(path: str, data: Any) -> TablesConfig:
    _check_keys(f"The top level of {path}", data, _TOP_KEYS, ())
    items = data.get("tables")
    if not items:
        raise ConfigError("CONFIG_NO_TABLES", {"path": path})
    if not isinstance(items, list):
        raise ConfigError("CONFIG_NOT_A_MAPPING", {"where": f"'tables' in {path}", "found": _describe(items)})
    tables = [parse_table(path, i, item) for i, item in enumerate(items)]
    reserved = set(observability_datasets())
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
        # its rejected rows' and replay queue's names and its replay flow's, drop rule or not
        for d in dict.fromkeys((*t.dataset_names(), t.rejected_name, t.replay_name, t.replay_flow_name)):
            if d in datasets:
                if datasets[d] == t.name:
                    raise ConfigError("CONFIG_DUPLICATE_TABLE", {"name": t.name, "path": path})
                raise ConfigError(
                    "CONFIG_RESERVED_TABLE_NAME",
                    {"name": t.name, "reason": f"its dataset '{d}' collides with one of table '{datasets[d]}'"},
                )
            datasets[d] = t.name
    for t in tables:
        destination = t.clean_source_move_destination
        for u in tables if destination else ():
            if _inside(destination, u.landing) or _inside(u.landing, destination):
                where = "lies in" if _inside(destination, u.landing) else "holds"
                raise ConfigError("CONFIG_INVALID_OPTION", {
                    "table": t.name, "key": "clean_source_move_destination", "value": destination,
                    "reason": f"a folder apart from every landing folder (it {where} the landing folder "
                              f"'{u.landing}' of table '{u.name}', whose stream would read the moved files "
                              "again), e.g. '_archive/" + t.landing + "'"})
    return TablesConfig(path=path, tables=tuple(tables))


def load_tables(path: str | Path) -> TablesConfig:
    """Reads and validates the table configuration file."""
    p = Path(path)
    if not p.is_file():
        raise ConfigError("CONFIG_FILE_NOT_FOUND", {"path": str(p)})
    try:
        data = yamltext.load(p.read_text())
    except yaml.YAMLError as e:
        raise ConfigError("CONFIG_INVALID_YAML", {"path": str(p), "reason": str(e).replace("\n", " ")}) from None
    return parse_tables(str(p), data)
