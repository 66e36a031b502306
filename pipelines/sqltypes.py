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

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass
from typing import Iterable, Iterator

MAX_DECIMAL_PRECISION = 38
DEFAULT_DECIMAL = (10, 0)
_MAX_INT = 2**31 - 1  # parameters are Java ints in Spark's parser
# Delta refuses these in (nested) column names unless column mapping is on.
DELTA_INVALID_NAME_CHARACTERS = " ,;{}()\n\t="

# Spark 4's lexer: these characters separate tokens (WS); anything else outside a token is an error.
_WHITESPACE = frozenset(" \t\n\f\r\x0b\u00a0\u1680\u2028\u202f\u205f\u3000" + "".join(chr(c) for c in range(0x2000, 0x200B)))

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


class SqlTypeError(ValueError):
    """A text that is not a Spark SQL type; `position` is where it stops being one (0-based)."""

    def __init__(self, text: str, problem: str, position: int | None = None) -> None:
        self.text = text
        self.problem = problem
        self.position = position
        super().__init__(f"{text.strip()}: {problem}")


class UnsupportedTypeError(SqlTypeError):
    """A Spark SQL type that a JSON source cannot fill or that bronze (Delta) cannot store."""


# -- the types ---------------------------------------------------------------------------------
class SqlType:
    def sql(self) -> str:
        raise NotImplementedError

    def children(self) -> Iterator[tuple[str, "SqlType"]]:
        return iter(())

    def __str__(self) -> str:
        return self.sql()


@dataclass(frozen=True)
class Simple(SqlType):
    name: str  # canonical: INT, STRING, TIMESTAMP_NTZ, VOID, ...

    def sql(self) -> str:
        return self.name


@dataclass(frozen=True)
class Decimal(SqlType):
    precision: int
    scale: int

    def sql(self) -> str:
        return f"DECIMAL({self.precision},{self.scale})"


@dataclass(frozen=True)
class Char(SqlType):
    name: str  # CHAR or VARCHAR
    length: int

    def sql(self) -> str:
        return f"{self.name}({self.length})"


@dataclass(frozen=True)
class Interval(SqlType):
    start: str | None = None  # None: the calendar INTERVAL
    end: str | None = None

    def sql(self) -> str:
        if self.start is None:
            return "INTERVAL"
        return f"INTERVAL {self.start}" + (f" TO {self.end}" if self.end else "")


@dataclass(frozen=True)
class Array(SqlType):
    element: SqlType

    def sql(self) -> str:
        return f"ARRAY<{self.element.sql()}>"

    def children(self) -> Iterator[tuple[str, SqlType]]:
        yield "[]", self.element


@dataclass(frozen=True)
class Map(SqlType):
    key: SqlType
    value: SqlType

    def sql(self) -> str:
        return f"MAP<{self.key.sql()}, {self.value.sql()}>"

    def children(self) -> Iterator[tuple[str, SqlType]]:
        yield "{key}", self.key
        yield "{value}", self.value


@dataclass(frozen=True)
class Field:
    name: str
    type: SqlType
    nullable: bool = True
    comment: str | None = None

    def sql(self) -> str:
        text = f"{quote_name(self.name)}: {self.type.sql()}"
        if not self.nullable:
            text += " NOT NULL"
        if self.comment is not None:
            text += f" COMMENT {quote_string(self.comment)}"
        return text


@dataclass(frozen=True)
class Struct(SqlType):
    fields: tuple[Field, ...]

    def sql(self) -> str:
        return "STRUCT<" + ", ".join(f.sql() for f in self.fields) + ">"

    def children(self) -> Iterator[tuple[str, SqlType]]:
        for f in self.fields:
            yield "." + quote_name(f.name), f.type


_PLAIN_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*", re.ASCII)


def quote_name(name: str) -> str:
    """A field name as Spark writes it: back-quoted unless it is a plain identifier."""
    return name if _PLAIN_NAME.fullmatch(name) else "`" + name.replace("`", "``") + "`"


def quote_string(value: str) -> str:
    """A Spark SQL string literal that reads back as `value`."""
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"


def empty_relation_sql(columns: Iterable[tuple[str, str]]) -> str:
    """`(SELECT CAST(NULL AS <type>) AS <name>, ... WHERE false)`: no rows with these (name, type)
    columns, read in place of a table that does not exist yet."""
    return "(SELECT " + ", ".join(f"CAST(NULL AS {kind}) AS {name}" for name, kind in columns) + " WHERE false)"

# -- tokens ------------------------------------------------------------------------------------
@dataclass(frozen=True)
class _Token:
    kind: str  # WORD, INT, NUMBER (other numeric literal), NAME (back-quoted), STRING, PUNCT, BAD, EOF
    text: str  # source text (for BAD: what is wrong)
    start: int
    value: str = ""  # WORD: upper case; NAME/STRING: the unquoted value

    def shown(self) -> str:
        if self.kind == "EOF":
            return "the end of the text"
        return f"'{self.text}'"


_WORD = re.compile(r"[A-Za-z0-9_]+", re.ASCII)
# Spark's numeric literals; at equal length a numeric literal wins over an identifier (lexer order).
_NUMERIC = re.compile(
    r"[0-9]+[LSY]|(?:[0-9]+\.[0-9]*|\.[0-9]+|[0-9]+)(?:E[+-]?[0-9]+)?(?:BD|[FD])?", re.ASCII | re.IGNORECASE
)
_PUNCT = "<>(),:!"


def _string_literal(text: str, i: int) -> tuple[str, int] | None:
    """A Spark string literal at text[i]: (value, end) or None if unterminated."""
    raw = text[i] in "rR"
    quote = text[i + 1] if raw else text[i]
    j = i + (2 if raw else 1)
    if raw:
        end = text.find(quote, j)
        return (text[j:end], end + 1) if end >= 0 else None
    out: list[str] = []
    while j < len(text):
        c = text[j]
        if c == quote:
            if j + 1 < len(text) and text[j + 1] == quote:  # a doubled quote is one quote
                out.append(quote)
                j += 2
                continue
            return "".join(out), j + 1
        if c == "\\" and j + 1 < len(text):
            j = _unescape(text, j + 1, out)
            continue
        out.append(c)
        j += 1
    return None


def _unescape(text: str, j: int, out: list[str]) -> int:
    """Spark's unescapeSQLString for the character(s) after a backslash at text[j-1]."""
    c = text[j]
    hex4, hex8 = text[j + 1:j + 5], text[j + 1:j + 9]
    if c == "u" and len(hex4) == 4 and all(h in "0123456789abcdefABCDEF" for h in hex4):
        out.append(chr(int(hex4, 16)))
        return j + 5
    if c == "U" and len(hex8) == 8 and all(h in "0123456789abcdefABCDEF" for h in hex8):
        out.append(chr(int(hex8, 16)))
        return j + 9
    octal = text[j:j + 3]
    if len(octal) == 3 and octal[0] in "01" and all(o in "01234567" for o in octal[1:]):
        out.append(chr(int(octal, 8)))
        return j + 3
    out.append({"0": "\0", "b": "\b", "n": "\n", "r": "\r", "t": "\t", "Z": "\x1a",
                "%": "\\%", "_": "\\_"}.get(c, c))
    return j + 1


def _tokens(text: str) -> list[_Token]:
    tokens: list[_Token] = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c in _WHITESPACE:
            i += 1
        elif text.startswith("--", i):
            end = text.find("\n", i)
            i = n if end < 0 else end + 1
        elif text.startswith("/*", i):
            if text.startswith("/*+", i):
                tokens.append(_Token("BAD", "/*+", i))
                break
            depth, j = 0, i
            while j < n:
                if text.startswith("/*", j):
                    depth, j = depth + 1, j + 2
                elif text.startswith("*/", j):
                    depth, j = depth - 1, j + 2
                    if depth == 0:
                        break
                else:
                    j += 1
            if depth:
                tokens.append(_Token("BAD", "an unterminated /* comment", i))
                break
            i = j
        elif c in _PUNCT:
            tokens.append(_Token("PUNCT", c, i, c))
            i += 1
        elif c == "`":
            j, name = i + 1, []
            while j < n:
                if text[j] == "`":
                    if text.startswith("``", j):
                        name.append("`")
                        j += 2
                        continue
                    break
                name.append(text[j])
                j += 1
            if j >= n:
                tokens.append(_Token("BAD", "an unterminated `name`", i))
                break
            tokens.append(_Token("NAME", text[i:j + 1], i, "".join(name)))
            i = j + 1
        elif c in "'\"" or (c in "rR" and text[i + 1:i + 2] in ("'", '"')):
            literal = _string_literal(text, i)
            if literal is None:
                tokens.append(_Token("BAD", "an unterminated string", i))
                break
            value, end = literal
            tokens.append(_Token("STRING", text[i:end], i, value))
            i = end
        else:
            word = _WORD.match(text, i)
            number = _NUMERIC.match(text, i)
            w = word.end() - i if word else 0
            m = number.end() - i if number else 0
            if m and m >= w:
                kind = "INT" if text[i:i + m].isdigit() else "NUMBER"
                tokens.append(_Token(kind, text[i:i + m], i))
                i += m
            elif w:
                tokens.append(_Token("WORD", text[i:i + w], i, text[i:i + w].upper()))
                i += w
            else:
                tokens.append(_Token("BAD", c, i))
                break
    tokens.append(_Token("EOF", "", n))
    return tokens


# -- the parser --------------------------------------------------------------------------------
class _Parser:
    def __init__(self, text: str) -> None:
        self.text = text
        self.tokens = _tokens(text)
        self.i = 0

    @property
    def peek(self) -> _Token:
        return self.tokens[self.i]

    def next(self) -> _Token:
        token = self.tokens[self.i]
        if token.kind != "EOF":
            self.i += 1
        return token

    def at(self, kind: str, value: str | None = None) -> bool:
        t = self.peek
        return t.kind == kind and (value is None or t.value == value)

    def accept(self, kind: str, value: str | None = None) -> _Token | None:
        return self.next() if self.at(kind, value) else None

    def before(self, token: _Token) -> str:
        return self.text[:token.start].strip()

    def fail(self, token: _Token, expected: str, hint: str = "") -> SqlTypeError:
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

    def expect(self, kind: str, value: str, expected: str | None = None) -> _Token:
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

    def parameters(self) -> list[tuple[int, _Token]]:
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

    def primitive(self, token: _Token) -> SqlType:
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
