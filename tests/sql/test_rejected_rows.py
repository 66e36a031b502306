"""The rows a table's `drop` expectations remove land in `{table}_rejected`, with the names of the
expectations each failed: every clean-query row is either in the clean table or rejected, never both,
and a corrupt row is neither (it goes to the quarantine sink). The oracle is the test's own rows, judged
in Python."""

from __future__ import annotations

from datetime import datetime

from pipelines import expectations
from pipelines.local.adapter import enforce
from pipelines.config import Column, TableSpec
from pipelines.ingestion import clean_query, rejected_query

TABLE = TableSpec(
    name="orders", format="json", landing="orders",
    columns=(Column("id", "BIGINT"), Column("amount", "DOUBLE")),
    expectations=(
        expectations.drop("has_id", "id IS NOT NULL"),
        expectations.drop("positive", "amount > 0"),
        expectations.warn("small", "amount < 100"),
    ),
)
AT = datetime(2026, 3, 1, 8, 0)
# (id, amount, _corrupt_record)
ROWS = [
    (1, 5.0, None),        # passes both drops
    (2, 500.0, None),      # fails only the warn expectation: kept
    (None, 3.0, None),     # fails has_id
    (3, -1.0, None),       # fails positive
    (None, None, None),    # fails both (NULL counts as failed)
    (4, None, None),       # positive is NULL: failed
    (None, None, "{oops"),  # corrupt: neither clean nor rejected
]


def expected_failures(row: tuple) -> list[str]:
    id_, amount, _ = row
    return [name for name, ok in (("has_id", id_ is not None), ("positive", amount is not None and amount > 0)) if not ok]


def bronze(spark):
    return spark.createDataFrame(
        [(i, a, None, c, f"/landing/orders/f{n}.json", AT, AT) for n, (i, a, c) in enumerate(ROWS)],
        "id BIGINT, amount DOUBLE, _rescued_data STRING, _corrupt_record STRING, _source_file STRING, "
        "_source_file_modification_time TIMESTAMP, _ingested_at TIMESTAMP")


def test_each_rejected_row_names_the_drop_expectations_it_failed(spark):
    rejected = rejected_query(bronze(spark), TABLE).collect()
    got = sorted((r["_source_file"], tuple(r["_failed_expectations"])) for r in rejected)
    want = sorted((f"/landing/orders/f{n}.json", tuple(expected_failures(row)))
                  for n, row in enumerate(ROWS) if row[2] is None and expected_failures(row))
    assert got == want
    assert all(r["_rejected_at"] is not None for r in rejected)


def test_rejected_rows_keep_the_clean_tables_columns(spark):
    clean = clean_query(bronze(spark), TABLE)
    rejected = rejected_query(bronze(spark), TABLE)
    assert rejected.columns == [*clean.columns, "_failed_expectations", "_rejected_at"]
    assert rejected.schema["_failed_expectations"].dataType.simpleString() == "array<string>"


def test_every_clean_row_is_kept_or_rejected_once(spark):
    clean = clean_query(bronze(spark), TABLE)
    kept = enforce(clean, "orders", TABLE.expectations, streaming=False)
    rejected = rejected_query(bronze(spark), TABLE).drop("_failed_expectations", "_rejected_at")
    assert kept.count() + rejected.count() == sum(1 for r in ROWS if r[2] is None)
    assert kept.intersect(rejected).count() == 0
    assert sorted(map(repr, kept.unionAll(rejected).collect())) == sorted(map(repr, clean.collect()))
