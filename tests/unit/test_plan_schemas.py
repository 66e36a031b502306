"""Which view plans have a schema that can be kept between updates, and the file that keeps them. Plans
are built by pyspark's own Connect plan classes (no server); the tests/integration/test_demo test
checks the kept schemas against the bronze tables Spark wrote."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pyspark.sql.connect import functions as CF
from pyspark.sql.connect.column import Column
from pyspark.sql.connect.expressions import ColumnReference, SQLExpression, UnresolvedFunction
from pyspark.sql.connect.plan import SQL, DataSource, Filter, Project, Read

from pipelines.local.plan_schemas import MAX_ENTRIES, PlanSchemas, Session, plan_key

CONTEXT = {"spark_version": "4.2.0", "engine_settings": "aa40c57e4bf6ffe0", "sql_conf": "[]", "configuration": "[]"}
SESSION = Session(CONTEXT)
SCHEMA = "value STRING"


@pytest.fixture
def landing(tmp_path) -> str:
    """A landing folder with files and no folder inside (so no partition columns)."""
    folder = tmp_path / "landing" / "orders"
    folder.mkdir(parents=True)
    (folder / "o-1.json").write_text('{"order_id": 1}\n')
    return str(folder)


def landing_view(landing: str, fmt: str = "text", schema: str | None = None, column: str = "value"):
    """Like a landing table's source view: a streaming file read, a filter and a projection with a
    lambda function (the rescue's `transform` over a line's fields)."""
    read = DataSource(format=fmt, schema=schema, paths=[landing], is_streaming=True)
    kept = Filter(read, Column(UnresolvedFunction("isnotnull", [ColumnReference(column)])))
    fields = CF.transform(CF.split(CF.col(column), ","), lambda field: CF.upper(field))
    return Project(kept, [Column(UnresolvedFunction("upper", [ColumnReference(column)])), fields])


def test_the_same_query_built_after_other_queries_has_the_same_key(landing):
    first = landing_view(landing).plan(None)
    landing_view(landing)  # other plans take the next plan ids and lambda variable names of pyspark's counters
    again = landing_view(landing).plan(None)
    assert first.SerializeToString() != again.SerializeToString()
    assert "lambda_function" in str(first)
    assert plan_key(first, SESSION) == plan_key(again, SESSION) is not None


def test_a_query_whose_lambda_uses_its_variable_differently_has_another_key(landing):
    def view(body):
        read = DataSource(format="text", paths=[landing], is_streaming=True)
        return Project(read, [CF.transform(CF.split(CF.col("value"), ","), body)]).plan(None)

    same = plan_key(view(lambda field: CF.concat(field, CF.lit("x"))), SESSION)
    assert plan_key(view(lambda field: CF.concat(field, CF.lit("x"))), SESSION) == same
    assert plan_key(view(lambda field: CF.concat(CF.lit("x"), field)), SESSION) != same


def test_another_query_or_other_settings_have_another_key(landing):
    key = plan_key(landing_view(landing).plan(None), SESSION)
    assert plan_key(landing_view(landing, column="line").plan(None), SESSION) != key
    assert plan_key(landing_view(landing).plan(None), Session({**CONTEXT, "sql_conf": '[["spark.sql.ansi.enabled", "false"]]'})) != key
    assert plan_key(landing_view(landing).plan(None), Session({**CONTEXT, "spark_version": "4.2.1"})) != key


@pytest.mark.parametrize("fmt,schema,kept", [
    ("text", None, True),  # Spark's text source has one fixed column
    ("binaryFile", None, True),
    ("json", SCHEMA, True),
    ("json", None, False),  # the schema would be inferred from the files
    ("csv", None, False),
    ("parquet", None, False),  # from the files' footers
])
def test_a_file_read_is_kept_only_when_its_schema_does_not_come_from_the_files(landing, fmt, schema, kept):
    assert (plan_key(landing_view(landing, fmt, schema).plan(None), SESSION) is not None) is kept


def test_plans_whose_schema_depends_on_the_catalog_or_sql_text_are_not_kept(landing):
    by_name = Project(Read("spark_catalog.lakewatch.orders_bronze", is_streaming=True), [Column(ColumnReference("a"))])
    assert plan_key(by_name.plan(None), SESSION) is None  # the table's columns can change
    assert plan_key(SQL("SELECT * FROM orders").plan(None), SESSION) is None
    subquery = Project(landing_view(landing), [Column(SQLExpression("(SELECT max(a) FROM orders)"))])
    assert plan_key(subquery.plan(None), SESSION) is None
    catalog_function = landing_view(landing).plan(None)
    catalog_function.project.expressions[0].unresolved_function.is_user_defined_function = True
    assert plan_key(catalog_function, SESSION) is None  # CREATE FUNCTION can change its type


def test_a_read_of_a_folder_with_partition_folders_or_none_at_all_is_not_kept(landing, tmp_path):
    key = plan_key(landing_view(landing).plan(None), SESSION)
    assert key is not None
    assert plan_key(landing_view(str(tmp_path / "missing")).plan(None), SESSION) is None
    (Path(landing) / "day=2026-12-01").mkdir()  # Spark adds a `day` column from such folders
    assert plan_key(landing_view(landing).plan(None), SESSION) is None
    as_option = DataSource(format="text", options={"path": landing}, is_streaming=True)  # `.option("path", ...)`
    assert plan_key(as_option.plan(None), SESSION) is None
    recursive = landing_view(landing).plan(None)
    recursive.project.input.filter.input.read.data_source.options["recursiveFileLookup"] = "true"
    assert plan_key(recursive, SESSION) is not None  # Spark infers no partitions then


def test_calls_of_functions_that_are_not_built_in_are_not_kept(landing):
    assert plan_key(Project(landing_view(landing), [CF.call_function("my_fn", CF.col("value"))]).plan(None), SESSION) is None
    by_name = Project(landing_view(landing), [CF.call_udf("my_udf", CF.col("value"))]).plan(None)
    assert plan_key(by_name, SESSION) is not None  # a name like any built-in's ...
    assert plan_key(by_name, Session(CONTEXT, frozenset({"my_udf"}))) is None  # ... until the session has it
    qualified = Project(landing_view(landing), [Column(UnresolvedFunction("lakewatch.fn", [ColumnReference("value")]))])
    assert plan_key(qualified.plan(None), SESSION) is None


def test_pivots_without_values_and_transposes_take_their_columns_from_the_data(landing):
    from pyspark.sql.connect.plan import Aggregate, Transpose

    def pivot(values):
        return Aggregate(landing_view(landing), "pivot", [Column(ColumnReference("value"))],
                         [Column(UnresolvedFunction("count", [ColumnReference("value")]))],
                         Column(ColumnReference("value")), values, None).plan(None)

    assert plan_key(pivot([]), SESSION) is None
    assert plan_key(pivot([CF.lit("a")._expr]), SESSION) is not None
    assert plan_key(Transpose(landing_view(landing), []).plan(None), SESSION) is None


def test_a_plan_too_deep_to_walk_gets_no_key_and_no_error(landing):
    plan = landing_view(landing)
    for _ in range(400):
        plan = Filter(plan, Column(UnresolvedFunction("isnotnull", [ColumnReference("value")])))
    assert plan_key(plan.plan(None), SESSION) is None


def test_kept_schemas_are_read_back_by_the_next_update(tmp_path):
    path = tmp_path / "state" / "plan_schemas.json"
    PlanSchemas(path).put("k1", [("value", "string")])
    assert PlanSchemas(path).get("k1") == [("value", "string")]
    assert PlanSchemas(path).get("k2") is None


@pytest.mark.parametrize("text", ["{not json", json.dumps({"format": 0, "schemas": {"k1": [["a", "int"]]}}), "[]"])
def test_an_unreadable_or_older_file_counts_as_empty_and_is_written_anew(tmp_path, text):
    path = tmp_path / "plan_schemas.json"
    path.write_text(text)
    kept = PlanSchemas(path)
    assert kept.get("k1") is None
    kept.put("k2", [("b", "bigint")])
    assert PlanSchemas(path).get("k2") == [("b", "bigint")] and PlanSchemas(path).get("k1") is None


def test_the_oldest_plan_goes_when_the_file_is_full(tmp_path):
    path = tmp_path / "plan_schemas.json"
    kept = PlanSchemas(path)
    for i in range(MAX_ENTRIES + 1):
        kept.put(f"k{i}", [("a", "int")])
    again = PlanSchemas(path)
    assert again.get("k0") is None and again.get("k1") is not None and again.get(f"k{MAX_ENTRIES}") is not None
