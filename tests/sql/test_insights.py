"""Run insights: one failed or canceled update per root-cause category, with error texts in the shapes
Spark, Delta and Databricks write them (error classes of Spark's error conditions), read through the
`run_insights` view over an event log; the CLI's classifier must give the same answer."""

from __future__ import annotations

import datetime as dt

import pytest

from pipelines import insights as run_insights
from pipelines.local.recovery import interrupted_error
from pipelines.observability.catalog import by_name
from tests.eventlog_builders import Update, observability_views, today_at

Chain = tuple[tuple[str, str], ...]  # (exception class, message), outermost first

UNRESOLVED = (("org.apache.spark.sql.catalyst.ExtendedAnalysisException",
               "[UNRESOLVED_COLUMN.WITH_SUGGESTION] A column, variable, or function parameter with name `amount_eur` "
               "cannot be resolved. Did you mean one of the following? [`amount`, `currency`]. SQLSTATE: 42703"),)
MERGE_FIELDS = (("org.apache.spark.sql.delta.DeltaAnalysisException",
                 "[DELTA_FAILED_TO_MERGE_FIELDS] Failed to merge fields 'amount' and 'amount'. SQLSTATE: 22005"),)
PARSE = (("org.apache.spark.sql.catalyst.parser.ParseException",
          "\n[PARSE_SYNTAX_ERROR] Syntax error at or near 'FORM'. SQLSTATE: 42601 (line 1, pos 9)"),)
CUT_GZIP = (("org.apache.spark.SparkException",
             "[FAILED_READ_FILE.NO_HINT] Encountered error while reading file file:/landing/orders/o-3.json.gz. "
             "SQLSTATE: KD001"),
            ("java.io.EOFException", "Unexpected end of input stream"))
EXPECTATION = (("org.apache.spark.sql.streaming.StreamingQueryException",
                "[EXPECTATION_VIOLATION.VERIFY_FAILED] Flow 'orders' failed to meet the expectation. Violated "
                "expectations: 'amount_below_limit'. Input data: '{\"amount\": 812.5}'"),)
HEAP = (("org.apache.spark.SparkException", "Job aborted due to stage failure: Task 0 in stage 3.0 failed 4 times"),
        ("java.lang.OutOfMemoryError", "Java heap space"))
PERMISSION = (("org.apache.spark.sql.AnalysisException",
               "[INSUFFICIENT_PERMISSIONS] Insufficient privileges: User does not have READ VOLUME on Volume "
               "'main.lakewatch.landing'. SQLSTATE: 42501"),)
NO_PATH = (("org.apache.spark.sql.AnalysisException",
            "[PATH_NOT_FOUND] Path does not exist: /Volumes/main/lakewatch/landing/orders. SQLSTATE: 42K03"),)
ODD = (("java.lang.IllegalStateException", "Sink offset went backwards for a reason nobody wrote down"),)
# As lakewatch writes it when an update's engine or endpoint is lost (pipelines/local/recovery.py).
LOST = tuple((e["class_name"], e["message"]) for e in interrupted_error(
    "its local engine (pid 4242) stopped: its JVM exited (code -9)")["exceptions"])


# Landing gzip files Spark could not read, as the local engine (Spark 4.2) wrote their errors into the event
# log (the probe's updates ad8b58c0, a0bcc126, a6ee4376, ffa735e1): the file is named only by a middle
# exception, and the innermost message matches no rule of its own.
def _read_failure(table: str, query: str, run: str, file: str, root: str) -> Chain:
    warehouse = f"file:/work/probe/h1/home1/warehouse/lakewatch.db/{table}"
    return (
        ("org.apache.spark.sql.streaming.StreamingQueryException",
         f"[STREAM_FAILED] Query [id = {query}, runId = {run}] terminated with exception: [TASK_WRITE_FAILED] "
         f"Task failed while writing rows to {warehouse}. SQLSTATE: 58030 SQLSTATE: XXKST"),
        ("org.apache.spark.SparkException",
         f"[TASK_WRITE_FAILED] Task failed while writing rows to {warehouse}. SQLSTATE: 58030"),
        ("org.apache.spark.SparkException",
         f"[FAILED_READ_FILE.NO_HINT] Encountered error while reading file {file}.  SQLSTATE: KD001"),
        ("java.io.IOException", root),
    )


_ORDERS_QUERY, _LANDING = "943b9123-cf2d-415c-a40d-0c8616503f4b", "file:///work/probe/h1/home1/landing"
GZIP_CRC = _read_failure("orders_bronze", _ORDERS_QUERY, "9c5f12f6-6159-43fb-8cd5-d818c719402f",
                         f"{_LANDING}/orders/b_corrupt_mid.json.gz", "gzip stream CRC failure")
GZIP_DISTANCE = _read_failure("orders_bronze", _ORDERS_QUERY, "94c0db23-565f-4433-8688-907a832d0c7b",
                              f"{_LANDING}/orders/b_corrupt_mid.json.gz", "invalid distance too far back")
GZIP_GARBAGE = _read_failure("orders_bronze", _ORDERS_QUERY, "5d3bbbf7-0a78-4fee-bae7-cdaf52c6ac6a",
                             f"{_LANDING}/orders/e_trailing_garbage.json.gz", "not a gzip file")
PLAIN_AS_GZIP = _read_failure("payments_bronze", "0fbc898c-3c99-4b90-9cf9-1d64c794fd95",
                              "299d2e6f-4f30-4a06-bcee-db8659982500", f"{_LANDING}/payments/g_plain_named.csv.gz",
                              "not a gzip file")
UNREADABLE = {"crc": GZIP_CRC, "distance": GZIP_DISTANCE, "garbage": GZIP_GARBAGE, "plain": PLAIN_AS_GZIP}


def failed(update_id: str, start: dt.datetime, chain: Chain, flow: str = "orders_bronze") -> Update:
    """`customers_bronze` completes, then `flow` fails with `chain` and the update fails with its outer error."""
    u = Update(update_id, start)
    u.state("RUNNING", 1)
    u.ran("customers_bronze", 2, 5, 40)
    u.flow(flow, "QUEUED", 5.5).flow(flow, "RUNNING", 6)
    u.flow(flow, "FAILED", 9, error=chain)
    return u.state("FAILED", 10, error=chain[0])


def failed_after_retry(update_id: str, start: dt.datetime, chain: Chain, flow: str = "orders_bronze") -> Update:
    """As the local engine logs a flow failing twice: an error it is retried after (not fatal), the retry,
    the fatal error, then the update's error with the whole chain (the retry's chain differed only in the
    query's runId)."""
    u = Update(update_id, start)
    u.state("RUNNING", 1)
    u.ran("customers_bronze", 2, 5, 40)
    u.flow(flow, "QUEUED", 5.5).flow(flow, "RUNNING", 6)
    u.flow(flow, "FAILED", 7, error=chain, fatal=False)
    u.flow(flow, "STARTING", 8).flow(flow, "RUNNING", 8.1)
    u.flow(flow, "FAILED", 9, error=chain)
    return u.state("FAILED", 10, chain=chain)


def canceled_with_backlog(update_id: str, start: dt.datetime) -> Update:
    """Writes rows but the files waiting grow from 10 to 40 until it is canceled; no error."""
    u = Update(update_id, start)
    u.state("RUNNING", 1)
    u.flow("orders_bronze", "RUNNING", 2)
    u.metrics("orders_bronze", 30, rows=500, backlog_files=10, batch_id=0)
    u.metrics("orders_bronze", 60, rows=500, backlog_files=40, batch_id=1)
    u.flow("orders_bronze", "STOPPED", 61)
    return u.state("CANCELED", 62)


def canceled_without_progress(update_id: str, start: dt.datetime) -> Update:
    u = Update(update_id, start)
    u.state("RUNNING", 1)
    u.flow("orders_bronze", "RUNNING", 2).flow("orders_bronze", "STOPPED", 300)
    return u.state("CANCELED", 301)


def canceled_after_progress(update_id: str, start: dt.datetime) -> Update:
    """Ctrl-C or SIGTERM: one flow completed, the one running was stopped, the backlog did not grow."""
    u = Update(update_id, start)
    u.state("RUNNING", 1)
    u.ran("customers_bronze", 2, 5, 40)
    u.flow("orders_bronze", "RUNNING", 2)
    u.metrics("orders_bronze", 30, rows=500, backlog_files=10, batch_id=0)
    u.flow("orders_bronze", "STOPPED", 31)
    return u.state("CANCELED", 32)


CASES: dict[str, tuple[str, Update]] = {}


def case(update_id: str, category: str, update: Update) -> None:
    CASES[update_id] = (category, update)


_start = today_at(0, 5)
case("schema", "schema_mismatch", failed("schema", _start, UNRESOLVED, flow="orders"))
case("merge", "schema_mismatch", failed("merge", _start, MERGE_FIELDS, flow="orders"))
case("parse", "analysis_error", failed("parse", _start, PARSE, flow="orders"))
case("gzip", "unreadable_file", failed("gzip", _start, CUT_GZIP))
case("expect", "expectation_failed", failed("expect", _start, EXPECTATION, flow="orders"))
case("heap", "out_of_memory_or_timeout", failed("heap", _start, HEAP))
case("grant", "missing_permission_or_path", failed("grant", _start, PERMISSION))
case("path", "missing_permission_or_path", failed("path", _start, NO_PATH))
case("backlog", "backlog_outpacing_processing", canceled_with_backlog("backlog", _start))
case("stall", "source_stalled", canceled_without_progress("stall", _start))
case("stopped", "canceled", canceled_after_progress("stopped", _start))
case("lost", "compute_lost", failed("lost", _start, LOST))
case("odd", run_insights.UNKNOWN, failed("odd", _start, ODD))
for _name, _chain in UNREADABLE.items():
    case(_name, "unreadable_file", failed_after_retry(_name, _start, _chain,
                                                      flow="payments_bronze" if _name == "plain" else "orders_bronze"))


@pytest.fixture(scope="module")
def insights(spark):
    session = spark.newSession()
    observability_views(session, [u for _, u in CASES.values()], only=["run_insights"])
    return {r["update_id"]: r for r in session.sql("SELECT * FROM run_insights").collect()}


@pytest.mark.parametrize("update_id", CASES)
def test_each_failure_gets_its_category_and_action(insights, update_id):
    category, _ = CASES[update_id]
    row = insights[update_id]
    assert row["category"] == category
    expected_action = next((r.action for r in run_insights.RULES if r.category == category), run_insights.UNKNOWN_ACTION)
    assert row["recommended_action"] == expected_action


def test_completed_updates_get_no_insight(spark):
    session = spark.newSession()
    u = Update("fine", today_at(0, 1))
    u.state("RUNNING", 1).ran("orders_bronze", 2, 4, 10)
    observability_views(session, [u.state("COMPLETED", 5), failed("gzip", today_at(0, 9), CUT_GZIP)],
                        only=["run_insights"])
    assert [r["update_id"] for r in session.sql("SELECT update_id FROM run_insights").collect()] == ["gzip"]


def test_the_failing_flow_the_last_completed_flow_and_a_concise_message(insights):
    row = insights["gzip"]
    assert (row["failing_flow"], row["last_completed_flow"]) == ("orders_bronze", "customers_bronze")
    assert row["error_class"] == "FAILED_READ_FILE.NO_HINT"
    assert row["root_cause_class"] == "java.io.EOFException"
    assert row["message"].startswith("[FAILED_READ_FILE.NO_HINT] Encountered error while reading file")
    assert row["root_cause_message"] == "Unexpected end of input stream"
    parse = insights["parse"]["message"]  # a leading newline and no class prefix: the first line that says something
    assert parse == "[PARSE_SYNTAX_ERROR] Syntax error at or near 'FORM'. SQLSTATE: 42601 (line 1, pos 9)"
    # The definition of a flow is not in these event logs (as on Databricks): unknown stays NULL.
    assert (row["definition_file"], row["definition_line"]) == (None, None)


@pytest.mark.parametrize("update_id", UNREADABLE)
def test_an_unreadable_file_is_named_wherever_in_the_chain_spark_says_it(insights, update_id):
    """The message names the file, as the CLI does: the exception that says which file could not be read
    ([FAILED_READ_FILE]), not the outer STREAM_FAILED / TASK_WRITE_FAILED text; the root cause stays the innermost."""
    chain, row = UNREADABLE[update_id], insights[update_id]
    file_message = chain[2][1]
    assert row["message"] == file_message
    file = {"crc": "orders/b_corrupt_mid.json.gz", "distance": "orders/b_corrupt_mid.json.gz",
            "garbage": "orders/e_trailing_garbage.json.gz", "plain": "payments/g_plain_named.csv.gz"}[update_id]
    assert f"reading file {_LANDING}/{file}." in row["message"]
    assert (row["root_cause_class"], row["root_cause_message"]) == chain[-1]
    assert row["failing_flow"] == ("payments_bronze" if update_id == "plain" else "orders_bronze")


def test_the_chain_of_events_is_in_order(insights):
    chain = [(e["flow_name"], e["event_type"], e["status"]) for e in insights["gzip"]["events"]]
    assert chain == [
        (None, "update_progress", "INITIALIZING"),
        (None, "update_progress", "RUNNING"),
        ("customers_bronze", "flow_progress", "COMPLETED"),
        ("orders_bronze", "flow_progress", "FAILED"),
        (None, "update_progress", "FAILED"),
    ]
    failed_event = insights["gzip"]["events"][3]
    assert (failed_event["level"], failed_event["message"].split("]")[0]) == ("ERROR", "[FAILED_READ_FILE.NO_HINT")


@pytest.mark.parametrize("update_id", CASES)
def test_the_cli_classifier_agrees_with_the_view(update_id):
    category, update = CASES[update_id]
    texts = [m for e in update.events if e.get("error") for x in e["error"]["exceptions"] for m in (x["class_name"], x["message"])]
    state = "CANCELED" if update_id in ("backlog", "stall", "stopped") else "FAILED"
    text = run_insights.facts(state, texts, backlog_growing=update_id == "backlog", no_progress=update_id == "stall")
    assert run_insights.classify(text)[0] == category


@pytest.mark.parametrize("message, expected", [
    ("java.lang.IllegalStateException: boom\n\tat a.b.C.d(C.java:1)", "boom"),
    ("org.apache.spark.SparkException: java.io.IOException: disk full", "disk full"),
    (None, None),
    ("x" * 500, "x" * 300),
])
def test_concise_in_python_and_sql(spark, message, expected):
    assert run_insights.concise(message) == expected
    [row] = spark.createDataFrame([(message,)], "m STRING").selectExpr(f"{run_insights.concise_sql('m')} AS c").collect()
    assert row["c"] == expected


def test_run_insights_reads_the_facts_and_messages_as_this_module_writes_them_in_sql():
    """transformations/observability/run_insights.sql holds the SQL counterparts written here: the concise
    message, the message of the exception that names an unreadable file, the chain's facts, the markers."""
    sql = by_name("run_insights").sql
    for expected in (run_insights.concise_sql("i.first_error_text"), run_insights.concise_sql("i.root_cause_message"),
                     run_insights.concise_sql("coalesce(e.exception_message, e.message)"),
                     run_insights.file_message_sql("c.exceptions"), run_insights.chain_sql("i.first_error_chain"),
                     f"'{run_insights.STATE_MARKER}'", f"'{run_insights.BACKLOG_GROWING}'",
                     f"'{run_insights.NO_PROGRESS}'", "JOIN insight_rules"):
        assert expected in sql, expected
