"""The table configuration loader: valid files load; every kind of mistake fails with one clear message."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from pipelines.config import TableSpec, load_tables
from pipelines.errors import ConfigError
from pipelines.expectations import Action

VALID = """
tables:
  - name: orders
    format: json
    landing: orders
    schema:
      order_id: BIGINT
      amount: decimal(10, 2)
    expectations:
      - {name: has_id, condition: order_id IS NOT NULL, action: drop}
      - {name: positive, condition: amount > 0}
"""


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "tables.yml"
    path.write_text(textwrap.dedent(text))
    return path


def error_of(tmp_path: Path, text: str) -> ConfigError:
    with pytest.raises(ConfigError) as info:
        load_tables(write(tmp_path, text))
    return info.value


def test_valid_file_loads_with_defaults(tmp_path):
    config = load_tables(write(tmp_path, VALID))
    orders = config.table("orders")
    assert orders.column_names == ("order_id", "amount")
    assert orders.columns[1].data_type == "DECIMAL(10,2)"
    assert [(e.name, e.action) for e in orders.expectations] == [("has_id", Action.DROP), ("positive", Action.WARN)]
    assert orders.dataset_names() == ("orders_source", "orders_bronze", "orders", "orders_rejected")
    assert orders.streaming_tables() == ("orders_bronze", "orders", "orders_rejected")
    assert orders.landing_path("/Volumes/main/x/landing") == "/Volumes/main/x/landing/orders"


def test_the_demo_configuration_is_valid(project_root):
    config = load_tables(project_root / "conf" / "tables.yml")
    assert len(config.tables) >= 2


def test_unknown_key_names_the_key_and_the_allowed_ones(tmp_path):
    error = error_of(tmp_path, VALID.replace("    format: json", "    format: json\n    fromat: json"))
    assert error.error_class == "CONFIG_UNKNOWN_KEY"
    assert "'fromat'" in str(error) and "Allowed keys: name, format, schema" in str(error)


@pytest.mark.parametrize("name", ["Orders", "1orders", "order-items", "orders items"])
def test_bad_table_name(tmp_path, name):
    error = error_of(tmp_path, VALID.replace("name: orders", f"name: '{name}'"))
    assert error.error_class == "CONFIG_INVALID_TABLE_NAME"
    assert name in str(error)


def test_missing_schema(tmp_path):
    text = "\n".join(l for l in VALID.splitlines() if not l.strip().startswith(("schema", "order_id", "amount")))
    error = error_of(tmp_path, text)
    assert error.error_class == "CONFIG_MISSING_KEY"
    assert "'schema'" in str(error) and "Table 'orders'" in str(error)


def test_schema_that_is_not_a_mapping(tmp_path):
    error = error_of(tmp_path, VALID.replace("    schema:\n      order_id: BIGINT\n      amount: decimal(10, 2)",
                                             "    schema: order_id BIGINT"))
    assert error.error_class == "CONFIG_INVALID_SCHEMA"


def test_unknown_type(tmp_path):
    error = error_of(tmp_path, VALID.replace("order_id: BIGINT", "order_id: NUMBER"))
    assert error.error_class == "CONFIG_INVALID_TYPE" and "NUMBER" in str(error)
    assert "Column 'order_id' of table 'orders'" in str(error) and "write DECIMAL(p,s)" in str(error)


@pytest.mark.parametrize("declared, where", [
    ("ARRAY<FOO>", "'FOO' is not a Spark SQL type"),
    ("'STRUCT<a INT'", "the text ends after 'STRUCT<a INT' where ',' or '>' is expected"),
    ("DECIMAL(40,2)", "precision 40 exceeds the maximum of 38"),
    ("5", "the type must be text, found a YAML int"),
    ("", "the type must be text, found nothing"),
])
def test_a_type_that_is_not_one_spark_type_is_refused_with_where_it_breaks(tmp_path, declared, where):
    error = error_of(tmp_path, VALID.replace("order_id: BIGINT", f"order_id: {declared}"))
    assert error.error_class == "CONFIG_INVALID_TYPE"
    assert where in str(error) and "Write a Spark SQL type such as STRING" in str(error)


@pytest.mark.parametrize("declared, fix", [
    ("VARCHAR(20)", "declare STRING and add an expectation such as `length(order_id) <= 20`"),
    ("INTERVAL DAY TO SECOND", "declare STRING or a number of units (BIGINT)"),
    ("VOID", "declare the type the values have"),
    ("TIME", "declare STRING"),
    ("'MAP<INT, STRING>'", "declare the key as STRING"),
    ("'STRUCT<id: BIGINT NOT NULL>'", "add an expectation such as `order_id.id IS NOT NULL`"),
])
def test_a_spark_type_json_cannot_fill_is_refused_with_the_fix(tmp_path, declared, fix):
    error = error_of(tmp_path, VALID.replace("order_id: BIGINT", f"order_id: {declared}"))
    assert error.error_class == "CONFIG_UNSUPPORTED_TYPE"
    assert fix in str(error) and "which lakewatch cannot ingest from JSON" in str(error)


def test_types_are_stored_normalized_and_nested_names_keep_their_case(tmp_path):
    text = VALID.replace("order_id: BIGINT", "order_id: long\n      items: 'array<struct<Sku:string, qty:int>>'")
    orders = load_tables(write(tmp_path, text)).table("orders")
    assert [c.data_type for c in orders.columns] == ["BIGINT", "ARRAY<STRUCT<Sku: STRING, qty: INT>>", "DECIMAL(10,2)"]
    assert orders.schema_ddl == "`order_id` BIGINT, `items` ARRAY<STRUCT<Sku: STRING, qty: INT>>, `amount` DECIMAL(10,2)"


ROOT = "/Volumes/main/lakewatch/landing"


@pytest.mark.parametrize("landing, path", [
    ("orders", f"{ROOT}/orders"),
    ("sales/orders", f"{ROOT}/sales/orders"),
    ("2024", f"{ROOT}/2024"),
])
def test_landing_is_a_folder_under_the_root(landing, path):
    table = TableSpec("orders", "json", (), landing)
    assert table.landing_path(ROOT) == path
    assert table.landing_path(ROOT + "/") == path
    assert table.landing_path("s3://bucket/landing") == f"s3://bucket/landing/{landing}"


@pytest.mark.parametrize("landing, problem, fix", [
    ("../orders", "leaves the landing root ('..')", "write a folder under the root"),
    ("a/../../orders", "leaves the landing root ('..')", "change the landing_root bundle variable"),
    ("a/../orders", "has '.' or '..' segments", "write 'orders'"),
    ("./orders", "has '.' or '..' segments", "write 'orders'"),
    (".", "is the landing root itself", "write a folder under the root"),
    ("orders//2024", "has an empty segment", "write 'orders/2024'"),
    ("orders/", "has an empty segment", "write 'orders'"),
    ("/tmp/orders", "is outside the landing root", "write a folder under the root"),
    (f"{ROOT}/../other/orders", "is outside the landing root", "deliver the files there"),
    ("s3://bucket/orders", "is outside the landing root", "change the landing_root bundle variable"),
    (f"{ROOT}/orders", "is an absolute path", "write it relative to the root: 'orders'"),
    (f"{ROOT}/sales//orders/", "is an absolute path", "write it relative to the root: 'sales/orders'"),
    (ROOT, "is the landing root itself", "write a folder under the root"),
])
def test_landing_outside_the_root_or_not_relative_is_refused_naming_table_root_and_fix(landing, problem, fix):
    with pytest.raises(ConfigError) as info:
        TableSpec("orders", "json", (), landing).landing_path(ROOT)
    error = info.value
    assert error.error_class == "CONFIG_INVALID_LANDING"
    assert f"Table 'orders' has landing '{landing}', which {problem}" in str(error)
    assert f"relative to the landing root {ROOT}" in str(error) and fix in str(error)


def test_landing_paths_checks_every_table(tmp_path):
    second = VALID.split("tables:\n", 1)[1].replace("name: orders", "name: refunds").replace("landing: orders", "landing: ../refunds")
    config = load_tables(write(tmp_path, VALID + second))  # loading needs no root
    with pytest.raises(ConfigError) as info:
        config.landing_paths(ROOT)
    assert "Table 'refunds'" in str(info.value)


def test_reserved_column(tmp_path):
    error = error_of(tmp_path, VALID.replace("order_id: BIGINT", "_rescued_data: STRING"))
    assert error.error_class == "CONFIG_RESERVED_COLUMN"


def test_bad_action(tmp_path):
    error = error_of(tmp_path, VALID.replace("action: drop", "action: quarantine"))
    assert error.error_class == "CONFIG_INVALID_EXPECTATION" and "quarantine" in str(error)


def test_unsupported_format(tmp_path):
    error = error_of(tmp_path, VALID.replace("format: json", "format: xml"))
    assert error.error_class == "CONFIG_UNSUPPORTED_FORMAT"


def test_colliding_dataset_names(tmp_path):
    second = VALID.split("tables:\n", 1)[1].replace("name: orders", "name: orders_bronze")
    error = error_of(tmp_path, VALID + second)
    assert error.error_class == "CONFIG_RESERVED_TABLE_NAME" and "orders_bronze" in str(error)


def test_a_table_without_a_drop_expectation_has_no_rejected_rows_table(tmp_path):
    config = load_tables(write(tmp_path, VALID.replace("action: drop", "action: warn")))
    orders = config.table("orders")
    assert orders.drop_expectations == ()
    assert orders.dataset_names() == ("orders_source", "orders_bronze", "orders")
    assert orders.streaming_tables() == ("orders_bronze", "orders")


def test_a_table_named_like_another_tables_rejected_rows_collides(tmp_path):
    second = VALID.split("tables:\n", 1)[1].replace("name: orders", "name: orders_rejected").replace(
        "landing: orders", "landing: other")
    error = error_of(tmp_path, VALID + second)
    assert error.error_class == "CONFIG_RESERVED_TABLE_NAME" and "orders_rejected" in str(error)


def test_the_rejected_rows_name_is_reserved_even_without_a_drop_expectation(tmp_path):
    """A drop rule added later would give `orders` the dataset `orders_rejected`: the name is kept free."""
    warn_only = VALID.replace("action: drop", "action: warn")
    second = warn_only.split("tables:\n", 1)[1].replace("name: orders", "name: orders_rejected").replace(
        "landing: orders", "landing: other")
    error = error_of(tmp_path, warn_only + second)
    assert error.error_class == "CONFIG_RESERVED_TABLE_NAME" and "orders_rejected" in str(error)


def test_the_rejected_rows_columns_are_reserved(tmp_path):
    error = error_of(tmp_path, VALID.replace("      amount: decimal(10, 2)", "      amount: decimal(10, 2)\n      _failed_expectations: STRING"))
    assert "_failed_expectations" in str(error)


def test_invalid_yaml_and_missing_file(tmp_path):
    assert error_of(tmp_path, "tables: [\n").error_class == "CONFIG_INVALID_YAML"
    with pytest.raises(ConfigError) as info:
        load_tables(tmp_path / "nope.yml")
    assert info.value.error_class == "CONFIG_FILE_NOT_FOUND"


def test_no_tables(tmp_path):
    assert error_of(tmp_path, "tables: []\n").error_class == "CONFIG_NO_TABLES"


# -- Auto Loader options per table ---------------------------------------------------------------------
def with_options(text: str) -> str:
    return VALID.replace("    landing: orders\n", "    landing: orders\n" + textwrap.indent(text, "    "))


def test_auto_loader_options_load_normalized(tmp_path):
    orders = load_tables(write(tmp_path, with_options(
        "max_bytes_per_trigger: 10g\nuse_managed_file_events: true\nclean_source: Move\n"
        "clean_source_move_destination: _archive/orders\nclean_source_retention: 2 weeks\n"))).table("orders")
    assert orders.max_bytes_per_trigger == 10 * 1024 ** 3
    assert (orders.use_notifications, orders.use_managed_file_events) == (False, True)
    assert (orders.clean_source, orders.clean_source_move_destination, orders.clean_source_retention) == (
        "MOVE", "_archive/orders", "2 weeks")
    assert orders.move_destination_path("/Volumes/main/x/landing/") == "/Volumes/main/x/landing/_archive/orders"
    defaults = load_tables(write(tmp_path, VALID)).table("orders")
    assert (defaults.max_bytes_per_trigger, defaults.clean_source, defaults.move_destination_path("/l")) == (None, "OFF", None)


@pytest.mark.parametrize("value, size", [(1048576, 1048576), ("512", 512), ("512b", 512), ("64k", 65536),
                                         ("1MB", 1048576), ("2g", 2 * 1024 ** 3), (" 1t ", 1024 ** 4)])
def test_max_bytes_per_trigger_is_bytes_or_a_byte_string(tmp_path, value, size):
    """Sizes as Spark's byte strings read them (JavaUtils.byteStringAs: binary units, no fraction)."""
    text = f"max_bytes_per_trigger: {value!r}\n" if isinstance(value, str) else f"max_bytes_per_trigger: {value}\n"
    assert load_tables(write(tmp_path, with_options(text))).table("orders").max_bytes_per_trigger == size


@pytest.mark.parametrize("value, hours", [("26", 26.0), ("0.5", 0.5), (None, None)])
def test_max_hours_without_rows_is_a_number_of_hours(tmp_path, value, hours):
    text = f"max_hours_without_rows: {value}\n" if value is not None else ""
    assert load_tables(write(tmp_path, with_options(text))).table("orders").max_hours_without_rows == hours


def test_a_bare_yaml_off_is_clean_source_off(tmp_path):
    assert load_tables(write(tmp_path, with_options("clean_source: off\n"))).table("orders").clean_source == "OFF"


@pytest.mark.parametrize("options, error_class, phrase", [
    ("max_bytes_per_trigger: 1.5g\n", "CONFIG_INVALID_OPTION", "max_bytes_per_trigger is '1.5g'"),
    ("max_bytes_per_trigger: 10 GB\n", "CONFIG_INVALID_OPTION", "such as '512m' or '10g'"),
    ("max_bytes_per_trigger: 0\n", "CONFIG_INVALID_OPTION", "a positive number of bytes"),
    ("max_bytes_per_trigger: true\n", "CONFIG_INVALID_OPTION", "a positive number of bytes"),
    ("use_notifications: 'yes'\n", "CONFIG_INVALID_OPTION", "use_notifications is 'yes'; it must be true or false"),
    ("max_hours_without_rows: 0\n", "CONFIG_INVALID_OPTION", "a number of hours greater than 0"),
    ("max_hours_without_rows: 1 day\n", "CONFIG_INVALID_OPTION", "max_hours_without_rows is '1 day'"),
    ("max_hours_without_rows: .nan\n", "CONFIG_INVALID_OPTION", "a number of hours greater than 0"),
    ("max_hours_without_rows: true\n", "CONFIG_INVALID_OPTION", "a number of hours greater than 0"),
    ("use_notifications: true\nuse_managed_file_events: true\n", "CONFIG_CONFLICTING_OPTIONS",
     "use_notifications and use_managed_file_events cannot both be set"),
    ("clean_source: archive\n", "CONFIG_INVALID_OPTION", "one of off, delete or move"),
    ("clean_source: on\n", "CONFIG_INVALID_OPTION", "one of off, delete or move"),
    ("clean_source: move\n", "CONFIG_MISSING_KEY", "missing the required key 'clean_source_move_destination'"),
    ("clean_source: delete\nclean_source_move_destination: _archive\n", "CONFIG_INVALID_OPTION",
     "set only with clean_source: move"),
    ("clean_source: move\nclean_source_move_destination: /Volumes/main/x/archive\n", "CONFIG_INVALID_OPTION",
     "a folder relative to the landing root"),
    ("clean_source: move\nclean_source_move_destination: ../archive\n", "CONFIG_INVALID_OPTION",
     "leaves the landing root"),
    ("clean_source: move\nclean_source_move_destination: orders/done\n", "CONFIG_INVALID_OPTION",
     "it lies in the landing folder 'orders' of table 'orders'"),
    ("clean_source: move\nclean_source_move_destination: '.'\n", "CONFIG_INVALID_OPTION", "is the landing root itself"),
    ("clean_source_retention: 30 days\n", "CONFIG_INVALID_OPTION", "set only with clean_source: delete or move"),
    ("clean_source: delete\nclean_source_retention: 1 week\n", "CONFIG_INVALID_OPTION",
     "longer than 7 days with clean_source: delete"),
    ("clean_source: move\nclean_source_move_destination: _a\nclean_source_retention: soon\n",
     "CONFIG_INVALID_OPTION", "an interval such as '14 days'"),
    ("schema_hints: 'amount DECIMAL(10,2)'\n", "CONFIG_UNSUPPORTED_OPTION", "under `schema:`"),
])
def test_invalid_auto_loader_options_are_refused_with_the_fix(tmp_path, options, error_class, phrase):
    error = error_of(tmp_path, with_options(options))
    assert error.error_class == error_class and "Table 'orders'" in str(error)
    assert phrase in str(error)


def test_retention_bounds_follow_auto_loader(tmp_path):
    """DELETE needs more than 7 days; MOVE has no minimum (Auto Loader's cleanSource documentation)."""
    for options in ("clean_source: delete\nclean_source_retention: 8 days\n",
                    "clean_source: delete\nclean_source_retention: 1 week 1 hour\n",
                    "clean_source: move\nclean_source_move_destination: _a\nclean_source_retention: 1 hour\n"):
        assert load_tables(write(tmp_path, with_options(options))).table("orders").clean_source_retention


def test_a_move_destination_holding_another_tables_landing_is_refused(tmp_path):
    second = VALID.split("tables:\n", 1)[1].replace("name: orders", "name: refunds").replace(
        "landing: orders", "landing: archive/refunds")
    error = error_of(tmp_path, with_options("clean_source: move\nclean_source_move_destination: archive\n") + second)
    assert "it holds the landing folder 'archive/refunds' of table 'refunds'" in str(error)


def as_csv(options: str = "") -> str:
    """The valid orders table as a CSV table with `options`."""
    return with_options(options).replace("    format: json\n", "    format: csv\n", 1)


def test_csv_options_load_with_spark_defaults_and_rfc_4180_escape(tmp_path):
    orders = load_tables(write(tmp_path, as_csv())).table("orders")
    assert (orders.format, orders.header, orders.delimiter, orders.quote, orders.escape) == ("csv", True, ",", '"', "\\")
    rfc = load_tables(write(tmp_path, as_csv("header: false\ndelimiter: \"\\t\"\nescape: '\"'\n"))).table("orders")
    assert (rfc.header, rfc.delimiter, rfc.escape) == (False, "\t", '"')


@pytest.mark.parametrize("text, error_class, phrase", [
    (as_csv("delimiter: ';;'\n"), "CONFIG_INVALID_OPTION", "one character"),
    (as_csv("header: 'yes'\n"), "CONFIG_INVALID_OPTION", "true or false"),
    (as_csv("delimiter: '\"'\n"), "CONFIG_CONFLICTING_OPTIONS", "the delimiter must differ"),
    (as_csv("multi_line: true\n"), "CONFIG_INVALID_OPTION", "set only with format: json"),
    (with_options("delimiter: ';'\n"), "CONFIG_INVALID_OPTION", "set only with format: csv"),
    (with_options("multiLine: true\n"), "CONFIG_UNKNOWN_KEY", "multi_line"),
    (as_csv().replace("      amount: decimal(10, 2)\n", "      amount: 'STRUCT<v: DOUBLE>'\n"), "CONFIG_UNSUPPORTED_TYPE",
     "cannot fill a STRUCT, ARRAY or MAP column"),
])
def test_format_options_of_another_format_or_out_of_range_are_refused(tmp_path, text, error_class, phrase):
    error = error_of(tmp_path, text)
    assert error.error_class == error_class and phrase in str(error), str(error)
