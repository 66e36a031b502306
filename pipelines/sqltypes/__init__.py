"""Spark SQL data types, parsed in pure Python (no JVM): the column types of `conf/tables.yml`.

`parse_type(text)` is a recursive-descent parser for the data type grammar of Spark 4.2's SQL parser
(`singleDataType` in SqlBaseParser.g4 plus the checks its AstBuilder applies), so a type text is
refused before any engine starts, with a message saying where it stops being a type:

    ARRAY<FOO>: 'FOO' is not a Spark SQL type
    STRUCT<a INT: the text ends after 'STRUCT<a INT' where ',' or '>' is expected

It accepts what Spark accepts (tests compare it with Spark's own parser): keywords in any case,
white space and SQL comments anywhere between tokens, the type aliases (INTEGER, LONG, BYTE, SHORT,
REAL, DEC, NUMERIC, CHARACTER), DECIMAL's default (10,0) and limits (precision at most 38, scale at
most the precision), STRUCT fields with or without a colon, `back-quoted` names, NOT NULL and
COMMENT '...' (Spark's string literal rules). `SqlType.sql()` is the normalized text: canonical
names in upper case (INT, BIGINT, TINYINT, SMALLINT, FLOAT, DECIMAL(p,s)), `MAP<K, V>`,
`STRUCT<name: T>`, field names back-quoted only where needed, comments re-quoted. It parses to the
same Spark DataType as the original text. TIMESTAMP and TIMESTAMP_LTZ stay distinct: TIMESTAMP
means whatever `spark.sql.timestampType` says.

`check_json_type(t)` then refuses types Spark parses but that a JSON source cannot fill or bronze
(Delta) cannot store, each with the reason and the fix: CHAR/VARCHAR (Spark's JSON reader refuses
them), the INTERVAL types, VOID, MAP keys other than STRING, an empty STRUCT, DECIMAL precision 0,
field names Delta refuses (` ,;{}()=`, tab, newline) or that repeat (case-insensitively), and
NOT NULL on a field (the JSON reader never enforces it). TIME, GEOMETRY, GEOGRAPHY and collated
STRINGs are refused while parsing, without checking their parameters (SRIDs, collation names).
"""

from pipelines.sqltypes.parser import check_json_type, normalize, parse_type
from pipelines.sqltypes.types import (
    DEFAULT_DECIMAL,
    DELTA_INVALID_NAME_CHARACTERS,
    MAX_DECIMAL_PRECISION,
    Array,
    Char,
    Decimal,
    Field,
    Interval,
    Map,
    Simple,
    SqlType,
    SqlTypeError,
    Struct,
    UnsupportedTypeError,
    empty_relation_sql,
    quote_name,
    quote_string,
)

__all__ = [
    "DEFAULT_DECIMAL", "DELTA_INVALID_NAME_CHARACTERS", "MAX_DECIMAL_PRECISION", "Array", "Char", "Decimal", "Field",
    "Interval", "Map", "Simple", "SqlType", "SqlTypeError", "Struct", "UnsupportedTypeError", "check_json_type",
    "empty_relation_sql", "normalize", "parse_type", "quote_name", "quote_string",
]
