"""Which materialized views an update refreshes: the local engine's counterpart of Databricks' refresh
planning. Open-source SDP recomputes every materialized view at every update; Databricks skips one whose
inputs did not change (`MAINTENANCE_TYPE_NO_OP`) and says so in a `planning_information` event. The
local runner does the same for a view whose definition and inputs are what they were at its last
completed refresh, and leaves it out of SDP's refresh selection.

A view's state is a hash over its definition, and for each input: a table of the pipeline by its own
state (a materialized view) or its Delta version and its inputs' states (a streaming table, which may
take new rows in this update), a view by its query and its inputs' states, anything else by its
Delta version (its last commit file). A view is recomputed when its state is new, its table was
written since its last refresh (a RESTORE, another writer), or its state cannot be told: an input that
is not a Delta table or that the runner cannot name (`flow_inputs`), or a function whose value differs
between runs (the clock). What a completed refresh read is kept per pipeline in the state folder.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from pipelines.eventlog import events
from pipelines.local import measure
from pipelines.local.flow_inputs import digest
from pipelines.local.registry import RecordedFlow
from pipelines.local.update.context import UpdateContext
from pipelines.local.update.types import now

NO_OP = "MAINTENANCE_TYPE_NO_OP"
COMPLETE_RECOMPUTE = "MAINTENANCE_TYPE_COMPLETE_RECOMPUTE"

# Databricks' incrementalization issue types (reference: planning_information) for why NO_OP was not chosen.
FIRST_REFRESH = "CHANGE_SET_MISSING"
DEFINITION_CHANGED = "QUERY_FINGERPRINT_CHANGED"
NOT_DETERMINISTIC = "PLAN_NOT_DETERMINISTIC"
INPUT_NOT_IN_DELTA = "INPUT_NOT_IN_DELTA"
INPUT_CHANGED = "INPUT_CHANGED"
TABLE_WRITTEN = "TARGET_TABLE_CHANGED"
FULL_REFRESH = "FULL_REFRESH"


@dataclass(frozen=True)
class Unknown:
    """A state that cannot be told, and why (an incrementalization issue type and a phrase)."""

    issue: str
    why: str


State = str | Unknown


@dataclass
class ViewPlan:
    name: str
    technique: str  # NO_OP or COMPLETE_RECOMPUTE
    issue: str | None = None  # why not NO_OP
    why: str | None = None


@dataclass
class RefreshPlan:
    views: dict[str, ViewPlan] = field(default_factory=dict)
    selection: tuple[str, ...] | None = None  # the refresh selection for SDP; None: the request's own
    versions_before: dict[str, State] = field(default_factory=dict)  # each table read, before the run

    @property
    def skipped(self) -> list[str]:
        return sorted(name for name, view in self.views.items() if view.technique == NO_OP)


def state_file(ctx: UpdateContext) -> Path:
    return ctx.home.root / "state" / "refreshes" / f"{ctx.pipeline.name}.json"


def load(ctx: UpdateContext) -> dict[str, dict[str, str]]:
    try:
        data = json.loads(state_file(ctx).read_text())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


class States:
    """The state of each dataset and table the pipeline's views read, with one Delta version per table
    read once (`versions`)."""

    def __init__(self, ctx: UpdateContext, versions: Callable[[str], State]) -> None:
        self.ctx = ctx
        self.versions = versions
        assert ctx.registry is not None
        self.outputs = ctx.registry.outputs
        self.by_lower = {name.lower(): name for name in self.outputs}
        self.flows_of: dict[str, list[RecordedFlow]] = {}
        for flow in ctx.registry.flows.values():
            self.flows_of.setdefault(flow.target, []).append(flow)
        self.memo: dict[str, State] = {}
        self.configuration = configuration_text(ctx)

    def full_name(self, name: str) -> str:
        """`catalog.schema.table` of a name of one, two or three parts, in lower case (Spark's names of
        tables are case-insensitive)."""
        parts = name.replace("`", "").lower().split(".")
        if len(parts) == 1:
            return self.ctx.qualified(parts[0]).lower()
        if len(parts) == 2:
            return f"{self.ctx.catalog}.{parts[0]}.{parts[1]}".lower()
        return ".".join(parts)

    def own(self, name: str) -> str | None:
        """The pipeline's dataset a read names, if it names one (in any case, with or without its
        schema and catalog)."""
        short = self.by_lower.get(name.replace("`", "").lower().split(".")[-1])
        if short is not None and ("." not in name or self.full_name(name) == self.full_name(short)):
            return short
        return None

    def of_read(self, name: str, stack: tuple[str, ...] = ()) -> State:
        own = self.own(name)
        return self.of_dataset(own, stack) if own is not None else self.versions(self.full_name(name))

    def tables_read(self, name: str) -> set[str]:
        """The pipeline's tables (streaming tables and materialized views) `name`'s flows read, directly
        or through the pipeline's views."""
        found: set[str] = set()
        for flow in self.flows_of.get(name, []):
            for read in flow.inputs.names:
                own = self.own(read)
                if own is None or own == name:
                    continue
                if self.outputs[own].dataset_type == "VIEW":
                    found |= self.tables_read(own)
                else:
                    found.add(own)
        return found

    def upstream(self, name: str) -> set[str]:
        """Every table of the pipeline `name` depends on, however far up."""
        seen: set[str] = set()
        todo = list(self.tables_read(name))
        while todo:
            table = todo.pop()
            if table not in seen:
                seen.add(table)
                todo.extend(self.tables_read(table))
        return seen

    def of_dataset(self, name: str, stack: tuple[str, ...] = ()) -> State:
        """The dataset's state, or why it cannot be told. Every input is read even after one could not
        be: the versions read before the run are what `record` keeps once the run has made them known
        (a streaming table's first update creates it)."""
        if name in self.memo:
            return self.memo[name]
        if name in stack:
            return Unknown(INPUT_NOT_IN_DELTA, f"{name} reads itself")
        output = self.outputs[name]
        parts: list[str | bytes] = [output.dataset_type, output.definition, self.configuration]
        unknown: list[Unknown] = []
        if output.dataset_type == "STREAMING_TABLE":
            version = self.versions(self.ctx.qualified(name).lower())
            if isinstance(version, Unknown):
                unknown.append(version)
            else:
                parts.append(version)
        elif output.dataset_type not in ("MATERIALIZED_VIEW", "VIEW"):
            unknown.append(Unknown(INPUT_NOT_IN_DELTA, f"{name} is a {output.dataset_type.lower()}"))
        for flow in sorted(self.flows_of.get(name, []), key=lambda f: f.name):
            if flow.inputs.nondeterministic:
                unknown.append(Unknown(NOT_DETERMINISTIC, f"{name} calls {', '.join(flow.inputs.nondeterministic)}"))
            if flow.inputs.unnamed:
                unknown.append(Unknown(INPUT_NOT_IN_DELTA, f"{name} reads {', '.join(flow.inputs.unnamed)}"))
            parts += [flow.name, flow.definition]
            for read in flow.inputs.names:
                state = self.of_read(read, (*stack, name))
                if isinstance(state, Unknown):
                    unknown.append(state)
                else:
                    parts += [read, state]
        return self._keep(name, unknown[0] if unknown else digest(*parts))

    def _keep(self, name: str, state: State) -> State:
        self.memo[name] = state
        return state


def configuration_text(ctx: UpdateContext) -> str:
    """The update's pipeline configuration (`${...}` values, Spark settings such as the session time
    zone) as text, without what differs per update: a change recomputes every view."""
    configuration = getattr(ctx, "configuration", None)
    values = configuration() if callable(configuration) else {}
    return repr(sorted((k, v) for k, v in values.items() if k != measure.USER_METADATA_CONF))


def table_version(ctx: UpdateContext, table: str) -> State:
    """A Delta table's newest commit, as text that a rewrite of the table under the same version number
    does not repeat: on this machine its commit file's number, size and time; elsewhere DESCRIBE HISTORY's
    newest version and time."""
    folder = measure.local_table_dir(ctx.home.warehouse, table) if not ctx.local.remote else None
    if folder is not None:
        try:
            names = [n for n in os.listdir(folder / "_delta_log") if measure.COMMIT_FILE.fullmatch(n)]
        except OSError:
            names = []
        if names:
            newest = folder / "_delta_log" / max(names)
            try:
                stat = newest.stat()
                return f"{newest.name}:{stat.st_size}:{stat.st_mtime_ns}"
            except OSError:
                pass
    try:
        row = ctx.spark.sql(f"DESCRIBE HISTORY {table} LIMIT 1").select("version", "timestamp").first()
    except Exception:  # noqa: BLE001 (not a Delta table, or none at all)
        return Unknown(INPUT_NOT_IN_DELTA, f"{table} is not a Delta table this engine can read")
    if row is None:
        return Unknown(INPUT_NOT_IN_DELTA, f"{table} has no history")
    return f"{row['version']}:{row['timestamp']}"


def memoized(read: Callable[[str], State], seen: dict[str, State]) -> Callable[[str], State]:
    """`read` once per table, into `seen`."""
    def once(table: str) -> State:
        if table not in seen:
            seen[table] = read(table)
        return seen[table]

    return once


def plan(ctx: UpdateContext) -> RefreshPlan:
    """Each materialized view's technique for this update, and the refresh selection that leaves the
    NO_OP ones out. A full refresh, a pipeline with sinks (a selection names tables only, so it would
    leave the sinks' flows out) or no view to skip changes nothing in the request."""
    request, result = ctx.request, RefreshPlan()
    assert ctx.registry is not None
    outputs = ctx.registry.outputs
    states = States(ctx, memoized(lambda table: table_version(ctx, table), result.versions_before))
    chosen = set(request.refresh_selection) | set(request.full_refresh_selection)
    selected = {states.own(name) for name in chosen}
    fully = {states.own(name) for name in request.full_refresh_selection}
    in_selection = {name for name, output in outputs.items() if output.dataset_type in ("STREAMING_TABLE", "MATERIALIZED_VIEW")
                    and (request.full_refresh or not chosen or name in selected)}
    full = {name for name in in_selection if request.full_refresh or name in fully}
    recorded = load(ctx)
    for view in sorted(n for n in in_selection if outputs[n].dataset_type == "MATERIALIZED_VIEW"):
        state, last = states.of_dataset(view), recorded.get(view)  # read in every case: `record` needs them
        if view in full:
            result.views[view] = ViewPlan(view, COMPLETE_RECOMPUTE, FULL_REFRESH, "a full refresh")
        elif isinstance(state, Unknown):
            result.views[view] = ViewPlan(view, COMPLETE_RECOMPUTE, state.issue, state.why)
        elif last is None:
            result.views[view] = ViewPlan(view, COMPLETE_RECOMPUTE, FIRST_REFRESH, "no completed refresh recorded")
        elif last.get("state") != state:
            result.views[view] = ViewPlan(view, COMPLETE_RECOMPUTE, INPUT_CHANGED, "its definition or an input changed")
        elif last.get("table") != table_version(ctx, ctx.qualified(view).lower()):
            result.views[view] = ViewPlan(view, COMPLETE_RECOMPUTE, TABLE_WRITTEN, "its table was written since")
        else:
            result.views[view] = ViewPlan(view, NO_OP)
    # A view reading (however far up) a table this update fully refreshes, or a view it recomputes,
    # reads what changes in this update: recomputed too.
    changed = True
    while changed:
        changed = False
        for view in result.skipped:
            moved = {t for t in states.upstream(view) if t in full or (t in result.views and result.views[t].technique
                                                                         == COMPLETE_RECOMPUTE)}
            if moved:
                result.views[view] = ViewPlan(view, COMPLETE_RECOMPUTE, INPUT_CHANGED,
                                              f"it reads {', '.join(sorted(moved))}, recomputed in this update")
                changed = True
    skipped = set(result.skipped)
    if not skipped:
        return result
    unknown = {name for name in chosen if states.own(name) is None}
    if unknown:  # SDP's run refuses the names it does not know: the request goes to it as it was
        for view in skipped:
            result.views[view] = ViewPlan(view, COMPLETE_RECOMPUTE, INPUT_CHANGED,
                                          "unchanged, but the refresh selection names no dataset " + ", ".join(sorted(unknown)))
        return result
    if ctx.graph.sinks or any(o.dataset_type == "SINK" for o in outputs.values()):
        for view in skipped:
            result.views[view] = ViewPlan(view, COMPLETE_RECOMPUTE, INPUT_CHANGED,
                                          "unchanged, but a refresh selection would leave the sinks' flows out")
        return result
    result.selection = tuple(sorted(ctx.qualified(name) for name in in_selection - skipped - full))
    return result


def planning_event(ctx: UpdateContext, view: ViewPlan) -> dict[str, object]:
    """The view's `planning_information` event: the technique chosen, and the other with its issue."""
    other = COMPLETE_RECOMPUTE if view.technique == NO_OP else NO_OP
    techniques = [
        {"maintenance_type": view.technique, "is_chosen": True, "is_applicable": True},
        {"maintenance_type": other, "is_chosen": False, "is_applicable": view.technique == NO_OP,
         **({"incrementalization_issues": [{"issue_type": view.issue, "prevent_incrementalization": True,
                                            "description": view.why}]} if view.issue else {})},
    ]
    text = (f"Flow '{view.name}' is planned as {view.technique.removeprefix('MAINTENANCE_TYPE_')}"
            + (f": {view.why}." if view.why else ": its definition and inputs are as at its last refresh."))
    return events.planning_information(ctx.flow_origin(view.name), now(), text, techniques)


def record(ctx: UpdateContext, refresh: RefreshPlan, completed: set[str]) -> None:
    """Keeps, for each view this update recomputed and completed, the state of what it read and its
    table's version now; forgets the views it recomputed without completing. `completed`: the
    pipeline's tables whose flow COMPLETED in this update.

    A view is kept only when every table of the pipeline it depends on is current: a streaming table
    that ran in this update, a materialized view planned NO_OP, or one this update recomputed from
    current tables (a refresh selection that left an upstream table out makes its readers' states
    unknown). A streaming table of the pipeline counts as the update left it (the view read it after
    its flow ran); any other table as it was before the run: a commit made during the run may or may
    not have been read, so it makes the next update recompute."""
    recomputed = {name for name, view in refresh.views.items() if view.technique == COMPLETE_RECOMPUTE}
    if not recomputed:
        return
    recorded = load(ctx)
    assert ctx.registry is not None
    outputs = ctx.registry.outputs
    streaming = {ctx.qualified(name).lower() for name, output in outputs.items() if output.dataset_type == "STREAMING_TABLE"}

    def version(table: str) -> State:
        if table in streaming:
            return table_version(ctx, table)
        return refresh.versions_before.get(table, Unknown(INPUT_NOT_IN_DELTA, f"{table} was not read before the run"))

    states = States(ctx, memoized(version, {}))
    current: dict[str, bool] = {}

    def is_current(table: str) -> bool:
        if table not in current:
            current[table] = False  # a cycle is not current
            view = refresh.views.get(table)
            if outputs[table].dataset_type == "STREAMING_TABLE":
                ran = table in completed
            elif view is not None and view.technique == NO_OP:
                ran = True
            else:
                ran = table in completed and view is not None
            current[table] = ran and all(is_current(t) for t in states.tables_read(table))
        return current[table]

    for name in sorted(recomputed):
        recorded.pop(name, None)
        if not is_current(name):
            continue
        state, table = states.of_dataset(name), table_version(ctx, ctx.qualified(name).lower())
        if isinstance(state, str) and isinstance(table, str):
            recorded[name] = {"state": state, "table": table, "update_id": ctx.update_id}
    path = state_file(ctx)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(recorded, indent=2, sort_keys=True))
    tmp.replace(path)
