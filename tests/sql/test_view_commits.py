"""An update's commits to a materialized view read from the table's Delta log files, against the oracle:
Delta's own DESCRIBE HISTORY of the same table (what `measure.update_commits` asks Spark)."""

from __future__ import annotations

from pathlib import Path

from pipelines.local import measure
from pipelines.local.checkpoints import to_local_path
from tests.builders import USER_METADATA, cut_commit_entry, landing_files, stream_batches, tagged_stream_batches

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
    commit(spark, f"TRUNCATE TABLE {table}", "u2")  # this refresh: SDP as shipped truncates, then the flow writes
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


def test_a_streaming_querys_batches_from_the_log_are_what_describe_history_gives(spark, tmp_path):
    landing, table_dir, checkpoint = tmp_path / "landing", tmp_path / "bronze", tmp_path / "checkpoint"
    landing_files(landing, [3, 5])
    stream_batches(spark, landing, table_dir, checkpoint)
    commit(spark, f"INSERT INTO delta.`{table_dir}` VALUES ('not a batch')", "u1")  # another writer between
    (landing / "part-2.txt").write_text("row 2.0\n")
    stream_batches(spark, landing, table_dir, checkpoint)
    stream_batches(spark, landing, table_dir, tmp_path / "another")  # another query: its batches 0, 1 and 2

    table = f"delta.`{table_dir}`"
    for metric in ("numOutputRows", "numOutputBytes"):
        from_log = measure.rows_per_batch_in_log(table_dir, checkpoint, [0, 1, 2], metric)
        assert from_log == measure.rows_per_batch(spark, table, checkpoint, [0, 1, 2], metric)
    assert measure.rows_per_batch_in_log(table_dir, checkpoint, [0, 1, 2]) == {0: 3, 1: 5, 2: 1}  # the files' lines
    # The newest five commits: the insert, batch 2 and the other query's three. What the log read holds, Spark's does.
    assert measure.rows_per_batch_in_log(table_dir, checkpoint, [2], last_commits=5) == \
        measure.rows_per_batch(spark, table, checkpoint, [2], last_commits=5) == {2: 1}
    # A batch the commits read do not hold (older, or another table's folder): ask Spark.
    assert measure.rows_per_batch_in_log(table_dir, checkpoint, [1, 2], last_commits=5) is None
    assert measure.rows_per_batch_in_log(tmp_path / "missing", checkpoint, [0]) is None


def test_the_folder_of_a_managed_table_is_where_spark_put_it(spark):
    spark.sql("CREATE DATABASE IF NOT EXISTS Lw_Folders")
    spark.sql("CREATE TABLE IF NOT EXISTS Lw_Folders.Mixed_Case (n BIGINT) USING delta")
    warehouse = Path(to_local_path(spark.conf.get("spark.sql.warehouse.dir")))
    assert (measure.local_table_dir(warehouse, "spark_catalog.Lw_Folders.Mixed_Case") / "_delta_log").is_dir()


def test_a_managed_table_of_the_local_catalog_has_a_folder_in_the_warehouse(tmp_path):
    assert measure.local_table_dir(tmp_path, "spark_catalog.Lakewatch.Orders_Bronze") == \
        tmp_path / "lakewatch.db" / "orders_bronze"
    assert measure.local_table_dir(tmp_path, "spark_catalog.default.t") == tmp_path / "t"
    assert measure.local_table_dir(tmp_path, "main.lakewatch.t") is None
    assert measure.local_table_dir(tmp_path, "t") is None


def test_what_an_update_wrote_is_its_writes_metric_zero_without_a_write_and_unknown_without_the_metric(spark, tmp_path):
    """`written` sums the metric over the update's WRITE commits, as Delta recorded them (SDP as shipped
    truncates, then appends); an update that wrote nothing wrote 0; a WRITE whose metrics Delta did not
    record (history metrics off) is not measured: None, never 0."""
    table = f"delta.`{tmp_path / 'view'}`"
    commit(spark, f"CREATE TABLE {table} (n BIGINT) USING delta", None)
    commit(spark, f"INSERT INTO {table} VALUES (1), (2)", "u1")
    commit(spark, f"TRUNCATE TABLE {table}", "u2")
    commit(spark, f"INSERT INTO {table} VALUES (1), (2), (3)", "u2")
    found = measure.update_commits(spark, table, "u2")
    assert found.operations == ("WRITE", "TRUNCATE") and found.written("numOutputRows") == 3
    assert found.written("numOutputBytes") == sum(int(m["numOutputBytes"]) for _, m in found.commits if "numOutputBytes" in m)
    assert measure.update_commits(spark, table, "u3").written("numOutputRows") == 0
    spark.conf.set("spark.databricks.delta.history.metricsEnabled", "false")
    try:
        commit(spark, f"INSERT INTO {table} VALUES (4)", "u4")
    finally:
        spark.conf.unset("spark.databricks.delta.history.metricsEnabled")
    unmeasured = measure.update_commits(spark, table, "u4")
    assert unmeasured.wrote() and unmeasured.written("numOutputRows") is None
    assert measure.UpdateCommits([], None, read=False).written("numOutputRows") is None


def test_a_batch_whose_stream_stopped_between_its_two_commits_is_the_updates_with_its_delta_rows(spark, tmp_path):
    """A stream commits a micro-batch to its Delta sink, then to its checkpoint's commit log. Cut between
    the two (the checkpoint's last commit entry removed: what a stop or a kill at that instant leaves), the
    batch's rows are in the table and the batch is uncommitted in the checkpoint. `cut_batches` finds it,
    with the update that wrote it, the lines of the file it read (the test's own count) and what Delta's
    history says, and no longer once a later run committed the batch. The premise, by Spark itself:
    that later run executes the batch again and Delta skips its write, so the rows of the batch by
    update are the first update's, and none for the later one."""
    landing, table_dir, checkpoint = tmp_path / "landing", tmp_path / "bronze", tmp_path / "checkpoint"
    lines = [2, 3, 4]
    landing_files(landing, lines)
    tagged_stream_batches(spark, landing, table_dir, checkpoint, "u1")
    table = f"delta.`{table_dir}`"
    assert measure.cut_batches(spark, table, checkpoint, table_dir) == {}  # every batch committed
    cut_commit_entry(checkpoint, 2)

    cut = measure.cut_batches(spark, table, checkpoint, table_dir)
    assert list(cut) == [2] and (cut[2].rows, cut[2].update_id) == (lines[2], "u1") and cut[2].bytes
    history = spark.sql(f"DESCRIBE HISTORY {table}").where("operationParameters.epochId = '2'").collect()
    assert len(history) == 1 and cut[2].at == history[0]["timestamp"].astimezone(cut[2].at.tzinfo)
    assert measure.cut_batches(spark, table, checkpoint) == cut  # the same from Spark's history

    tagged_stream_batches(spark, landing, table_dir, checkpoint, "u2")  # runs batch 2 again
    assert (checkpoint / "commits" / "2").exists()
    assert spark.read.format("delta").load(str(table_dir)).count() == sum(lines)  # Delta skipped the write
    assert measure.cut_batches(spark, table, checkpoint, table_dir) == {}
    # What each update's run of batch 2 wrote: u1's run all of its rows, u2's run (Delta skipped it) none.
    for update_id, rows in (("u1", lines[2]), ("u2", 0)):
        assert measure.rows_per_batch_in_log(table_dir, checkpoint, [2], update_id=update_id) == {2: rows}
        assert measure.rows_per_batch(spark, table, checkpoint, [2], update_id=update_id) == {2: rows}
