"""The table configuration loader: valid files load; every kind of mistake fails with one clear message."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from pipelines.config import load_tables
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
    assert orders.columns[1].data_type == "DECIMAL(10, 2)"
    assert [(e.name, e.action) for e in orders.expectations] == [("has_id", Action.DROP), ("positive", Action.WARN)]
    assert orders.dataset_names() == ("orders_source", "orders_bronze", "orders")
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
    assert error.error_class == "CONFIG_INVALID_SCHEMA" and "NUMBER" in str(error)


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


def test_invalid_yaml_and_missing_file(tmp_path):
    assert error_of(tmp_path, "tables: [\n").error_class == "CONFIG_INVALID_YAML"
    with pytest.raises(ConfigError) as info:
        load_tables(tmp_path / "nope.yml")
    assert info.value.error_class == "CONFIG_FILE_NOT_FOUND"


def test_no_tables(tmp_path):
    assert error_of(tmp_path, "tables: []\n").error_class == "CONFIG_NO_TABLES"
