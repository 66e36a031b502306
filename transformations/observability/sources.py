"""What the observability SQL files beside this one read that differs per engine or per deployment,
declared as pipeline-private views (pipelines/observability/pipeline.py writes their queries), and the
second flow of `events`, from the event log's history, when there is a history table.

The SQL files read the ingest pipeline's event log as `${lakewatch.event_log}` from the pipeline
configuration, and these views by name.
"""

from pyspark import pipelines as dp
from pyspark.sql import DataFrame

from pipelines.observability import catalog
from pipelines.observability import pipeline as sources

QUERIES = sources.source_queries(spark)  # noqa: F821 (`spark` is provided by the pipeline runtime)


@dp.temporary_view(comment="One row per landing file: Databricks' cloud_files_state() of every bronze table, "
                           "or the local file-state table, in the same columns")
def landing_file_state() -> DataFrame:
    return spark.sql(QUERIES["landing_file_state"])  # noqa: F821


@dp.temporary_view(comment="The quarantine sink, or no rows with its columns before its first write")
def quarantine_sink() -> DataFrame:
    return spark.sql(QUERIES["quarantine_sink"])  # noqa: F821


@dp.temporary_view(comment="The rows of every bronze table: file, time, rescued data, corrupt flag, content hash")
def bronze_union() -> DataFrame:
    return spark.sql(QUERIES["bronze_union"])  # noqa: F821


@dp.temporary_view(comment="The job's snapshots of the ingest tables' sizes, or no rows before the first")
def table_size_snapshots() -> DataFrame:
    return spark.sql(QUERIES["table_size_snapshots"])  # noqa: F821


@dp.temporary_view(comment="The ingest tables of the configuration: name, kind, source table, hours without rows allowed")
def ingest_tables() -> DataFrame:
    return spark.sql(QUERIES["ingest_tables"])  # noqa: F821


@dp.temporary_view(comment="The instant of this refresh (health_metrics)")
def clock() -> DataFrame:
    return spark.sql(QUERIES["clock"])  # noqa: F821


@dp.temporary_view(comment="The run-insight rules of pipelines/insights.py, first match first (run_insights)")
def insight_rules() -> DataFrame:
    return spark.sql(QUERIES["insight_rules"])  # noqa: F821


HISTORY = sources.history_placeholders(spark)  # noqa: F821
if HISTORY is not None:
    @dp.append_flow(target="events", name="events_from_history")
    def events_from_history() -> DataFrame:
        return sources.history_query(spark, catalog.by_name("events"), HISTORY)  # noqa: F821
