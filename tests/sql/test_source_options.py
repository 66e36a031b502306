"""A table's Auto Loader options on each engine: the `cloudFiles.*` options Databricks gets, the file
source options the local engine gets (Spark 4.2's FileStreamOptions) with a note for each option that has
no local equivalent, and what Spark's file source then does with them on real streams: micro-batches cut
by bytes, committed files deleted. Truth: the files the tests write and list themselves, and Spark's own
progress reports."""

from __future__ import annotations

import json
from pathlib import Path


from pipelines import adapter
from pipelines.local import adapter as local_adapter
from pipelines.config import parse_tables
from pipelines.local import checkpoints
from pipelines.local.file_ledger import FileLedger
from pipelines.local.file_state import rows_for


def spec(**options):
    table = {"name": "orders", "format": "json", "landing": "orders", "schema": {"id": "BIGINT"}, **options}
    return parse_tables("tables.yml", {"tables": [table]}).tables[0]


def test_every_option_reaches_auto_loader_under_its_cloud_files_name():
    table = spec(max_files_per_trigger=100, max_bytes_per_trigger="10g", use_notifications=True,
                 clean_source="move", clean_source_move_destination="_archive/orders", clean_source_retention="14 days")
    assert adapter.cloud_files_options(table, "/Volumes/main/raw/landing") == {
        "cloudFiles.maxFilesPerTrigger": "100",
        "cloudFiles.maxBytesPerTrigger": f"{10 * 1024 ** 3}b",
        "cloudFiles.useNotifications": "true",
        "cloudFiles.cleanSource": "MOVE",
        "cloudFiles.cleanSource.moveDestination": "/Volumes/main/raw/landing/_archive/orders",
        "cloudFiles.cleanSource.retentionDuration": "14 days",
    }
    assert adapter.cloud_files_options(spec(use_managed_file_events=True, clean_source="delete"), "/l") == {
        "cloudFiles.useManagedFileEvents": "true", "cloudFiles.cleanSource": "DELETE"}
    assert adapter.cloud_files_options(spec(), "/l") == {}


def test_the_local_file_source_gets_what_it_has_and_a_note_for_the_rest():
    options, notes = local_adapter.local_file_options(
        spec(max_bytes_per_trigger="1m", use_notifications=True, clean_source="move",
             clean_source_move_destination="_archive/orders"), "/home/me/landing")
    assert options == {"recursiveFileLookup": "true", "maxBytesPerTrigger": "1048576", "cleanSource": "archive",
                       "sourceArchiveDir": "/home/me/landing/_archive/orders"}
    assert [n.split(" ", 1)[0] for n in notes] == ["use_notifications", "clean_source"]
    assert "without a retention period" in notes[1] and "default retention of 30 days" in notes[1]
    # Spark's file source refuses maxFilesPerTrigger and maxBytesPerTrigger together: files win, said once
    options, notes = local_adapter.local_file_options(
        spec(max_files_per_trigger=2, max_bytes_per_trigger=10, use_managed_file_events=True, clean_source="delete",
             clean_source_retention="8 days"), "/l")
    assert options == {"recursiveFileLookup": "true", "maxFilesPerTrigger": "2", "cleanSource": "delete"}
    assert [n.split(" ", 1)[0] for n in notes] == ["max_bytes_per_trigger", "use_managed_file_events", "clean_source"]
    assert "clean_source_retention '8 days' has no local equivalent" in notes[2]
    assert local_adapter.local_file_options(spec(), "/l") == ({"recursiveFileLookup": "true"}, [])


def write_files(landing: Path, count: int, lines: int) -> list[Path]:
    landing.mkdir(parents=True)
    files = []
    for i in range(count):
        path = landing / f"part-{i}.json"
        path.write_text("".join(json.dumps({"id": i * 100 + n}) + "\n" for n in range(lines)))
        files.append(path)
    return files


def run_available_now(spark, table, root: Path, checkpoint: Path) -> list[int]:
    """Streams the table's landing folder through the local engine's reader until nothing is left;
    the input rows of each micro-batch, from Spark's progress reports."""
    df = local_adapter.LocalEngine().read_files(spark, table, table.landing_path(str(root)))
    query = (df.writeStream.format("noop").option("checkpointLocation", str(checkpoint))
             .trigger(availableNow=True).start())
    query.awaitTermination(120)
    return [p["numInputRows"] for p in query.recentProgress if p["numInputRows"]]


def rows_per_file(spark, table, root: Path, checkpoint: Path, sink: Path) -> dict[str, int]:
    """Streams the landing folder through the local engine's reader into a Delta table (one update);
    rows per source file of everything the table holds, by Spark's reader of that table."""
    df = local_adapter.LocalEngine().read_files(spark, table, table.landing_path(str(root)))
    query = (df.writeStream.format("delta").option("checkpointLocation", str(checkpoint))
             .trigger(availableNow=True).start(str(sink)))
    query.awaitTermination(120)
    counted = spark.read.format("delta").load(str(sink)).groupBy("_source_file").count().collect()
    return {checkpoints.to_local_path(r["_source_file"]): r["count"] for r in counted}


def test_file_names_with_glob_characters_and_nested_folders_are_read_once_each(spark, tmp_path):
    """Spark's file source read a micro-batch holding a name with `?`, `[` or `{` once more per such
    name (every other file of the batch landed two or three times), skipped files in plain subfolders
    and failed on mixed folder depths. Each file here is read once, over two deliveries, as the test
    counts its lines."""
    landing = tmp_path / "landing" / "orders"
    deliveries = [["one.json", "two.json"],
                  ["three.json", "a?q.json", "c[1].json", "c{x,y}.json", "p%41ct.json", "sub/in.json",
                   "2026/12/06/deep.json", "date=2026-12-06/part.json"]]
    expected: dict[str, int] = {}
    for number, names in enumerate(deliveries):
        for i, name in enumerate(names):
            path = landing / name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text("".join(json.dumps({"id": n}) + "\n" for n in range(i + 2)))
            expected[str(path)] = i + 2
        found = rows_per_file(spark, spec(), tmp_path / "landing", tmp_path / "cp", tmp_path / "bronze")
        assert found == expected, number


def test_max_bytes_per_trigger_cuts_an_update_into_micro_batches(spark, tmp_path):
    files = write_files(tmp_path / "landing" / "orders", count=3, lines=2)
    limit = max(f.stat().st_size for f in files)  # one file per micro-batch
    batches = run_available_now(spark, spec(max_bytes_per_trigger=limit), tmp_path / "landing", tmp_path / "cp")
    assert batches == [2, 2, 2]


def test_clean_source_delete_removes_committed_files_and_the_file_state_keeps_their_lines(spark, tmp_path):
    """Spark deletes the files of batch N when batch N+1 starts: with one file per batch, every file but
    the last batch's. The runner counted them before the update; the file state says DELETE for exactly
    the files the test no longer finds, with the lines it wrote."""
    landing = tmp_path / "landing" / "orders"
    files = write_files(landing, count=3, lines=4)
    table = spec(max_files_per_trigger=1, clean_source="delete", clean_source_retention="8 days")
    ledger = FileLedger(tmp_path / "ledger.json")
    for f in checkpoints.list_landing(landing):  # what the runner does before an update (measure.count_before_delete)
        ledger.note_landing("orders_bronze", f.path, f.size, f.modification_time)
    assert run_available_now(spark, table, tmp_path / "landing", tmp_path / "cp") == [4, 4, 4]
    gone = {str(f) for f in files if not f.exists()}
    assert len(gone) == 2
    states = checkpoints.file_states(landing, tmp_path / "cp", "DELETE", None)
    rows = {r[2]: r for r in rows_for("orders", "orders_bronze", states, ledger, {})}
    assert {p for p, r in rows.items() if r[15] == "DELETE"} == gone
    assert {r[8] for r in rows.values()} == {"committed"}
    for path in gone:  # lines, size as committed, not taken as modified, time not known
        assert (rows[path][10], rows[path][3], rows[path][13], rows[path][14]) == (4, rows[path][11], None, None)


def test_databricks_file_state_has_the_archive_columns_and_counts_moved_files_where_they_are(spark, tmp_path):
    tables = tmp_path / "tables.yml"
    tables.write_text(json.dumps({"tables": [{
        "name": "orders", "format": "json", "landing": "orders", "schema": {"id": "BIGINT"},
        "clean_source": "move", "clean_source_move_destination": "_archive/orders"}]}))
    settings = {adapter.TABLES_CONFIG_KEY: str(tables), adapter.LANDING_ROOT_KEY: str(tmp_path / "landing")}
    for k, v in settings.items():
        spark.conf.set(k, v)
    try:
        before = adapter.DatabricksEngine().file_state_sql(spark, ["main.raw.orders_bronze"])
        (tmp_path / "landing" / "_archive" / "orders").mkdir(parents=True)  # Auto Loader's first move made it
        after = adapter.DatabricksEngine().file_state_sql(spark, ["main.raw.orders_bronze"])
    finally:
        for k in settings:
            spark.conf.unset(k)
    assert "s.archive_time, s.archive_mode, s.move_location" in before
    assert before.count("read_files(") == 1 and after.count("read_files(") == 2
    assert f"read_files('{tmp_path}/landing/_archive/orders'" in after and "coalesce(s.move_location, s.path)" in after
