"""Local materialized views and event logs checkpoint their Delta log every 100 commits, not every 10
(`local_adapter.LocalEngine.materialized_view_properties`, `EventLogWriter.ensure_table`): open-source SDP
truncates and rewrites each view at every refresh, and the event log takes a commit every few seconds
of an update, so Delta's default wrote checkpoints of them at most refreshes. Checked against Delta
itself, in the observability graph as it is declared, and on the event log's table."""

from __future__ import annotations

from pathlib import Path

import pytest

from pipelines import adapter, sqldefs
from pipelines.local import adapter as local_adapter
from pipelines.eventlog.schema import EVENT_LOG_DDL
from pipelines.eventlog.writer import EventLogWriter
from pipelines.dataset_names import OBSERVABILITY_DEFINITIONS
from pipelines.local.registry import engine_sql


def checkpoints_after_commits(spark, path: Path, properties: dict[str, str], commits: int) -> list[str]:
    """The checkpoint files of a Delta table created with `properties`, after `commits` commits."""
    listed = ", ".join(f"'{k}' = '{v}'" for k, v in properties.items())
    spark.sql(f"CREATE TABLE delta.`{path}` (id BIGINT) USING delta TBLPROPERTIES ({listed})")
    for i in range(commits - 1):
        spark.range(i, i + 1).write.format("delta").mode("append").save(str(path))
    return sorted(p.name for p in (path / "_delta_log").glob("*.checkpoint*.parquet"))


def test_delta_checkpoints_a_databricks_view_at_its_tenth_commit_and_a_local_one_not(spark, tmp_path):
    gold = {"quality": "gold"}
    databricks = checkpoints_after_commits(
        spark, tmp_path / "databricks", adapter.DatabricksEngine().materialized_view_properties(gold), 11)
    local = checkpoints_after_commits(
        spark, tmp_path / "local", local_adapter.LocalEngine().materialized_view_properties(gold), 11)
    assert databricks == ["00000000000000000010.checkpoint.parquet"]
    assert local == []


@pytest.fixture
def observability_outputs() -> list[sqldefs.Definition]:
    """The observability datasets as the local engine registers their definition files (its table
    properties in place of the declared ones)."""
    return [d for path in sorted(OBSERVABILITY_DEFINITIONS.glob("*.sql"))
            for d in sqldefs.parse_file(engine_sql(path.read_text(), local_adapter.LocalEngine()))]


def test_the_local_observability_views_and_only_they_declare_the_longer_interval(observability_outputs):
    views = [o for o in observability_outputs if o.kind == sqldefs.MATERIALIZED_VIEW]
    tables = [o for o in observability_outputs if o.kind == sqldefs.STREAMING_TABLE]
    assert views and tables
    assert {o.properties.get(adapter.CHECKPOINT_INTERVAL) for o in views} == {"100"}
    assert all(adapter.CHECKPOINT_INTERVAL not in o.properties for o in tables)
    assert all("delta.enableRowTracking" not in o.properties for o in views + tables)


def test_databricks_registers_the_definition_files_as_they_are():
    for path in OBSERVABILITY_DEFINITIONS.glob("*.sql"):
        assert engine_sql(path.read_text(), adapter.DatabricksEngine()) == path.read_text(), path.name


def checkpoint_interval(spark, table: str) -> str | None:
    return {r["key"]: r["value"] for r in spark.sql(f"SHOW TBLPROPERTIES {table}").collect()}.get(adapter.CHECKPOINT_INTERVAL)


def test_a_new_event_log_is_declared_with_the_longer_interval(spark):
    EventLogWriter(spark, "checkpoints_new_log").ensure_table()
    assert checkpoint_interval(spark, "checkpoints_new_log") == adapter.LOCAL_CHECKPOINT_INTERVAL


def test_an_event_log_created_before_gets_the_interval_and_an_owners_value_is_kept(spark):
    spark.sql(f"CREATE TABLE checkpoints_old_log ({EVENT_LOG_DDL}) USING DELTA")
    spark.sql(f"CREATE TABLE checkpoints_owned_log ({EVENT_LOG_DDL}) USING DELTA "
              f"TBLPROPERTIES ('{adapter.CHECKPOINT_INTERVAL}' = '25')")
    for table in ("checkpoints_old_log", "checkpoints_owned_log"):
        EventLogWriter(spark, table).ensure_table()
        EventLogWriter(spark, table).ensure_table()  # a second update changes nothing more
    assert checkpoint_interval(spark, "checkpoints_old_log") == adapter.LOCAL_CHECKPOINT_INTERVAL
    assert checkpoint_interval(spark, "checkpoints_owned_log") == "25"
    versions = [r["version"] for r in spark.sql("DESCRIBE HISTORY checkpoints_old_log").collect()]
    assert sorted(versions) == [0, 1]  # created, then the property set once
