"""The observability tables (streaming tables over the ingest pipeline's event log, materialized views
over them, file state, bronze tables and the quarantine sink), defined in pipelines/observability/tables.py."""

from pipelines.observability.pipeline import declare_observability

declare_observability(spark)  # noqa: F821 (`spark` is provided by the pipeline runtime)
