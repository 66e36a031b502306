"""What a flow reads, told from its definition alone (no Spark): the tables and views it names, whether
it reads anything this cannot name (a data source, a table-valued function, a comma join), and whether
its result may differ between two runs over the same inputs (the clock, random numbers, a UDF declared
non-deterministic). The local runner's refresh planning (`update/planning.py`) skips a materialized view
only when every input is named and deterministic; anything this cannot read makes the view recompute.

A SQL flow is read from its text (`sqldefs.relation_reads`); a flow declared with the DataFrame API from
its Spark Connect plan, whose `SQL` nodes (a `spark.sql(...)` query) are read as text.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from typing import Any

import pyspark.sql.connect.proto as pb2

from pipelines import sqldefs

# Functions whose value changes between two runs over the same rows. Spark SQL accepts the first three
# without parentheses.
_NONDETERMINISTIC_SQL = re.compile(
    r"\b(?:current_timestamp|current_date|current_time|localtimestamp|tablesample)\b"
    r"|\b(?:now|curdate|rand|randn|random|randstr|uniform|uuid|shuffle|unix_timestamp|current_timezone"
    r"|monotonically_increasing_id|spark_partition_id|input_file_name)\s*\(",
    re.IGNORECASE)
# Typed literals Spark reads from the clock: DATE'today', TIMESTAMP'now', ...
_CLOCK_LITERAL = re.compile(r"\b(?:DATE|TIMESTAMP(?:_NTZ|_LTZ)?)\s*'\s*(?:now|today|yesterday|tomorrow)\s*'",
                            re.IGNORECASE)
NONDETERMINISTIC_FUNCTIONS = frozenset({
    "current_timestamp", "current_date", "current_time", "localtimestamp", "now", "curdate", "rand", "randn",
    "random", "randstr", "uniform", "uuid", "shuffle", "unix_timestamp", "current_timezone",
    "monotonically_increasing_id", "spark_partition_id", "input_file_name", "input_file_block_start",
    "input_file_block_length",
})
# A read this cannot name: a table-valued function after FROM or JOIN (read_files, cloud_files_state,
# IDENTIFIER(...), ...; not VALUES or STREAM(...)), or a parenthesized relation that is not a subquery (a
# join group, TABLE t). Comma joins are found by `_comma_joins`.
_OPAQUE_SQL = (
    (re.compile(r"\b(?:FROM|JOIN)\s+(?!VALUES\b|STREAM\b)([`\w.]+)\s*\(", re.IGNORECASE), "a table-valued function"),
    (re.compile(r"\b(?:FROM|JOIN)\s*\((?!\s*(?:SELECT|WITH|VALUES|FROM)\b)", re.IGNORECASE), "a parenthesized relation"),
)
_FROM = re.compile(r"\bFROM\b", re.IGNORECASE)
_CLAUSE_END = re.compile(r"(?:WHERE|GROUP|HAVING|ORDER|LIMIT|OFFSET|UNION|INTERSECT|EXCEPT|MINUS|WINDOW|QUALIFY"
                         r"|CLUSTER|DISTRIBUTE|SORT|SELECT)\b", re.IGNORECASE)


def _comma_joins(text: str) -> list[str]:
    """The FROM clauses of `text` (literals and comments removed) that list relations with commas at
    their own level (`FROM a, b`, `FROM a JOIN b USING (k), c`); a VALUES list's rows are not."""
    found = []
    for m in _FROM.finditer(text):
        values = re.match(r"\s*VALUES\b", text[m.end():], re.IGNORECASE) is not None
        depth, i = 0, m.end()
        while i < len(text):
            c = text[i]
            if c == "(":
                depth += 1
            elif c == ")":
                depth -= 1
                if depth < 0:
                    break
            elif c == ";" and depth == 0:
                break
            elif depth == 0 and c.isalpha() and not text[i - 1:i].isalnum() and text[i - 1:i] != "_" \
                    and _CLAUSE_END.match(text, i):
                break
            elif c == "," and depth == 0:
                if not (values and re.match(r"\s*\(", text[i + 1:])):
                    found.append(text[m.start():i + 1].strip()[:60])
                    break
            i += 1
    return found


@dataclass(frozen=True)
class Inputs:
    """What one flow's query reads."""

    names: tuple[str, ...] = ()  # tables and views read by name, as written (backticks removed)
    unnamed: tuple[str, ...] = ()  # what is read without a name this can follow (why, one phrase each)
    nondeterministic: tuple[str, ...] = ()  # the functions that make its result differ between runs

    def __add__(self, other: "Inputs") -> "Inputs":
        return Inputs(_merge(self.names, other.names), _merge(self.unnamed, other.unnamed),
                      _merge(self.nondeterministic, other.nondeterministic))


def _merge(a: tuple[str, ...], b: tuple[str, ...]) -> tuple[str, ...]:
    return a + tuple(x for x in b if x not in a)


def sql_inputs(query: str) -> Inputs:
    """What a SQL query reads (its common table expressions are its own, not inputs)."""
    text = sqldefs.without_function_from(sqldefs.without_literals(query))
    names = tuple(name.replace("`", "") for name, _ in sqldefs.relation_reads(query))
    unnamed = tuple(f"{why} ({m.group(0).strip()[:60]})" for pattern, why in _OPAQUE_SQL for m in pattern.finditer(text))
    unnamed += tuple(f"a comma join ({clause})" for clause in _comma_joins(text))
    functions = tuple(dict.fromkeys(m.group(0).rstrip("( ").lower() for m in _NONDETERMINISTIC_SQL.finditer(text)))
    functions += tuple(dict.fromkeys(" ".join(m.group(0).split()) for m in _CLOCK_LITERAL.finditer(query)))
    return Inputs(names, unnamed, functions)


def relation_inputs(relation: Any) -> Inputs:
    """What a Spark Connect plan reads: its named reads, a data source read as unnamed, the text of its
    SQL nodes, and the non-deterministic functions and UDFs it calls."""
    found = Inputs()

    def walk(node: Any) -> None:
        nonlocal found
        if isinstance(node, pb2.Read):
            if node.HasField("named_table"):
                found += Inputs(names=(node.named_table.unparsed_identifier.replace("`", ""),))
            else:
                found += Inputs(unnamed=(f"a {node.data_source.format or 'data source'} read",))
        elif isinstance(node, pb2.SQL):
            found += sql_inputs(node.query)
        elif isinstance(node, pb2.Expression.ExpressionString):  # where("..."), selectExpr, F.expr
            found += sql_inputs(f"SELECT {node.expression}")
        elif isinstance(node, pb2.CachedRemoteRelation):
            found += Inputs(unnamed=("a DataFrame cached on the server",))
        elif isinstance(node, pb2.Expression.UnresolvedFunction):
            if node.function_name.lower() in NONDETERMINISTIC_FUNCTIONS:
                found += Inputs(nondeterministic=(node.function_name.lower(),))
        elif isinstance(node, pb2.CommonInlineUserDefinedFunction):
            if not node.deterministic:
                found += Inputs(nondeterministic=(f"UDF {node.function_name or '(unnamed)'}",))
        for child in proto_children(node):
            walk(child)

    walk(relation)
    return found


def relation_text(relation: Any) -> bytes:
    """A Spark Connect plan as bytes that are the same for the same query in another process: the plan
    ids and call sites (`common`) that each client numbers anew are cleared."""
    copy = type(relation)()
    copy.CopyFrom(relation)

    def clear(node: Any) -> None:
        if "common" in {d.name for d in node.DESCRIPTOR.fields}:
            node.ClearField("common")
        for child in proto_children(node):
            clear(child)

    clear(copy)
    return bytes(copy.SerializeToString(deterministic=True))


def digest(*parts: str | bytes) -> str:
    """A short hash of `parts`, each length-prefixed (so that two splits of the same text differ)."""
    h = hashlib.sha256()
    for part in parts:
        data = part.encode() if isinstance(part, str) else part
        h.update(len(data).to_bytes(8, "big"))
        h.update(data)
    return h.hexdigest()[:32]


def _is_repeated(descriptor: Any) -> bool:
    repeated = getattr(descriptor, "is_repeated", None)  # protobuf >= 6 replaced `label`
    if repeated is not None:
        return bool(repeated() if callable(repeated) else repeated)
    return bool(descriptor.label == descriptor.LABEL_REPEATED)


def proto_children(message: Any) -> list[Any]:
    """The messages directly inside a protobuf message (a Connect plan node), in field order, the values
    of its message maps included."""
    found: list[Any] = []
    for descriptor, value in message.ListFields():
        if descriptor.message_type is None:
            continue
        if _is_repeated(descriptor):
            items = value.values() if hasattr(value, "values") and not hasattr(value, "append") else value
            found.extend(item for item in items if hasattr(item, "ListFields"))
        else:
            found.append(value)
    return found
