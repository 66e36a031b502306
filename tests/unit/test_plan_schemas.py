"""Which view plans have a schema that can be kept between updates, and the file that keeps them. Plans
are built by pyspark's own Connect plan classes (no server); the tests/integration/test_demo test
checks the kept schemas against the bronze tables Spark wrote."""

from __future__ import annotations

import json

import pytest
from pyspark.sql.connect import functions as CF
from pyspark.sql.connect.column import Column
from pyspark.sql.connect.expressions import ColumnReference, SQLExpression, UnresolvedFunction
from pyspark.sql.connect.plan import SQL, DataSource, Filter, Project, Read

from pipelines.local.plan_schemas import MAX_ENTRIES, PlanSchemas, plan_key

CONTEXT = {"spark_version": "4.2.0", "engine_settings": "aa40c57e4bf6ffe0", "configuration": "[]"}
SCHEMA = "value STRING"


def landing_view(fmt: str = "text", schema: str | None = None, column: str = "value"):
    """Like a landing table's source view: a streaming file read, a filter and a projection with a
    lambda function (the rescue's `transform` over a line's fields)."""
    read = DataSource(format=fmt, schema=schema, paths=["/landing/orders"], is_streaming=True)
    kept = Filter(read, Column(UnresolvedFunction("isnotnull", [ColumnReference(column)])))
    fields = CF.transform(CF.split(CF.col(column), ","), lambda field: CF.upper(field))
    return Project(kept, [Column(UnresolvedFunction("upper", [ColumnReference(column)])), fields])


def test_the_same_query_built_after_other_queries_has_the_same_key():
    first = landing_view().plan(None)
    landing_view()  # other plans take the next plan ids and lambda variable names of pyspark's counters
    again = landing_view().plan(None)
    assert first.SerializeToString() != again.SerializeToString()
    assert "lambda_function" in str(first)
    assert plan_key(first, CONTEXT) == plan_key(again, CONTEXT) is not None


def test_a_query_whose_lambda_uses_its_variable_differently_has_another_key():
    def view(body):
        read = DataSource(format="text", paths=["/landing/orders"], is_streaming=True)
        return Project(read, [CF.transform(CF.split(CF.col("value"), ","), body)]).plan(None)

    same = plan_key(view(lambda field: CF.concat(field, CF.lit("x"))), CONTEXT)
    assert plan_key(view(lambda field: CF.concat(field, CF.lit("x"))), CONTEXT) == same
    assert plan_key(view(lambda field: CF.concat(CF.lit("x"), field)), CONTEXT) != same


def test_another_query_or_other_settings_have_another_key():
    key = plan_key(landing_view().plan(None), CONTEXT)
    assert plan_key(landing_view(column="line").plan(None), CONTEXT) != key
    assert plan_key(landing_view().plan(None), {**CONTEXT, "configuration": '[["spark.sql.ansi.enabled", "false"]]'}) != key
    assert plan_key(landing_view().plan(None), {**CONTEXT, "spark_version": "4.2.1"}) != key


@pytest.mark.parametrize("fmt,schema,kept", [
    ("text", None, True),  # Spark's text source has one fixed column
    ("binaryFile", None, True),
    ("json", SCHEMA, True),
    ("json", None, False),  # the schema would be inferred from the files
    ("csv", None, False),
    ("parquet", None, False),  # from the files' footers
])
def test_a_file_read_is_kept_only_when_its_schema_does_not_come_from_the_files(fmt, schema, kept):
    assert (plan_key(landing_view(fmt, schema).plan(None), CONTEXT) is not None) is kept


def test_plans_whose_schema_depends_on_the_catalog_or_sql_text_are_not_kept():
    by_name = Project(Read("spark_catalog.lakewatch.orders_bronze", is_streaming=True), [Column(ColumnReference("a"))])
    assert plan_key(by_name.plan(None), CONTEXT) is None  # the table's columns can change
    assert plan_key(SQL("SELECT * FROM orders").plan(None), CONTEXT) is None
    subquery = Project(landing_view(), [Column(SQLExpression("(SELECT max(a) FROM orders)"))])
    assert plan_key(subquery.plan(None), CONTEXT) is None
    catalog_function = landing_view().plan(None)
    catalog_function.project.expressions[0].unresolved_function.is_user_defined_function = True
    assert plan_key(catalog_function, CONTEXT) is None  # CREATE FUNCTION can change its type


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
