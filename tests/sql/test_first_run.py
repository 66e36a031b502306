"""First-run safety: on Databricks the quarantine sink's table is created by its first
write and the event log's history table by the job's first archive, so the observability pipeline's
first updates can run before either exists. It reads a missing sink as no rows with the sink's
columns, and a missing history as no history, instead of failing the whole update."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest
from pyspark.sql.types import _parse_datatype_string

from pipelines.adapter import EVENT_LOG_HISTORY_KEY
from pipelines.ingestion import SINK_SCHEMA_DDL
from pipelines.observability.pipeline import empty_sink_sql, history_source, sink_source
from pipelines.observability.catalog import by_name

SINK = "main.lakewatch.corrupt_records_sink"
HISTORY = "main.lakewatch.lakewatch_ingest_event_log_history"


def catalog_with(tables: set[str] | None, conf: dict[str, str] | None = None) -> Any:
    """A session whose catalog holds `tables` (None: the catalog does not answer)."""
    def table_exists(name: str) -> bool:
        if tables is None:
            raise RuntimeError("catalog unavailable")
        return name in tables

    settings = conf or {}
    return SimpleNamespace(catalog=SimpleNamespace(tableExists=table_exists),
                           conf=SimpleNamespace(get=lambda key, default=None: settings.get(key, default)))


def test_a_missing_sink_is_read_as_no_rows_with_the_sink_columns(spark):
    source = sink_source(catalog_with(set()), SINK)
    assert source == empty_sink_sql()
    rows = spark.sql(f"SELECT * FROM {source}")
    assert rows.count() == 0
    assert rows.schema == _parse_datatype_string(SINK_SCHEMA_DDL)
    # The view that reads the sink (and, through it, quarantine_daily, reconciliation and the health
    # metrics) analyses and runs on it.
    deliveries = spark.sql(by_name("quarantine_deliveries").render({"sink": source}))
    assert deliveries.count() == 0


def test_an_existing_sink_is_read_as_named():
    assert sink_source(catalog_with({SINK}), SINK) == SINK


def test_a_catalog_that_does_not_answer_reads_the_sink_as_named():
    """No answer is not a missing table: the update reads the sink and fails on its own terms."""
    assert sink_source(catalog_with(None), SINK) == SINK


@pytest.mark.parametrize("tables, conf, expected", [
    ({HISTORY}, {EVENT_LOG_HISTORY_KEY: HISTORY}, HISTORY),
    (set(), {EVENT_LOG_HISTORY_KEY: HISTORY}, None),   # before the job's first archive
    ({HISTORY}, {}, None),                             # not configured
    (None, {EVENT_LOG_HISTORY_KEY: HISTORY}, None),    # the catalog does not answer: the live log alone
])
def test_the_history_is_read_only_once_it_exists(tables, conf, expected):
    assert history_source(catalog_with(tables, conf)) == expected
