"""A replay queues the keys of the rejected rows that meet today's expectations, each once, leaving out
rows the clean table holds already; its flow's query writes the rejected rows of each queued key with
the clean table's columns. Run on Delta tables with the SQL that `lakewatch replay` runs (and `--sql`
prints); the oracle is the test's own rows, judged in Python."""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime

import pytest

from pipelines import expectations, replay
from pipelines.config import Column, TableSpec
from pipelines.ingestion import clean_columns, clean_query, rejected_query

DB = "replay_queue_test"
TABLE = TableSpec(
    name="orders", format="json", landing="orders",
    columns=(Column("id", "BIGINT"), Column("amount", "DOUBLE"), Column("placed_at", "TIMESTAMP")),
    expectations=(
        expectations.drop("has_id", "id IS NOT NULL"),
        expectations.drop("below_limit", "amount < 400"),
        expectations.warn("small", "amount < 100"),
    ),
)
# The fix: the limit was too strict.
FIXED = replace(TABLE, expectations=(
    expectations.drop("has_id", "id IS NOT NULL"),
    expectations.drop("below_limit", "amount < 1000"),
    expectations.warn("small", "amount < 100"),
))
COLUMNS = clean_columns(TABLE)
AT = datetime(2026, 3, 1, 8, 0)
ROWS = [  # (id, amount)
    (1, 5.0),       # clean
    (2, 450.0),     # rejected by below_limit; passes the fix
    (3, 999.5),     # rejected by below_limit; passes the fix
    (4, 1500.0),    # rejected by below_limit; still fails after the fix
    (5, None),      # below_limit is NULL: failed, and still fails
    (None, 500.0),  # fails has_id and below_limit; still fails has_id
    (None, 10.0),   # fails has_id only
    (2, 450.0),     # the same line twice in one file: two rows, each replayed once
]
PASSING_THE_FIX = [(2, 450.0), (2, 450.0), (3, 999.5)]


def fails(row: tuple, limit: float) -> list[str]:
    id_, amount = row
    return [name for name, ok in (("has_id", id_ is not None), ("below_limit", amount is not None and amount < limit))
            if not ok]


@pytest.fixture
def session(spark):
    session = spark.newSession()
    session.sql(f"CREATE DATABASE IF NOT EXISTS {DB}")
    session.sql(f"USE {DB}")
    for name in (TABLE.rejected_name, TABLE.replay_name, TABLE.clean_name):
        session.sql(f"DROP TABLE IF EXISTS {name}")
    write_rejected(session)
    write_clean(session, [r for r in ROWS if not fails(r, 400)])
    return session


def bronze(session, rows=ROWS):
    return session.createDataFrame(
        [(i, a, AT, None, None, "/landing/orders/f.json", AT, AT) for i, a in rows],
        "id BIGINT, amount DOUBLE, placed_at TIMESTAMP, _rescued_data STRING, _corrupt_record STRING, "
        "_source_file STRING, _source_file_modification_time TIMESTAMP, _ingested_at TIMESTAMP")


def write_rejected(session) -> None:
    """`{table}_rejected` as the pipeline's flow writes it (a new `_rejected_at` each time: a full refresh)."""
    rejected_query(bronze(session), TABLE).write.format("delta").mode("overwrite").saveAsTable(TABLE.rejected_name)


def write_clean(session, rows: list, mode: str = "overwrite") -> None:
    clean_query(bronze(session, rows), TABLE).write.format("delta").mode(mode).saveAsTable(TABLE.clean_name)


def sent(session) -> list:
    """What the flow `{table}_replayed` writes for every queued key."""
    rows = replay.replay_query(session.table(TABLE.replay_name), session.table(TABLE.rejected_name), COLUMNS).collect()
    return sorted((r["id"], r["amount"]) for r in rows)


def test_a_replay_queues_the_rows_of_the_expectation_that_pass_today_each_once(session):
    selected = [r for r in ROWS if "below_limit" in fails(r, 400)]
    assert sorted(r for r in selected if not fails(r, 1000)) == PASSING_THE_FIX  # the test's own rows, as meant

    first = replay.queue(session, FIXED, COLUMNS, "r1", "below_limit")
    assert (first.selected, first.passing, first.queued, first.still_failing) == (len(selected), 3, 3, len(selected) - 3)
    assert sent(session) == PASSING_THE_FIX
    assert session.table(TABLE.replay_name).count() == 2  # one row per key: the repeated line has one

    again = replay.queue(session, FIXED, COLUMNS, "r2", "below_limit")
    assert (again.queued, again.not_queued) == (0, 3)
    every = replay.queue(session, FIXED, COLUMNS, "r3")  # every rejected row: none more passes today
    assert (every.selected, every.queued) == (sum(1 for r in ROWS if fails(r, 400)), 0)
    assert sent(session) == PASSING_THE_FIX


def test_only_rows_that_failed_the_named_expectation_are_taken(session):
    relaxed = replace(TABLE, expectations=(expectations.drop("below_limit", "amount < 400"),))  # has_id removed
    queued = replay.queue(session, relaxed, COLUMNS, "r1", "has_id")
    assert sent(session) == [(None, 10.0)]  # (None, 500.0) failed has_id too, but still fails below_limit
    assert (queued.selected, queued.queued) == (2, 1)


def test_rows_the_clean_table_holds_already_are_not_queued_again(session):
    """An emptied queue forgets what it sent, and a rejected table created after the clean table holds
    rows the clean table kept: the clean table's own rows are the record that stays."""
    replay.queue(session, FIXED, COLUMNS, "r1", "below_limit")
    write_clean(session, [(2, 450.0), (2, 450.0), (3, 999.5)], mode="append")  # what the flow wrote
    session.sql(f"DELETE FROM {TABLE.replay_name}")
    again = replay.queue(session, FIXED, COLUMNS, "r2", "below_limit")
    assert (again.passing, again.queued) == (3, 0)
    assert sent(session) == []


def test_the_flow_writes_the_clean_tables_columns_while_the_rows_are_rejected(session):
    replay.queue(session, FIXED, COLUMNS, "r1", "below_limit")
    rows = replay.replay_query(session.table(TABLE.replay_name), session.table(TABLE.rejected_name), COLUMNS)
    assert rows.columns == ["id", "amount", "placed_at", "_rescued_data", "_source_file",
                            "_source_file_modification_time", "_ingested_at"]
    write_rejected(session)  # a full refresh of the rejected rows (with the clean table): new keys
    assert sent(session) == []


def test_a_column_added_to_the_table_keeps_the_keys_of_earlier_rows(session):
    replay.queue(session, FIXED, COLUMNS, "r1", "below_limit")
    for name in (TABLE.rejected_name, TABLE.clean_name):  # drift applied: the next update widens both
        session.sql(f"ALTER TABLE {name} ADD COLUMNS (promo_code STRING)")
    assert sent(session) == PASSING_THE_FIX
    widened = replace(FIXED, columns=(*FIXED.columns, Column("promo_code", "STRING")))
    assert replay.queue(session, widened, clean_columns(widened), "r2", "below_limit").queued == 0


def test_the_key_of_a_row_does_not_depend_on_the_session_time_zone(session):
    keys = {}
    for zone in ("UTC", "America/New_York"):
        session.conf.set("spark.sql.session.timeZone", zone)
        keys[zone] = sorted(r[0] for r in session.sql(f"SELECT {replay.KEY_SQL} FROM {TABLE.rejected_name}").collect())
    session.conf.set("spark.sql.session.timeZone", "UTC")
    assert keys["UTC"] == keys["America/New_York"]
    assert len(set(keys["UTC"])) == len(keys["UTC"]) - 1  # only the repeated line shares a key


def test_the_expectation_names_come_from_the_rejected_rows(session):
    assert replay.failed_expectation_names(session, TABLE) == ["below_limit", "has_id"]
