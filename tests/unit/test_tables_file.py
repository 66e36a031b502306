"""conf/tables.yml changed by the command line (pipelines/tables_file.py), without a JVM: the round trip
keeps the file's comments, order and other tables byte for byte; the new entry passes the validation a
run gives; a refused change writes nothing. And the pure part of schema inference
(pipelines/schema_inference.py): formats from file names, the samples' files, key and expectation
suggestions, the landing folder."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from pipelines.config import load_tables
from pipelines.errors import ConfigError, LakewatchError
from pipelines.schema_inference import (ColumnStats, declared_type, guess_format, json_documents, landing_for,
                                        looks_like_key, sample_files, suggest)
from pipelines.tables_file import NewTable, SuggestedExpectation, add_columns, add_table, entry_text

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def tables_yml(tmp_path: Path) -> Path:
    path = tmp_path / "tables.yml"
    shutil.copy(ROOT / "conf" / "tables.yml", path)
    return path


def shipments(**changes) -> NewTable:
    fields = dict(name="shipments", format="csv", landing="exports/shipments",
                  columns=[("shipment_id", "BIGINT"), ("carrier", "STRING"), ("weight", "DECIMAL(10,2)")],
                  expectations=[SuggestedExpectation("has_shipment_id", "shipment_id IS NOT NULL", "drop")],
                  options={"header": True, "delimiter": ";"},
                  column_notes={"carrier": "3 values in the samples; an expectation? carrier IN ('dhl', 'ups')"},
                  header_note="inferred from 2 csv file(s)")
    fields.update(changes)
    return NewTable(**fields)


def test_adding_a_table_keeps_every_byte_before_it_and_appends_the_entry(tables_yml: Path):
    before = tables_yml.read_text()
    config = add_table(tables_yml, shipments())
    after = tables_yml.read_text()
    assert after.startswith(before.rstrip("\n") + "\n")  # comments, order, quoting and other tables kept
    added = after[len(before.rstrip("\n")) + 1:]
    assert added.splitlines()[:3] == ["", "  # inferred from 2 csv file(s)", "  - name: shipments"]
    assert "carrier: STRING # 3 values in the samples; an expectation? carrier IN ('dhl', 'ups')" in added
    assert [t.name for t in config.tables] == ["orders", "customers", "payments", "shipments"]
    loaded = load_tables(tables_yml).table("shipments")  # as a run reads it
    assert loaded.schema_ddl == "`shipment_id` BIGINT, `carrier` STRING, `weight` DECIMAL(10,2)"
    assert (loaded.delimiter, loaded.header, loaded.landing) == (";", True, "exports/shipments")
    assert [(e.name, e.condition, e.action.value) for e in loaded.expectations] == [
        ("has_shipment_id", "shipment_id IS NOT NULL", "drop")]


def test_the_entry_shown_is_the_entry_written(tables_yml: Path):
    shown = entry_text(shipments())
    add_table(tables_yml, shipments())
    assert tables_yml.read_text().endswith(shown)


def test_an_existing_name_is_refused_and_nothing_is_written(tables_yml: Path):
    before = tables_yml.read_text()
    with pytest.raises(LakewatchError) as refused:
        add_table(tables_yml, shipments(name="payments"))
    assert refused.value.error_class == "TABLE_EXISTS" and "--replace" in str(refused.value)
    assert tables_yml.read_text() == before


def test_replace_overwrites_the_entry_in_its_place_and_keeps_the_others(tables_yml: Path):
    before = tables_yml.read_text()
    add_table(tables_yml, shipments(name="customers", landing="customers", header_note=None), replace=True)
    after = tables_yml.read_text()
    head, tail = before.split("  - name: customers")[0], before.split("  - name: payments")[1]
    assert after.startswith(head) and after.endswith(tail)
    assert "\n\n  - name: payments" in after
    assert [t.name for t in load_tables(tables_yml).tables] == ["orders", "customers", "payments"]
    assert load_tables(tables_yml).table("customers").column_names == ("shipment_id", "carrier", "weight")


@pytest.mark.parametrize("change,error_class", [
    ({"columns": [("_rescued_data", "STRING")]}, "CONFIG_RESERVED_COLUMN"),
    ({"columns": [("x", "NOT A TYPE")]}, "CONFIG_INVALID_TYPE"),
    ({"landing": "../elsewhere"}, "CONFIG_INVALID_LANDING"),
    ({"landing": "payments/archive", "name": "x"}, None),  # valid: a folder under another one is allowed
    ({"name": "Bad-Name"}, "CONFIG_INVALID_TABLE_NAME"),
    ({"format": "csv", "columns": [("s", "STRUCT<a: INT>")]}, "CONFIG_UNSUPPORTED_TYPE"),
])
def test_an_entry_a_run_would_refuse_is_refused_with_its_error_and_nothing_is_written(tables_yml, change, error_class):
    before = tables_yml.read_text()
    if error_class is None:
        add_table(tables_yml, shipments(**change), landing_root="/landing")
        return
    with pytest.raises(ConfigError) as refused:
        add_table(tables_yml, shipments(**change), landing_root="/landing")
    assert refused.value.error_class == error_class
    assert tables_yml.read_text() == before


def test_add_columns_appends_to_one_schema_and_keeps_the_rest(tables_yml: Path):
    before = tables_yml.read_text()
    add_columns(tables_yml, "orders", [("coupon", "STRING"), ("priority", "BIGINT")])
    after = tables_yml.read_text()
    assert after == before.replace("      status: STRING\n",
                                   "      status: STRING\n      coupon: STRING\n      priority: BIGINT\n", 1)
    assert load_tables(tables_yml).table("orders").column_names[-2:] == ("coupon", "priority")


def test_add_columns_refuses_a_column_declared_already_in_any_case(tables_yml: Path):
    before = tables_yml.read_text()
    with pytest.raises(ConfigError):
        add_columns(tables_yml, "orders", [("Currency", "STRING")])
    with pytest.raises(ConfigError):
        add_columns(tables_yml, "orders", [("coupon", "NOT A TYPE")])
    with pytest.raises(LakewatchError):
        add_columns(tables_yml, "nope", [("coupon", "STRING")])
    assert tables_yml.read_text() == before


# -- the pure part of schema inference -----------------------------------------------------------
@pytest.mark.parametrize("name,key", [("id", True), ("order_id", True), ("orderId", True), ("paid", False),
                                      ("valid", False), ("identity", False), ("ID", True)])
def test_key_names(name: str, key: bool):
    assert looks_like_key(name) is key


def stats(name: str, data_type: str = "BIGINT", nulls: int = 0, distinct: int | None = 50,
          minimum: float | None = None, values: tuple[str, ...] = ()) -> ColumnStats:
    return ColumnStats(name, data_type, nulls, distinct, minimum, values)


def test_never_null_keys_get_a_drop_expectation_and_the_rest_comments():
    expectations, notes = suggest([
        stats("order_id", distinct=40),  # a key by name, repeated values
        stats("sku", "STRING", distinct=100),  # unique in the samples
        stats("customer_id", nulls=3),  # a key by name, but NULL in some rows: no drop
        stats("amount", "DOUBLE", distinct=90, minimum=0.5),
        stats("currency", "STRING", distinct=3, values=("EUR", "GBP", "USD")),
        stats("note", "STRING", nulls=100, distinct=0),
        stats("tags", "ARRAY<STRING>", distinct=None),
        stats("delta", "BIGINT", distinct=80, minimum=-4),
        stats("weight", "DOUBLE", distinct=100, minimum=0.5),  # unique, but a DOUBLE is no key
        stats("at", "TIMESTAMP", distinct=100),
    ], rows=100)
    assert [(e.name, e.condition, e.action) for e in expectations] == [
        ("has_order_id", "order_id IS NOT NULL", "drop"), ("has_sku", "sku IS NOT NULL", "drop")]
    assert "unique in the 100 sample rows" in notes["sku"] and "order_id" not in notes
    assert "customer_id" not in notes
    assert notes["amount"].endswith("amount >= 0")
    assert notes["currency"].endswith("currency IN ('EUR', 'GBP', 'USD')")
    assert notes["note"].startswith("always NULL")
    assert notes["tags"].endswith("tags IS NOT NULL")
    assert notes["delta"].endswith("delta IS NOT NULL")
    assert notes["weight"].endswith("weight >= 0") and notes["at"].endswith("at IS NOT NULL")


def test_quotes_in_values_are_doubled_in_the_suggested_condition():
    _, notes = suggest([stats("kind", "STRING", distinct=2, values=("a'b", "c"))], rows=20)
    assert notes["kind"].endswith("kind IN ('a''b', 'c')")


def test_one_sample_row_makes_no_unique_key():
    expectations, _ = suggest([stats("name", "STRING", distinct=1)], rows=1)
    assert expectations == []


def test_formats_come_from_the_file_names():
    assert guess_format([Path("a.json"), Path("b.jsonl.gz"), Path("c.ndjson")]) == "json"
    assert guess_format([Path("a.CSV"), Path("b.tsv")]) == "csv"
    assert guess_format([Path("part-0.parquet")]) == "parquet"
    assert guess_format([Path("export.dat")], "csv") == "csv"


@pytest.mark.parametrize("names,given,error_class", [
    (["a.json", "b.csv"], None, "SAMPLES_MIXED_FORMATS"),
    (["a.json"], "csv", "SAMPLES_MIXED_FORMATS"),
    (["a.dat"], None, "SAMPLES_UNKNOWN_FORMAT"),
    (["a.json", "b.dat"], None, "SAMPLES_UNKNOWN_FORMAT"),
    (["a.json"], "xml", "CLI_INVALID_ARGUMENT"),
])
def test_mixed_or_unknown_formats_are_refused(names, given, error_class):
    with pytest.raises(LakewatchError) as refused:
        guess_format([Path(n) for n in names], given)
    assert refused.value.error_class == error_class


def test_sample_folders_stand_for_their_files_hidden_ones_left_out(tmp_path: Path):
    (tmp_path / "in" / "2026").mkdir(parents=True)
    for name in ("in/a.json", "in/2026/b.json", "in/.hidden.json", "in/_SUCCESS", "one.json"):
        (tmp_path / name).write_text("{}\n")
    found = sample_files([tmp_path / "in", tmp_path / "one.json"])
    assert found == [tmp_path / "in/2026/b.json", tmp_path / "in/a.json", tmp_path / "one.json"]
    with pytest.raises(LakewatchError) as refused:
        sample_files([tmp_path / "missing"])
    assert refused.value.error_class == "SAMPLES_NOT_FOUND"


def test_json_documents_are_told_from_json_lines(tmp_path: Path):
    (tmp_path / "doc.json").write_text('\ufeff\n  [{"a": 1}]')
    (tmp_path / "lines.json").write_text('{"a": 1}\n')
    assert json_documents([tmp_path / "doc.json"]) and not json_documents([tmp_path / "lines.json"])


def test_types_spark_infers_are_declared_as_tables_yml_takes_them():
    assert declared_type("t", "c", "bigint") == ("BIGINT", None)
    assert declared_type("t", "c", "struct<a:bigint,b:array<string>>") == ("STRUCT<a: BIGINT, b: ARRAY<STRING>>", None)
    assert declared_type("t", "c", "void") == ("STRING", None)
    data_type, note = declared_type("t", "c", "interval day to second")
    assert data_type == "STRING" and note and "INTERVAL" in note


def test_the_landing_is_the_samples_folder_under_the_root(tmp_path: Path):
    folder = tmp_path / "exports" / "shipments"
    folder.mkdir(parents=True)
    (folder / "a.json").write_text("{}")
    root = tmp_path / "exports"
    assert landing_for("ship", [folder], root, None) == "shipments"
    assert landing_for("ship", [folder / "a.json"], root, None) == "shipments"
    assert landing_for("ship", [folder], tmp_path / "elsewhere", None) == "ship"
    assert landing_for("ship", [folder], root, "in/ship/") == "in/ship"
