"""Runs pipeline updates with open-source SDP and writes their event log, as Databricks would.

The runner plays Databricks' control plane: it reads the pipeline resource from the bundle, creates
the dataflow graph, registers the definition files, starts the run, and records every event of the
update in the event log table named by the resource's `event_log` setting. Its sources are real:
SDP's event stream (flow states, errors), a streaming query listener (per-batch rows and observed
expectation counts), the JVM log (exception classes), Delta commit history (materialized-view rows),
and streaming checkpoints with the landing folders (backlog, file state). The update itself is
`pipelines.local.update`.
"""

from __future__ import annotations

from pipelines.bundle import Bundle, LocalSettings
from pipelines.errors import LakewatchError
from pipelines.local import inflight
from pipelines.local.home import ControlPlaneState, LocalHome
from pipelines.local.plan_schemas import FILE_NAME as PLAN_SCHEMAS_FILE
from pipelines.local.plan_schemas import PlanSchemas
from pipelines.local.connection import LocalSpark
from pipelines.local.update.lifecycle import Update
from pipelines.local.update.types import Printer, UpdateRequest, UpdateResult


class LocalRunner:
    """Runs the updates of one bundle's pipelines on one Spark Connect session."""

    def __init__(self, local: LocalSpark, bundle: Bundle, settings: LocalSettings, home: LocalHome,
                 printer: Printer = print, verbose: bool = False) -> None:
        self.local = local
        self.spark = local.spark
        self.bundle = bundle
        self.settings = settings
        self.home = home
        self.print = printer
        self.verbose = verbose
        self.state = ControlPlaneState(home)
        self.plan_schemas = PlanSchemas(home.root / "state" / PLAN_SCHEMAS_FILE)

    def run_update(self, request: UpdateRequest) -> UpdateResult:
        pipeline = self.bundle.pipeline(request.pipeline)
        interrupted = inflight.load(self.home, pipeline.name)
        if interrupted is not None and not interrupted.ran_where(self.local.remote_url):
            # Recovery closed this endpoint's interrupted updates already; this one's event log is elsewhere.
            raise LakewatchError("UPDATE_OPEN_ELSEWHERE", {
                "update_id": interrupted.update_id, "pipeline": pipeline.name, "ran_on": interrupted.ran_on(),
                "closed_by": interrupted.closed_by(),
                "remote": f" --remote {interrupted.remote_url}" if interrupted.remote_url else ""})
        return Update(self, pipeline, request).run()
