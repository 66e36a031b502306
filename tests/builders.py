"""Small builders for test rows, so tests say what differs instead of copying literals."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from pyspark.pipelines.graph_element_registry import GraphElementRegistry

from pipelines.config import Column, TableSpec
from pipelines.expectations import Expectation
from pipelines.local import measure

ORDERS_COLUMNS = (
    Column("order_id", "BIGINT"),
    Column("amount", "DOUBLE"),
    Column("order_ts", "TIMESTAMP"),
    Column("note", "STRING"),
)

FILE = "file:/landing/orders/orders-b0000-00.json"


def orders_table(*expectations: Expectation, name: str = "orders") -> TableSpec:
    return TableSpec(name=name, format="json", columns=ORDERS_COLUMNS, landing="orders", expectations=tuple(expectations))


def order(**fields: Any) -> dict[str, Any]:
    """A good order record; override or add fields with keyword arguments."""
    record: dict[str, Any] = {"order_id": 1, "amount": 9.5, "order_ts": "2026-11-01T10:00:00Z", "note": "ok"}
    record.update(fields)
    return record


def line(record: dict[str, Any]) -> str:
    return json.dumps(record)


def rescued(path: str = FILE, **fields: str) -> str:
    """The `_rescued_data` text for the given rescued fields (values as JSON text) plus `_file_path`."""
    body = json.dumps({**fields, "_file_path": path}, separators=(",", ":"))
    return body


class CapturingRegistry(GraphElementRegistry):
    """What a definition file declares, in order, without running anything."""

    def __init__(self) -> None:
        self.outputs: list = []
        self.flows: list = []
        self.order: list[str] = []

    def register_output(self, output) -> None:
        self.outputs.append(output)
        self.order.append(f"output:{output.name}")

    def register_flow(self, flow) -> None:
        self.flows.append(flow)
        self.order.append(f"flow:{flow.name}")

    def register_auto_cdc_flow(self, flow) -> None:  # pragma: no cover - not used by lakewatch
        raise AssertionError("unexpected")

    def register_sql(self, sql_text, file_path) -> None:  # pragma: no cover
        raise AssertionError("unexpected")


# -- streams into Delta, as an ingest flow writes them --------------------------------------------
USER_METADATA = measure.USER_METADATA_CONF


def stream_batches(spark, landing: Path, table_dir: Path, checkpoint: Path) -> None:
    """One availableNow run of a streaming query that appends `landing`'s text files to a Delta
    table, one file per micro-batch (as an ingest flow commits them)."""
    query = (spark.readStream.format("text").option("maxFilesPerTrigger", 1).load(str(landing))
             .writeStream.format("delta").option("checkpointLocation", str(checkpoint))
             .trigger(availableNow=True).start(str(table_dir)))
    query.awaitTermination()


def tagged_stream_batches(spark, landing: Path, table_dir: Path, checkpoint: Path, update_id: str) -> None:
    """`stream_batches` as an update's flow: its commits tagged with the update, as the runner tags them."""
    spark.conf.set(USER_METADATA, measure.commit_tag(update_id))
    try:
        stream_batches(spark, landing, table_dir, checkpoint)
    finally:
        spark.conf.unset(USER_METADATA)


def landing_files(landing: Path, lines: list[int]) -> None:
    """Text files `part-<i>.txt` of `lines[i]` lines each, modified in that order (Spark reads oldest first)."""
    landing.mkdir(exist_ok=True)
    for i, n in enumerate(lines):
        (landing / f"part-{i}.txt").write_text("".join(f"row {i}.{k}\n" for k in range(n)))
        os.utime(landing / f"part-{i}.txt", (1_700_000_000 + i, 1_700_000_000 + i))


def cut_commit_entry(checkpoint: Path, batch: int) -> None:
    """Removes the batch's entry from the stream's commit log (and Hadoop's checksum of it): what a stop or
    a kill between the sink's commit and the checkpoint's leaves."""
    for name in (str(batch), f".{batch}.crc"):
        (checkpoint / "commits" / name).unlink(missing_ok=True)
