"""The event log's history: the job's archive task (jobs/archive_event_log.sql, run by the
local SQL task runner as `lakewatch job` runs it) and the observability `events` table reading the
history plus the live log. Oracles are the event ids the tests build themselves, never the code's output."""

from __future__ import annotations

import datetime as dt
import textwrap
from collections import Counter
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from pipelines.bundle import load_bundle
from pipelines.eventlog.schema import EVENT_LOG_SCHEMA
from pipelines.local.job import run_job
from pipelines.local.sql_task import SqlTaskError, render, run_sql_file, split_statements
from pipelines.observability.pipeline import history_query, streaming_query
from pipelines.observability.catalog import by_name
from tests.eventlog_builders import TINY_DATA_CONF, Update, completed_update, event_rows, utc

ARCHIVE_SQL = Path(__file__).resolve().parents[2] / "jobs" / "archive_event_log.sql"
DB = "history_test"
LOG, HISTORY = f"{DB}.event_log", f"{DB}.event_log_history"
PARAMETERS = {"event_log": LOG, "history_table": HISTORY, "slack_hours": "24"}


@pytest.fixture
def session(spark):
    session = spark.newSession()
    for key, value in TINY_DATA_CONF.items():
        session.conf.set(key, value)
    session.sql(f"CREATE DATABASE IF NOT EXISTS {DB}")
    for name in (LOG, HISTORY, f"{DB}.events"):
        session.sql(f"DROP TABLE IF EXISTS {name}")
    return session


def append(session: Any, rows: list[tuple]) -> None:
    session.createDataFrame(rows, EVENT_LOG_SCHEMA).write.format("delta").mode("append").saveAsTable(LOG)


def ids(rows: list[tuple]) -> set[str]:
    return {r[0] for r in rows}


def archive(session: Any) -> int:
    """Runs the archive file as the job's task does; returns the rows its MERGE inserted."""
    return run_sql_file(session, ARCHIVE_SQL, PARAMETERS).metrics["num_inserted_rows"]


def history_ids(session: Any) -> Counter:
    return Counter(r["id"] for r in session.table(HISTORY).select("id").collect())


# -- the archive ------------------------------------------------------------------------------------------
def test_archiving_twice_adds_nothing_the_second_time(session):
    rows = event_rows(completed_update("u1", utc(2026, 11, 30, 23, 59)), completed_update("u2", utc(2026, 12, 1, 8)))
    append(session, rows)
    assert archive(session) == len(ids(rows))
    assert history_ids(session) == Counter(ids(rows))  # each id once
    versions = session.sql(f"DESCRIBE HISTORY {HISTORY}").count()

    assert archive(session) == 0
    assert history_ids(session) == Counter(ids(rows))
    assert session.sql(f"DESCRIBE HISTORY {HISTORY}").count() == versions  # not even an empty commit

    # The live log's columns plus event_date, the UTC date of the event, as the partition.
    history = session.table(HISTORY)
    assert [(f.name, f.dataType.simpleString()) for f in history.schema.fields] == (
        [(f.name, f.dataType.simpleString()) for f in EVENT_LOG_SCHEMA.fields] + [("event_date", "date")])
    assert session.sql(f"DESCRIBE DETAIL {HISTORY}").collect()[0]["partitionColumns"] == ["event_date"]
    expected_dates = {r[0]: r[3].astimezone(dt.timezone.utc).date() for r in rows}
    assert {r["id"]: r["event_date"] for r in history.select("id", "event_date").collect()} == expected_dates
    assert dt.date(2026, 11, 30) in expected_dates.values() and dt.date(2026, 12, 1) in expected_dates.values()


def test_a_late_event_is_archived_within_the_slack_and_a_duplicated_id_once(session):
    first = event_rows(completed_update("u1", utc(2026, 12, 1, 8)))
    append(session, first)
    archive(session)
    newest = max(r[3] for r in first)
    # Written to the live log after that archive, with older timestamps: 2 hours older (within the
    # 24-hour slack) and 30 hours older (beyond it: the documented limit). The late update's events are
    # written twice (a duplicated id in the live log).
    late = event_rows(Update("late", newest - dt.timedelta(hours=2)).completed(5))
    too_late = event_rows(Update("too_late", newest - dt.timedelta(hours=30)).completed(5))
    append(session, late + late + too_late)

    assert archive(session) == len(ids(late))
    assert history_ids(session) == Counter(ids(first) | ids(late))


def test_a_failing_statement_names_itself_and_stops_the_file(session, tmp_path):
    path = tmp_path / "broken.sql"
    path.write_text("CREATE TABLE IF NOT EXISTS IDENTIFIER({{t}}) (x INT) USING DELTA;\n"
                    "INSERT INTO IDENTIFIER({{t}}) SELECT * FROM history_test.no_such_table;\n"
                    "INSERT INTO IDENTIFIER({{t}}) VALUES (1);\n")
    with pytest.raises(SqlTaskError, match=r"statement 2 of broken.sql .*TABLE_OR_VIEW_NOT_FOUND") as raised:
        run_sql_file(session, path, {"t": f"{DB}.broken"})
    assert raised.value.statement == 2
    assert session.table(f"{DB}.broken").count() == 0  # the third statement did not run
    session.sql(f"DROP TABLE {DB}.broken")


def test_statements_split_outside_quotes_and_comments_and_parameters_become_string_literals():
    text = textwrap.dedent("""\
        -- a comment; with {{not_a_parameter}} and it's quoted
        SELECT 'a;b', "c;d", `e;f` /* g; h */ FROM t;
        SELECT 'it\\'s' AS x;;
        SELECT IDENTIFIER({{table}})""")
    assert split_statements(text) == [
        "SELECT 'a;b', \"c;d\", `e;f`   FROM t", "SELECT 'it\\'s' AS x", "SELECT IDENTIFIER({{table}})"]
    assert render("IDENTIFIER({{table}}) = {{ v }}", {"table": "c.s.t", "v": "it's"}) == \
        "IDENTIFIER('c.s.t') = 'it\\'s'"
    with pytest.raises(SqlTaskError, match="parameter\\(s\\) missing, which the task does not set"):
        render("SELECT {{missing}}", {"table": "x"})


# -- history plus live log in `events` ----------------------------------------------------------------------
def test_history_plus_live_log_count_each_event_once(session, tmp_path):
    """The pipeline's two flows into `events`, run as its updates run them (each flow a stream with its
    own checkpoint, triggered once per update): events the live log dropped come from the history,
    once; a full refresh (empty table, new checkpoints) still shows them once."""
    placeholders = {"event_log": LOG, "event_log_history": HISTORY}

    def refresh(target: str, checkpoints: Path) -> None:
        for name, query in (("live", streaming_query(session, by_name("events"), placeholders)),
                            ("history", history_query(session, by_name("events"), placeholders))):
            query.writeStream.option("checkpointLocation", str(checkpoints / name)) \
                .trigger(availableNow=True).format("delta").toTable(target).awaitTermination()

    def event_ids(target: str) -> Counter:
        return Counter(r["event_id"] for r in session.table(target).select("event_id").collect())

    u1 = event_rows(completed_update("u1", utc(2026, 11, 1, 8)))
    u2 = event_rows(completed_update("u2", utc(2026, 11, 20, 8)))
    u3 = event_rows(completed_update("u3", utc(2026, 12, 1, 8)))
    events = f"{DB}.events"

    append(session, u1 + u2)
    archive(session)
    refresh(events, tmp_path / "c1")
    assert event_ids(events) == Counter(ids(u1 + u2))  # the history holds nothing the live log does not

    # Retention drops u1 from the live log; u3 arrives and is archived; the next refresh adds u3 only.
    session.sql(f"DELETE FROM {LOG} WHERE origin.update_id = 'u1'")
    append(session, u3)
    archive(session)
    refresh(events, tmp_path / "c1")
    assert event_ids(events) == Counter(ids(u1 + u2 + u3))
    refresh(events, tmp_path / "c1")  # nothing new: nothing added
    assert event_ids(events) == Counter(ids(u1 + u2 + u3))

    # A full refresh: the live log gives u2 and u3, the history u1, each event once.
    refreshed = f"{DB}.events_refreshed"
    session.sql(f"DROP TABLE IF EXISTS {refreshed}")
    refresh(refreshed, tmp_path / "c2")
    assert event_ids(refreshed) == Counter(ids(u1 + u2 + u3))
    from_history = {r["update_id"] for r in session.table(refreshed).join(
        session.table(LOG).selectExpr("id AS event_id"), "event_id", "left_anti").collect()}
    assert from_history == {"u1"}
    session.sql(f"DROP TABLE {refreshed}")


# -- the job runs the SQL task -------------------------------------------------------------------------------
def job_bundle(root: Path, sql: str) -> Path:
    (root / "resources").mkdir()
    (root / "jobs").mkdir()
    (root / "jobs" / "archive.sql").write_text(sql)
    (root / "databricks.yml").write_text(textwrap.dedent("""\
        bundle: {name: t}
        include: [resources/*.yml]
        variables:
          history: {default: history_test.job_history}
        targets: {dev: {default: true}}
        """))
    (root / "resources" / "job.yml").write_text(textwrap.dedent("""\
        resources:
          pipelines:
            ingest: {name: ingest}
            observability: {name: observability}
          jobs:
            j:
              name: j
              tasks:
                - task_key: ingest
                  pipeline_task: {pipeline_id: "${resources.pipelines.ingest.id}"}
                - task_key: archive
                  depends_on: [{task_key: ingest}]
                  run_if: ALL_DONE
                  sql_task:
                    warehouse_id: w
                    file: {path: ../jobs/archive.sql}
                    parameters: {history_table: "${var.history}"}
                - task_key: observability
                  depends_on: [{task_key: archive}]
                  run_if: ALL_DONE
                  pipeline_task: {pipeline_id: "${resources.pipelines.observability.id}"}
        """))
    return root


class FakeRunner:
    def __init__(self, spark: Any) -> None:
        self.spark = spark
        self.updates: list[str] = []

    def run_update(self, request: Any) -> Any:
        self.updates.append(request.pipeline)
        return SimpleNamespace(ok=True, state="COMPLETED", canceled=None)


def test_the_job_runs_its_sql_file_task_with_the_bundle_parameters(session, tmp_path):
    root = job_bundle(tmp_path, "CREATE TABLE IF NOT EXISTS IDENTIFIER({{history_table}}) (x INT) USING DELTA;\n"
                                "INSERT INTO IDENTIFIER({{history_table}}) VALUES (1), (2);")
    runner = FakeRunner(session)
    result = run_job(runner, load_bundle(root), "j", say=lambda _: None)
    assert [(t.task_key, t.state) for t in result.tasks] == [
        ("ingest", "SUCCESS"), ("archive", "SUCCESS"), ("observability", "SUCCESS")]
    assert result.ok and runner.updates == ["ingest", "observability"] and result.tasks[1].sql.statements == 2
    assert session.table("history_test.job_history").count() == 2
    session.sql("DROP TABLE history_test.job_history")


def test_a_failing_sql_task_fails_the_job_and_the_all_done_task_still_runs(session, tmp_path):
    root = job_bundle(tmp_path, "INSERT INTO IDENTIFIER({{history_table}}) SELECT 1 FROM history_test.missing;")
    said: list[str] = []
    runner = FakeRunner(session)
    result = run_job(runner, load_bundle(root), "j", say=said.append)
    archive_task = result.tasks[1]
    assert (archive_task.state, result.ok) == ("FAILED", False)
    assert "statement 1 of archive.sql" in archive_task.error and "TABLE_OR_VIEW_NOT_FOUND" in archive_task.error
    assert any("task archive FAILED" in line for line in said)
    assert runner.updates == ["ingest", "observability"]  # run_if ALL_DONE
