"""Finding a failed flow's exception chain in the engine's JVM log."""

from __future__ import annotations

from pipelines.local.jvm_log import flow_exceptions

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
