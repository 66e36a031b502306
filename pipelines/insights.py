"""Run insights: why an update failed or was canceled, and what to do about it.

One table of rules, first match wins, read by two places that must agree: the `run_insights`
materialized view (which joins the update's facts with these rules as rows, the view `insight_rules`,
so Databricks computes it from its own event log) and the CLI's failure paragraph (`classify`, in Python). A rule's pattern is a
case-insensitive regular expression that Java and Python read alike, matched against the update's
facts: its error class, then the class and message of every exception of the error's chain (outermost
first: what a rule looks for may be in any of them; a file Spark could not read is named only by a
middle one, `[FAILED_READ_FILE...]`, whose innermost cause may say just `not a gzip file`), followed
by markers the view derives from the events (`@state=CANCELED`, `@backlog_growing`, `@no_progress`).
No rule matching is said as such. Both sides name the file an unreadable-file error concerns from the
same exception (`FILE_ERROR_CLASS`; the console text in pipelines/console.py `describe_failure`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Iterable

UNKNOWN = "unknown"
MAX_MESSAGE = 300

# Markers appended to the facts (see `facts`): what the events say beyond the error text.
STATE_MARKER = "@state="
# Set only for an update that logged no error: then the events are all there is to go by.
BACKLOG_GROWING = "@backlog_growing"  # the files waiting grew during the update
NO_PROGRESS = "@no_progress"  # no flow completed and no row was written
# The error class of the exception that names a file Spark could not read (anywhere in the chain).
FILE_ERROR_CLASS = "FAILED_READ_FILE"


@dataclass(frozen=True)
class Rule:
    category: str
    pattern: str
    action: str


RULES: tuple[Rule, ...] = (
    Rule("compute_lost",
         r"UPDATE_INTERRUPTED|UpdateInterruptedException",
         "The update lost its compute before it finished: its runner was killed, the local engine stopped, or "
         "the Spark Connect endpoint stopped answering (the message says which). What it committed stays, and "
         "the next update ingests the rest. If it recurs, the engine log (locally in .lakewatch/logs) says why."),
    Rule("expectation_failed",
         r"EXPECTATION_VIOLATION|expectation .*(failed|violated)",
         "A `fail` expectation stopped the update: the message names the expectation and a failing row. "
         "Fix the producer, or make the expectation warn or drop in conf/tables.yml."),
    Rule("missing_permission_or_path",
         r"PERMISSION_DENIED|INSUFFICIENT_PERMISSIONS|AccessDenied|Access Denied|Forbidden|UNAUTHORIZED|"
         r"PATH_NOT_FOUND|FileNotFoundException|No such file or directory|SCHEMA_NOT_FOUND|"
         r"CATALOG_NOT_FOUND|VOLUME_NOT_FOUND|does not exist",
         "A permission or a path is missing: check the grants of the identity the pipeline runs as "
         "(docs/deploying.md, Grants) and that the landing folder, schema and volume exist."),
    Rule("schema_mismatch",
         r"UNRESOLVED_COLUMN|UNRESOLVED_FIELD|FIELD_NOT_FOUND|DELTA_FAILED_TO_MERGE_FIELDS|DELTA_METADATA_MISMATCH|"
         r"SCHEMA_MISMATCH|SCHEMA_CHANGE|INCOMPATIBLE_DATA|CANNOT_UP_CAST|DATATYPE_MISMATCH|"
         r"UNKNOWN_FIELD_EXCEPTION|CAST_INVALID_INPUT",
         "A column the definition reads, or the target table holds, no longer matches: compare the source "
         "with the schema of the table, fix the definition, or fully refresh the table to take a new schema."),
    Rule("unreadable_file",
         r"FAILED_READ_FILE|CANNOT_READ_FILE|FileReadException|EOFException|Unexpected end of|"
         r"Not in GZIP format|ZipException|MalformedInputException|CORRUPTED|Corrupt",
         "A landing file could not be read (cut short, wrong compression or encoding): deliver it again "
         "whole (files `lakewatch generate` wrote: `lakewatch redeliver`), and the next update ingests it. "
         "The quarantine keeps bad lines, not files that cannot be opened."),
    Rule("out_of_memory_or_timeout",
         r"OutOfMemoryError|Java heap space|GC overhead|SparkOutOfMemoryError|UNABLE_TO_ACQUIRE_MEMORY|"
         r"TimeoutException|timed out|EXECUTOR_LOST|ExecutorLostFailure|Container killed",
         "The compute ran out of memory or time: make batches smaller (max_files_per_trigger in "
         "conf/tables.yml), or give the pipeline more memory or a longer timeout."),
    Rule("analysis_error",
         r"AnalysisException|PARSE_SYNTAX_ERROR|TABLE_OR_VIEW_NOT_FOUND|UNRESOLVED_ROUTINE|"
         r"INVALID_|MISSING_AGGREGATION|AMBIGUOUS_",
         "A definition does not compile: open it at the file and line given, and fix the query "
         "(`lakewatch run` locally shows the same error before anything is written)."),
    Rule("backlog_outpacing_processing",
         re.escape(BACKLOG_GROWING),
         "Files arrived faster than the update ingested them and it did not finish: raise the trigger "
         "limits or the compute, or schedule updates more often; the backlog table shows the trend."),
    Rule("source_stalled",
         re.escape(NO_PROGRESS),
         "The update made no progress (no flow completed, no row written) before it ended: check that "
         "files still arrive and that the source is reachable; the events of the update show where it waited."),
    Rule("canceled",
         re.escape(STATE_MARKER) + "CANCELED",
         "The update was canceled before it finished (by a user, or its job run was canceled or timed out): "
         "nothing failed. What it committed stays, and the next update ingests the rest; a scheduled run "
         "canceled again and again needs a longer timeout or smaller batches."),
)

UNKNOWN_ACTION = ("No rule knows this failure: read the first error and the chain of events; when the cause "
                  "is known, add a rule to pipelines/insights.py.")

for _rule in RULES:  # embedded in SQL literals (no quote, no backslash) of formatted text (no brace)
    assert not set("'\\{}") & set(_rule.pattern), _rule.category
    assert not set("'{}") & set(_rule.action), _rule.category
    re.compile(_rule.pattern)


def facts(state: str | None, texts: Iterable[str | None], backlog_growing: bool = False,
          no_progress: bool = False) -> str:
    """The text the rules read: the error's class, exception classes and message, then the markers."""
    parts = [t for t in texts if t]
    parts.append(f"{STATE_MARKER}{state or 'UNKNOWN'}")
    if backlog_growing:
        parts.append(BACKLOG_GROWING)
    if no_progress:
        parts.append(NO_PROGRESS)
    return " ".join(parts)


def classify(text: str) -> tuple[str, str]:
    """(category, recommended action) of an update's facts; (`unknown`, ...) when no rule matches."""
    for rule in RULES:
        if re.search(rule.pattern, text, re.IGNORECASE):
            return rule.category, rule.action
    return UNKNOWN, UNKNOWN_ACTION


def concise(message: str | None) -> str | None:
    """The first line of a message without leading exception class names, at most 300 characters."""
    if message is None:
        return None
    first = message.strip().split("\n", 1)[0]
    first = re.sub(r"^(?:[A-Za-z0-9_.$]+(?:Exception|Error): )+", "", first)
    return first[:MAX_MESSAGE]


# -- SQL counterparts (the `run_insights` view) ---------------------------------------------------

def concise_sql(expr: str) -> str:
    """`concise` in Spark SQL (also Databricks SQL)."""
    blanks = "concat(' ', char(9), char(10), char(13))"
    first = f"substring_index(trim(BOTH {blanks} FROM coalesce({expr}, '')), char(10), 1)"
    stripped = f"regexp_replace({first}, '^(?:[A-Za-z0-9_.$]+(?:Exception|Error): )+', '')"
    return f"CASE WHEN {expr} IS NULL THEN NULL ELSE substring({stripped}, 1, {MAX_MESSAGE}) END"


def chain_sql(exceptions_expr: str) -> str:
    """The facts of an exception chain (`error.exceptions` of the event log, outermost first): every
    exception's class and message, space-separated ('' for a NULL or empty chain), as the CLI reads them."""
    return (f"concat_ws(' ', flatten(transform({exceptions_expr}, "
            f"x -> array(x.class_name, x.message))))")


def file_message_sql(exceptions_expr: str) -> str:
    """The message of the first exception of a chain that names a file Spark could not read (its message
    starts with `[FAILED_READ_FILE...]`), else NULL."""
    return (f"try_element_at(filter({exceptions_expr}, "
            rf"x -> x.message RLIKE '^\\s*\\[{FILE_ERROR_CLASS}[.\\]]'), 1).message")


RULE_COLUMNS = "rule_order, category, pattern, action"


def rules_sql() -> str:
    """The rules as rows, first match first, then one that matches anything (`unknown`): the relation
    `run_insights` joins the update's facts with (the observability pipeline's view `insight_rules`)."""
    rows = [*((r.category, r.pattern, r.action) for r in RULES), (UNKNOWN, "", UNKNOWN_ACTION)]
    values = ", ".join(f"({order}, '{category}', '{pattern}', '{action}')"
                       for order, (category, pattern, action) in enumerate(rows, 1))
    return f"SELECT * FROM VALUES {values} AS insight_rules({RULE_COLUMNS})"
