"""Every landing format in one real ingest pipeline: JSON lines, a JSON document per file,
CSV without a header and with a `;` delimiter, and Parquet, two batches of generated files with every
kind of bad record, two `lakewatch run` updates on the local engine.

Oracles: Spark's own reader of each format, run by the test on each landing file (records and
malformed records), and the file state the runner writes (records counted without Spark)."""

from __future__ import annotations

from collections import Counter

import pytest
import yaml

from pipelines.config import load_tables
from pipelines.generator import Mix, generate_batch
from tests.integration.helpers import Cli, LocalTables, local_path

TABLES = {
    "clicks": {"format": "json", "schema": {"click_id": "BIGINT", "page": "STRING", "at": "TIMESTAMP"}},
    "sessions": {"format": "json", "multi_line": True,
               "schema": {"session_id": "BIGINT", "kind": "STRING", "at": "TIMESTAMP", "score": "DOUBLE"}},
    "ledger": {"format": "csv", "header": False, "delimiter": ";",
               "schema": {"entry_id": "BIGINT", "amount": "DECIMAL(10,2)", "day": "DATE", "memo": "STRING"}},
    "refunds": {"format": "parquet",
                "schema": {"refund_id": "BIGINT", "amount": "DECIMAL(10,2)", "at": "TIMESTAMP", "ok": "BOOLEAN"}},
}
MIX = Mix(malformed=0.08, type_mismatch=0.08, unknown_field=0.08, case_variant=0.06, empty_file=0.5)


def spark_records(spark, table, path: str) -> tuple[int, int]:
    """(records, malformed records) of one landing file by Spark's own reader of its format, every
    column read as text so that only malformed records are marked."""
    as_text = ", ".join(f"`{c}` STRING" for c in table.column_names)
    if table.format == "parquet":
        return spark.read.parquet(path).count(), 0
    reader = spark.read.schema(f"{as_text}, _corrupt_record STRING")
    if table.format == "csv":
        reader = reader.option("header", str(table.header).lower()).option("sep", table.delimiter)
        rows = reader.csv(path).collect()
    else:
        rows = reader.option("multiLine", str(table.multi_line).lower()).json(path).collect()
    return len(rows), sum(r["_corrupt_record"] is not None for r in rows)


@pytest.fixture(scope="module")
def formats(spark, tmp_path_factory):
    home = tmp_path_factory.mktemp("formats_home")
    config = home / "tables.yml"
    config.write_text(yaml.safe_dump({"tables": [
        {"name": name, "landing": name, **spec} for name, spec in TABLES.items()]}, sort_keys=False))
    tables = load_tables(config)
    cli = Cli(home)
    outputs = []
    for batch in range(2):
        generate_batch(spark, tables, home / "landing", rows=120, seed=31 + batch, mix=MIX)
        outputs.append(cli.run("run", "--set", f"lakewatch.tables_config={config}").stdout)
    return {"home": home, "tables": tables, "local": LocalTables(spark, home), "outputs": outputs}


def test_both_updates_complete(formats):
    assert all("COMPLETED in" in out for out in formats["outputs"]), formats["outputs"][-1]


@pytest.mark.parametrize("name", TABLES)
def test_each_file_is_in_bronze_as_the_formats_own_reader_reads_it(spark, formats, name):
    table = formats["tables"].table(name)
    bronze = formats["local"].table(f"{name}_bronze")
    rows = Counter({local_path(r["f"]): r["count"] for r in bronze.groupBy(bronze["_source_file"].alias("f")).count().collect()})
    corrupt = Counter({local_path(r["f"]): r["count"] for r in bronze.where("_corrupt_record IS NOT NULL")
                       .groupBy(bronze["_source_file"].alias("f")).count().collect()})
    files = [p for p in (formats["home"] / "landing" / name).iterdir() if p.is_file()]
    expected = {str(p): spark_records(spark, table, str(p)) for p in files}
    assert +Counter({p: n for p, (n, _) in expected.items()}) == rows and sum(rows.values()) > 0
    assert +Counter({p: m for p, (_, m) in expected.items()}) == corrupt


@pytest.mark.parametrize("name", TABLES)
def test_rescued_and_corrupt_rows_are_what_the_manifest_wrote(formats, name):
    totals: Counter = Counter()
    for f in formats["local"].manifest()["files"]:
        if f["table"] == name:
            totals.update(f["lines"])
    row = formats["local"].table(f"{name}_bronze").selectExpr(
        "count(*) AS n", "count(_rescued_data) AS rescued", "count(_corrupt_record) AS corrupt").collect()[0]
    assert row["n"] == sum(totals.values())
    assert row["corrupt"] == totals["malformed"]
    assert row["rescued"] == totals["type_mismatch"] + totals["unknown_field"] + totals["case_variant"] > 0


@pytest.mark.parametrize("name", TABLES)
def test_the_file_state_counts_each_files_records_as_bronze_holds_them(formats, name):
    state = formats["local"].table("lakewatch_file_state").where(f"flow_name = '{name}_bronze'").collect()
    bronze = formats["local"].table(f"{name}_bronze")
    rows = {local_path(r["f"]): r["count"] for r in bronze.groupBy(bronze["_source_file"].alias("f")).count().collect()}
    assert state and all(s["state"] == "committed" for s in state)
    assert {local_path(s["path"]): s["lines"] for s in state} == {
        local_path(s["path"]): rows.get(local_path(s["path"]), 0) for s in state}
