"""Table size and file count growth per ingest table: the job's snapshot task
(pipelines/table_sizes.py, jobs/snapshot_table_sizes.py) and the observability view `table_growth`.

Oracles are independent of the code under test: a table's data files are those Spark itself reads
for it (`spark.read.format('delta').load(path).inputFiles()`), their bytes `os.path.getsize` of each;
versions are the commits the test made; growth is the difference of two such oracle snapshots, around
rows the test appended itself."""

from __future__ import annotations

import datetime as dt
import os
from types import SimpleNamespace
from typing import Any
from urllib.parse import unquote, urlparse

import pytest
import yaml

from pipelines.bundle import load_bundle
from pipelines.config import Column, TableSpec
from pipelines.local.job import run_job
from pipelines.observability.catalog import by_name
from pipelines.table_sizes import empty_sizes_sql, ingest_tables_sql, measure, snapshot
from tests.eventlog_builders import TINY_DATA_CONF

DB = "sizes_test"
TARGET = f"spark_catalog.{DB}.lakewatch_table_sizes"
ORDERS = TableSpec("orders", "json", (Column("order_id", "STRING"), Column("amount", "DOUBLE")), "orders")
GHOST = TableSpec("ghost", "json", (Column("id", "STRING"),), "ghost")  # configured, never created
T0 = dt.datetime(2026, 12, 1, 8, 0, tzinfo=dt.timezone.utc)


@pytest.fixture
def session(spark, tmp_path):
    session = spark.newSession()
    for key, value in TINY_DATA_CONF.items():
        session.conf.set(key, value)
    session.sql(f"DROP DATABASE IF EXISTS {DB} CASCADE")
    session.sql(f"CREATE DATABASE {DB}")
    session.tmp = tmp_path  # where the test's tables live (their files are the oracle's)
    yield session
    session.sql(f"DROP DATABASE IF EXISTS {DB} CASCADE")


def data(session: Any, name: str, start: int, end: int, files: int = 1) -> Any:
    """Rows start..end-1 of table `name`, in `files` partitions (one data file each when written)."""
    columns = ["'orders' AS source_table", "concat('{bad ', id) AS _corrupt_record"] \
        if name == "corrupt_records_sink" else ["CAST(id AS STRING) AS order_id", "id * 1.5 AS amount"]
    return session.range(start, end, 1, files).selectExpr(*columns)


def create(session: Any, name: str, rows: int = 0, files: int = 1, folder: str | None = None) -> None:
    """A Delta table in a folder of the test's own: version 0 holds `rows` rows in `files` files."""
    path = session.tmp / (folder or name)
    if rows:
        data(session, name, 0, rows, files).write.format("delta").option("path", str(path)).saveAsTable(f"{DB}.{name}")
    else:
        columns = "source_table STRING, _corrupt_record STRING" if name == "corrupt_records_sink" else \
            "order_id STRING, amount DOUBLE"
        session.sql(f"CREATE TABLE {DB}.{name} ({columns}) USING DELTA LOCATION '{path}'")


def append(session: Any, name: str, start: int, end: int) -> None:
    """One commit of rows start..end-1."""
    data(session, name, start, end).write.format("delta").mode("append").saveAsTable(f"{DB}.{name}")


def oracle(session: Any, name: str) -> tuple[int, int]:
    """(bytes, files) of the data files Spark reads for the table: the files its scan lists, each file's
    size from the file system."""
    files = session.table(f"{DB}.{name}").inputFiles()
    local = [unquote(urlparse(f).path) for f in files]
    return sum(os.path.getsize(f) for f in local), len(local)


class RefusingHistory:
    """The session, but DESCRIBE HISTORY fails (as a runtime that does not offer it on a table would)."""

    def __init__(self, session: Any) -> None:
        self.session = session
        self.catalog = session.catalog

    def sql(self, text: str) -> Any:
        if text.startswith("DESCRIBE HISTORY"):
            raise RuntimeError("[UNSUPPORTED_FEATURE.TABLE_OPERATION] DESCRIBE HISTORY is not supported here")
        return self.session.sql(text)


def clock(*times: dt.datetime):
    it = iter(times)
    return lambda: next(it)


def growth(session: Any, tables: list[TableSpec], sizes: str = TARGET) -> dict[str, dict[str, Any]]:
    sql = by_name("table_growth").render({"table_sizes": sizes, "ingest_tables": ingest_tables_sql(tables)})
    rows = [r.asDict() for r in session.sql(sql).collect()]
    return {(r["table_name"], r["snapshot_time"]): r for r in rows}


def latest(rows: dict) -> dict[str, dict[str, Any]]:
    return {r["table_name"]: r for r in rows.values() if r["is_latest"]}


def test_size_files_and_growth_equal_what_spark_reads_before_and_after_appends(session):
    create(session, "orders_bronze", rows=80, files=2)
    create(session, "orders", rows=40)
    create(session, "corrupt_records_sink", rows=3)
    names = ("orders_bronze", "orders", "corrupt_records_sink")

    first = snapshot(session, TARGET, "spark_catalog", DB, [ORDERS], clock=clock(*[T0] * 3))
    before = {name: oracle(session, name) for name in names}
    assert before["orders_bronze"][1] == 2 and before["corrupt_records_sink"][1] == 1  # real files to count
    assert {r[2]: (r[7], r[8], r[9], r[10]) for r in first.rows} == {
        name: (0, size, files, None) for name, (size, files) in before.items()}  # each table's one commit

    # More rows in bronze (a second commit); the clean table and the sink get nothing.
    append(session, "orders_bronze", 80, 200)
    t1 = T0 + dt.timedelta(hours=2)
    second = snapshot(session, TARGET, "spark_catalog", DB, [ORDERS], clock=clock(*[t1] * 3))
    after = {name: oracle(session, name) for name in names}
    assert after["orders_bronze"][0] > before["orders_bronze"][0]
    assert {r[2]: (r[7], r[8], r[9]) for r in second.rows} == {
        name: (1 if name == "orders_bronze" else 0, *figures) for name, figures in after.items()}

    rows = growth(session, [ORDERS])
    assert len(rows) == 6  # two snapshots of three tables
    for name, (size, files) in after.items():
        row = rows[(name, t1.replace(tzinfo=None))]
        added_bytes, added_files = size - before[name][0], files - before[name][1]
        assert (row["size_bytes"], row["num_files"], row["bytes_added"], row["files_added"]) == \
            (size, files, added_bytes, added_files), name
        assert row["seconds_since_previous"] == 7200.0 and row["reason"] is None and row["is_latest"]
        assert row["bytes_per_day"] == pytest.approx(added_bytes * 12) and row["files_per_day"] == pytest.approx(added_files * 12)
        assert row["table_kind"] == {"orders_bronze": "bronze", "orders": "clean", "corrupt_records_sink": "sink"}[name]
    for name in ("orders", "corrupt_records_sink"):  # measured: no growth
        assert rows[(name, t1.replace(tzinfo=None))]["bytes_added"] == 0 and rows[(name, t1.replace(tzinfo=None))]["files_added"] == 0
    # The first snapshot of each table: sizes known, growth unknown (NULL with a reason, not 0).
    for name, (size, files) in before.items():
        row = rows[(name, T0.replace(tzinfo=None))]
        assert (row["size_bytes"], row["num_files"], row["reason"], row["is_latest"]) == (size, files, "first_snapshot", False)
        assert (row["bytes_added"], row["files_added"], row["bytes_per_day"]) == (None, None, None)

    # The snapshot table: partitioned by date, append-only, one row per table per snapshot.
    detail = session.sql(f"DESCRIBE DETAIL {TARGET}").collect()[0]
    assert detail["partitionColumns"] == ["snapshot_date"] and detail["properties"].get("delta.appendOnly") == "true"
    assert session.table(TARGET).count() == 6


def test_a_missing_table_is_null_with_a_reason_never_zero_and_a_recreated_one_has_no_growth(session):
    create(session, "orders_bronze", rows=30)
    # The clean table and the sink are missing; `ghost` is configured but in no snapshot.
    result = snapshot(session, TARGET, "spark_catalog", DB, [ORDERS], clock=clock(*[T0] * 3))
    by_table = {r[2]: r for r in result.rows}
    assert by_table["orders_bronze"][7:11] == (0, *oracle(session, "orders_bronze"), None)
    for name in ("orders", "corrupt_records_sink"):
        assert by_table[name][6:11] == (None, None, None, None, "table_missing"), name
    assert sorted(result.not_measured) == [("corrupt_records_sink", "table_missing"), ("orders", "table_missing")]
    # A runtime that refuses the table's history: size and files are still measured, only the version is NULL.
    refused = measure(RefusingHistory(session), f"spark_catalog.{DB}.orders_bronze")
    assert (refused.version, (refused.size_bytes, refused.num_files), refused.reason) == \
        (None, oracle(session, "orders_bronze"), "version_not_measured: UNSUPPORTED_FEATURE")
    rows = latest(growth(session, [ORDERS, GHOST]))
    assert {name: (r["size_bytes"], r["num_files"], r["bytes_added"], r["reason"]) for name, r in rows.items()} == {
        "orders_bronze": (*oracle(session, "orders_bronze"), None, "first_snapshot"),
        "orders": (None, None, None, "table_missing"),
        "corrupt_records_sink": (None, None, None, "table_missing"),
        "ghost_bronze": (None, None, None, "not_snapshotted"),
        "ghost": (None, None, None, "not_snapshotted"),
    }
    # Before any snapshot (the snapshot table does not exist yet): every ingest table is not_snapshotted.
    before_any = latest(growth(session, [ORDERS], sizes=empty_sizes_sql()))
    assert {n: (r["size_bytes"], r["reason"]) for n, r in before_any.items()} == {
        n: (None, "not_snapshotted") for n in ("orders_bronze", "orders", "corrupt_records_sink")}

    # Bronze dropped and created again elsewhere (a new table id, version 0 again); the clean table
    # created (missing at the snapshot before): sizes measured, growth unknown, never a jump or 0.
    session.sql(f"DROP TABLE {DB}.orders_bronze")
    create(session, "orders_bronze", folder="orders_bronze_again")
    create(session, "orders")
    snapshot(session, TARGET, "spark_catalog", DB, [ORDERS], clock=clock(*[T0 + dt.timedelta(hours=1)] * 3))
    rows = latest(growth(session, [ORDERS]))
    assert (rows["orders_bronze"]["size_bytes"], rows["orders_bronze"]["reason"], rows["orders_bronze"]["bytes_added"]) \
        == (oracle(session, "orders_bronze")[0], "table_recreated", None)
    assert (rows["orders"]["size_bytes"], rows["orders"]["reason"], rows["orders"]["bytes_added"]) == \
        (0, "previous_not_measured", None)
    assert (rows["corrupt_records_sink"]["size_bytes"], rows["corrupt_records_sink"]["reason"]) == (None, "table_missing")


def test_the_job_runs_the_snapshot_task_with_the_bundle_parameters(session, project_root):
    """The bundle's own job: its snapshot task (a Python file task) runs jobs/snapshot_table_sizes.py on
    the local session with the parameters the bundle resolves (conf/tables.yml's tables, the schema)."""
    bundle = load_bundle(project_root, overrides={"catalog": "spark_catalog", "schema": DB, "warehouse_id": "local"})
    job = bundle.resources("jobs")["lakewatch_job"]
    tasks = {t["task_key"]: t for t in job["tasks"]}
    # The snapshot task as the bundle declares it, after an ingest task of its own (the job's other tasks
    # are not this test's).
    job["tasks"] = [{"task_key": "ingest", "pipeline_task": tasks["ingest"]["pipeline_task"]},
                    tasks["snapshot_table_sizes"]]
    said: list[str] = []
    runner = SimpleNamespace(spark=session, run_update=lambda request: SimpleNamespace(ok=False, state="FAILED", canceled=None))
    result = run_job(runner, bundle, "lakewatch_job", say=said.append)
    assert [(t.task_key, t.state) for t in result.tasks] == [("ingest", "FAILED"), ("snapshot_table_sizes", "SUCCESS")]
    rows = {r["table_name"]: r for r in session.table(TARGET).collect()}  # run_if ALL_DONE: after a failed ingest
    configured = yaml.safe_load((project_root / "conf" / "tables.yml").read_text())["tables"]
    names = [t["name"] for t in configured]
    dropping = [t["name"] for t in configured if any(e.get("action") == "drop" for e in t.get("expectations") or ())]
    assert dropping  # the demo's tables keep rejected rows
    assert set(rows) == {*(f"{n}_bronze" for n in names), *names, *(f"{n}_rejected" for n in dropping),
                         "corrupt_records_sink"}
    assert {(r["reason"], r["size_bytes"], r["full_name"]) for r in rows.values()} == {
        ("table_missing", None, f"spark_catalog.{DB}.{name}") for name in rows}  # this schema holds none of them
    assert f"0 of {len(rows)} tables measured into {TARGET}" in "\n".join(said)
    assert "  orders: not measured (table_missing)" in said
