"""The record of an update in progress, kept in the state folder until the update is closed.

The runner writes it when an update starts and completes it once the graph is registered (flows,
their checkpoints and landing folders, the materialized views' versions before the run); it removes
it when the update has its terminal event. A record that outlives its runner is an update that was
interrupted (the process was killed, ran out of memory, or the machine stopped): `recovery` closes
it from what the record says, without registering the graph again.
"""

from __future__ import annotations

import json
import os
import threading
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from pipelines.local.home import LocalHome


@dataclass
class FlowRecord:
    name: str  # short name
    sdp_name: str  # as SDP reports it (qualified for a table's own flow)
    target: str | None
    is_sink: bool
    measured: bool  # a streaming flow the runner measures per micro-batch
    checkpoint_root: str | None  # the flow's checkpoint root (numbered checkpoints below it)
    landing: str | None = None  # the landing folder a file-reading flow streams
    target_table: str | None = None  # the target's qualified name (sinks are catalog tables locally)
    checkpoint_before: str | None = None  # the live checkpoint when the update started
    batch_before: int = -1  # its newest committed batch then
    clean_source: str | None = None  # DELETE or MOVE when the flow's file source cleans committed files
    archive_dir: str | None = None  # where MOVE puts them
    record_counter: str | None = None  # how its files' records are counted (formats.count_records; None: JSON lines)


# A record written before records named their endpoint: the first command to open the state folder
# closes it, wherever it runs (as then).
ANY_ENDPOINT = "(not recorded)"


@dataclass
class InFlightUpdate:
    update_id: str
    pipeline_key: str
    pipeline_name: str
    pipeline_id: str
    catalog: str
    schema: str
    event_log: str
    started_at: str
    pid: int
    session_id: str
    url: str
    cluster_id: str | None
    log_file: str | None
    log_offset: int
    full_refresh: bool = False
    materialized_views: list[str] = field(default_factory=list)  # restored if their refresh does not complete
    expectation_datasets: list[str] = field(default_factory=list)  # datasets with expectations
    flows: list[FlowRecord] = field(default_factory=list)
    registered: bool = False
    stopped_by: str | None = None  # why the runner stopped, when it knew (its engine or endpoint was lost)
    cancellation_cause: str | None = None  # the update was canceled (USER_ACTION, WORKFLOW_CANCELLATION)
    remote_url: str | None = None  # the --remote endpoint it ran on; None: the state folder's local engine
    graph_id: str | None = None  # SDP's dataflow graph of the run, once registered (to stop the run by)

    def ran_where(self, remote_url: str | None) -> bool:
        """Whether it ran where a session on `remote_url` (None: the local engine) runs."""
        return self.remote_url in (remote_url, ANY_ENDPOINT)

    def ran_on(self) -> str:
        """Where the update ran, in words (for messages)."""
        return f"the Spark Connect endpoint {self.remote_url}" if self.remote_url else "the local engine"

    def closed_by(self) -> str:
        """The command that can close it: one on the same endpoint, whose event log holds the update."""
        return (f"any lakewatch command with --remote {self.remote_url}" if self.remote_url
                else "any lakewatch command without --remote")

    def qualified(self, name: str) -> str:
        return name if "." in name else f"{self.catalog}.{self.schema}.{name}"


def folder(home: LocalHome) -> Path:
    return home.root / "state" / "updates"


def path_for(home: LocalHome, pipeline_name: str) -> Path:
    return folder(home) / f"{pipeline_name}.json"


def ledger_path(home: LocalHome, pipeline_name: str) -> Path:
    """What the runner keeps about each landing file across updates (see file_ledger)."""
    return home.root / "state" / "files" / f"{pipeline_name}.json"


def journal_path(home: LocalHome, pipeline_name: str) -> Path:
    """Every event of the update in progress, appended as it happens (see EventLogStream)."""
    return folder(home) / f"{pipeline_name}.events.jsonl"


def save(home: LocalHome, record: InFlightUpdate) -> None:
    target = path_for(home, record.pipeline_name)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_suffix(f".{os.getpid()}.{threading.get_ident()}.tmp")  # the runner's threads save too
    tmp.write_text(json.dumps(asdict(record), indent=2, sort_keys=True))
    tmp.replace(target)


def remove(home: LocalHome, record: InFlightUpdate) -> None:
    target = path_for(home, record.pipeline_name)
    try:
        if json.loads(target.read_text()).get("update_id") == record.update_id:
            target.unlink()
            journal_path(home, record.pipeline_name).unlink(missing_ok=True)
    except (OSError, ValueError):
        pass


def _from_dict(data: dict[str, Any]) -> InFlightUpdate:
    flows = [FlowRecord(**f) for f in data.pop("flows", [])]
    data.pop("mv_versions", None)  # a record of an earlier lakewatch: versions are read from the history now
    data.setdefault("remote_url", ANY_ENDPOINT)
    return InFlightUpdate(**data, flows=flows)


def note_stop(home: LocalHome, session_id: str, cause: str) -> None:
    """Writes `cause` into the records of the updates Spark Connect session `session_id` was running,
    which its command cannot close itself (its engine or endpoint is gone): the command that closes
    them says why in the event log. (By session, not pid: a container's pids repeat.)"""
    for record in load_all(home):
        if record.session_id == session_id and record.stopped_by is None:
            record.stopped_by = cause
            save(home, record)


def load(home: LocalHome, pipeline_name: str) -> InFlightUpdate | None:
    """The record of `pipeline_name`'s update in progress, if there is one."""
    try:
        return _from_dict(json.loads(path_for(home, pipeline_name).read_text()))
    except (OSError, ValueError, TypeError):
        return None


def load_all(home: LocalHome) -> list[InFlightUpdate]:
    """Every update record in the state folder (normally none between runs)."""
    found = []
    base = folder(home)
    if not base.is_dir():
        return found
    for p in sorted(base.glob("*.json")):
        try:
            found.append(_from_dict(json.loads(p.read_text())))
        except (OSError, ValueError, TypeError):
            continue
    return found
