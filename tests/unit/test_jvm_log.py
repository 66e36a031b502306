"""Finding a failed flow's exception chain in the engine's JVM log."""

from __future__ import annotations

from datetime import datetime, timezone

from pipelines.local.jvm_log import flow_completions, flow_exceptions

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


def test_completions_by_last_name_part_at_the_logged_utc_time():
    assert flow_completions(COMPLETIONS) == {
        "orders_to_corrupt_records_sink": datetime(2026, 12, 3, 0, 30, 28, 471000, tzinfo=timezone.utc),
        "orders": datetime(2026, 12, 3, 0, 30, 28, 506000, tzinfo=timezone.utc),
    }


def test_a_flow_completed_twice_keeps_its_last_completion():
    again = COMPLETIONS + ("2026-12-03 00:31:00.000 INFO TriggeredGraphExecution: "
                           "Flow `spark_catalog`.`lakewatch`.`orders` has COMPLETED in TriggeredFlowExecution.\n")
    assert flow_completions(again)["orders"] == datetime(2026, 12, 3, 0, 31, tzinfo=timezone.utc)
    assert flow_completions(LOG) == {}  # a started or failed flow is not a completion
