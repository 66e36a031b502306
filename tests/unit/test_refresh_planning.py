"""The refresh planning's choices (pipelines/local/update/planning.py), over a pipeline's recorded
definitions and tables whose Delta logs are folders of commit files: which views are NO_OP, which are
recomputed and why, and the refresh selection SDP gets. tests/integration/test_trust.py checks the same
on real updates (Delta's own history of each view)."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from pipelines.local.flow_inputs import sql_inputs
from pipelines.local.registry import RecordedFlow, RecordedOutput
from pipelines.local.update import planning
from pipelines.local.update.types import UpdateRequest

SCHEMA = "spark_catalog.obs"
LOG = "spark_catalog.ingest.event_log"


class Pipeline:
    """A pipeline's recorded datasets and a warehouse of Delta logs (commit files only)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.outputs: dict[str, RecordedOutput] = {}
        self.flows: dict[str, RecordedFlow] = {}
        self.sinks: dict[str, Any] = {}
        self.configuration: dict[str, str] = {"lakewatch.event_log": LOG}
        self.commit(LOG)

    def dataset(self, name: str, kind: str, query: str) -> None:
        self.outputs[name] = RecordedOutput(name, kind, None, definition=f"{kind} {name}")
        self.flows[name] = RecordedFlow(name, name, [], "STREAM" in query, None, definition=query, inputs=sql_inputs(query))

    def commit(self, table: str) -> None:
        """One more commit file in the table's Delta log."""
        _, schema, name = table.split(".")
        log = self.root / "warehouse" / f"{schema}.db" / name / "_delta_log"
        log.mkdir(parents=True, exist_ok=True)
        version = len(list(log.glob("*.json")))
        (log / f"{version:020d}.json").write_text('{"commitInfo":{}}\n')

    def context(self, **request: Any) -> Any:
        return SimpleNamespace(
            registry=SimpleNamespace(outputs=self.outputs, flows=self.flows),
            graph=SimpleNamespace(sinks=self.sinks),
            request=UpdateRequest(pipeline="obs", **request),
            home=SimpleNamespace(root=self.root, warehouse=self.root / "warehouse"),
            pipeline=SimpleNamespace(name="obs"),
            local=SimpleNamespace(remote=False),
            spark=None,
            update_id="an-update",
            qualified=lambda name: name if "." in name else f"{SCHEMA}.{name}",
            catalog="spark_catalog",
            configuration=lambda: dict(self.configuration),
        )

    def update(self, **request: Any) -> planning.RefreshPlan:
        """Plans an update, gives each recomputed view a commit, and records what they read. (Its
        streaming tables take no rows: a test commits to them itself.)"""
        ctx = self.context(**request)
        plan = planning.plan(ctx)
        self.write(ctx, plan)
        planning.record(ctx, plan, completed=self.tables())
        return plan

    def tables(self) -> set[str]:
        """Every streaming table and materialized view: what a whole update runs to completion."""
        return {name for name, o in self.outputs.items() if o.dataset_type in ("STREAMING_TABLE", "MATERIALIZED_VIEW")}

    def write(self, ctx: Any, plan: planning.RefreshPlan) -> None:
        for name, view in plan.views.items():
            if view.technique == planning.COMPLETE_RECOMPUTE:
                self.commit(ctx.qualified(name))


def techniques(plan: planning.RefreshPlan) -> dict[str, str | None]:
    return {name: (None if view.technique == planning.NO_OP else view.issue) for name, view in plan.views.items()}


@pytest.fixture
def pipeline(tmp_path: Path) -> Pipeline:
    p = Pipeline(tmp_path)
    p.dataset("events", "STREAMING_TABLE", f"SELECT * FROM STREAM({LOG})")
    p.dataset("update_status", "MATERIALIZED_VIEW", "SELECT update_id FROM events")
    p.dataset("daily", "MATERIALIZED_VIEW", "SELECT count(*) FROM update_status")
    p.dataset("insights", "MATERIALIZED_VIEW", f"SELECT * FROM {LOG} JOIN update_status USING (update_id)")
    p.dataset("growth", "MATERIALIZED_VIEW", "SELECT * FROM spark_catalog.obs.snapshots")
    p.dataset("clock", "VIEW", "SELECT current_timestamp() AS now")
    p.dataset("health", "MATERIALIZED_VIEW", "SELECT * FROM daily JOIN clock ON true")
    p.commit(f"{SCHEMA}.snapshots")
    p.commit(f"{SCHEMA}.events")
    return p


def test_first_refresh_recomputes_then_nothing_new_is_no_op_but_the_clock(pipeline: Pipeline) -> None:
    first = pipeline.update()
    assert set(techniques(first).values()) == {planning.FIRST_REFRESH, planning.NOT_DETERMINISTIC}
    assert first.selection is None  # nothing to leave out: the request as it was
    second = pipeline.update()
    assert techniques(second) == {"daily": None, "growth": None, "insights": None, "update_status": None,
                                  "health": planning.NOT_DETERMINISTIC}
    assert second.selection == (f"{SCHEMA}.events", f"{SCHEMA}.health")


def test_a_new_event_log_commit_recomputes_what_reads_it_directly_or_through_others(pipeline: Pipeline) -> None:
    pipeline.update()
    pipeline.commit(LOG)
    plan = pipeline.update()
    assert techniques(plan) == {"update_status": planning.INPUT_CHANGED, "daily": planning.INPUT_CHANGED,
                                "insights": planning.INPUT_CHANGED, "growth": None,
                                "health": planning.NOT_DETERMINISTIC}
    assert techniques(pipeline.update())["update_status"] is None  # recorded as read: NO_OP next time


def test_a_streaming_table_written_since_recomputes_its_readers(pipeline: Pipeline) -> None:
    pipeline.update()
    pipeline.commit(f"{SCHEMA}.events")  # rows the stream added in an update that did not refresh the views
    assert techniques(pipeline.update())["update_status"] == planning.INPUT_CHANGED


def test_a_changed_definition_or_a_rewritten_table_recomputes(pipeline: Pipeline) -> None:
    pipeline.update()
    pipeline.dataset("growth", "MATERIALIZED_VIEW", "SELECT count(*) FROM spark_catalog.obs.snapshots")
    pipeline.commit(f"{SCHEMA}.daily")  # a RESTORE, or another writer
    plan = techniques(pipeline.update())
    assert (plan["growth"], plan["daily"], plan["update_status"]) == (planning.INPUT_CHANGED, planning.TABLE_WRITTEN, None)


def test_a_commit_during_the_run_is_read_again_next_time(pipeline: Pipeline) -> None:
    """What a view read from a table outside the pipeline is recorded as the table was before the
    run: a commit made while the view ran may or may not be in it, so the next update recomputes."""
    ctx = pipeline.context()
    plan = planning.plan(ctx)
    pipeline.write(ctx, plan)
    pipeline.commit(LOG)  # lands while the run goes on
    planning.record(ctx, plan, completed=pipeline.tables())
    assert techniques(pipeline.update())["insights"] == planning.INPUT_CHANGED


def test_unnamed_reads_missing_tables_and_failed_refreshes_are_never_no_op(pipeline: Pipeline) -> None:
    pipeline.dataset("files", "MATERIALIZED_VIEW", "SELECT * FROM read_files('/landing')")
    pipeline.dataset("gone", "MATERIALIZED_VIEW", "SELECT * FROM spark_catalog.obs.never_created")
    ctx = pipeline.context()
    ctx.spark = SimpleNamespace(sql=lambda text: (_ for _ in ()).throw(RuntimeError("TABLE_OR_VIEW_NOT_FOUND")))
    plan = planning.plan(ctx)
    pipeline.write(ctx, plan)
    planning.record(ctx, plan, completed=pipeline.tables() - {"daily"})
    again = techniques(planning.plan(ctx))
    assert again["files"] == again["gone"] == planning.INPUT_NOT_IN_DELTA
    assert again["daily"] == planning.FIRST_REFRESH  # its refresh did not complete: nothing recorded
    assert again["update_status"] is None


def test_full_refresh_and_selection(pipeline: Pipeline) -> None:
    pipeline.update()
    assert set(techniques(pipeline.update(full_refresh=True)).values()) == {planning.FULL_REFRESH}
    selected = pipeline.update(refresh_selection=("daily", "growth"), full_refresh_selection=("growth",))
    assert techniques(selected) == {"daily": None, "growth": planning.FULL_REFRESH}
    assert selected.selection == ()  # growth goes as a full refresh, daily is unchanged


def test_a_pipeline_with_a_sink_keeps_its_selection(pipeline: Pipeline) -> None:
    pipeline.update()
    pipeline.sinks["quarantine"] = object()
    plan = pipeline.update()
    assert plan.selection is None and not plan.skipped


def test_the_first_update_of_a_pipeline_records_what_its_new_streaming_table_made_known(tmp_path: Path) -> None:
    """Before the first update the streaming table does not exist, so nothing downstream can be told;
    the event log's version is read all the same, so that the views the update refreshed are recorded
    and the next update with nothing new skips them."""
    p = Pipeline(tmp_path)
    p.dataset("events", "STREAMING_TABLE", f"SELECT * FROM STREAM({LOG})")
    p.dataset("update_status", "MATERIALIZED_VIEW", "SELECT update_id FROM events")
    ctx = p.context()
    first = planning.plan(ctx)
    assert techniques(first) == {"update_status": planning.INPUT_NOT_IN_DELTA}
    p.commit(f"{SCHEMA}.events")  # the run creates the streaming table
    p.write(ctx, first)
    planning.record(ctx, first, completed=p.tables())
    assert techniques(p.update()) == {"update_status": None}


def test_a_selection_naming_no_dataset_goes_to_sdp_as_it_was(pipeline: Pipeline) -> None:
    """SDP refuses a name it does not know; leaving it out of the selection would hide the typo."""
    pipeline.update()
    plan = pipeline.update(refresh_selection=("daily", "dialy"))
    assert plan.selection is None and not plan.skipped


def test_a_view_refreshed_while_its_upstream_table_was_left_out_is_not_recorded(pipeline: Pipeline) -> None:
    """`--refresh update_status` with new events in the log: update_status is recomputed from the
    streaming table as it was (events did not run), so what it read is not what the log now says; the
    next whole update recomputes it once events has taken the new rows."""
    pipeline.update()
    pipeline.commit(LOG)
    ctx = pipeline.context(refresh_selection=("update_status",))
    plan = planning.plan(ctx)
    assert techniques(plan) == {"update_status": planning.INPUT_CHANGED}
    pipeline.write(ctx, plan)
    planning.record(ctx, plan, completed={"update_status"})  # events was not selected: it did not run
    pipeline.commit(f"{SCHEMA}.events")  # the next whole update: events takes the log's new rows
    assert techniques(pipeline.update())["update_status"] == planning.FIRST_REFRESH


def test_a_view_below_a_recomputed_or_fully_refreshed_one_is_recomputed(pipeline: Pipeline) -> None:
    pipeline.update()
    pipeline.commit(f"{SCHEMA}.update_status")  # a RESTORE: update_status is recomputed, so daily reads new rows
    plan = techniques(pipeline.update())
    assert plan["update_status"] == planning.TABLE_WRITTEN and plan["daily"] == planning.INPUT_CHANGED
    plan = pipeline.update(refresh_selection=("daily",), full_refresh_selection=("update_status",))
    assert techniques(plan) == {"update_status": planning.FULL_REFRESH, "daily": planning.INPUT_CHANGED}


def test_reads_are_matched_to_the_pipeline_s_datasets_in_any_case_and_spelling(pipeline: Pipeline) -> None:
    pipeline.dataset("weekly", "MATERIALIZED_VIEW", "SELECT count(*) FROM obs.Update_Status")
    pipeline.dataset("upper", "MATERIALIZED_VIEW", "SELECT count(*) FROM `SPARK_CATALOG`.obs.DAILY")
    pipeline.update()
    pipeline.commit(LOG)
    plan = techniques(pipeline.update())
    assert plan["weekly"] == plan["upper"] == planning.INPUT_CHANGED


def test_a_changed_pipeline_configuration_recomputes_every_view(pipeline: Pipeline) -> None:
    pipeline.update()
    pipeline.configuration["spark.sql.session.timeZone"] = "Europe/Berlin"
    assert set(techniques(pipeline.update()).values()) == {planning.INPUT_CHANGED, planning.NOT_DETERMINISTIC}
