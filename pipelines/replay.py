"""Rejected rows sent through the clean table again after a fix, each row once (`lakewatch replay`).

A table's `drop` expectations keep the rows they remove in `{table}_rejected` (pipelines/ingestion.py),
with the names of the expectations each failed. Once the cause is fixed (an expectation that was wrong
is corrected, say), those rows can go through the clean table again, in two steps:

1. **Queue.** The rejected rows that failed the chosen expectation (or any) and meet today's `drop` and
   `fail` expectations are appended to `{table}_replay`, a plain Delta table beside the pipeline's, each
   with a key of its content (`_replay_key`), the replay's id and when it was queued. A row whose key is
   queued already is not queued again; a row that still fails stays in `{table}_rejected` only, to be
   queued after the next fix. `queue_statements` is the SQL: `lakewatch replay` runs it on the local
   engine, and `lakewatch replay --sql` prints it for a Databricks SQL warehouse.
2. **Send.** While the queue exists, the ingest pipeline declares the append flow `{table}_replayed`
   into the clean table (`replay_query`). Its stream reads each queued row once, and writes it if it is
   still a row of `{table}_rejected` and still meets today's expectations. The first condition keeps a
   row from reaching the clean table twice: a full refresh of the clean table evaluates every bronze row
   again with today's expectations, and refreshes `{table}_rejected` with it (pipelines/local/preflight.py),
   whose rows then carry new keys.

Why a queue and a flow rather than an insert into the clean table: the clean table is a streaming table
of the pipeline, written by its flows only, and a flow's rows show in the event log like any other
(`flow_progress` of `{table}_replayed`: how many rows the replay wrote).
"""

from __future__ import annotations

from dataclasses import dataclass

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F

from pipelines import expectations
from pipelines.config import FAILED_EXPECTATIONS, QUEUED_AT, REPLAY_ID, REPLAY_KEY, TableSpec

# The key of a rejected row: its content, rendered in UTC so that a session's time zone cannot change it.
KEY_SQL = "sha2(to_json(struct(*), map('timeZone', 'UTC')), 256)"


def quote_string(text: str) -> str:
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def selected_sql(expectation: str | None) -> str:
    """The rejected rows a replay takes: those that failed `expectation`, or every one."""
    return "true" if expectation is None else f"array_contains({FAILED_EXPECTATIONS}, {quote_string(expectation)})"


def passes_sql(table: TableSpec) -> str:
    """True when a row meets each of the table's `drop` and `fail` expectations as they are today (NULL
    counts as failed, as the expectations count it)."""
    rules = [e for e in table.expectations if e.action in (expectations.Action.DROP, expectations.Action.FAIL)]
    return " AND ".join(f"coalesce(({e.condition}), false)" for e in rules) or "true"


def passes(table: TableSpec) -> Column:
    """`passes_sql` as a column."""
    return (expectations.all_pass(table.expectations, expectations.Action.DROP)
            & expectations.all_pass(table.expectations, expectations.Action.FAIL))


def queue_statements(table: TableSpec, replay_id: str, expectation: str | None = None) -> list[str]:
    """The SQL that queues a replay of `table`'s rejected rows, names unqualified (run with the
    pipeline's catalog and schema current): the queue created when missing, then the rows appended."""
    rejected, queue = table.rejected_name, table.replay_name
    return [
        f"CREATE TABLE IF NOT EXISTS {queue} USING DELTA AS\n"
        f"SELECT *, CAST(NULL AS STRING) AS {REPLAY_KEY}, CAST(NULL AS STRING) AS {REPLAY_ID},"
        f" CAST(NULL AS TIMESTAMP) AS {QUEUED_AT}\nFROM {rejected} WHERE false",
        f"INSERT INTO {queue}\n"
        f"SELECT r.*, {quote_string(replay_id)} AS {REPLAY_ID}, current_timestamp() AS {QUEUED_AT}\n"
        f"FROM (SELECT *, {KEY_SQL} AS {REPLAY_KEY} FROM {rejected}\n"
        f"      WHERE {selected_sql(expectation)}\n"
        f"        AND {passes_sql(table)}) r\n"
        f"LEFT ANTI JOIN {queue} q ON q.{REPLAY_KEY} = r.{REPLAY_KEY}",
    ]


def replay_query(queued: DataFrame, rejected: DataFrame, table: TableSpec, columns: list[str]) -> DataFrame:
    """The flow `{table}_replayed`: the queued rows (a stream of `{table}_replay`) that are still rows of
    `{table}_rejected` (a batch read) and meet today's `drop` and `fail` expectations, with the clean
    table's `columns`."""
    still_rejected = rejected.selectExpr(f"{KEY_SQL} AS {REPLAY_KEY}")  # `*` expands without analysing here
    return (queued.join(still_rejected, REPLAY_KEY, "left_semi")
            .where(passes(table))
            .select(*[F.col(f"`{c}`") for c in columns]))


@dataclass(frozen=True)
class Queued:
    """What one replay queued: the rejected rows it took, how many of them meet today's expectations,
    and how many of those it appended (the rest were queued by an earlier replay)."""

    table: str
    expectation: str | None
    replay_id: str
    selected: int
    passing: int
    queued: int

    @property
    def queued_before(self) -> int:
        return self.passing - self.queued

    @property
    def still_failing(self) -> int:
        return self.selected - self.passing


def failed_expectation_names(spark: SparkSession, table: TableSpec) -> list[str]:
    """The expectation names the rows of `{table}_rejected` failed, sorted."""
    rows = spark.sql(f"SELECT DISTINCT explode({FAILED_EXPECTATIONS}) AS name FROM {table.rejected_name}").collect()
    return sorted(r["name"] for r in rows)


def queue(spark: SparkSession, table: TableSpec, replay_id: str, expectation: str | None = None) -> Queued:
    """Runs `queue_statements` in the session's current schema and counts what they did."""
    counts = spark.sql(
        f"SELECT count(*) AS selected, count_if({passes_sql(table)}) AS passing FROM {table.rejected_name} "
        f"WHERE {selected_sql(expectation)}").collect()[0]
    for statement in queue_statements(table, replay_id, expectation):
        spark.sql(statement)
    queued = spark.sql(f"SELECT count(*) AS n FROM {table.replay_name} "
                       f"WHERE {REPLAY_ID} = {quote_string(replay_id)}").collect()[0]["n"]
    return Queued(table.name, expectation, replay_id, counts["selected"], counts["passing"], queued)
