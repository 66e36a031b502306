"""What the commands print about an update and the exit code they return (pipelines/console.py),
from hand-built results; no session."""

from __future__ import annotations

import signal
from datetime import datetime, timedelta, timezone

from pipelines import cancellation, console, insights
from pipelines.local.jvm_log import JvmException
from pipelines.local.update.types import FlowResult, UpdateResult

AT = datetime(2026, 12, 2, 10, 0, tzinfo=timezone.utc)
FILE = "file:/landing/orders/part-3.json.gz"
CHAIN = [JvmException("org.apache.spark.SparkException",
                      f"[{insights.FILE_ERROR_CLASS}] Encountered error while reading file {FILE}. SQLSTATE: KD001"),
         JvmException("java.io.EOFException", "Unexpected end of input stream")]


def a_result(state: str, flows: list[FlowResult], canceled: cancellation.Canceled | None = None) -> UpdateResult:
    return UpdateResult(pipeline_name="lakewatch_ingest", pipeline_id="p", update_id="u-1", state=state,
                        started_at=AT, ended_at=AT + timedelta(seconds=12.34),
                        flows={f.name: f for f in flows}, canceled=canceled)


def test_the_summary_has_one_line_per_flow_by_short_name_and_the_root_cause_under_a_failed_one():
    bronze = FlowResult("spark_catalog.lakewatch.orders_bronze", "FAILED", error="[STREAM_FAILED] x",
                        exceptions=list(CHAIN))
    clean = FlowResult("spark_catalog.lakewatch.orders", "SKIPPED")
    sink = FlowResult("orders_to_corrupt_records_sink", "COMPLETED", rows_written=3)
    lines = console.summarize(a_result("FAILED", [sink, bronze, clean]))
    cause = f"java.io.EOFException: Unexpected end of input stream ({CHAIN[0].message})"
    assert lines == [
        "update u-1 of 'lakewatch_ingest': FAILED in 12.3s",
        f"  {'orders':<40} {'SKIPPED':<10} {'':13}",
        f"  {'orders_bronze':<40} {'FAILED':<10} {'':13}",
        f"      {cause}",
        f"  {'orders_to_corrupt_records_sink':<40} {'COMPLETED':<10} {3:>8} rows",
    ]


def test_the_failure_paragraph_names_the_failed_flow_then_the_insight_and_a_stop_names_the_signal():
    bronze = FlowResult("spark_catalog.lakewatch.orders_bronze", "FAILED", error="boom", exceptions=list(CHAIN))
    failed = a_result("FAILED", [bronze])
    error, insight = console.failure_paragraph(failed).split("\n")
    assert error == (f"error: update u-1 of 'lakewatch_ingest' FAILED: flow 'orders_bronze' failed: "
                     f"{console.describe_failure(bronze)}")
    category, action = insights.classify(insights.facts("FAILED", [None, None, "boom"] + [
        f"{e.class_name} {e.message}" for e in CHAIN]))
    assert insight == f"insight: {category}: {action}"
    stopped = a_result("CANCELED", [], canceled=cancellation.Canceled(signal.SIGTERM))
    assert console.failure_paragraph(stopped).split("\n")[0].endswith(
        f"CANCELED: stopped by {cancellation.Canceled(signal.SIGTERM).why}")


def test_exit_codes_and_what_run_and_job_print():
    done = a_result("COMPLETED", [FlowResult("orders", "COMPLETED", rows_written=0)])
    failed = a_result("FAILED", [FlowResult("orders", "FAILED", error="boom")])
    stopped = a_result("CANCELED", [], canceled=cancellation.Canceled(signal.SIGINT))
    assert [console.exit_code(r) for r in (done, failed, stopped)] == [0, 1, 128 + signal.SIGINT]
    assert console.update_report(done) == list(console.summarize(done))
    report = console.update_report(failed, timings=True)
    assert report[-2] == "  timings: " and report[-1] == console.failure_paragraph(failed)
    task = console.task_report("ingest", "FAILED", "a task error", failed)
    assert task == ["task ingest: FAILED", "  a task error", *["  " + line for line in console.summarize(failed)],
                    "  " + console.failure_paragraph(failed)]


def documented_keys(verb: str) -> dict[str, str]:
    """The keys and types of a verb's `-o json` object, from its table in docs/cli.md."""
    from tests.unit.test_docs import text_of

    section = text_of("docs/cli.md").split(f"### `lakewatch {verb}", 1)[1].split("\n### ", 1)[0]
    table = section.split("| key | type | what |", 1)[1].split("\n\n", 1)[0]
    keys = {}
    for row in table.splitlines()[2:]:
        names, kind = row.split("|")[1:3]
        for name in names.split(","):
            keys[name.strip().strip("`")] = kind.strip()
    return keys


def test_the_json_of_an_update_has_the_documented_keys_and_types():
    bronze = FlowResult("spark_catalog.lakewatch.orders_bronze", "FAILED", error="boom", exceptions=list(CHAIN))
    sink = FlowResult("orders_to_corrupt_records_sink", "COMPLETED", rows_written=3)
    failed = console.update_document(a_result("FAILED", [sink, bronze]))
    done = console.update_document(a_result("COMPLETED", [sink]))
    documented = documented_keys("run")
    assert set(failed) == set(done) == set(documented)
    python_types = {"string": str, "number": (int, float), "array of objects": list, "object or null": (dict, type(None)),
                    "string or null": (str, type(None))}
    for document in (failed, done):
        for key, kind in documented.items():
            assert isinstance(document[key], python_types[kind]), (key, kind, document[key])
    assert failed["flows"] == [
        {"name": "orders_bronze", "status": "FAILED", "rows_written": None, "error": console.describe_failure(bronze)},
        {"name": "orders_to_corrupt_records_sink", "status": "COMPLETED", "rows_written": 3, "error": None}]
    error, insight = console.failure_paragraph(a_result("FAILED", [sink, bronze])).split("\n")
    assert f"error: {failed['error']}" == error
    assert f"insight: {failed['insight']['category']}: {failed['insight']['action']}" == insight
    assert (done["error"], done["insight"], done["duration_seconds"]) == (None, None, 12.34)
    assert done["started_at"] == AT.isoformat() and done["state"] == "COMPLETED"
