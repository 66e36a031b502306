"""The ingestion pattern's graph shape, captured without running anything: every table yields
{t}_source, {t}_bronze, its append flow into the one corrupt_records_sink, and {t}."""

from __future__ import annotations

from pathlib import Path

import pytest
from pyspark.pipelines.graph_element_registry import graph_element_registration_context
from pyspark.pipelines.output import Sink, StreamingTable, TemporaryView

from pipelines import adapter
from pipelines.local import adapter as local_adapter
from pipelines.ingestion import BRONZE_EXPECTATIONS, declare_ingestion
from pipelines.local.project import register_local_engine
from tests.builders import CapturingRegistry


@pytest.fixture
def graph(spark, project_root: Path):
    settings = {
        adapter.ENGINE_KEY: "local",
        adapter.TABLES_CONFIG_KEY: str(project_root / "conf" / "tables.yml"),
        adapter.LANDING_ROOT_KEY: "/landing",
        adapter.SINK_ROOT_KEY: "/sinks",
    }
    for k, v in settings.items():
        spark.conf.set(k, v)
    register_local_engine()
    registry = CapturingRegistry()
    with local_adapter.recording(local_adapter.LocalGraph()) as recorded, graph_element_registration_context(registry):
        declare_ingestion(spark)
    registry.local_graph = recorded  # what the local engine recorded for the runner
    yield registry
    for k in settings:
        spark.conf.unset(k)


def test_every_table_gets_its_datasets(graph):
    kinds = {o.name: type(o) for o in graph.outputs}
    for table in ("orders", "customers"):
        assert kinds[f"{table}_source"] is TemporaryView
        assert kinds[f"{table}_bronze"] is StreamingTable
        assert kinds[table] is StreamingTable  # the clean table: each row's expectations counted once
        assert kinds[f"{table}_rejected"] is StreamingTable  # the demo's tables each have a drop expectation
    assert [n for n, k in kinds.items() if k is Sink] == ["corrupt_records_sink"]


def test_append_flows_target_the_shared_sink_after_it_is_defined(graph):
    targets = {f.name: f.target for f in graph.flows}
    assert targets["orders_to_corrupt_records_sink"] == "corrupt_records_sink"
    assert targets["customers_to_corrupt_records_sink"] == "corrupt_records_sink"
    assert graph.order.index("output:corrupt_records_sink") < graph.order.index("flow:orders_to_corrupt_records_sink")


def test_row_tracking_is_declared_for_databricks_only(graph):
    """Databricks' incremental refresh needs change data feed and row tracking on the tables views
    read; locally row tracking only costs, so the local declaration leaves it out."""
    from pipelines.ingestion import CHANGE_TRACKING

    declared = {o.name: o.table_properties for o in graph.outputs if isinstance(o, StreamingTable)}
    for table in ("orders_bronze", "orders", "orders_rejected", "customers_bronze", "customers"):
        assert declared[table]["delta.enableChangeDataFeed"] == "true"
        assert "delta.enableRowTracking" not in declared[table]
    assert adapter.DatabricksEngine().table_properties(CHANGE_TRACKING) == {
        "delta.enableChangeDataFeed": "true", "delta.enableRowTracking": "true"}


def test_local_engine_records_what_the_runner_measures(graph):
    assert graph.local_graph.file_sources == {"orders_bronze": "/landing/orders",
                                              "customers_bronze": "/landing/customers",
                                              "payments_bronze": "/landing/payments"}
    # how the runner counts each table's files for reconciliation: by the table's format
    assert graph.local_graph.record_counters == {"orders_bronze": "json:lines", "customers_bronze": "json:lines",
                                                 "payments_bronze": "csv:header"}
    assert graph.local_graph.expectations["orders_bronze"].expectations == BRONZE_EXPECTATIONS
    assert {e.name for e in graph.local_graph.expectations["orders"].expectations} >= {"has_order_id"}
    assert graph.local_graph.sinks["corrupt_records_sink"].path == "/sinks/corrupt_records_sink"
    assert graph.local_graph.measured_flows == {
        "orders_bronze", "customers_bronze", "orders_to_corrupt_records_sink", "customers_to_corrupt_records_sink",
        "orders", "customers", "payments_bronze", "payments_to_corrupt_records_sink", "payments",
        "orders_rejected", "customers_rejected", "payments_rejected",
    }
    assert "orders_rejected" not in graph.local_graph.expectations  # its rows are counted, not judged


def test_databricks_engine_refuses_expectations_without_databricks_runtime():
    decorate = adapter.DatabricksEngine().query("orders", "orders", BRONZE_EXPECTATIONS)
    with pytest.raises(RuntimeError, match="lakewatch.engine=local"):
        decorate(lambda: None)  # type: ignore[arg-type,return-value]


def test_engine_is_chosen_by_configuration(spark):
    register_local_engine()
    spark.conf.set(adapter.ENGINE_KEY, "local")
    assert adapter.engine_for(spark).name == "local"
    spark.conf.set(adapter.ENGINE_KEY, "serverless")
    with pytest.raises(ValueError, match="not one of"):
        adapter.engine_for(spark)
    spark.conf.unset(adapter.ENGINE_KEY)
    assert adapter.engine_for(spark).name == "databricks"
