"""The observability pipeline: materialized views over the ingest pipeline's event log."""
