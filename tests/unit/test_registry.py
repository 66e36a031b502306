"""What the local registry reads from a flow's Spark Connect plan, built by pyspark's own plan classes."""

from __future__ import annotations

from pyspark.sql.connect.plan import DataSource, Read, SetOperation

from pipelines.local.registry import read_tables


def test_every_read_with_its_streaming_flag_and_the_named_tables_by_name():
    union = SetOperation(Read("spark_catalog.lakewatch.orders_source", is_streaming=True),
                         DataSource(format="json", paths=["/landing/orders"], is_streaming=True), "union")
    plan = SetOperation(union, Read("spark_catalog.lakewatch.customers"), "union").plan(None)
    assert read_tables(plan) == [("spark_catalog.lakewatch.orders_source", True), (None, True),
                                 ("spark_catalog.lakewatch.customers", False)]


def test_a_flow_that_reads_a_data_source_directly_is_streaming():
    # `spark.readStream.format("json").load(path)`: no named table, still a streaming query.
    reads = read_tables(DataSource(format="json", paths=["/landing/orders"], is_streaming=True).plan(None))
    assert any(streaming for _, streaming in reads) and [n for n, _ in reads if n] == []
