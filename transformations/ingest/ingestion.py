"""The ingest pipeline's datasets: corrupt_records_sink, then for every table in the tables file
{table}_source, {table}_bronze, its append flow into the sink, and the clean view {table}.

One file on purpose: an append flow must be registered after the sink it targets (otherwise its
target is taken for a table), and definition files are loaded in no fixed order.
"""

from pipelines.ingestion import declare_ingestion

declare_ingestion(spark)  # noqa: F821 (`spark` is provided by the pipeline runtime)
