"""Reads pipeline SQL definition files: the `CREATE MATERIALIZED VIEW | STREAMING TABLE | TEMPORARY VIEW`
statements of SDP (and Databricks) pipelines, split into what the statement declares.

Plain text work, no Spark: the statements are Spark SQL that both engines parse; this module only finds
their parts (name, kind, column list with comments, COMMENT, PARTITIONED BY, TBLPROPERTIES, the query
after AS, the datasets the query reads) so that tests, the catalog of observability tables and the local
runner's definition events can use them. It reads the layout these files are written in: the clauses
of the CREATE statement before a line holding only `AS`, then the query.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Callable

MATERIALIZED_VIEW = "MATERIALIZED VIEW"
STREAMING_TABLE = "STREAMING TABLE"
TEMPORARY_VIEW = "TEMPORARY VIEW"

_CREATE = re.compile(
    r"^\s*CREATE\s+(?:OR\s+REFRESH\s+)?(?P<kind>MATERIALIZED\s+VIEW|STREAMING\s+TABLE|(?:PRIVATE\s+|TEMPORARY\s+)?VIEW)"
    r"\s+(?P<name>[`\w.]+)", re.IGNORECASE)
_QUERY_START = re.compile(r"^AS\s*$", re.MULTILINE)
_READS = re.compile(r"\b(?:FROM|JOIN)\s+(?:STREAM\s*\(\s*(?P<stream>[^)\s]+)\s*\)|STREAM\s+(?P<bare>[^\s,()]+)"
                    r"|(?P<table>[`\w.${}]+)(?![`\w.${}]|\s*\())", re.IGNORECASE)
_CTE = re.compile(r"(?:\bWITH|,)\s+(\w+)\s+AS\s*\(", re.IGNORECASE)


@dataclass(frozen=True)
class Definition:
    """One CREATE statement of a definition file."""

    kind: str  # MATERIALIZED_VIEW, STREAMING_TABLE or TEMPORARY_VIEW
    name: str
    columns: tuple[tuple[str, str, str], ...]  # (name, type, comment), as declared
    comment: str | None
    partition_cols: tuple[str, ...]
    properties: dict[str, str]
    query: str  # the text after AS
    line: int  # the statement's first line in its file (1-based)

    def reads(self) -> list[tuple[str, bool]]:
        """(name, read as a stream) of every relation the query reads by name (`relation_reads`)."""
        return relation_reads(self.query)


def relation_reads(query: str) -> list[tuple[str, bool]]:
    """(name, read as a stream) of every relation a query reads by name, in order, without its common
    table expressions."""
    text = without_function_from(without_literals(query))
    ctes = {m.group(1).lower() for m in _CTE.finditer(text)}
    found: list[tuple[str, bool]] = []
    for m in _READS.finditer(text):
        name = m.group("stream") or m.group("bare") or m.group("table")
        if name.lower() in ctes or name.startswith("("):
            continue
        item = (name, m.group("stream") is not None or m.group("bare") is not None)
        if item not in found:
            found.append(item)
    return found


def literal(text: str) -> str:
    """A SQL string literal (a quote doubled)."""
    return "'" + text.replace("'", "''") + "'"


def _unquote(text: str) -> str:
    return text[1:-1].replace("''", "'")


def without_literals(text: str) -> str:
    """`text` with string literals emptied and `--` and `/* */` comments removed (a comment becomes a
    space), so words inside them are not read."""
    out: list[str] = []
    i = 0
    while i < len(text):
        c = text[i]
        if c == "-" and text.startswith("--", i):
            end = text.find("\n", i)
            i = len(text) if end < 0 else end
            continue
        if c == "/" and text.startswith("/*", i):
            end = text.find("*/", i + 2)
            i = len(text) if end < 0 else end + 2
            out.append(" ")
            continue
        if c == "'":
            i += 1
            while i < len(text):
                if text[i] == "\\":
                    i += 2
                    continue
                if text[i] == "'":
                    if text.startswith("''", i):
                        i += 2
                        continue
                    break
                i += 1
            out.append("''")
            i += 1
            continue
        out.append(c)
        i += 1
    return "".join(out)


_FROM_ARGUMENT = re.compile(r"\b(?:trim|extract|substring|substr|overlay|position|date_part)\s*\(", re.IGNORECASE)
_DISTINCT_FROM = re.compile(r"\bIS\s+(?:NOT\s+)?DISTINCT\s+(FROM)\b", re.IGNORECASE)


def without_function_from(text: str) -> str:
    """`text` (without literals) with the FROM and IN keywords of function arguments blanked out
    (`trim(BOTH ' ' FROM x)`, `extract(HOUR FROM at)`, `position('a' IN b)`), and the FROM of the
    comparison `a IS [NOT] DISTINCT FROM b`, which read no relation; a subquery inside such a call
    keeps its own FROM."""
    chars = list(text)
    for m in _DISTINCT_FROM.finditer(text):
        chars[m.start(1):m.end(1)] = " " * 4
    for m in _FROM_ARGUMENT.finditer(text):
        depth = 0
        for i in range(m.end() - 1, len(text)):
            c = text[i]
            depth += c == "("
            depth -= c == ")"
            if depth == 0:
                break
            if depth == 1 and re.match(r"\b(?:FROM|IN)\b", text[i:i + 5], re.IGNORECASE) and not text[i - 1:i].isalnum():
                width = 4 if text[i:i + 4].upper() == "FROM" else 2
                chars[i:i + width] = " " * width
    return "".join(chars)


def split_top_level(text: str, separator: str = ",") -> list[str]:
    """`text` split at `separator` outside quotes, parentheses and angle brackets."""
    parts, depth, quote, start = [], 0, None, 0
    i = 0
    while i < len(text):
        c = text[i]
        if quote:
            if c == "\\" and quote == "'":
                i += 1
            elif c == quote:
                quote = None
        elif c in "'`\"":
            quote = c
        elif c in "(<":
            depth += 1
        elif c in ")>":
            depth -= 1
        elif c == separator and depth == 0:
            parts.append(text[start:i].strip())
            start = i + 1
        i += 1
    parts.append(text[start:].strip())
    return [p for p in parts if p]


def _balanced(text: str, start: int) -> int:
    """The index just after the parenthesis that closes the one at `start`, outside string literals."""
    depth, quote, i = 0, None, start
    while i < len(text):
        c = text[i]
        if quote:
            if c == "\\" and quote == "'":
                i += 1
            elif c == quote:
                quote = None
        elif c in "'`":
            quote = c
        elif c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
            if depth == 0:
                return i + 1
        i += 1
    raise ValueError("unbalanced parentheses")


def split_statements(text: str) -> list[tuple[str, int]]:
    """(statement, first line) of each `;`-terminated statement, comments and literals respected."""
    out: list[tuple[str, int]] = []
    quote, start, i = None, 0, 0
    while i < len(text):
        c = text[i]
        if quote:
            if c == "\\" and quote == "'":
                i += 1
            elif c == quote:
                quote = None
        elif c == "-" and text.startswith("--", i):
            end = text.find("\n", i)
            i = len(text) if end < 0 else end
            continue
        elif c in "'`\"":
            quote = c
        elif c == ";":
            out.append((text[start:i], start))
            start = i + 1
        i += 1
    if text[start:].strip():
        out.append((text[start:], start))
    result = []
    for statement, offset in out:
        body = re.sub(r"^(\s*--[^\n]*\n|\s+)*", "", statement)
        if body.strip():
            begin = offset + (len(statement) - len(body))
            result.append((body.rstrip(), text.count("\n", 0, begin) + 1))
    return result


def _column(entry: str) -> tuple[str, str, str]:
    m = re.match(r"^`?(\w+)`?\s*(.*?)(?:\s+COMMENT\s+('(?:[^']|'')*'))?\s*$", entry, re.DOTALL | re.IGNORECASE)
    if not m:
        raise ValueError(f"column not understood: {entry}")
    return m.group(1), m.group(2).strip(), _unquote(m.group(3)) if m.group(3) else ""


def _properties(text: str) -> dict[str, str]:
    pairs = {}
    for entry in split_top_level(text):
        key, value = (part.strip() for part in entry.split("=", 1))
        pairs[_unquote(key) if key.startswith("'") else key] = _unquote(value) if value.startswith("'") else value
    return pairs


def parse(statement: str, line: int = 1) -> Definition:
    """The parts of one CREATE statement."""
    m = _CREATE.match(statement)
    if not m:
        raise ValueError(f"not a CREATE statement of a dataset: {statement[:80]}")
    kind = " ".join(m.group("kind").upper().split())
    kind = TEMPORARY_VIEW if kind.endswith("VIEW") and kind != MATERIALIZED_VIEW else kind
    name = m.group("name").strip("`")
    start = _QUERY_START.search(statement, m.end())
    if not start:
        raise ValueError(f"{name}: no line holding only AS before the query")
    header, query = statement[m.end():start.start()], statement[start.end():].strip()
    columns: list[tuple[str, str, str]] = []
    rest = header.lstrip()
    if rest.startswith("("):
        end = _balanced(rest, 0)
        columns = [_column(c) for c in split_top_level(rest[1:end - 1])]
        rest = rest[end:]
    comment = re.search(r"^\s*COMMENT\s+('(?:[^']|'')*')", rest, re.MULTILINE | re.IGNORECASE)
    partitions = re.search(r"PARTITIONED\s+BY\s*\(([^)]*)\)", rest, re.IGNORECASE)
    properties: dict[str, str] = {}
    tbl = re.search(r"TBLPROPERTIES\s*\(", rest, re.IGNORECASE)
    if tbl:
        open_at = tbl.end() - 1
        properties = _properties(rest[open_at + 1:_balanced(rest, open_at) - 1])
    return Definition(
        kind=kind, name=name, columns=tuple(columns),
        comment=_unquote(comment.group(1)) if comment else None,
        partition_cols=tuple(c.strip().strip("`") for c in partitions.group(1).split(",")) if partitions else (),
        properties=properties, query=query, line=line,
    )


def parse_file(text: str) -> list[Definition]:
    """Every dataset a definition file creates (SET and USE statements are left out)."""
    return [parse(s, line) for s, line in split_statements(text) if _CREATE.match(s)]


def replace_properties(text: str, properties: Callable[[str, dict[str, str]], dict[str, str]]) -> str:
    """A definition file's text with the TBLPROPERTIES clause (on a line of its own) of each materialized
    view and streaming table replaced by `properties(kind, declared)`; every line stays where it was."""
    creates = [(m.start(), " ".join(m.group("kind").upper().split())) for m in re.finditer(
        r"^CREATE\s+(?:OR\s+REFRESH\s+)?(?P<kind>MATERIALIZED\s+VIEW|STREAMING\s+TABLE)\b", text,
        re.MULTILINE | re.IGNORECASE)]
    out, done = [], 0
    for m in re.finditer(r"^TBLPROPERTIES\s*\(", text, re.MULTILINE | re.IGNORECASE):
        kind = next((k for start, k in reversed(creates) if start < m.start()), None)
        if kind is None:
            continue
        end = _balanced(text, m.end() - 1)
        declared = _properties(text[m.end():end - 1])
        rendered = ", ".join(f"{literal(k)} = {literal(v)}" for k, v in properties(kind, declared).items())
        out.append(text[done:m.start()] + f"TBLPROPERTIES ({rendered})")
        done = end
    return "".join(out) + text[done:]
