"""Rejected rows sent through the clean table again after a fix, each row once (`lakewatch replay`).

A table's `drop` expectations keep the rows they remove in `{table}_rejected` (pipelines/ingestion.py),
with the names of the expectations each failed. Once the cause is fixed (an expectation that was wrong
is corrected, say), those rows can go into the clean table, in two steps:

1. **Queue.** The keys of the rejected rows that failed the chosen expectation (or any) and meet the
   table's `drop` and `fail` expectations as they are now are appended to `{table}_replay`, a plain
   Delta table beside the pipeline's: one row per key (`_replay_key`, a hash of the rejected row's
   content), with the replay's id, when, and the expectation named. A key is never queued twice, and a
   row whose content the clean table holds already (sent by an earlier replay, or kept by the clean
   table before the rejected table existed) is not queued. A row that still fails stays rejected, to
   be queued after the next fix. `queue_statements` is the SQL: `lakewatch replay` runs it on the local
   engine, and `lakewatch replay --sql` prints it for a Databricks SQL warehouse.
2. **Send.** While the queue exists, the ingest pipeline declares the append flow `{table}_replayed`
   into the clean table (`replay_query`): its stream reads each queued key once and writes the rows of
   `{table}_rejected` with that key, with the clean table's columns. The expectations were applied
   when the rows were queued (Databricks takes no expectations on an append flow). A key whose rows
   left `{table}_rejected` (a full refresh of it, which evaluates every bronze row again together with
   the clean table) writes nothing.

The queue records what was queued; the clean table's own rows record what was sent, so rows deleted
from the queue can be queued again without reaching the clean table twice. Dropping the queue breaks
the flow: a new table of that name is not the one its checkpoint read.
"""

from __future__ import annotations

from dataclasses import dataclass

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from pipelines import expectations
from pipelines.config import FAILED_EXPECTATIONS, INGESTED_AT, TableSpec
from pipelines.sqltypes import quote_string

REPLAY_KEY = "_replay_key"
REPLAY_ID = "_replay_id"
QUEUED_AT = "_queued_at"
EXPECTATION = "_expectation"
QUEUE_SCHEMA_DDL = f"{REPLAY_KEY} STRING, {REPLAY_ID} STRING, {QUEUED_AT} TIMESTAMP, {EXPECTATION} STRING"

# The key of a rejected row: its whole content, rendered in UTC so that no session time zone changes
# it (`to_json` leaves NULL fields out, so a column added to the table later keeps old rows' keys).
KEY_SQL = "sha2(to_json(struct(*), map('timeZone', 'UTC')), 256)"


def content_key_sql(columns: list[str]) -> str:
    """The key of a row's content in the clean table's `columns`: a rejected row and the clean table's
    copy of it share it."""
    fields = ", ".join(f"`{c}`" for c in columns)
    return f"sha2(to_json(struct({fields}), map('timeZone', 'UTC')), 256)"


def selected_sql(expectation: str | None) -> str:
    """The rejected rows a replay takes: those that failed `expectation`, or every one."""
    return "true" if expectation is None else f"array_contains({FAILED_EXPECTATIONS}, {quote_string(expectation)})"


def passes_sql(table: TableSpec) -> str:
    """True when a row meets each of the table's `drop` and `fail` expectations as they are now (NULL
    counts as failed, as the expectations count it)."""
    rules = [e for e in table.expectations if e.action in (expectations.Action.DROP, expectations.Action.FAIL)]
    return " AND ".join(e.passes_sql() for e in rules) or "true"


def candidates_sql(table: TableSpec, columns: list[str], expectation: str | None) -> str:
    """The rejected rows a replay takes that meet today's expectations, each with its key and its
    content's key."""
    return (f"SELECT {KEY_SQL} AS {REPLAY_KEY}, {content_key_sql(columns)} AS _content_key, {INGESTED_AT}\n"
            f"  FROM {table.rejected_name}\n"
            f"  WHERE {selected_sql(expectation)}\n"
            f"    AND {passes_sql(table)}")


def queue_statements(table: TableSpec, columns: list[str], replay_id: str, expectation: str | None = None) -> list[str]:
    """The SQL that queues a replay of `table`'s rejected rows (`columns`: the clean table's), names
    unqualified (run with the pipeline's catalog and schema current): the queue created when missing,
    then the keys appended."""
    queue, clean = table.replay_name, table.clean_name
    named = "CAST(NULL AS STRING)" if expectation is None else quote_string(expectation)
    return [
        f"CREATE TABLE IF NOT EXISTS {queue} ({QUEUE_SCHEMA_DDL}) USING DELTA",
        f"INSERT INTO {queue}\n"
        f"SELECT DISTINCT r.{REPLAY_KEY}, {quote_string(replay_id)}, current_timestamp(), {named}\n"
        f"FROM ({candidates_sql(table, columns, expectation)}) r\n"
        f"LEFT ANTI JOIN {queue} q ON q.{REPLAY_KEY} = r.{REPLAY_KEY}\n"
        f"LEFT ANTI JOIN (SELECT {content_key_sql(columns)} AS _content_key FROM {clean}\n"
        f"                WHERE {INGESTED_AT} IN (SELECT {INGESTED_AT} FROM {table.rejected_name})) c\n"
        f"  ON c._content_key = r._content_key",
    ]


def replay_query(queued: DataFrame, rejected: DataFrame, columns: list[str]) -> DataFrame:
    """The flow `{table}_replayed`: for each queued key (a stream of `{table}_replay`), the rows of
    `{table}_rejected` (a batch read) with that key, with the clean table's `columns`."""
    keyed = rejected.selectExpr("*", f"{KEY_SQL} AS {REPLAY_KEY}")  # `*` expands without analysing here
    return queued.select(REPLAY_KEY).join(keyed, REPLAY_KEY).select(*[F.col(f"`{c}`") for c in columns])


@dataclass(frozen=True)
class Queued:
    """What one replay did: the rejected rows it took (`selected`), those that meet today's
    expectations (`passing`), and of those the rows whose keys it queued (`queued`); the others were
    queued before or are in the clean table already."""

    table: str
    expectation: str | None
    replay_id: str
    selected: int
    passing: int
    queued: int

    @property
    def not_queued(self) -> int:
        return self.passing - self.queued

    @property
    def still_failing(self) -> int:
        return self.selected - self.passing


def failed_expectation_names(spark: SparkSession, table: TableSpec) -> list[str]:
    """The expectation names the rows of `{table}_rejected` failed, sorted."""
    rows = spark.sql(f"SELECT DISTINCT explode({FAILED_EXPECTATIONS}) AS name FROM {table.rejected_name}").collect()
    return sorted(r["name"] for r in rows)


def queue(spark: SparkSession, table: TableSpec, columns: list[str], replay_id: str,
          expectation: str | None = None) -> Queued:
    """Runs `queue_statements` in the session's current schema and counts what they did."""
    counts = spark.sql(
        f"SELECT count(*) AS selected, count_if({passes_sql(table)}) AS passing FROM {table.rejected_name} "
        f"WHERE {selected_sql(expectation)}").collect()[0]
    for statement in queue_statements(table, columns, replay_id, expectation):
        spark.sql(statement)
    queued = spark.sql(
        f"SELECT count(*) AS n FROM ({candidates_sql(table, columns, expectation)}) r "
        f"WHERE r.{REPLAY_KEY} IN (SELECT {REPLAY_KEY} FROM {table.replay_name} "
        f"WHERE {REPLAY_ID} = {quote_string(replay_id)})").collect()[0]["n"]
    return Queued(table.name, expectation, replay_id, counts["selected"], counts["passing"], queued)
