"""A replay queues the rejected rows that meet today's expectations, each once, and its flow's query
sends a queued row only while it is still a rejected row. Run on Delta tables with the SQL that
`lakewatch replay` runs (and `--sql` prints); the oracle is the test's own rows, judged in Python."""

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


def fails(row: tuple, limit: float) -> list[str]:
    id_, amount = row
    return [name for name, ok in (("has_id", id_ is not None), ("below_limit", amount is not None and amount < limit))
            if not ok]


@pytest.fixture
def session(spark):
    session = spark.newSession()
    session.sql(f"CREATE DATABASE IF NOT EXISTS {DB}")
    session.sql(f"USE {DB}")
    for name in (TABLE.rejected_name, TABLE.replay_name):
        session.sql(f"DROP TABLE IF EXISTS {name}")
    write_rejected(session)
    return session


def bronze(session):
    return session.createDataFrame(
        [(i, a, AT, None, None, "/landing/orders/f.json", AT, AT) for i, a in ROWS],
        "id BIGINT, amount DOUBLE, placed_at TIMESTAMP, _rescued_data STRING, _corrupt_record STRING, "
        "_source_file STRING, _source_file_modification_time TIMESTAMP, _ingested_at TIMESTAMP")


def write_rejected(session) -> None:
    """`{table}_rejected` as the pipeline's flow writes it (a new `_rejected_at` each time: a full refresh)."""
    rejected_query(bronze(session), TABLE).write.format("delta").mode("overwrite").saveAsTable(TABLE.rejected_name)


def queued_ids(session, replay_id: str | None = None) -> list:
    where = "" if replay_id is None else f" WHERE _replay_id = '{replay_id}'"
    return sorted((r["id"], r["amount"]) for r in session.sql(f"SELECT id, amount FROM {TABLE.replay_name}{where}").collect())


def test_a_replay_queues_the_rows_of_the_expectation_that_pass_today_each_once(session):
    selected = [r for r in ROWS if "below_limit" in fails(r, 400)]
    passing = sorted(r for r in selected if not fails(r, 1000))
    assert passing == [(2, 450.0), (2, 450.0), (3, 999.5)]  # the test's own rows, as meant

    first = replay.queue(session, FIXED, "r1", "below_limit")
    assert (first.selected, first.passing, first.queued, first.still_failing) == (len(selected), 3, 3, len(selected) - 3)
    assert queued_ids(session, "r1") == passing

    again = replay.queue(session, FIXED, "r2", "below_limit")
    assert (again.queued, again.queued_before) == (0, 3)
    every = replay.queue(session, FIXED, "r3")  # every rejected row: none more passes today
    assert (every.selected, every.queued) == (sum(1 for r in ROWS if fails(r, 400)), 0)
    assert queued_ids(session) == passing


def test_only_rows_that_failed_the_named_expectation_are_taken(session):
    relaxed = replace(TABLE, expectations=(expectations.drop("below_limit", "amount < 400"),))  # has_id removed
    queued = replay.queue(session, relaxed, "r1", "has_id")
    assert queued_ids(session) == [(None, 10.0)]  # (None, 500.0) failed has_id too, but still fails below_limit
    assert (queued.selected, queued.queued) == (2, 1)


def test_the_flow_sends_queued_rows_with_the_clean_tables_columns_while_they_are_still_rejected(session):
    replay.queue(session, FIXED, "r1", "below_limit")
    columns = clean_columns(FIXED)
    sent = replay.replay_query(session.table(TABLE.replay_name), session.table(TABLE.rejected_name), FIXED, columns)
    assert sent.columns == clean_query(bronze(session), FIXED).columns
    assert sorted((r["id"], r["amount"]) for r in sent.collect()) == [(2, 450.0), (2, 450.0), (3, 999.5)]

    stricter = replace(FIXED, expectations=(expectations.drop("below_limit", "amount < 900"),))  # changed since
    assert [r["id"] for r in replay.replay_query(session.table(TABLE.replay_name), session.table(TABLE.rejected_name),
                                                 stricter, columns).collect()] == [2, 2]

    write_rejected(session)  # a full refresh of the rejected rows: the clean table evaluates bronze again
    assert replay.replay_query(session.table(TABLE.replay_name), session.table(TABLE.rejected_name),
                               FIXED, columns).count() == 0


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
