"""The observability tables (materialized views over the ingest pipeline's event log, file state,
bronze tables and quarantine sink), defined in pipelines/observability/tables.py."""

from pipelines.observability.pipeline import declare_observability

declare_observability(spark)  # noqa: F821 (`spark` is provided by the pipeline runtime)
