"""Typed errors with error classes, in the style of Spark's error conditions.

Every error lakewatch raises on purpose has a class (`CONFIG_UNKNOWN_KEY`, ...) and a message
template here, so messages are written once, read as one paragraph, and tests can assert the class.
"""

from __future__ import annotations

from typing import Mapping

ERROR_CLASSES: dict[str, str] = {
    # table configuration
    "CONFIG_FILE_NOT_FOUND": "The table configuration file {path} does not exist.",
    "CONFIG_INVALID_YAML": "The table configuration file {path} is not valid YAML: {reason}",
    "CONFIG_NOT_A_MAPPING": "{where} must be a mapping (key: value), found {found}.",
    "CONFIG_UNKNOWN_KEY": (
        "{where} has an unknown key '{key}'. Allowed keys: {allowed}."
    ),
    "CONFIG_MISSING_KEY": "{where} is missing the required key '{key}'.",
    "CONFIG_INVALID_TABLE_NAME": (
        "Table name '{name}' is not valid: use lower-case letters, digits and underscores, "
        "starting with a letter (at most {max_length} characters), so that '{name}_bronze' and "
        "'{name}_source' are valid identifiers on Databricks and locally."
    ),
    "CONFIG_DUPLICATE_TABLE": "Table '{name}' is declared more than once in {path}.",
    "CONFIG_RESERVED_TABLE_NAME": "Table name '{name}' is reserved: {reason}",
    "CONFIG_INVALID_SCHEMA": "The schema of table '{table}' is not valid: {reason}",
    "CONFIG_INVALID_TYPE": (
        "Column '{column}' of table '{table}' has type '{type}', which is not a Spark SQL type: {reason}. "
        "Write a Spark SQL type such as STRING, BIGINT, DOUBLE, DECIMAL(10,2), DATE, TIMESTAMP, BOOLEAN, "
        "ARRAY<STRING> or STRUCT<name: STRING> (quote it in YAML when it contains ': ')."
    ),
    "CONFIG_UNSUPPORTED_TYPE": (
        "Column '{column}' of table '{table}' has type '{type}', which lakewatch cannot ingest from JSON: {reason}."
    ),
    "CONFIG_INVALID_LANDING": (
        "Table '{table}' has landing '{landing}', which {problem}. `landing` is a folder relative to "
        "the landing root {root}: {fix}."
    ),
    "CONFIG_RESERVED_COLUMN": (
        "The schema of table '{table}' declares column '{column}', which lakewatch adds itself. "
        "Remove it from the schema."
    ),
    "CONFIG_UNSUPPORTED_FORMAT": (
        "Table '{table}' uses format '{format}'. Supported formats: {supported}."
    ),
    "CONFIG_INVALID_OPTION": "Table '{table}': {key} is {value!r}; it must be {reason}.",
    "CONFIG_UNSUPPORTED_OPTION": "Table '{table}': {key} is not supported: {reason}.",
    "CONFIG_CONFLICTING_OPTIONS": "Table '{table}': {first} and {second} cannot both be set: {reason}.",
    "CONFIG_INVALID_EXPECTATION": "Expectation {where} is not valid: {reason}",
    "CONFIG_NO_TABLES": "The table configuration file {path} declares no tables.",
    # bundle
    "BUNDLE_FILE_NOT_FOUND": "The bundle file {path} does not exist.",
    "BUNDLE_INVALID_YAML": "The bundle file {path} is not valid YAML: {reason}",
    "BUNDLE_UNRESOLVED_REFERENCE": (
        "{where} refers to '${{{reference}}}', which is not defined{hint}."
    ),
    "BUNDLE_REFERENCE_CYCLE": "Variable references form a cycle: {cycle}.",
    "BUNDLE_PIPELINE_NOT_FOUND": (
        "The bundle has no pipeline resource '{name}'. Pipelines defined: {available}."
    ),
    "BUNDLE_UNKNOWN_TARGET": "The bundle has no target '{target}'. Targets: {available}.",
    "BUNDLE_INVALID": "{where}: {reason}",
    # local engine
    "FULL_REFRESH_INCOMPLETE": (
        "The full refresh of '{table}' in pipeline '{pipeline}' leaves out {missing}, {why}: select them "
        "too (--full-refresh {selection}), or reset everything with --full-refresh-all."
    ),
    "LANDING_FOLDER_NOT_FOUND": (
        "The ingest pipeline '{pipeline}' reads landing folders that do not exist: {missing}. Create "
        "them (`mkdir -p {folders}`){hint} or write files into them with `lakewatch generate` (with the "
        "same --home or LAKEWATCH_HOME), then run again."
    ),
    "DELTA_JARS_MISSING": (
        "Delta Lake's jars are not resolved in {cache} ({missing}). Run `make setup` (or "
        "`python -m pipelines.local.jars`) once with network access: Spark resolves {packages} "
        "and their dependencies there, and later engine starts use them offline."
    ),
    "DELTA_JARS_RESOLUTION_FAILED": (
        "Spark could not resolve {packages} into {cache}: {reason}. Check the network access to the "
        "Maven repositories Spark's resolver uses (its log: {log}), then run `python -m pipelines.local.jars` again."
    ),
    "METASTORE_LOCKED": (
        "The local catalog under {home} is in use by another lakewatch process (Derby allows one "
        "at a time). Wait for it to finish, or point LAKEWATCH_HOME elsewhere."
    ),
    "RUN_IN_PROGRESS": (
        "Another lakewatch run holds the state folder {home} ({holder}). One run at a time per state "
        "folder: wait for it to finish, or use another LAKEWATCH_HOME."
    ),
    "ENGINE_START_FAILED": (
        "The local engine for {home} did not start (exit {code}): {tail} Its output is in {log}."
    ),
    "ENGINE_STOPPED": (
        "The local engine for {home} (pid {pid}) stopped while this command ran: {reason}. What was "
        "running on it is lost; an update it ran is closed as FAILED by the next command, which starts "
        "a new engine. Its JVM log: {log}; its output: {out}."
    ),
    "REMOTE_UNREACHABLE": (
        "The Spark Connect endpoint {url} did not answer for {seconds:g} s ({reason}), so this command "
        "stopped. An update this command ran is closed as FAILED by the next command on this state "
        "folder with the same --remote, so the closing events reach that endpoint's event log. "
        "The wait is set by {env}."
    ),
    "REMOTE_SESSION_LOST": (
        "The Spark Connect endpoint {url} restarted while this command ran: the session it ran on is "
        "gone, and with it what was running. An update this command ran is closed as FAILED by the "
        "next command on this state folder with the same --remote."
    ),
    "UPDATE_OPEN_ELSEWHERE": (
        "Update {update_id} of '{pipeline}' ran on {ran_on} and was interrupted; it is still open, and its "
        "event log is there. Close it first with {closed_by} on this state folder (`lakewatch{remote} query "
        "\"SELECT 1\"` will do), then run again: a new update now would leave it open for good."
    ),
    "QUERY_FAILED": "The query failed: {reason}",
    "JOB_SQL_TASK_INVALID": "Task '{task}' of job '{job}' cannot run: {reason}.",
    "JOB_PYTHON_TASK_INVALID": "Task '{task}' of job '{job}' cannot run: {reason}.",
    "ALERT_HISTORY_NOT_FOUND": (
        "No health metrics history to replay the alerts over in {table}: the job's snapshot_health_metrics "
        "task fills it after each observability refresh (run `lakewatch job`). ({reason})"
    ),
    "REPORT_NO_TABLES": (
        "No observability tables to report from in {home}: run `lakewatch run lakewatch_observability` "
        "(or `lakewatch job`) after an ingest update first. ({reason})"
    ),
    "GENERATOR_INVALID_ARGUMENT": "Invalid generator setting: {reason}",
    "CLI_INVALID_ARGUMENT": "Invalid argument: {reason}",
    # your own files: add-table, drift, the demo's own state folder
    "TABLE_EXISTS": (
        "Table '{name}' is declared already in {path}. Choose another name, or add --replace to "
        "overwrite its entry."
    ),
    "TABLES_FILE_UNCHANGED": "{path} was not changed: {reason}.",
    "SAMPLES_NOT_FOUND": "No sample files at {paths}: give files, or folders holding them.",
    "SAMPLES_MIXED_FORMATS": (
        "The sample files have different formats ({found}). A table reads one format: give files of one "
        "format, or choose one with --format."
    ),
    "SAMPLES_UNKNOWN_FORMAT": (
        "The format of {paths} is not known from the file names. Give it with --format json|csv|parquet."
    ),
    "SAMPLES_EMPTY": "The sample files {paths} hold no records to infer a schema from.",
    "SAMPLES_UNREADABLE": "Spark's {format} reader cannot read the sample files {paths}: {reason}",
    "SAMPLES_UNSUPPORTED_COLUMN": (
        "The samples have a column '{column}', which conf/tables.yml cannot declare: {reason}."
    ),
    "DRIFT_NO_BRONZE": (
        "Table '{table}' has no bronze table {bronze} yet: run `lakewatch run` (or `lakewatch job`) first."
    ),
    "DEMO_HOME_IN_USE": (
        "The demo starts over in its own state folder and removes what is in it, but {home} holds a "
        "state the demo did not make (no {marker} in it). Run the demo without --home and LAKEWATCH_HOME "
        "(it uses {default}), or give it an empty or new folder."
    ),
}


def engine_message(error: BaseException | str) -> str:
    """An engine error's message without the JVM stack trace Spark Connect appends to it."""
    return str(error).split("\n\nJVM stacktrace:")[0].strip()


class LakewatchError(Exception):
    """An error with an error class and named parameters, rendered from ERROR_CLASSES."""

    def __init__(self, error_class: str, parameters: Mapping[str, object] | None = None) -> None:
        self.error_class = error_class
        self.parameters = dict(parameters or {})
        template = ERROR_CLASSES.get(error_class)
        if template is None:
            raise KeyError(f"unknown error class {error_class}")
        self.text = template.format(**self.parameters)
        super().__init__(f"[{error_class}] {self.text}")


class ConfigError(LakewatchError):
    """The table configuration is invalid."""


class BundleError(LakewatchError):
    """The bundle files are invalid or a reference does not resolve."""
