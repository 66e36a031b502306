"""Finding a failed flow's exception chain in the engine's JVM log."""

from __future__ import annotations

from datetime import datetime, timezone

from pipelines.local.jvm_log import LoggedOutcome, flow_exceptions, flow_outcomes

LOG = """\
2026-11-29 14:18:50.101 INFO TriggeredGraphExecution: Flow `orders` is starting
2026-11-29 14:18:50.990 ERROR TriggeredGraphExecution: Flow `spark_catalog`.`lakewatch`.`orders_bronze` failed
org.apache.spark.sql.streaming.StreamingQueryException: [STREAM_FAILED] Query terminated with exception
=== Streaming Query ===
Identifier: spark_catalog.lakewatch.orders_bronze
\tat org.apache.spark.sql.execution.streaming.StreamExecution.run(StreamExecution.scala:1)
\tSuppressed: org.apache.spark.sql.pipelines.graph.QueryOrigin$QueryOriginWrapper
Caused by: org.apache.spark.SparkException: [FAILED_READ_FILE.NO_HINT] Encountered error while reading file file:///l/o.json.gz.  SQLSTATE: KD001
\tat org.apache.spark.x(X.scala:1)
Caused by: java.io.EOFException: Unexpected end of input stream
\tat java.base/java.util.zip.Y(Y.java:1)
2026-11-29 14:18:51.000 ERROR TriggeredGraphExecution: Flow `sink_flow` failed
java.lang.IllegalArgumentException: 'path' is not specified
2026-11-29 14:18:52.000 ERROR PipelinesErrors: Flow 'retried' has FAILED more than 1 times and will not be restarted.
java.io.IOException: disk full
"""


def test_chain_outermost_first_and_per_flow():
    chains = flow_exceptions(LOG)
    assert [e.class_name for e in chains["orders_bronze"]] == [
        "org.apache.spark.sql.streaming.StreamingQueryException",
        "org.apache.spark.SparkException",
        "java.io.EOFException",
    ]
    assert chains["orders_bronze"][-1].message == "Unexpected end of input stream"
    assert chains["sink_flow"][0].class_name == "java.lang.IllegalArgumentException"
    assert chains["retried"] == [type(chains["retried"][0])("java.io.IOException", "disk full")]
    assert "orders" not in chains


# Lines as the engine logged them in a run where the stream lost the clean table's COMPLETED event.
COMPLETIONS = """\
2026-12-03 00:30:27.424 INFO TriggeredGraphExecution: Flow `spark_catalog`.`lakewatch`.`orders` started.
2026-12-03 00:30:28.471 INFO TriggeredGraphExecution: Flow `orders_to_corrupt_records_sink` has COMPLETED in TriggeredFlowExecution.
2026-12-03 00:30:28.506 INFO TriggeredGraphExecution: Flow `spark_catalog`.`lakewatch`.`orders` has COMPLETED in TriggeredFlowExecution.
2026-12-03 00:30:28.512 ERROR StreamingQueryListenerBus: Listener StreamListener threw an exception
org.apache.spark.SparkIllegalStateException: [SPARK_CONNECT_ILLEGAL_STATE.STREAM_LIFECYCLE_EVENT_SEND_AFTER_SHUTDOWN] Cannot send event after shutdown
"""


EARLY = datetime(2026, 12, 3, tzinfo=timezone.utc)


def test_completions_by_last_name_part_at_the_logged_utc_time():
    assert flow_outcomes(COMPLETIONS, since=EARLY) == {
        "orders_to_corrupt_records_sink": LoggedOutcome("COMPLETED", datetime(2026, 12, 3, 0, 30, 28, 471000, tzinfo=timezone.utc)),
        "orders": LoggedOutcome("COMPLETED", datetime(2026, 12, 3, 0, 30, 28, 506000, tzinfo=timezone.utc)),
    }


def test_a_flow_completed_twice_keeps_its_last_completion():
    again = COMPLETIONS + ("2026-12-03 00:31:00.000 INFO TriggeredGraphExecution: "
                           "Flow `spark_catalog`.`lakewatch`.`orders` has COMPLETED in TriggeredFlowExecution.\n")
    assert flow_outcomes(again, since=EARLY)["orders"].at == datetime(2026, 12, 3, 0, 31, tzinfo=timezone.utc)


def test_failures_are_outcomes_with_their_exception_chain():
    outcomes = flow_outcomes(LOG, since=datetime(2026, 11, 29, tzinfo=timezone.utc))
    assert set(outcomes) == {"orders_bronze", "sink_flow", "retried"}  # a started flow has no outcome yet
    bronze = outcomes["orders_bronze"]
    assert (bronze.status, bronze.at) == ("FAILED", datetime(2026, 11, 29, 14, 18, 50, 990000, tzinfo=timezone.utc))
    assert [e.class_name for e in bronze.chain][-1] == "java.io.EOFException"


# The demo's engine log on the day the bronze flow's FAILED event was recorded COMPLETED: the same
# engine ran two updates before the failing one, and each left a completion line for the flow.
ACROSS_UPDATES = """2026-12-01 13:53:05.120 INFO TriggeredGraphExecution: Flow `spark_catalog`.`lakewatch`.`orders_bronze` has COMPLETED in TriggeredFlowExecution.
2026-12-01 13:53:59.031 INFO TriggeredGraphExecution: Flow `spark_catalog`.`lakewatch`.`orders_bronze` has COMPLETED in TriggeredFlowExecution.
2026-12-01 13:54:22.410 ERROR TriggeredGraphExecution: Flow `spark_catalog`.`lakewatch`.`orders_bronze` failed
org.apache.spark.sql.streaming.StreamingQueryException: [STREAM_FAILED] Query terminated with exception
Caused by: java.io.EOFException: Unexpected end of input stream
2026-12-01 13:54:38.659 ERROR TriggeredGraphExecution: Flow `spark_catalog`.`lakewatch`.`orders_bronze` failed
org.apache.spark.sql.streaming.StreamingQueryException: [STREAM_FAILED] Query terminated with exception
Caused by: java.io.EOFException: Unexpected end of input stream
"""


def test_an_earlier_updates_completion_is_not_this_updates_outcome():
    started = datetime(2026, 12, 1, 13, 54, 10, tzinfo=timezone.utc)
    outcome = flow_outcomes(ACROSS_UPDATES, since=started)["orders_bronze"]
    assert (outcome.status, outcome.at) == ("FAILED", datetime(2026, 12, 1, 13, 54, 38, 659000, tzinfo=timezone.utc))
    # Read from the start of the log, the last line per flow still wins: a failure after completions.
    assert flow_outcomes(ACROSS_UPDATES, since=EARLY.replace(day=1))["orders_bronze"].status == "FAILED"
    # A retry that completes after a failure ends the flow COMPLETED.
    retried = ACROSS_UPDATES + ("2026-12-01 13:54:50.000 INFO TriggeredGraphExecution: Flow "
                                "`spark_catalog`.`lakewatch`.`orders_bronze` has COMPLETED in TriggeredFlowExecution.\n")
    assert flow_outcomes(retried, since=started)["orders_bronze"].status == "COMPLETED"
    assert flow_outcomes(ACROSS_UPDATES, since=datetime(2026, 12, 1, 13, 55, tzinfo=timezone.utc)) == {}
