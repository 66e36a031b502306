"""The Spark SQL data types `parse_type` builds, the normalized text of each (`SqlType.sql()`), the
errors it raises, and the quoting of names and strings in generated SQL."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Iterable, Iterator

MAX_DECIMAL_PRECISION = 38
DEFAULT_DECIMAL = (10, 0)
# Delta refuses these in (nested) column names unless column mapping is on.
DELTA_INVALID_NAME_CHARACTERS = " ,;{}()\n\t="

class SqlTypeError(ValueError):
    """A text that is not a Spark SQL type; `position` is where it stops being one (0-based)."""

    def __init__(self, text: str, problem: str, position: int | None = None) -> None:
        self.text = text
        self.problem = problem
        self.position = position
        super().__init__(f"{text.strip()}: {problem}")


class UnsupportedTypeError(SqlTypeError):
    """A Spark SQL type that a JSON source cannot fill or that bronze (Delta) cannot store."""


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
