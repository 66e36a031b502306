"""The local event log has exactly the columns and types of Databricks' published event log."""

from __future__ import annotations

from datetime import datetime, timezone

from pyspark.sql.types import StructType

from pipelines.eventlog import events
from pipelines.eventlog.schema import EVENT_LOG_DDL, EVENT_LOG_SCHEMA

# The DDL Databricks' monitoring bundle uses for a table receiving SELECT * FROM event_log(<id>),
# copied from ../shared/reference/databricks.md §1.1.
DOCUMENTED_DDL = """
id STRING,
sequence STRUCT<data_plane_id: STRUCT<instance: STRING, seq_no: BIGINT>, control_plane_seq_no: BIGINT>,
origin STRUCT<cloud: STRING, region: STRING, org_id: BIGINT, user_id: BIGINT, pipeline_id: STRING,
              pipeline_type: STRING, pipeline_name: STRING, cluster_id: STRING, update_id: STRING,
              maintenance_id: STRING, table_id: STRING, table_name: STRING, flow_id: STRING, flow_name: STRING,
              batch_id: BIGINT, request_id: STRING, uc_resource_id: STRING, dataset_name: STRING, sink_name: STRING,
              catalog_name: STRING, schema_name: STRING, materialization_name: STRING, operation_id: STRING,
              flow_attempt_id: STRING, source_name: STRING, uc_table_id: STRING, ingestion_source_type: STRING,
              uc_parent_table_id: STRING>,
`timestamp` TIMESTAMP,
message STRING,
level STRING,
maturity_level STRING,
error STRUCT<fatal: BOOLEAN, exceptions: ARRAY<STRUCT<class_name: STRING, message: STRING,
             stack: ARRAY<STRUCT<declaring_class: STRING, method_name: STRING, file_name: STRING, line_number: BIGINT>>>>>,
details STRING,
event_type STRING
"""


def fields(schema: StructType) -> list[tuple[str, str]]:
    return [(f.name, f.dataType.simpleString()) for f in schema.fields]


def test_schema_equals_the_documented_one_field_for_field(spark):
    documented = StructType.fromDDL(" ".join(DOCUMENTED_DDL.split()))
    assert fields(EVENT_LOG_SCHEMA) == fields(documented)
    assert fields(StructType.fromDDL(EVENT_LOG_DDL)) == fields(documented)


def test_builders_produce_rows_of_that_schema(spark):
    origin = events.Origin(pipeline_id="p", pipeline_name="ingest", update_id="u1", flow_name="f", batch_id=3)
    t = datetime(2026, 11, 29, tzinfo=timezone.utc)
    rows = [
        events.update_progress(origin, t, "FAILED",
                               error_struct=events.error([events.ExceptionInfo("java.io.EOFException", "x")]),
                               control_plane_seq_no=1),
        events.flow_metrics(origin, t, num_output_rows=5, backlog_bytes=0, backlog_files=0, dropped_records=1,
                            expectations=[events.expectation_result("e", "d", 4, 1)], data_plane_seq_no=2,
                            data_plane_instance="local"),
    ]
    df = spark.createDataFrame([events.to_row(r) for r in rows], EVENT_LOG_SCHEMA)
    out = df.selectExpr(
        "level", "error.exceptions[0].class_name AS cls", "sequence.control_plane_seq_no AS cp",
        "sequence.data_plane_id.seq_no AS dp", "origin.batch_id",
        "get_json_object(details, '$.flow_progress.metrics.num_output_rows') AS rows",
        "get_json_object(details, '$.flow_progress.data_quality.expectations[0].failed_records') AS failed",
    ).collect()
    assert [tuple(r) for r in out] == [
        ("ERROR", "java.io.EOFException", 1, None, 3, None, None),
        ("METRICS", None, None, 2, 3, "5", "1"),
    ]
