"""An update's commits to a materialized view read from the table's Delta log files, against the oracle:
Delta's own DESCRIBE HISTORY of the same table (what `measure.update_commits` asks Spark)."""

from __future__ import annotations

from pathlib import Path

from pipelines.local import measure

USER_METADATA = "spark.databricks.delta.commitInfo.userMetadata"


def commit(spark, sql: str, update_id: str | None) -> None:
    """Runs `sql` as a commit of `update_id` (tagged as the runner tags its session), or untagged."""
    if update_id:
        spark.conf.set(USER_METADATA, measure.commit_tag(update_id))
    else:
        spark.conf.unset(USER_METADATA)
    try:
        spark.sql(sql)
    finally:
        spark.conf.unset(USER_METADATA)


def test_the_log_gives_what_describe_history_gives(spark, tmp_path):
    path = tmp_path / "view"
    table = f"delta.`{path}`"
    commit(spark, f"CREATE TABLE {table} (n BIGINT) USING delta", None)
    commit(spark, f"INSERT INTO {table} VALUES (1), (2)", "u1")  # an earlier refresh
    commit(spark, f"TRUNCATE TABLE {table}", "u2")  # this refresh: SDP truncates, then the flow writes
    commit(spark, f"INSERT INTO {table} VALUES (1), (2), (3)", "u2")
    commit(spark, f"INSERT INTO {table} VALUES (4)", "u3")  # a later update

    from_log = measure.update_commits_in_log(Path(path), "u2")
    assert from_log is not None
    assert from_log == measure.update_commits(spark, table, "u2")
    assert from_log.before == 1 and [m.get("numOutputRows") for _, m in from_log.commits] == ["3", None]


def test_without_a_commit_of_the_update_or_a_log_it_asks_spark(spark, tmp_path):
    path = tmp_path / "view"
    commit(spark, f"CREATE TABLE delta.`{path}` (n BIGINT) USING delta", None)
    commit(spark, f"INSERT INTO delta.`{path}` VALUES (1)", "u1")
    assert measure.update_commits_in_log(Path(path), "u2") is None  # maybe a folder of another table
    assert measure.update_commits_in_log(tmp_path / "missing", "u1") is None
    (path / "_delta_log" / "00000000000000000001.json").write_text("{not json\n")
    assert measure.update_commits_in_log(Path(path), "u1") is None
