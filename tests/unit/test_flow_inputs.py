"""What a flow reads, told from its SQL text or its Spark Connect plan (pipelines/local/flow_inputs.py):
the refresh planning skips a view only on what this reports, so each way a query can read something
unnamed or differ between runs must be reported."""

from __future__ import annotations

import pyspark.sql.connect.proto as pb2
import pytest

from pipelines.local.flow_inputs import Inputs, digest, relation_inputs, relation_text, sql_inputs
from pipelines.observability import catalog


def test_named_reads_without_ctes_literals_or_comments() -> None:
    found = sql_inputs("""
        WITH recent AS (SELECT * FROM events WHERE x = 'FROM fake')  -- FROM commented
        SELECT * FROM recent JOIN spark_catalog.s.update_status u ON true
        WHERE id IN (SELECT id FROM `errors`)
    """)
    assert found == Inputs(names=("events", "spark_catalog.s.update_status", "errors"))


@pytest.mark.parametrize("query, why", [
    ("SELECT * FROM read_files('/landing', format => 'json')", "a table-valued function"),
    ("SELECT * FROM cloud_files_state('x')", "a table-valued function"),
    ("SELECT * FROM a JOIN IDENTIFIER('b') ON true", "a table-valued function"),
    ("SELECT * FROM a, b", "a comma join"),
    ("SELECT * FROM a x, b y WHERE x.k = y.k", "a comma join"),
    ("SELECT * FROM a JOIN b USING (k), c", "a comma join"),
    ("SELECT * FROM a x JOIN b y ON x.k = y.k, c", "a comma join"),
    ("SELECT * FROM VALUES (1) AS v(x), t", "a comma join"),
    ("SELECT * FROM a WHERE k IN (SELECT k FROM b, c)", "a comma join"),
    ("SELECT * FROM a LEFT JOIN (b JOIN c ON true) ON true", "a parenthesized relation"),
    ("SELECT * FROM (TABLE t)", "a parenthesized relation"),
])
def test_reads_it_cannot_name_are_reported(query: str, why: str) -> None:
    assert any(u.startswith(why) for u in sql_inputs(query).unnamed)


@pytest.mark.parametrize("query", [
    "SELECT * FROM VALUES (1), (2) AS t(x)",
    "SELECT * FROM STREAM(events)",
    "SELECT (SELECT max(x) FROM a), y FROM b",
    "SELECT * FROM (SELECT * FROM a) t JOIN b ON true",
    "SELECT a, b FROM t GROUP BY a, b ORDER BY a, b",
    "SELECT * FROM VALUES (1), (2) AS v(x)",
    "SELECT * FROM t WHERE x IN (1, 2) ORDER BY a, b LIMIT 5",
])
def test_ordinary_reads_are_all_named(query: str) -> None:
    assert sql_inputs(query).unnamed == ()


@pytest.mark.parametrize("query, function", [
    ("SELECT current_timestamp() AS now", "current_timestamp"),
    ("SELECT current_date AS d", "current_date"),
    ("SELECT * FROM t WHERE at > now() - INTERVAL 1 DAY", "now"),
    ("SELECT rand() FROM t", "rand"),
    ("SELECT uuid() AS id FROM t", "uuid"),
    ("SELECT curdate() FROM t", "curdate"),
    ("SELECT * FROM t TABLESAMPLE (10 PERCENT)", "tablesample"),
    ("SELECT DATE'today' AS d FROM t", "DATE'today'"),
])
def test_functions_that_differ_between_runs_are_reported(query: str, function: str) -> None:
    assert function in sql_inputs(query).nondeterministic


def test_a_read_inside_a_block_comment_is_not_one_and_the_read_after_it_is() -> None:
    assert sql_inputs("SELECT * FROM /* raw FROM x */ orders").names == ("orders",)


def test_a_column_named_now_is_not_the_clock() -> None:
    assert sql_inputs("SELECT now FROM clock").nondeterministic == ()


def test_observability_views_name_what_they_read() -> None:
    """Every observability dataset's query is read whole: no unnamed read, and only health_metrics
    depends on the clock (through the `clock` view, not a function of its own)."""
    for table in catalog.TABLES:
        found = sql_inputs(table.sql)
        assert found.unnamed == (), table.name
        assert found.names, table.name
        assert found.nondeterministic == (), table.name


def _read(name: str, plan_id: int, streaming: bool = False) -> pb2.Relation:
    return pb2.Relation(common=pb2.RelationCommon(plan_id=plan_id),
                        read=pb2.Read(named_table=pb2.Read.NamedTable(unparsed_identifier=name), is_streaming=streaming))


def _project(child: pb2.Relation, function: str, plan_id: int) -> pb2.Relation:
    call = pb2.Expression(unresolved_function=pb2.Expression.UnresolvedFunction(function_name=function))
    return pb2.Relation(common=pb2.RelationCommon(plan_id=plan_id), project=pb2.Project(input=child, expressions=[call]))


def test_a_plan_names_its_reads_and_sql_nodes() -> None:
    join = pb2.Relation(join=pb2.Join(left=_read("`s`.`a`", 1), right=pb2.Relation(sql=pb2.SQL(query="SELECT * FROM b"))))
    assert relation_inputs(join) == Inputs(names=("s.a", "b"))


def test_a_plan_reading_a_data_source_or_calling_the_clock_is_reported() -> None:
    source = pb2.Relation(read=pb2.Read(data_source=pb2.Read.DataSource(format="cloudFiles")))
    assert relation_inputs(source).unnamed == ("a cloudFiles read",)
    assert relation_inputs(_project(_read("a", 1), "current_timestamp", 2)).nondeterministic == ("current_timestamp",)
    assert relation_inputs(_project(_read("a", 1), "upper", 2)).nondeterministic == ()
    udf = pb2.Expression(common_inline_user_defined_function=pb2.CommonInlineUserDefinedFunction(
        function_name="pick", deterministic=False))
    assert relation_inputs(pb2.Relation(project=pb2.Project(input=_read("a", 1), expressions=[udf]))).nondeterministic \
        == ("UDF pick",)


def test_a_plan_s_expression_strings_are_read_as_sql() -> None:
    """`where("...")`, `selectExpr` and `F.expr` reach the plan as text: their clock calls and subqueries count."""
    condition = pb2.Expression(expression_string=pb2.Expression.ExpressionString(
        expression="at > current_timestamp() - INTERVAL 1 DAY AND k IN (SELECT k FROM other)"))
    found = relation_inputs(pb2.Relation(filter=pb2.Filter(input=_read("events", 1), condition=condition)))
    assert found.names == ("events", "other") and found.nondeterministic == ("current_timestamp",)


def test_the_same_query_has_the_same_text_whatever_its_plan_ids() -> None:
    first, second = _project(_read("a", 1), "upper", 2), _project(_read("a", 7), "upper", 9)
    assert first != second
    assert relation_text(first) == relation_text(second)
    assert relation_text(first) != relation_text(_project(_read("b", 1), "upper", 2))
    assert first.common.plan_id == 2  # the plan itself is left as it was


def test_digest_separates_its_parts() -> None:
    assert digest("ab", "c") != digest("a", "bc")
    assert digest("a", b"b") == digest(b"a", "b")


@pytest.mark.parametrize("query", [
    "SELECT trim(BOTH ' ' FROM coalesce(a, '')) FROM t",
    "SELECT extract(HOUR FROM at) FROM t",
    "SELECT substring(a FROM 2) FROM t",
    "SELECT position('x' IN a) FROM t",
    "SELECT CASE WHEN a IS DISTINCT FROM b THEN 1 END FROM t",
    "SELECT a FROM t WHERE a IS NOT DISTINCT FROM b, c",  # no comma join: the comma is after the comparison
])
def test_from_inside_a_function_call_reads_nothing(query: str) -> None:
    assert sql_inputs(query) == Inputs(names=("t",))


def test_a_subquery_inside_a_function_call_is_still_read() -> None:
    assert sql_inputs("SELECT coalesce((SELECT max(x) FROM u), 0) FROM t").names == ("u", "t")
