"""Builders for event-log rows in Databricks' shapes (details JSON, origin, error, sequence).

Used by the local runner to write what it measured, and by tests to hand-build event logs.
Each builder returns a plain dict with the table's columns; `to_row` orders it for createDataFrame.
"""

from __future__ import annotations

import dataclasses
import json
import uuid
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Iterable, Mapping, Sequence

from pyspark.sql.types import ArrayType, StructType

from pipelines.eventlog import schema as event_schema


@dataclass(frozen=True)
class Origin:
    """Where an event comes from: pipeline and update, and for flow events the flow and dataset."""

    pipeline_id: str
    pipeline_name: str
    update_id: str | None = None
    pipeline_type: str = "WORKSPACE"
    cluster_id: str | None = None
    flow_id: str | None = None
    flow_name: str | None = None
    dataset_name: str | None = None
    table_name: str | None = None
    sink_name: str | None = None
    batch_id: int | None = None
    catalog_name: str | None = None
    schema_name: str | None = None
    request_id: str | None = None

    def replace(self, **changes: Any) -> "Origin":
        return dataclasses.replace(self, **changes)

    def as_dict(self) -> dict[str, Any]:
        values = dataclasses.asdict(self)
        return {name: values.get(name) for name, _ in event_schema.ORIGIN_FIELDS}


@dataclass(frozen=True)
class ExceptionInfo:
    class_name: str
    message: str


def error(exceptions: Sequence[ExceptionInfo], fatal: bool = False) -> dict[str, Any]:
    return {
        "fatal": fatal,
        "exceptions": [
            {"class_name": e.class_name, "message": e.message, "stack": []} for e in exceptions
        ],
    }


def new_event_id() -> str:
    return str(uuid.uuid1())


def event(
    event_type: str,
    origin: Origin,
    timestamp: datetime,
    message: str,
    details: Mapping[str, Any],
    level: str = "INFO",
    error_struct: Mapping[str, Any] | None = None,
    control_plane_seq_no: int | None = None,
    data_plane_seq_no: int | None = None,
    data_plane_instance: str | None = None,
    event_id: str | None = None,
) -> dict[str, Any]:
    """One event-log row. `details` is serialized to JSON text under its event type's key."""
    sequence = None
    if control_plane_seq_no is not None or data_plane_seq_no is not None:
        sequence = {
            "data_plane_id": (
                {"instance": data_plane_instance, "seq_no": data_plane_seq_no}
                if data_plane_seq_no is not None
                else None
            ),
            "control_plane_seq_no": control_plane_seq_no,
        }
    return {
        "id": event_id or new_event_id(),
        "sequence": sequence,
        "origin": origin.as_dict(),
        "timestamp": timestamp,
        "message": message,
        "level": level,
        "maturity_level": "STABLE",
        "error": dict(error_struct) if error_struct else None,
        "details": json.dumps({event_type: details}, separators=(",", ":"), default=str),
        "event_type": event_type,
    }


def _short(update_id: str | None) -> str:
    return (update_id or "")[:8]


def create_update(
    origin: Origin,
    timestamp: datetime,
    cause: str = "USER_ACTION",
    full_refresh: bool = False,
    full_refresh_selection: Sequence[str] = (),
    refresh_selection: Sequence[str] = (),
    run_as: str | None = None,
    **seq: Any,
) -> dict[str, Any]:
    details = {
        "run_as": run_as,
        "cause": cause,
        "validate_only": False,
        "explore_only": False,
        "full_refresh": full_refresh,
        "full_refresh_selection": list(full_refresh_selection),
        "refresh_selection": list(refresh_selection),
    }
    message = f"Update {_short(origin.update_id)} started by {cause}."
    return event(event_schema.CREATE_UPDATE, origin, timestamp, message, details, **seq)


def user_action(
    origin: Origin, timestamp: datetime, action: str = "START", user_name: str | None = None, **seq: Any
) -> dict[str, Any]:
    verb = {"START": "started an update", "CANCEL": "canceled the update"}.get(action, action.lower())
    message = f"User {user_name or 'unknown'} {verb}."
    return event(event_schema.USER_ACTION, origin, timestamp, message, {"action": action, "user_name": user_name}, **seq)


def update_progress(
    origin: Origin,
    timestamp: datetime,
    state: str,
    error_struct: Mapping[str, Any] | None = None,
    cancellation_cause: str | None = None,
    **seq: Any,
) -> dict[str, Any]:
    details: dict[str, Any] = {"state": state}
    if cancellation_cause:
        details["cancellation_cause"] = cancellation_cause
    level = "ERROR" if state == "FAILED" else "INFO"
    message = f"Update {_short(origin.update_id)} is {state}."
    return event(event_schema.UPDATE_PROGRESS, origin, timestamp, message, details, level=level, error_struct=error_struct,
                 **seq)


def schema_fields(fields: Iterable[tuple[str, str]]) -> list[dict[str, Any]]:
    """`schema` entries of definition events: name, path and data type per top-level column."""
    return [{"name": n, "path": [n], "data_type": t} for n, t in fields]


def dataset_definition(
    origin: Origin,
    timestamp: datetime,
    dataset_type: str,
    num_flows: int,
    expectations: Sequence[Mapping[str, str]] = (),
    schema: Sequence[Mapping[str, Any]] | None = None,
    schema_json: str | None = None,
    **seq: Any,
) -> dict[str, Any]:
    details = {
        "dataset_type": dataset_type,
        "num_flows": num_flows,
        "expectations": list(expectations),
        "schema_json": schema_json,
        "schema": list(schema) if schema is not None else None,
    }
    message = f"Dataset '{origin.dataset_name}' defined as {dataset_type}."
    return event(event_schema.DATASET_DEFINITION, origin, timestamp, message, details, **seq)


def sink_definition(
    origin: Origin, timestamp: datetime, format: str, options: Mapping[str, str], **seq: Any
) -> dict[str, Any]:
    message = f"Sink '{origin.sink_name}' defined with format {format}."
    return event(event_schema.SINK_DEFINITION, origin, timestamp, message, {"format": format, "options": dict(options)},
                 **seq)


def flow_definition(
    origin: Origin,
    timestamp: datetime,
    flow_type: str,
    output_dataset: str | None,
    input_datasets: Sequence[str],
    output_sink: str | None = None,
    schema: Sequence[Mapping[str, Any]] | None = None,
    schema_json: str | None = None,
    comment: str | None = None,
    source_code_location: Mapping[str, Any] | None = None,
    **seq: Any,
) -> dict[str, Any]:
    """`source_code_location` ({file_name, line_number}: where the flow was declared) is lakewatch's
    addition; Databricks' documented flow_definition has no such field."""
    details = {
        "output_dataset": output_dataset,
        "input_datasets": list(input_datasets),
        "output_sink": output_sink,
        "flow_type": flow_type,
        "schema_json": schema_json,
        "schema": list(schema) if schema is not None else None,
        "comment": comment,
        "language": "PYTHON",
        "once": False,
    }
    if source_code_location is not None:
        details["source_code_location"] = dict(source_code_location)
    message = f"Flow '{origin.flow_name}' is defined as {flow_type}."
    return event(event_schema.FLOW_DEFINITION, origin, timestamp, message, details, **seq)


_FLOW_MESSAGES = {
    "COMPLETED": "Flow '{f}' has COMPLETED.",
    "FAILED": "Flow '{f}' has FAILED.",
    "SKIPPED": "Flow '{f}' SKIPPED due to upstream failure(s).",
    "STOPPED": "Flow '{f}' has STOPPED.",
}


def flow_progress(
    origin: Origin,
    timestamp: datetime,
    status: str,
    error_struct: Mapping[str, Any] | None = None,
    message: str | None = None,
    **seq: Any,
) -> dict[str, Any]:
    """A flow's status change (QUEUED, STARTING, RUNNING, COMPLETED, FAILED, SKIPPED, EXCLUDED...)."""
    text = message or _FLOW_MESSAGES.get(status, "Flow '{f}' is " + status + ".").format(f=origin.flow_name)
    level = "ERROR" if status == "FAILED" else "INFO"
    return event(event_schema.FLOW_PROGRESS, origin, timestamp, text, {"status": status}, level=level,
                 error_struct=error_struct, **seq)


def planning_information(origin: Origin, timestamp: datetime, message: str,
                         techniques: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """How a materialized view is refreshed in this update: each maintenance technique considered
    (`MAINTENANCE_TYPE_NO_OP`, `MAINTENANCE_TYPE_COMPLETE_RECOMPUTE`, ...), which one is chosen, and the
    incrementalization issues that ruled the others out."""
    return event(event_schema.PLANNING_INFORMATION, origin, timestamp, message,
                 {"technique_information": [dict(t) for t in techniques]})


def expectation_result(name: str, dataset: str, passed: int, failed: int) -> dict[str, Any]:
    return {"name": name, "dataset": dataset, "passed_records": passed, "failed_records": failed}


def flow_metrics(
    origin: Origin,
    timestamp: datetime,
    num_output_rows: int | None = None,
    backlog_bytes: int | None = None,
    backlog_files: int | None = None,
    dropped_records: int | None = None,
    expectations: Sequence[Mapping[str, Any]] | None = None,
    status: str = "RUNNING",
    streaming: bool = True,
    num_output_bytes: int | None = None,
    **seq: Any,
) -> dict[str, Any]:
    """A METRICS-level flow_progress row. Only measured figures are set; the rest stay NULL."""
    metrics = {
        k: v
        for k, v in (
            ("num_output_rows", num_output_rows),
            ("num_output_bytes", num_output_bytes),
            ("backlog_bytes", backlog_bytes),
            ("backlog_files", backlog_files),
        )
        if v is not None
    }
    details: dict[str, Any] = {"status": status, "metrics": metrics}
    if expectations is not None or dropped_records is not None:
        details["data_quality"] = {
            "dropped_records": dropped_records,
            "expectations": list(expectations or []),
        }
    kind = "streaming" if streaming else "batch"
    text = f"Completed a {kind} update of '{origin.flow_name}'."
    return event(event_schema.FLOW_PROGRESS, origin, timestamp, text, details, level="METRICS", **seq)


# `operation_progress.type` of lakewatch's own measurement warnings (Databricks' types are
# AUTO_LOADER_LISTING, CONNECTOR_FETCH, ...; this one marks a figure the local runner could not measure).
MEASUREMENT_OPERATION = "LAKEWATCH_MEASUREMENT"


def measurement_warning(origin: Origin, timestamp: datetime, measurement: str, reason: str, **seq: Any) -> dict[str, Any]:
    """A WARN event saying that a figure was not measured and why (its value stays NULL)."""
    details = {"type": MEASUREMENT_OPERATION, "status": "FAILED", "measurement": measurement, "reason": reason}
    return event(event_schema.OPERATION_PROGRESS, origin, timestamp, f"Not measured: {measurement} ({reason})", details,
                 level="WARN", **seq)


def to_row(values: Mapping[str, Any], schema: StructType = event_schema.EVENT_LOG_SCHEMA) -> tuple:
    """Orders a (nested) dict as a tuple matching `schema`, for createDataFrame."""

    def convert(value: Any, data_type: Any) -> Any:
        if value is None:
            return None
        if isinstance(data_type, StructType):
            return tuple(convert(value.get(f.name), f.dataType) for f in data_type.fields)
        if isinstance(data_type, ArrayType):
            return [convert(v, data_type.elementType) for v in value]
        return value

    return convert(values, schema)
