"""The local engine's state folder (`.lakewatch/` in the project, or `LAKEWATCH_HOME`).

Everything a local run persists lives here, so reruns are incremental and `rm -rf .lakewatch`
starts over: the Derby metastore (the catalog), the Delta tables, pipeline storage (checkpoints),
Delta sinks, landing files, logs, and the control-plane state (pipeline ids, sequence numbers).
"""

from __future__ import annotations

import json
import os
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

PROJECT_ROOT = Path(__file__).resolve().parents[2]


@dataclass(frozen=True)
class LocalHome:
    root: Path

    @classmethod
    def default(cls) -> "LocalHome":
        configured = os.environ.get("LAKEWATCH_HOME")
        return cls(Path(configured).resolve() if configured else PROJECT_ROOT / ".lakewatch")

    @property
    def metastore(self) -> Path:
        return self.root / "metastore_db"

    @property
    def warehouse(self) -> Path:
        return self.root / "warehouse"

    @property
    def landing(self) -> Path:
        return self.root / "landing"

    @property
    def sinks(self) -> Path:
        return self.root / "sinks"

    @property
    def logs(self) -> Path:
        return self.root / "logs"

    @property
    def state_file(self) -> Path:
        return self.root / "state" / "pipelines.json"

    def storage(self, pipeline_name: str) -> Path:
        """The pipeline's storage root (SDP keeps its streaming checkpoints under it)."""
        return self.root / "storage" / pipeline_name

    def create(self) -> None:
        for p in (self.root, self.warehouse, self.landing, self.sinks, self.logs, self.state_file.parent):
            p.mkdir(parents=True, exist_ok=True)


class ControlPlaneState:
    """Pipeline ids and event sequence numbers, kept across runs like Databricks' control plane."""

    def __init__(self, home: LocalHome) -> None:
        self.path = home.state_file
        self.data: dict[str, Any] = json.loads(self.path.read_text()) if self.path.is_file() else {}

    def pipeline_id(self, pipeline_name: str) -> str:
        entry = self.data.setdefault(pipeline_name, {})
        if "pipeline_id" not in entry:
            entry["pipeline_id"] = str(uuid.uuid4())
            self.save()
        return str(entry["pipeline_id"])

    def next_sequence(self, pipeline_name: str, count: int) -> int:
        """Reserves `count` sequence numbers and returns the first."""
        entry = self.data.setdefault(pipeline_name, {})
        first = int(entry.get("last_seq_no", 0)) + 1
        entry["last_seq_no"] = first + count - 1
        self.save()
        return first

    def save(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_suffix(".tmp")
        tmp.write_text(json.dumps(self.data, indent=2, sort_keys=True))
        tmp.replace(self.path)
