"""The local readers of each landing format against Spark's own reader of that format, on the same
generated files, one Spark session: rows/s of each (the rows written to a `noop` sink, batch reads of
the same expressions the streams run). Appends a block to bench/RESULTS.md.

    .venv/bin/python bench/formats.py [--rows 200000]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from pyspark.sql import functions as F  # noqa: E402

from bench.record import heading, record, table  # noqa: E402
from pipelines.config import SOURCE_FILE, TablesConfig, parse_table  # noqa: E402
from pipelines.formats.csv import rescue_csv_files  # noqa: E402
from pipelines.generator import Mix, generate_batch  # noqa: E402
from pipelines.local.session import classic_test_session  # noqa: E402
from pipelines.rescue import DOCUMENTS, rescue_json_lines  # noqa: E402

SCHEMA = {"id": "BIGINT", "amount": "DECIMAL(10,2)", "at": "TIMESTAMP", "day": "DATE", "ok": "BOOLEAN", "note": "STRING"}
MIX = Mix(malformed=0.02, type_mismatch=0.03, unknown_field=0.03, case_variant=0.02, empty_file=0.0)


def timed(action) -> float:
    start = time.perf_counter()
    action()
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=200_000)
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="lakewatch-bench-formats-"))
    spark = classic_test_session(root / "spark")
    # the ingest pipeline's settings: Spark's defaults (the test session turns code generation and AQE off)
    for key, value in (("spark.sql.codegen.wholeStage", "true"), ("spark.sql.codegen.factoryMode", "FALLBACK"),
                       ("spark.sql.adaptive.enabled", "true")):
        spark.conf.set(key, value)
    specs = {
        "json": {"format": "json"},
        "json multi_line": {"format": "json", "multi_line": True},
        "csv": {"format": "csv"},
    }
    rows = []
    for label, spec in specs.items():
        name = label.replace(" ", "_")
        t = parse_table("bench.yml", 0, {"name": name, "landing": name, "schema": SCHEMA, **spec})
        generate_batch(spark, TablesConfig("bench.yml", (t,)), root / "landing", rows=args.rows, seed=5, mix=MIX,
                       files_per_batch=4)
        folder = str(root / "landing" / name)
        if t.format == "csv":
            files = spark.read.text(folder, wholetext=True).select("value", F.input_file_name().alias(SOURCE_FILE))
            ours = rescue_csv_files(files, t, passthrough=(SOURCE_FILE,))
            theirs = spark.read.option("header", "true").schema(f"{t.schema_ddl}, _corrupt_record STRING").csv(folder)
        elif t.multi_line:
            files = spark.read.text(folder, wholetext=True).select("value", F.input_file_name().alias(SOURCE_FILE))
            ours = rescue_json_lines(files, t.columns, file_path=SOURCE_FILE, passthrough=(SOURCE_FILE,), layout=DOCUMENTS)
            # all text: with typed columns Spark's multiLine reader re-reads the whole file for every record
            # whose value does not fit (the record's _corrupt_record is the file), minutes on these files
            as_text = ", ".join(f"`{c}` STRING" for c in t.column_names)
            theirs = spark.read.option("multiLine", "true").schema(f"{as_text}, _corrupt_record STRING").json(folder)
        else:
            lines = spark.read.text(folder).select("value", F.input_file_name().alias(SOURCE_FILE))
            ours = rescue_json_lines(lines, t.columns, file_path=SOURCE_FILE, passthrough=(SOURCE_FILE,))
            theirs = spark.read.schema(f"{t.schema_ddl}, _corrupt_record STRING").json(folder)
        for reader, df in (("lakewatch (rescue)", ours), ("Spark's reader", theirs)):
            df.write.format("noop").mode("overwrite").save()  # warm-up: plans, JIT, file cache
            seconds = min(timed(lambda: df.write.format("noop").mode("overwrite").save()) for _ in range(2))
            rows.append((label, reader, args.rows, f"{seconds:.2f} s", f"{args.rows / seconds:,.0f}"))
    spark.stop()
    record([heading("Local readers of each format against Spark's own"), "",
            *table(["format", "reader", "records", "time (best of 2, warm)", "records/s"], rows), "",
            "Batch reads of the generated files (4 files, about 10% bad records) into Spark's noop sink, "
            "one local[1] session with the ingest pipeline's code generation and AQE settings (Spark's defaults); "
            "the local readers also rescue (Spark's readers do not). Spark's multiLine "
            "reader reads every column as text here: with typed columns it re-reads the whole file for each record "
            "whose value does not fit (a first attempt ran for more than 5 minutes on these files)."])


if __name__ == "__main__":
    main()
