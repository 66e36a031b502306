"""The recursive-descent parser of Spark 4.2's `singleDataType` grammar (`parse_type`), the checks of
what a JSON source can fill and bronze can store (`check_json_type`), and `normalize`."""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass
from typing import Iterator

from pipelines.sqltypes.tokens import Token, tokenize
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
    quote_name,
)

_MAX_INT = 2**31 - 1  # parameters are Java ints in Spark's parser
# Names without parameters: alias -> canonical text (Spark's DataType.sql, except TIMESTAMP_LTZ).
_SIMPLE = {
    "BOOLEAN": "BOOLEAN",
    "TINYINT": "TINYINT", "BYTE": "TINYINT",
    "SMALLINT": "SMALLINT", "SHORT": "SMALLINT",
    "INT": "INT", "INTEGER": "INT",
    "BIGINT": "BIGINT", "LONG": "BIGINT",
    "FLOAT": "FLOAT", "REAL": "FLOAT",
    "DOUBLE": "DOUBLE",
    "DATE": "DATE",
    "TIMESTAMP": "TIMESTAMP", "TIMESTAMP_LTZ": "TIMESTAMP_LTZ", "TIMESTAMP_NTZ": "TIMESTAMP_NTZ",
    "STRING": "STRING",
    "BINARY": "BINARY",
    "VARIANT": "VARIANT",
    "VOID": "VOID",
}
_DECIMAL_NAMES = ("DECIMAL", "DEC", "NUMERIC")
_CHAR_NAMES = {"CHAR": "CHAR", "CHARACTER": "CHAR", "VARCHAR": "VARCHAR"}
_YEAR_MONTH = ("YEAR", "MONTH")
_DAY_TIME = ("DAY", "HOUR", "MINUTE", "SECOND")
# Spark types lakewatch refuses as soon as it sees them (their parameters are not checked).
_NOT_INGESTIBLE = {
    "TIME": "Spark's JSON reader and Delta do not support TIME: declare STRING (e.g. '12:30:00') "
            "and convert it in a query",
    "GEOMETRY": "Spark's JSON reader does not support GEOMETRY: declare STRING (WKT or GeoJSON text) "
                "or BINARY and convert it in a query",
    "GEOGRAPHY": "Spark's JSON reader does not support GEOGRAPHY: declare STRING (WKT or GeoJSON text) "
                 "or BINARY and convert it in a query",
}
_COLLATE_REASON = ("collated strings cannot be stored in bronze by the local engine's Delta: declare "
                   "STRING and apply the collation in queries (e.g. `col COLLATE UTF8_LCASE`)")
# Familiar names from other systems: what to write instead.
_HINTS = {
    "NUMBER": "DECIMAL(p,s)", "TEXT": "STRING", "CLOB": "STRING",
    "VARCHAR2": "STRING", "NVARCHAR": "STRING", "NCHAR": "STRING", "UUID": "STRING", "JSON": "VARIANT or STRING",
    "JSONB": "VARIANT or STRING", "BOOL": "BOOLEAN", "DATETIME": "TIMESTAMP", "TIMESTAMPTZ": "TIMESTAMP",
    "INT2": "SMALLINT", "INT4": "INT", "INT8": "BIGINT", "FLOAT4": "FLOAT", "FLOAT8": "DOUBLE",
    "BLOB": "BINARY", "BYTEA": "BINARY", "LIST": "ARRAY<T>", "OBJECT": "STRUCT<...>", "RECORD": "STRUCT<...>",
    "DICT": "MAP<STRING, T>",
}
_KNOWN = sorted({*_SIMPLE, *_DECIMAL_NAMES, *_CHAR_NAMES, "ARRAY", "MAP", "STRUCT", "INTERVAL"})



class _Parser:
    def __init__(self, text: str) -> None:
        self.text = text
        self.tokens = tokenize(text)
        self.i = 0

    @property
    def peek(self) -> Token:
        return self.tokens[self.i]

    def next(self) -> Token:
        token = self.tokens[self.i]
        if token.kind != "EOF":
            self.i += 1
        return token

    def at(self, kind: str, value: str | None = None) -> bool:
        t = self.peek
        return t.kind == kind and (value is None or t.value == value)

    def accept(self, kind: str, value: str | None = None) -> Token | None:
        return self.next() if self.at(kind, value) else None

    def before(self, token: Token) -> str:
        return self.text[:token.start].strip()

    def fail(self, token: Token, expected: str, hint: str = "") -> SqlTypeError:
        if token.kind == "BAD" and len(token.text) > 1 and token.text != "/*+":
            found = token.text
        else:
            found = token.shown()
        prefix = self.before(token)
        where = f"after '{prefix}'" if prefix else "at the start"
        if token.kind == "EOF":
            problem = f"the text ends {where} where {expected} is expected"
        else:
            problem = f"expected {expected} {where}, found {found}"
        return SqlTypeError(self.text, problem + (f" ({hint})" if hint else ""), token.start)

    def expect(self, kind: str, value: str, expected: str | None = None) -> Token:
        token = self.accept(kind, value)
        if token is None:
            raise self.fail(self.peek, expected or f"'{value}'")
        return token

    # dataType
    def data_type(self) -> SqlType:
        token = self.peek
        if token.kind != "WORD":
            raise self.fail(token, "a type")
        self.next()
        name = token.value
        if name == "ARRAY" and self.accept("PUNCT", "<"):
            element = self.data_type()
            self.expect("PUNCT", ">")
            return Array(element)
        if name == "MAP" and self.accept("PUNCT", "<"):
            key = self.data_type()
            self.expect("PUNCT", ",", "',' and the value type")
            value = self.data_type()
            self.expect("PUNCT", ">")
            return Map(key, value)
        if name == "STRUCT" and self.accept("PUNCT", "<"):
            fields: list[Field] = []
            if not self.accept("PUNCT", ">"):
                fields.append(self.field())
                while self.accept("PUNCT", ","):
                    fields.append(self.field())
                if not self.accept("PUNCT", ">"):
                    raise self.fail(self.peek, "',' or '>'", self._field_hint())
            return Struct(tuple(fields))
        if name in ("ARRAY", "MAP", "STRUCT"):
            shape = {"ARRAY": "ARRAY<T>", "MAP": "MAP<K, V>", "STRUCT": "STRUCT<name: T, ...>"}[name]
            raise self.fail(self.peek, "'<'", f"write {shape}")
        if name == "INTERVAL":
            return self.interval()
        if name in _NOT_INGESTIBLE:
            raise UnsupportedTypeError(self.text, _NOT_INGESTIBLE[name], token.start)
        if name == "STRING" and self.at("WORD", "COLLATE"):
            raise UnsupportedTypeError(self.text, _COLLATE_REASON, self.peek.start)
        if name in _SIMPLE or name in _DECIMAL_NAMES or name in _CHAR_NAMES:
            return self.primitive(token)
        raise SqlTypeError(self.text, f"'{token.text}' is not a Spark SQL type{_suggestion(name)}", token.start)

    def interval(self) -> Interval:
        unit = self.peek
        if unit.kind == "WORD" and unit.value in _YEAR_MONTH:
            self.next()
            if self.accept("WORD", "TO"):
                if unit.value == "YEAR" and self.accept("WORD", "MONTH"):
                    return Interval("YEAR", "MONTH")
                raise self.fail(self.peek if unit.value == "YEAR" else self.tokens[self.i - 1],
                                "MONTH" if unit.value == "YEAR" else "the end of the type",
                                "the year-month intervals are INTERVAL YEAR, INTERVAL YEAR TO MONTH and INTERVAL MONTH")
            return Interval(unit.value)
        if unit.kind == "WORD" and unit.value in _DAY_TIME:
            self.next()
            if self.accept("WORD", "TO"):
                end = self.peek
                later = _DAY_TIME[_DAY_TIME.index(unit.value) + 1:]
                if end.kind == "WORD" and end.value in later:
                    self.next()
                    return Interval(unit.value, end.value)
                hint = "a day-time interval goes from a larger unit to a smaller one, e.g. DAY TO SECOND"
                if not later:
                    raise self.fail(self.tokens[self.i - 1], "the end of the type", hint)
                raise self.fail(end, " or ".join(later), hint)
            return Interval(unit.value)
        if self.at("PUNCT", "("):
            raise self.fail(self.peek, "the end of the type", "INTERVAL takes no parameters")
        return Interval()

    def parameters(self) -> list[tuple[int, Token]]:
        if not self.accept("PUNCT", "("):
            return []
        values = []
        while True:
            token = self.peek
            if token.kind != "INT":
                raise self.fail(token, "a whole number")
            self.next()
            if int(token.text) > _MAX_INT:
                raise SqlTypeError(self.text, f"{token.text} is too large", token.start)
            values.append((int(token.text), token))
            if self.accept("PUNCT", ")"):
                return values
            self.expect("PUNCT", ",", "',' or ')'")

    def primitive(self, token: Token) -> SqlType:
        name = token.value
        params = self.parameters()
        shown = token.text
        if name in _SIMPLE:
            if params:
                raise SqlTypeError(self.text, f"{shown} takes no parameters", params[0][1].start)
            return Simple(_SIMPLE[name])
        if name in _CHAR_NAMES:
            if len(params) != 1:
                raise SqlTypeError(self.text, f"{shown} needs exactly one length, e.g. {_CHAR_NAMES[name]}(10)",
                                   token.start)
            return Char(_CHAR_NAMES[name], params[0][0])
        # DECIMAL, DEC, NUMERIC
        if len(params) > 2:
            raise SqlTypeError(self.text, f"{shown} takes a precision and a scale at most, e.g. DECIMAL(10,2)",
                               params[2][1].start)
        precision, scale = DEFAULT_DECIMAL if not params else (params[0][0], params[1][0] if len(params) > 1 else 0)
        if precision > MAX_DECIMAL_PRECISION:
            raise SqlTypeError(self.text, f"precision {precision} exceeds the maximum of {MAX_DECIMAL_PRECISION}",
                               params[0][1].start)
        if scale > precision:
            raise SqlTypeError(self.text, f"scale {scale} is larger than precision {precision}", params[1][1].start)
        return Decimal(precision, scale)

    # complexColType: name ':'? dataType (NOT NULL)? (COMMENT string+)?
    def field(self) -> Field:
        token = self.peek
        if token.kind == "WORD":
            name = token.text
        elif token.kind == "NAME":
            name = token.value
        else:
            raise self.fail(token, "a field name", "write names that are not plain words in `back quotes`")
        self.next()
        self.accept("PUNCT", ":")
        data_type = self.data_type()
        nullable = True
        if self.at("WORD", "NOT") or self.at("PUNCT", "!"):
            self.next()
            self.expect("WORD", "NULL", "NULL")
            nullable = False
        comment = None
        if self.accept("WORD", "COMMENT"):
            if not self.at("STRING"):
                raise self.fail(self.peek, "a quoted comment, e.g. COMMENT 'the order id'")
            parts = []
            while self.at("STRING"):
                parts.append(self.next().value)
            comment = "".join(parts)
        return Field(name, data_type, nullable, comment)

    def _field_hint(self) -> str:
        token = self.peek
        if token.kind == "WORD" and token.value in ("NOT", "NULL", "COMMENT"):
            return "a field is `name: TYPE [NOT NULL] [COMMENT '...']`, in that order"
        return ""

    def parse(self) -> SqlType:
        if self.peek.kind == "EOF":
            raise SqlTypeError(self.text, "the text is empty where a type is expected", 0)
        result = self.data_type()
        if self.peek.kind != "EOF":
            token = self.peek
            hint = ""
            if token.kind == "WORD" and token.value in ("NOT", "COMMENT", "NULL"):
                hint = "a column's type is the type alone: columns are always nullable (write an expectation " \
                       "to require a value) and carry no comment here"
            raise self.fail(token, "the end of the type", hint)
        return result


def _suggestion(name: str) -> str:
    if name in _HINTS:
        return f"; write {_HINTS[name]}"
    close = difflib.get_close_matches(name, _KNOWN, n=1, cutoff=0.75)
    return f"; did you mean {close[0]}?" if close else ""


def parse_type(text: str) -> SqlType:
    """Parses one Spark SQL data type; raises SqlTypeError saying where the text stops being one."""
    return _Parser(text).parse()


def check_json_type(data_type: SqlType, text: str | None = None, column: str = "col") -> None:
    """Raises UnsupportedTypeError for a type a JSON source cannot fill or Delta cannot store; the
    message names where in the type (`column.field`, `column[]` for an array's element)."""
    source = text if text is not None else data_type.sql()
    for path, t in _walk(data_type, column):
        reason = _json_problem(t, path)
        if reason:
            where = f"{t.sql()} at {path}: " if path != column else ""
            raise UnsupportedTypeError(source, where + reason)


def _walk(t: SqlType, path: str) -> Iterator[tuple[str, SqlType]]:
    yield path, t
    if isinstance(t, Struct):
        for f in t.fields:
            if not f.nullable:
                yield f"{path}.{quote_name(f.name)}", _NotNull(f)
    for step, child in t.children():
        yield from _walk(child, path + step)


@dataclass(frozen=True)
class _NotNull(SqlType):
    """A field declared NOT NULL (walked like a type so that it is reported with its path)."""

    field: Field

    def sql(self) -> str:
        return "NOT NULL"


def _json_problem(t: SqlType, path: str) -> str | None:
    column = path if re.fullmatch(r"[^\[{]+", path) else "..."  # a path SQL can name
    if isinstance(t, Char):
        return (f"Spark's JSON reader refuses {t.name} (UNSUPPORTED_CHAR_OR_VARCHAR_AS_STRING): declare STRING "
                f"and add an expectation such as `length({column}) <= {t.length}` to check the length")
    if isinstance(t, Interval):
        return ("a JSON source has no interval values (Spark's JSON reader and Delta refuse interval columns): "
                "declare STRING or a number of units (BIGINT) and convert it in a query")
    if isinstance(t, Simple) and t.name == "VOID":
        return "VOID holds only NULL and Delta cannot store it: declare the type the values have (or STRING)"
    if isinstance(t, Decimal) and t.precision == 0:
        return f"DECIMAL precision must be between 1 and {MAX_DECIMAL_PRECISION}, e.g. DECIMAL(10,2)"
    if isinstance(t, Map) and t.key != Simple("STRING"):
        return "JSON object keys are strings, so Spark's JSON reader only reads MAP<STRING, ...>: declare the key as STRING"
    if isinstance(t, Struct) and not t.fields:
        return "an empty STRUCT holds nothing and Delta cannot store it: declare its fields (or VARIANT for any object)"
    if isinstance(t, Struct):
        seen: set[str] = set()
        for f in t.fields:
            if set(f.name) & set(DELTA_INVALID_NAME_CHARACTERS):
                return (f"field {quote_name(f.name)} has a character Delta does not allow in column names "
                        f"({DELTA_INVALID_NAME_CHARACTERS!r}): read such objects as MAP<STRING, T> or VARIANT")
            if f.name.lower() in seen:
                return (f"field {quote_name(f.name)} is declared twice (field names are case-insensitive, and "
                        "Spark's JSON reader refuses duplicates): keep one")
            seen.add(f.name.lower())
    if isinstance(t, _NotNull):
        return ("Spark's JSON reader does not enforce NOT NULL (every field is read as nullable): remove NOT NULL "
                f"and add an expectation such as `{column} IS NOT NULL`")
    return None


def normalize(text: str) -> str:
    """The normalized text of a type that a JSON source can fill (raises SqlTypeError otherwise)."""
    parsed = parse_type(text)
    check_json_type(parsed, text)
    return parsed.sql()
