"""What the observability SQL files beside this one read that differs per engine or per deployment,
declared as pipeline-private views (pipelines/observability/pipeline.py writes their queries), and the
other flows of `events`: one per other pipeline's event log (`lakewatch.observed_event_logs`) that
exists, and one from the ingest event log's history, when there is a history table.

The SQL files read the ingest pipeline's event log as `${lakewatch.event_log}` from the pipeline
configuration, and these views by name.
"""

from pyspark import pipelines as dp
from pyspark.sql import DataFrame

from pipelines.observability import catalog
from pipelines.observability import pipeline as sources

OBSERVED = sources.observed_event_logs(spark)  # noqa: F821 (`spark` is provided by the pipeline runtime)
QUERIES = sources.source_queries(spark, OBSERVED)  # noqa: F821


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


@dp.temporary_view(comment="The event logs read: the ingest pipeline's and each of lakewatch.observed_event_logs, "
                           "whether it follows lakewatch's pattern, why one is not read")
def observed_event_logs() -> DataFrame:
    return spark.sql(QUERIES["observed_event_logs"])  # noqa: F821


@dp.temporary_view(comment="Id, error and time of every error event of the event logs read, for run_insights")
def event_log_errors() -> DataFrame:
    return spark.sql(QUERIES["event_log_errors"])  # noqa: F821


@dp.temporary_view(comment="The run-insight rules of pipelines/insights.py, first match first (run_insights)")
def insight_rules() -> DataFrame:
    return spark.sql(QUERIES["insight_rules"])  # noqa: F821


def _observed_flow(log: sources.ObservedEventLog) -> None:
    @dp.append_flow(target="events", name=log.flow)
    def events_from_observed_log() -> DataFrame:
        return sources.streaming_query(spark, catalog.by_name("events"), {"event_log": log.table})  # noqa: F821


for _log in OBSERVED:
    if _log.exists:
        _observed_flow(_log)

HISTORY = sources.history_placeholders(spark)  # noqa: F821
if HISTORY is not None:
    @dp.append_flow(target="events", name="events_from_history")
    def events_from_history() -> DataFrame:
        return sources.history_query(spark, catalog.by_name("events"), HISTORY)  # noqa: F821
