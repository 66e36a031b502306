"""The output schema of a view's Spark Connect plan, kept in the state folder between updates.

Each update's `dataset_definition` event of a view (`{table}_source`) carries the view's schema, which
only Spark's analysis of the view's plan gives. For a landing table's view that plan is large (the
JSON rescue: 80 KB, about 1,500 functions), and analysing the views of the project costs a noticeable
share of the engine's CPU in every update, an update with nothing new included (see bench/RESULTS.md).
The schema is a function of the plan as long as nothing outside the plan enters it, so it is
analysed once per distinct plan and read back after that.

A plan is kept only when its schema cannot depend on anything but its own bytes and the session
facts in the key (the Spark version, the engine's settings, the session's SQL settings, the pipeline
configuration, the session's user functions): no table or view read by name (its columns can change),
no file read whose schema Spark takes from the files (a format that infers one, or partition folders
such as `day=1/` under the read's folder), no SQL text, no function that is not built in, no
table-valued or Python data source, no pivot or transpose whose columns come from the data. Anything
else is analysed every time, as before. Not seen: a temporary function registered under a built-in's
name (Spark lists it as neither), whose plan would have to stay byte for byte the same.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping, Sequence

import pyspark.sql.connect.proto as pb2

from pipelines.local.flow_inputs import proto_children

FORMAT_VERSION = 2
MAX_ENTRIES = 64  # distinct plans kept; a plan changes only with the code or the configuration
FILE_NAME = "plan_schemas.json"

# File sources whose schema is fixed by the format, whatever the files hold.
FIXED_SCHEMA_FORMATS = frozenset({"text", "binaryfile"})

# Relations whose output schema can depend on state outside the plan (the catalog, files, code run
# at analysis, the data): SQL text and its references, cached or table-valued relations, Python data
# sources, parsing without a schema, catalog calls, extensions; transpose and crosstab, whose columns
# are values of the data.
OPEN_RELATIONS = frozenset({
    "sql", "with_relations", "cached_remote_relation", "common_inline_user_defined_table_function",
    "unresolved_table_valued_function", "common_inline_user_defined_data_source", "parse", "catalog",
    "ml_relation", "extension", "unknown", "relation_changes", "transpose", "crosstab",
})
OPEN_EXPRESSIONS = frozenset({"expression_string", "call_function", "extension"})  # SQL text; by name

Fields = list[tuple[str, str]]


@dataclass(frozen=True)
class Session:
    """What a plan's analysis reads besides the plan. `context`: the Spark version, the engine's
    settings, the session's SQL settings and the pipeline configuration; `user_functions`: the names
    `SHOW USER FUNCTIONS` lists (temporary and catalog functions), which a call by name could mean."""

    context: Mapping[str, str]
    user_functions: frozenset[str] = frozenset()


def _flat_local_folder(path: str) -> bool:
    """Whether `path` is a folder of this machine with no folder inside: then Spark finds no partition
    columns (`day=1/`) to add to a file read's schema."""
    local = path
    for scheme in ("file://", "file:"):
        if local.startswith(scheme):
            local = local[len(scheme):]
            break
    if "://" in local or any(c in local for c in "*?[{"):
        return False
    try:
        with os.scandir(local) as entries:
            return not any(entry.is_dir() for entry in entries)
    except OSError:
        return False


def _closed(message: Any, session: Session) -> bool:
    """Whether the schema of this plan node and everything under it depends on the plan alone."""
    if isinstance(message, pb2.Relation) and message.WhichOneof("rel_type") in OPEN_RELATIONS:
        return False
    if isinstance(message, pb2.Expression) and message.WhichOneof("expr_type") in OPEN_EXPRESSIONS:
        return False
    if isinstance(message, pb2.Expression.UnresolvedFunction):
        name = message.function_name.lower()
        if message.is_user_defined_function or "." in name or name in session.user_functions:
            return False
    if isinstance(message, pb2.Aggregate) and message.group_type == pb2.Aggregate.GROUP_TYPE_PIVOT \
            and not message.pivot.values:
        return False  # the pivot's columns are the values the data holds
    if isinstance(message, pb2.Read):
        if message.HasField("named_table"):
            return False
        source = message.data_source
        if not source.HasField("schema") and source.format.lower() not in FIXED_SCHEMA_FORMATS:
            return False
        paths = [*source.paths, *([source.options["path"]] if "path" in source.options else [])]
        if source.options.get("recursiveFileLookup", "").lower() != "true" \
                and not all(_flat_local_folder(p) for p in paths):
            return False
    return all(_closed(child, session) for child in proto_children(message))


def _canonical(message: Any, plan_ids: dict[int, int], variables: dict[tuple[str, ...], str]) -> None:
    """Replaces what pyspark's client numbers per process by its order of first appearance in the plan,
    so the same query built in another process, or after other queries, has the same bytes: every
    `plan_id`, and the names of lambda variables (`x_12`: `UnresolvedNamedLambdaVariable.fresh_var_name`).
    Both renamings are one-to-one, so two plans meet only when they differ in these numbers alone."""
    if isinstance(message, pb2.Expression.UnresolvedNamedLambdaVariable):
        parts = tuple(message.name_parts)
        name = variables.setdefault(parts, f"v{len(variables) + 1}")
        del message.name_parts[:]
        message.name_parts.append(name)
    for descriptor, value in message.ListFields():
        if descriptor.name == "plan_id" and descriptor.message_type is None and not isinstance(value, Sequence):
            setattr(message, "plan_id", plan_ids.setdefault(value, len(plan_ids) + 1))
    for child in proto_children(message):
        _canonical(child, plan_ids, variables)


def plan_key(relation: Any, session: Session) -> str | None:
    """The key of a Connect relation's schema in `session`, or None when the plan's schema may depend
    on anything outside it (or the plan is too deep to walk)."""
    try:
        if not _closed(relation, session):
            return None
        canonical = type(relation)()
        canonical.CopyFrom(relation)
        _canonical(canonical, {}, {})
    except RecursionError:
        return None
    digest = hashlib.sha256()
    digest.update(json.dumps({"format": FORMAT_VERSION, **session.context,
                              "user_functions": sorted(session.user_functions)}, sort_keys=True).encode())
    digest.update(canonical.SerializeToString(deterministic=True))
    return digest.hexdigest()


class PlanSchemas:
    """The schemas of analysed plans, in one JSON file of the state folder. A file that cannot be
    read (or has another format) counts as empty: the next analysis writes it anew."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._entries: dict[str, Fields] | None = None

    def _load(self) -> dict[str, Fields]:
        if self._entries is None:
            try:
                data = json.loads(self.path.read_text())
                entries = data["schemas"] if data.get("format") == FORMAT_VERSION else {}
                self._entries = {k: [(str(n), str(t)) for n, t in v] for k, v in entries.items()}
            except (OSError, ValueError, TypeError, KeyError, AttributeError):
                self._entries = {}
        return self._entries

    def get(self, key: str) -> Fields | None:
        return self._load().get(key)

    def put(self, key: str, fields: Fields) -> None:
        entries = self._load()
        entries.pop(key, None)
        entries[key] = list(fields)
        while len(entries) > MAX_ENTRIES:  # the oldest first (dicts keep insertion order)
            entries.pop(next(iter(entries)))
        tmp = self.path.with_name(f".{self.path.name}.{os.getpid()}")
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp.write_text(json.dumps({"format": FORMAT_VERSION, "schemas": entries}))
        os.replace(tmp, self.path)  # readers see the old file or the new one, never a part
