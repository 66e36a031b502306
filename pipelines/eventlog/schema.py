"""The published pipeline event log's columns and types, exactly as Databricks writes the Delta table.

Source: the DDL Databricks' own monitoring bundle uses for a table that receives
`SELECT * FROM event_log(<id>)` (see ../shared/reference/databricks.md §1.1). `details` is JSON text;
`sequence`, `origin` and `error` are structs.
"""

from __future__ import annotations

from pyspark.sql.types import (
    ArrayType,
    BooleanType,
    LongType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

ORIGIN_FIELDS: tuple[tuple[str, type], ...] = (
    ("cloud", StringType),
    ("region", StringType),
    ("org_id", LongType),
    ("user_id", LongType),
    ("pipeline_id", StringType),
    ("pipeline_type", StringType),
    ("pipeline_name", StringType),
    ("cluster_id", StringType),
    ("update_id", StringType),
    ("maintenance_id", StringType),
    ("table_id", StringType),
    ("table_name", StringType),
    ("flow_id", StringType),
    ("flow_name", StringType),
    ("batch_id", LongType),
    ("request_id", StringType),
    ("uc_resource_id", StringType),
    ("dataset_name", StringType),
    ("sink_name", StringType),
    ("catalog_name", StringType),
    ("schema_name", StringType),
    ("materialization_name", StringType),
    ("operation_id", StringType),
    ("flow_attempt_id", StringType),
    ("source_name", StringType),
    ("uc_table_id", StringType),
    ("ingestion_source_type", StringType),
    ("uc_parent_table_id", StringType),
)

SEQUENCE_TYPE = StructType(
    [
        StructField(
            "data_plane_id",
            StructType([StructField("instance", StringType()), StructField("seq_no", LongType())]),
        ),
        StructField("control_plane_seq_no", LongType()),
    ]
)

ORIGIN_TYPE = StructType([StructField(name, t()) for name, t in ORIGIN_FIELDS])

STACK_FRAME_TYPE = StructType(
    [
        StructField("declaring_class", StringType()),
        StructField("method_name", StringType()),
        StructField("file_name", StringType()),
        StructField("line_number", LongType()),
    ]
)

ERROR_TYPE = StructType(
    [
        StructField("fatal", BooleanType()),
        StructField(
            "exceptions",
            ArrayType(
                StructType(
                    [
                        StructField("class_name", StringType()),
                        StructField("message", StringType()),
                        StructField("stack", ArrayType(STACK_FRAME_TYPE)),
                    ]
                )
            ),
        ),
    ]
)

EVENT_LOG_SCHEMA = StructType(
    [
        StructField("id", StringType()),
        StructField("sequence", SEQUENCE_TYPE),
        StructField("origin", ORIGIN_TYPE),
        StructField("timestamp", TimestampType()),
        StructField("message", StringType()),
        StructField("level", StringType()),
        StructField("maturity_level", StringType()),
        StructField("error", ERROR_TYPE),
        StructField("details", StringType()),
        StructField("event_type", StringType()),
    ]
)

EVENT_LOG_DDL = (
    "id STRING, "
    "sequence STRUCT<data_plane_id: STRUCT<instance: STRING, seq_no: BIGINT>, control_plane_seq_no: BIGINT>, "
    "origin STRUCT<"
    + ", ".join(f"{name}: {'BIGINT' if t is LongType else 'STRING'}" for name, t in ORIGIN_FIELDS)
    + ">, "
    "`timestamp` TIMESTAMP, message STRING, level STRING, maturity_level STRING, "
    "error STRUCT<fatal: BOOLEAN, exceptions: ARRAY<STRUCT<class_name: STRING, message: STRING, "
    "stack: ARRAY<STRUCT<declaring_class: STRING, method_name: STRING, file_name: STRING, "
    "line_number: BIGINT>>>>>, "
    "details STRING, event_type STRING"
)

# event_type values written locally (a subset of Databricks' list).
CREATE_UPDATE = "create_update"
USER_ACTION = "user_action"
UPDATE_PROGRESS = "update_progress"
DATASET_DEFINITION = "dataset_definition"
FLOW_DEFINITION = "flow_definition"
SINK_DEFINITION = "sink_definition"
FLOW_PROGRESS = "flow_progress"
PLANNING_INFORMATION = "planning_information"
OPERATION_PROGRESS = "operation_progress"

TERMINAL_UPDATE_STATES = ("COMPLETED", "FAILED", "CANCELED")
TERMINAL_FLOW_STATES = ("COMPLETED", "FAILED", "SKIPPED", "EXCLUDED", "STOPPED")
