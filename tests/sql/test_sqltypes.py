"""The pure-Python Spark SQL type parser (pipelines/sqltypes/), with Spark's own parser as the oracle.

For every text below, lakewatch's parser must accept it exactly when Spark 4.2's parser
(`parseDataType`, the shared classic session) does, and the normalized text must parse in Spark to
the same DataType (compared as Spark's JSON, which includes nullability and comments). Types that
Spark parses but a JSON source cannot fill are refused with a reason, and a separate test shows
Spark or Delta really fails (or, for NOT NULL, really ignores it) for each.
"""

from __future__ import annotations

import json

import pytest

from pipelines.sqltypes import (
    SqlTypeError,
    UnsupportedTypeError,
    check_json_type,
    normalize,
    parse_type,
)

# Spark 4.2 parses each of these (as `parseDataType`).
SPARK_ACCEPTS = [
    # primitives, aliases, case, white space
    "STRING", "string", " String ", "BOOLEAN", "TINYINT", "BYTE", "SMALLINT", "SHORT", "INT", "int",
    "INTEGER", "BIGINT", "LONG", "FLOAT", "REAL", "DOUBLE", "DATE", "TIMESTAMP", "timestamp_ntz",
    "TIMESTAMP_NTZ", "TIMESTAMP_LTZ", "BINARY", "VARIANT",
    "DECIMAL", "DEC", "NUMERIC", "DECIMAL(10)", "decimal(10, 2)", "DECIMAL (10 , 2)", "DEC(5,2)",
    "NUMERIC(38,38)", "DECIMAL(38)", "DECIMAL(1,0)", "DECIMAL(05,02)",
    "CHAR(5)", "CHARACTER(5)", "VARCHAR(255)", "VARCHAR(2147483647)", "CHAR(0)",
    # complex types
    "ARRAY<INT>", "array<string>", "ARRAY < INT >", "ARRAY<ARRAY<INT>>", "ARRAY<\nINT\n>",
    "MAP<STRING,INT>", "MAP < STRING , INT >", "MAP<STRING, ARRAY<DECIMAL(5,2)>>",
    "MAP<STRING,MAP<STRING,INT>>", "MAP<STRUCT<a: INT>, INT>",
    "STRUCT<a: INT>", "STRUCT<a INT, b STRING>", "STRUCT<a:INT,b:STRING>",
    "struct<a:int,b:map<string,array<decimal(5,2)>>>", "STRUCT<a: STRUCT<b: ARRAY<MAP<STRING, STRUCT<c: INT>>>>>",
    "STRUCT<a STRUCT<b INT>>", "ARRAY<STRUCT<id: BIGINT, tags: ARRAY<STRING>>>",
    # field names
    "STRUCT<`a b`: INT COMMENT 'hi'>", "STRUCT<`a``b`: INT>", "STRUCT<`é`: INT>", "STRUCT<``: INT>",
    "STRUCT<1a: INT>", "STRUCT<1e: INT>", "STRUCT<1_000: INT>", "STRUCT<_: INT>",
    "STRUCT<select: INT, from: STRING>", "STRUCT<Ab: INT, ab: INT>", "STRUCT<a INT, a INT>",
    "STRUCT<COMMENT: INT, NOT: INT, NULL: INT>",
    # comments: Spark's string literal rules
    'STRUCT<a: INT COMMENT "dq">', "STRUCT<a: INT COMMENT 'it\\'s'>", "STRUCT<a: INT COMMENT 'it''s'>",
    'STRUCT<a: INT COMMENT "a""b">', "STRUCT<a: INT COMMENT 'a' 'b'>", "STRUCT<a: INT COMMENT 'a'\n'b'>",
    "STRUCT<a: INT COMMENT 'a' R'b'>", "STRUCT<a: INT COMMENT r'raw\\n'>", "STRUCT<a: INT COMMENT R'a\\'>",
    "STRUCT<a: INT COMMENT 'tab\\there \\u0041 \\101 \\% \\_ \\q \\477 \\177'>",
    "STRUCT<a: INT COMMENT '\\U0001F600 \\u00e9 \\x'>", "STRUCT<a: INT COMMENT ''>",
    "STRUCT<a: INT COMMENT ''''>", "STRUCT<a: INT COMMENT 'a\\\\'>", "STRUCT<a: INT COMMENT 'x\ny'>",
    "STRUCT<a: INT COMMENT '\\_ \\0 \\Z \\b \\r'>", "STRUCT<a: INT COMMENT 'x', b INT COMMENT 'y'>",
    # SQL comments and Spark's white space characters
    "STRUCT<a: INT /* c */ COMMENT 'x'>", "INT -- comment", "INT --", "INT -- x\n", "INT /* c */", "INT/**/",
    "ARRAY</* c */INT>", "ARRAY<INT /* nested /* c */ still */>", "STRUCT<a: INT --c\n>", "ARRAY<INT>--x",
    "INT\t", "\tINT\n", "INT\f", "INT\x0b", "INT\u00a0", "INT\u3000", "INT\u2028", "INT\u2002",
    # Spark types a JSON source cannot fill (refused later by check_json_type)
    "INTERVAL", "INTERVAL YEAR", "INTERVAL YEAR TO MONTH", "INTERVAL MONTH", "INTERVAL DAY",
    "INTERVAL DAY TO HOUR", "INTERVAL DAY TO SECOND", "INTERVAL HOUR TO MINUTE", "INTERVAL MINUTE TO SECOND",
    "INTERVAL SECOND", "VOID", "DECIMAL(0)", "DECIMAL(0,0)", "STRUCT<>", "STRUCT < >", "ARRAY<STRUCT<>>",
    "MAP<INT, STRING>", "STRUCT<a: INT NOT NULL>", "STRUCT<a: INT ! NULL>", "STRUCT<a: INT NOT NULL COMMENT 'x'>",
    "STRUCT<a INT NOT NULL, b INT>",
]

# Spark 4.2 refuses each of these.
SPARK_REFUSES = [
    "", "   ", "-- only a comment", "FOO", "ARRAY<FOO>", "STRUCT<a INT", "STRUCT<a: FOO>", "NUMBER", "TEXT",
    "BOOL", "INT8", "DOUBLE PRECISION", "CHARACTER VARYING(5)", "TINYINT UNSIGNED", "NULL", "CALENDAR",
    "TIMESTAMP WITH TIME ZONE", "`INT`", "'INT'", "INT INT", "INT;", "INT NOT NULL", "INT COMMENT 'x'",
    # parameters
    "INT(5)", "STRING(5)", "BOOLEAN()", "TIMESTAMP(3)", "BINARY(3)", "VARIANT(1)", "VOID(1)", "INTERVAL(3)",
    "DECIMAL(39,0)", "DECIMAL(5,6)", "DECIMAL(38,39)", "DECIMAL(5,2,1)", "DECIMAL(-1)", "DECIMAL(10.0)",
    "DECIMAL(+5)", "DECIMAL()", "DECIMAL(10,)", "DECIMAL(2147483648)", "DECIMAL(1e1)",
    "CHAR", "VARCHAR", "VARCHAR(2147483648)", "CHAR(1,2)",
    # complex types
    "ARRAY", "ARRAY<>", "ARRAY(INT)", "ARRAY<INT", "ARRAY<INT>>", "ARRAY<<INT>>", "ARRAY<INT>(3)",
    "ARRAY<INT, INT>", "MAP", "MAP<>", "MAP<STRING>", "MAP<STRING, INT, INT>", "MAP<STRING INT>",
    "STRUCT", "STRUCT<a>", "STRUCT<: INT>", "STRUCT<a: >", "STRUCT<a: INT b: INT>", "STRUCT<a: INT,, b: INT>",
    "STRUCT<a: INT,>", "STRUCT<,a: INT>",
    # field names
    "STRUCT<a-b: INT>", "STRUCT<a.b: INT>", "STRUCT<1: INT>", "STRUCT<1e5: INT>", "STRUCT<1L: INT>",
    "STRUCT<1D: INT>", "STRUCT<1BD: INT>", "STRUCT<1F: INT>", "STRUCT<1S: INT>", "STRUCT<1Y: INT>",
    "STRUCT<1E5F: INT>", "STRUCT<1e+5: INT>", "STRUCT<1.5: INT>", "STRUCT<é: INT>", 'STRUCT<"a": INT>',
    "STRUCT<`a`b: INT>", "STRUCT<`a` `b`: INT>", "STRUCT<a::INT>", "STRUCT<`a: INT>",
    # field options
    "STRUCT<a: INT COMMENT NULL>", "STRUCT<a: INT COMMENT>", "STRUCT<a: INT COMMENT 'x' NOT NULL>",
    "STRUCT<a: INT COMMENT 'x' COMMENT 'y'>", "STRUCT<a INT NULL>", "STRUCT<a INT NOT, b INT>",
    "STRUCT<a: INT COMMENT 'a\\'>", "STRUCT<a: INT COMMENT 'unterminated>", "STRUCT<a: INT COMMENT x>",
    # lexical
    "INT/", "INT -", "INT /* unterminated", "ARRAY<INT /*+ hint */>", "INT\x1c", "INT\u2029", "INT\x85",
    "INT\u200b",
    # intervals
    "INTERVAL MONTH TO MONTH", "INTERVAL YEAR TO YEAR", "INTERVAL MONTH TO YEAR", "INTERVAL HOUR TO HOUR",
    "INTERVAL SECOND TO SECOND", "INTERVAL HOUR TO DAY", "INTERVAL MINUTE TO HOUR", "INTERVAL DAY TO DAY",
    "INTERVAL YEAR TO", "INTERVAL DAY TO",
]

# Spark parses these; lakewatch refuses them as soon as it sees the type, without checking the
# parameters (SRIDs, collation names), because no JSON source can fill them.
NOT_INGESTIBLE_SPARK_TYPES = [
    ("TIME", "TIME"), ("TIME(3)", "TIME"), ("TIME WITHOUT TIME ZONE", "TIME"), ("STRUCT<t: TIME>", "TIME"),
    ("GEOMETRY(4326)", "GEOMETRY"), ("GEOMETRY(ANY)", "GEOMETRY"), ("GEOGRAPHY(4326)", "GEOGRAPHY"),
    ("STRING COLLATE UTF8_LCASE", "collated"), ("STRING COLLATE UNICODE_CI", "collated"),
    ("ARRAY<STRING COLLATE UTF8_LCASE>", "collated"),
]

# Spark parses these, a JSON source cannot fill them (or Delta cannot store them): refused, with why.
REFUSED_FOR_JSON = [
    ("CHAR(5)", "UNSUPPORTED_CHAR_OR_VARCHAR_AS_STRING"),
    ("VARCHAR(5)", "declare STRING and add an expectation such as `length(c) <= 5`"),
    ("ARRAY<VARCHAR(3)>", "VARCHAR(3) at c[]"),
    ("INTERVAL", "no interval values"),
    ("INTERVAL YEAR", "no interval values"),
    ("INTERVAL DAY TO SECOND", "no interval values"),
    ("VOID", "Delta cannot store it"),
    ("ARRAY<VOID>", "VOID at c[]"),
    ("DECIMAL(0)", "precision must be between 1 and 38"),
    ("MAP<INT, STRING>", "only reads MAP<STRING, ...>"),
    ("STRUCT<>", "empty STRUCT"),
    ("STRUCT<a: STRUCT<>>", "STRUCT<> at c.a"),
    ("STRUCT<a: INT NOT NULL>", "add an expectation such as `c.a IS NOT NULL`"),
    ("STRUCT<a: STRUCT<b: INT NOT NULL>>", "NOT NULL at c.a.b"),
    ("STRUCT<`a b`: INT>", "character Delta does not allow"),
    ("STRUCT<Ab: INT, ab: INT>", "declared twice"),
]


def spark_type_json(spark, text: str) -> str | None:
    """Spark's DataType for the text as JSON, or None when Spark's parser refuses it."""
    parser = spark._jsparkSession.sessionState().sqlParser()
    try:
        return str(parser.parseDataType(text).json())
    except Exception:  # noqa: BLE001 (Py4JJavaError: a ParseException or an AnalysisException)
        return None


def test_the_lists_do_not_overlap():
    texts = SPARK_ACCEPTS + SPARK_REFUSES
    assert len(texts) == len(set(texts))


@pytest.mark.parametrize("text", SPARK_ACCEPTS + SPARK_REFUSES)
def test_accepts_exactly_what_spark_accepts_and_normalizes_to_the_same_type(spark, text):
    expected = spark_type_json(spark, text)
    assert (expected is not None) == (text in SPARK_ACCEPTS), "the test's own list disagrees with Spark"
    try:
        parsed = parse_type(text)
    except UnsupportedTypeError as e:
        pytest.fail(f"refused as not ingestible while parsing: {e}")
    except SqlTypeError as e:
        assert expected is None, f"Spark accepts {text!r}, lakewatch refuses it: {e}"
        assert e.position is not None and 0 <= e.position <= len(text)
        return
    assert expected is not None, f"lakewatch accepts {text!r} as {parsed.sql()}, Spark refuses it"
    normalized = parsed.sql()
    assert spark_type_json(spark, normalized) == expected, f"{text!r} normalized to {normalized!r}"
    assert parse_type(normalized) == parsed and parse_type(normalized).sql() == normalized  # a fixed point


@pytest.mark.parametrize("text, reason", NOT_INGESTIBLE_SPARK_TYPES)
def test_spark_types_no_json_source_fills_are_refused_while_parsing(spark, text, reason):
    assert spark_type_json(spark, text) is not None  # a real Spark type
    with pytest.raises(UnsupportedTypeError) as info:
        parse_type(text)
    assert reason in str(info.value) and "declare" in str(info.value)


@pytest.mark.parametrize("text, reason", REFUSED_FOR_JSON)
def test_spark_types_a_json_source_cannot_fill_are_refused_with_the_reason(spark, text, reason):
    assert spark_type_json(spark, text) is not None  # a real Spark type, parsed by both
    parsed = parse_type(text)
    with pytest.raises(UnsupportedTypeError) as info:
        check_json_type(parsed, text, "c")
    assert reason in str(info.value)
    assert str(info.value).startswith(f"{text}: ")


def _read_and_store(spark, tmp_path, ddl: str, line: str):
    """Reads one JSON line with the schema as the JSON source does, and stores it in Delta."""
    source = tmp_path / "in.json"
    source.write_text(line + "\n")
    rows = spark.read.schema(ddl).json(str(source)).collect()
    spark.read.schema(ddl).json(str(source)).write.format("delta").mode("overwrite").save(str(tmp_path / "out"))
    return rows


@pytest.mark.parametrize("text, reason", REFUSED_FOR_JSON)
def test_each_refusal_is_real_in_spark_or_delta(spark, tmp_path, text, reason):
    """What check_json_type refuses does fail with Spark's JSON reader or Delta (NOT NULL: is ignored)."""
    if "NOT NULL" in text:
        nested = "STRUCT<b" in text
        rows = _read_and_store(spark, tmp_path, f"c {text}", json.dumps({"c": {"a": {} if nested else None}}))
        assert (rows[0].c.a.b if nested else rows[0].c.a) is None  # declared NOT NULL, read as NULL all the same
        return
    line = json.dumps({"c": {"a": 1, "a b": 1, "Ab": 1, "ab": 2}})
    with pytest.raises(Exception):  # noqa: B017 (AnalysisException, SparkException, ...: any failure)
        _read_and_store(spark, tmp_path, f"c {text}", line)


def test_every_accepted_type_is_read_from_json_and_stored_in_delta(spark, tmp_path):
    accepted = []
    for text in SPARK_ACCEPTS:
        try:
            accepted.append(normalize(text))
        except UnsupportedTypeError:
            continue
    assert len(accepted) >= 80
    ddl = ", ".join(f"c{i} {t}" for i, t in enumerate(accepted))
    line = json.dumps({"c0": "x", "c5": 5, "c40": [1, 2]})
    rows = _read_and_store(spark, tmp_path, ddl, line)
    assert len(rows) == 1 and rows[0].c0 == "x"
    assert len(spark.read.format("delta").load(str(tmp_path / "out")).columns) == len(accepted)


@pytest.mark.parametrize("texts, normalized", [
    (["int", " INTEGER ", "Int -- the id"], "INT"),
    (["long", "BIGINT"], "BIGINT"),
    (["byte", "tinyint"], "TINYINT"),
    (["short", "smallint"], "SMALLINT"),
    (["real", "float"], "FLOAT"),
    (["decimal(10, 2)", "NUMERIC(10,2)", "dec ( 10 , 2 )"], "DECIMAL(10,2)"),
    (["decimal", "DECIMAL(10)", "numeric(10, 0)"], "DECIMAL(10,0)"),
    (["timestamp_ltz"], "TIMESTAMP_LTZ"),
    (["array<string>", "ARRAY < STRING >"], "ARRAY<STRING>"),
    (["map<string,int>", "MAP<STRING , INTEGER>"], "MAP<STRING, INT>"),
    (["struct<Id:long,`Full Name`:string>", "STRUCT<Id BIGINT, `Full Name` STRING>"],
     "STRUCT<Id: BIGINT, `Full Name`: STRING>"),
    (["struct<a:int comment 'it''s'>", "STRUCT<a INT COMMENT \"it's\">"], "STRUCT<a: INT COMMENT 'it\\'s'>"),
])
def test_normalization_is_one_text_per_type(texts, normalized):
    assert {parse_type(t).sql() for t in texts} == {normalized}


@pytest.mark.parametrize("text, message", [
    ("ARRAY<FOO>", "ARRAY<FOO>: 'FOO' is not a Spark SQL type"),
    ("STRUCT<a INT", "STRUCT<a INT: the text ends after 'STRUCT<a INT' where ',' or '>' is expected"),
    ("MAP<STRING>", "expected ',' and the value type after 'MAP<STRING', found '>'"),
    ("DECIMAL(39,2)", "precision 39 exceeds the maximum of 38"),
    ("DECIMAL(5,6)", "scale 6 is larger than precision 5"),
    ("INT(5)", "INT takes no parameters"),
    ("NUMBER(10)", "'NUMBER' is not a Spark SQL type; write DECIMAL(p,s)"),
    ("STIRNG", "did you mean STRING?"),
    ("ARRAY", "write ARRAY<T>"),
    ("BIGINT NOT NULL", "columns are always nullable"),
    ("STRUCT<a: INT COMMENT 'x' NOT NULL>", "`name: TYPE [NOT NULL] [COMMENT '...']`, in that order"),
    ("INTERVAL HOUR TO DAY", "expected MINUTE or SECOND after 'INTERVAL HOUR TO', found 'DAY'"),
    ("STRUCT<a-b: INT>", "expected a type after 'STRUCT<a', found '-'"),
    ("", "the text is empty"),
])
def test_errors_say_where_the_text_stops_being_a_type(text, message):
    with pytest.raises(SqlTypeError) as info:
        parse_type(text)
    assert message in str(info.value)
