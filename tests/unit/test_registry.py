"""What the local registry reads from a flow's Spark Connect plan, built by pyspark's own plan classes."""

from __future__ import annotations

from pathlib import Path

from pyspark.sql.connect.plan import DataSource, Read, SetOperation

from pipelines.dataset_names import OBSERVABILITY_DEFINITIONS
from pipelines.local.registry import read_tables, sql_records
from pipelines.observability import catalog


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


def test_a_sql_definition_file_is_recorded_as_its_datasets_and_their_flows():
    """Each observability .sql file records the dataset the catalog reads from it, with the type the
    Python declarations had, one flow of the same name into it, and the relations its query reads."""
    kinds = {catalog.MATERIALIZED_VIEW: "MATERIALIZED_VIEW", catalog.STREAMING_TABLE: "STREAMING_TABLE",
             catalog.TEMPORARY_VIEW: "VIEW"}
    log = "spark_catalog.lakewatch.lakewatch_ingest_event_log"

    def substitute(text: str) -> str:
        return text.replace(catalog.EVENT_LOG, log)

    for table in catalog.TABLES:
        path = OBSERVABILITY_DEFINITIONS / f"{table.name}.sql"
        [output], [flow] = sql_records(path.read_text(), path, substitute)
        assert (output.name, output.dataset_type, output.comment) == (table.name, kinds[table.kind], table.comment)
        assert output.format == (None if table.temporary else "delta")
        assert (flow.name, flow.target, flow.source_file) == (table.name, table.name, str(path))
        assert flow.streaming_inputs == table.streaming
        datasets = {t.name for t in catalog.TABLES if t.name != table.name}
        assert set(flow.input_datasets) & datasets == {d for d in datasets if catalog.reads(table, d)}, table.name
    text = (OBSERVABILITY_DEFINITIONS / "events.sql").read_text()
    [_], [events] = sql_records(text, Path("events.sql"), substitute)
    create_line = 1 + text.splitlines().index(next(line for line in text.splitlines() if line.startswith("CREATE ")))
    assert events.input_datasets == [log] and events.streaming_inputs and events.source_line == create_line > 1
    [_], [insights] = sql_records((OBSERVABILITY_DEFINITIONS / "run_insights.sql").read_text(), Path("r.sql"), substitute)
    assert insights.input_datasets == ["update_status", "events", "event_log_errors", "insight_rules"]  # CTE names left out
