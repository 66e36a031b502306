"""What a table of `conf/tables.yml` sets besides its name, columns and expectations: where its files
land (`landing`, checked against the landing root), Auto Loader's source options (files and bytes per
trigger, notifications, cleanSource with its destination and retention, schema hints) and its format's
reader options (CSV header, delimiter, quote, escape; JSON multi_line), each validated with a message
that says what to write instead (`ConfigError`)."""

from __future__ import annotations

import math
import posixpath
import re
from typing import Any, Mapping

from pipelines.errors import ConfigError

# Auto Loader's cloudFiles.cleanSource modes (docs/tables.md "Auto Loader options").
CLEAN_OFF, CLEAN_DELETE, CLEAN_MOVE = "OFF", "DELETE", "MOVE"

URI = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:/")

# Auto Loader options a table may set (docs/tables.md "Auto Loader options"; adapter.cloud_files_options
# and local.adapter.local_file_options map them to each engine).
SOURCE_KEYS = ("max_files_per_trigger", "max_bytes_per_trigger", "use_notifications", "use_managed_file_events",
                "clean_source", "clean_source_move_destination", "clean_source_retention", "schema_hints")
# Reader options of a format (docs/tables.md "Landing file formats"), each valid with one format only.
FORMAT_KEYS = {"header": "csv", "delimiter": "csv", "quote": "csv", "escape": "csv", "multi_line": "json"}


def _single_character(table: str, key: str, value: Any) -> str:
    if not isinstance(value, str) or len(value) != 1 or value in "\r\n":
        raise ConfigError("CONFIG_INVALID_OPTION", {
            "table": table, "key": key, "value": value,
            "reason": "one character other than a line end, quoted in YAML (e.g. ';', or \"\\t\" for a tab)"})
    return value


def parse_format_options(table: str, fmt: str, data: Mapping[str, Any]) -> dict[str, Any]:
    """The reader options of the table's format; an option of another format is refused."""
    for key, owner in FORMAT_KEYS.items():
        if data.get(key) is not None and owner != fmt:
            raise ConfigError("CONFIG_INVALID_OPTION", {
                "table": table, "key": key, "value": data[key], "reason": f"set only with format: {owner}"})
    if fmt == "json":
        return {"multi_line": _flag(table, "multi_line", data.get("multi_line"))}
    if fmt != "csv":
        return {}
    options: dict[str, Any] = {"header": True if data.get("header") is None else _flag(table, "header", data["header"])}
    for key in ("delimiter", "quote", "escape"):
        if data.get(key) is not None:
            options[key] = _single_character(table, key, data[key])
    chosen = {k: options.get(k, default) for k, default in (("delimiter", ","), ("quote", '"'), ("escape", "\\"))}
    if chosen["delimiter"] in (chosen["quote"], chosen["escape"]):
        raise ConfigError("CONFIG_CONFLICTING_OPTIONS", {
            "table": table, "first": "delimiter", "second": "quote or escape",
            "reason": f"the delimiter must differ from the quote and escape characters, found {chosen} (the "
                      "escape may be the quote character, as RFC 4180 files double a quote: escape: '\"')"})
    return options


def positive_hours(table: str, key: str, value: Any) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value <= 0:
        raise ConfigError("CONFIG_INVALID_OPTION", {"table": table, "key": key, "value": value,
                                                    "reason": "a number of hours greater than 0 (e.g. 26 for a daily feed)"})
    return float(value)


def _positive_int(table: str, key: str, value: Any) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ConfigError("CONFIG_INVALID_OPTION", {"table": table, "key": key, "value": value,
                                                    "reason": "a whole number of at least 1"})
    return value


# Byte sizes as Spark's JavaUtils.byteStringAs reads them (Auto Loader's "byte string", e.g. 10g): a whole
# number and an optional binary unit, no space, no fraction.
_BYTE_UNITS = {"": 1, "b": 1, "k": 1 << 10, "kb": 1 << 10, "m": 1 << 20, "mb": 1 << 20, "g": 1 << 30,
               "gb": 1 << 30, "t": 1 << 40, "tb": 1 << 40, "p": 1 << 50, "pb": 1 << 50}
_BYTE_SIZE = re.compile(r"^([0-9]+)([a-z]*)$")
# A CalendarInterval string as cloudFiles.cleanSource.retentionDuration takes it ("14 days", "2 weeks",
# "1 month", "1 day 12 hours"); the seconds are a lower bound (a month counts 28 days).
_INTERVAL_UNITS = {"year": 365 * 86400, "month": 28 * 86400, "week": 7 * 86400, "day": 86400, "hour": 3600,
                   "minute": 60, "second": 1}
_INTERVAL_PART = re.compile(r"([0-9]+)\s+(year|month|week|day|hour|minute|second)s?", re.I)
_INTERVAL = re.compile(rf"^(interval\s+)?{_INTERVAL_PART.pattern}(\s+{_INTERVAL_PART.pattern})*$", re.I)
# Auto Loader refuses a DELETE retention of 7 days or less (docs: "must be greater than 7 days for DELETE").
DELETE_MIN_RETENTION_SECONDS = 7 * 86400


def parse_byte_size(table: str, key: str, value: Any) -> int | None:
    """Bytes of a size written as a whole number of bytes or a byte string ('512m', '10g')."""
    if value is None:
        return None
    reason = "a positive number of bytes, or a size such as '512m' or '10g' (units b, k, m, g, t, p; 1k = 1024)"
    if isinstance(value, bool):
        raise ConfigError("CONFIG_INVALID_OPTION", {"table": table, "key": key, "value": value, "reason": reason})
    if isinstance(value, int):
        size = value
    else:
        match = _BYTE_SIZE.match(str(value).strip().lower()) if isinstance(value, str) else None
        if not match or match.group(2) not in _BYTE_UNITS:
            raise ConfigError("CONFIG_INVALID_OPTION", {"table": table, "key": key, "value": value, "reason": reason})
        size = int(match.group(1)) * _BYTE_UNITS[match.group(2)]
    if size < 1:
        raise ConfigError("CONFIG_INVALID_OPTION", {"table": table, "key": key, "value": value, "reason": reason})
    return size


def interval_seconds(text: str) -> int | None:
    """The lower bound in seconds of an interval string ('14 days', '1 week 2 days'), None if it is not one."""
    if not _INTERVAL.match(text.strip()):
        return None
    return sum(int(n) * _INTERVAL_UNITS[unit.lower()] for n, unit in _INTERVAL_PART.findall(text))


def _flag(table: str, key: str, value: Any) -> bool:
    if value is None:
        return False
    if not isinstance(value, bool):
        raise ConfigError("CONFIG_INVALID_OPTION", {"table": table, "key": key, "value": value,
                                                    "reason": "true or false"})
    return value


def _clean_source_mode(table: str, value: Any) -> str:
    if value is None or value is False:  # YAML 1.1 reads a bare `off` as false
        return CLEAN_OFF
    mode = value.strip().upper() if isinstance(value, str) else None
    if mode not in (CLEAN_OFF, CLEAN_DELETE, CLEAN_MOVE):
        raise ConfigError("CONFIG_INVALID_OPTION", {
            "table": table, "key": "clean_source", "value": value,
            "reason": "one of off, delete or move (Auto Loader's cloudFiles.cleanSource modes; "
                      "Spark's own name for move is 'archive')"})
    return mode


def _move_destination(table: str, value: Any) -> str:
    key = "clean_source_move_destination"
    if not isinstance(value, str) or not value.strip():
        raise ConfigError("CONFIG_INVALID_OPTION", {"table": table, "key": key, "value": value,
                                                    "reason": "a folder relative to the landing root, e.g. '_archive/orders'"})
    if URI.match(value) or value.startswith("/"):
        raise ConfigError("CONFIG_INVALID_OPTION", {
            "table": table, "key": key, "value": value,
            "reason": "a folder relative to the landing root, as `landing` is (one tables.yml serves every "
                      "target, and Auto Loader moves files only within the source's storage), e.g. '_archive/orders'"})
    problem = landing_problem(value, "")
    if problem:
        what, fix = problem
        raise ConfigError("CONFIG_INVALID_OPTION", {"table": table, "key": key, "value": value,
                                                    "reason": f"a plain relative folder; it {what}: {fix}"})
    return value


def parse_source_options(table: str, data: Mapping[str, Any]) -> dict[str, Any]:
    """The table's Auto Loader options, validated (docs/tables.md "Auto Loader options")."""
    if data.get("schema_hints") is not None:
        raise ConfigError("CONFIG_UNSUPPORTED_OPTION", {
            "table": table, "key": "schema_hints",
            "reason": "lakewatch passes the table's whole schema to Auto Loader, which then infers nothing, and "
                      "schema hints only steer inference. Declare each column's type under `schema:` instead "
                      "(e.g. `amount: DECIMAL(10,2)`)"})
    notifications = _flag(table, "use_notifications", data.get("use_notifications"))
    file_events = _flag(table, "use_managed_file_events", data.get("use_managed_file_events"))
    if notifications and file_events:
        raise ConfigError("CONFIG_CONFLICTING_OPTIONS", {
            "table": table, "first": "use_notifications", "second": "use_managed_file_events",
            "reason": "Auto Loader discovers files either through its own notification resources or through "
                      "Unity Catalog's managed file events; set one of them"})
    mode = _clean_source_mode(table, data.get("clean_source"))
    destination = data.get("clean_source_move_destination")
    if mode == CLEAN_MOVE:
        if destination is None:
            raise ConfigError("CONFIG_MISSING_KEY", {"where": f"Table '{table}' (clean_source: move)",
                                                     "key": "clean_source_move_destination"})
        destination = _move_destination(table, destination)
    elif destination is not None:
        raise ConfigError("CONFIG_INVALID_OPTION", {
            "table": table, "key": "clean_source_move_destination", "value": destination,
            "reason": "set only with clean_source: move"})
    retention = data.get("clean_source_retention")
    if retention is not None:
        if mode == CLEAN_OFF:
            raise ConfigError("CONFIG_INVALID_OPTION", {
                "table": table, "key": "clean_source_retention", "value": retention,
                "reason": "set only with clean_source: delete or move"})
        seconds = interval_seconds(retention) if isinstance(retention, str) else None
        if seconds is None or seconds < 1:
            raise ConfigError("CONFIG_INVALID_OPTION", {
                "table": table, "key": "clean_source_retention", "value": retention,
                "reason": "an interval such as '14 days', '2 weeks' or '1 month' "
                          "(Auto Loader's cloudFiles.cleanSource.retentionDuration)"})
        if mode == CLEAN_DELETE and seconds <= DELETE_MIN_RETENTION_SECONDS:
            raise ConfigError("CONFIG_INVALID_OPTION", {
                "table": table, "key": "clean_source_retention", "value": retention,
                "reason": "longer than 7 days with clean_source: delete (Auto Loader refuses less; "
                          "move has no minimum)"})
        retention = retention.strip()
    return {
        "max_files_per_trigger": _positive_int(table, "max_files_per_trigger", data.get("max_files_per_trigger")),
        "max_bytes_per_trigger": parse_byte_size(table, "max_bytes_per_trigger", data.get("max_bytes_per_trigger")),
        "use_notifications": notifications,
        "use_managed_file_events": file_events,
        "clean_source": mode,
        "clean_source_move_destination": destination,
        "clean_source_retention": retention,
    }


def landing_problem(landing: str, root: str) -> tuple[str, str] | None:
    """(what is wrong, how to fix it) for a `landing` value, or None when it is a relative folder."""
    example = "e.g. 'orders' or 'sales/orders'"
    if URI.match(landing) or landing.startswith("/"):
        if landing.rstrip("/") == root.rstrip("/"):
            return "is the landing root itself", f"write a folder under the root ({example})"
        inside = _relative_to(landing, root)
        if inside:
            return "is an absolute path", f"write it relative to the root: '{inside}'"
        return ("is outside the landing root",
                f"write a folder under the root ({example}) and deliver the files there, "
                "or change the landing_root bundle variable")
    segments = landing.split("/")
    if "" in segments:
        cleaned = "/".join(s for s in segments if s)
        return ("has an empty segment ('//' or a trailing '/')",
                f"write '{cleaned}'" if cleaned else f"write a folder name ({example})")
    if ".." in segments or "." in segments:
        normalized = posixpath.normpath(landing)
        if normalized == ".." or normalized.startswith("../"):
            return ("leaves the landing root ('..')",
                    f"write a folder under the root ({example}), or change the landing_root bundle variable")
        if normalized == ".":
            return "is the landing root itself", f"write a folder under the root ({example})"
        return "has '.' or '..' segments", f"write '{normalized}'"
    return None


def _relative_to(path: str, root: str) -> str | None:
    """`path` relative to `root` when it lies strictly inside it (local paths are normalized first)."""
    if not URI.match(path):
        path = posixpath.normpath(path)
        root = posixpath.normpath(root) if not URI.match(root) else root
    root = root.rstrip("/")
    if path.startswith(root + "/"):
        rest = path[len(root) + 1:].strip("/")
        if rest and landing_problem(rest, root) is None:
            return rest
    return None
