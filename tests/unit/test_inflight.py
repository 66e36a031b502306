"""Records of updates in progress and which command may close them: an update is closed on the
endpoint it ran on (its event log is there), and a stop is noted on the records of its own session."""

from __future__ import annotations

import json

import pytest

from pipelines.bundle import load_local_bundle
from pipelines.errors import LakewatchError
from pipelines.local import inflight
from pipelines.local.home import LocalHome
from pipelines.local.recovery import recover_unfinished
from pipelines.local.runner import LocalRunner
from pipelines.local.update.types import UpdateRequest
from pipelines.local.connection import LocalSpark

REMOTE = "sc://cluster.example:15002"


def record(pipeline: str = "lakewatch_ingest", session_id: str = "s1", remote_url: str | None = None,
           pid: int = 4242) -> inflight.InFlightUpdate:
    return inflight.InFlightUpdate(
        update_id=f"u-{pipeline}-{session_id}", pipeline_key=pipeline, pipeline_name=pipeline, pipeline_id="p",
        catalog="spark_catalog", schema="lakewatch", event_log="spark_catalog.lakewatch.event_log",
        started_at="2026-12-03T10:00:00+00:00", pid=pid, session_id=session_id, url=remote_url or "sc://127.0.0.1:1",
        cluster_id=None, log_file=None, log_offset=0, remote_url=remote_url)


@pytest.fixture
def home(tmp_path) -> LocalHome:
    h = LocalHome(tmp_path / "home")
    h.create()
    return h


def test_a_stop_is_noted_on_the_records_of_its_own_session_only(home):
    """Two commands' records with the same pid (a container's pids repeat): only the session that
    lost its server gets the cause."""
    inflight.save(home, record("lakewatch_ingest", session_id="lost"))
    inflight.save(home, record("lakewatch_observability", session_id="other"))
    inflight.note_stop(home, "lost", "its local engine (pid 7) stopped")
    causes = {r.pipeline_name: r.stopped_by for r in inflight.load_all(home)}
    assert causes == {"lakewatch_ingest": "its local engine (pid 7) stopped", "lakewatch_observability": None}


@pytest.mark.parametrize("ran_on, opened_on, hint", [
    (REMOTE, None, f"any lakewatch command with --remote {REMOTE} closes it"),
    (None, REMOTE, "any lakewatch command without --remote closes it"),
    (REMOTE, "sc://other:15002", f"any lakewatch command with --remote {REMOTE} closes it"),
])
def test_an_update_interrupted_on_another_endpoint_is_left_open_with_a_notice(home, ran_on, opened_on, hint):
    """Its event log is on the endpoint it ran on: closing events written elsewhere would land in the
    wrong event log and leave the real one open for good. (No session is touched: spark is None.)"""
    inflight.save(home, record(remote_url=ran_on))
    said: list[str] = []
    assert recover_unfinished(None, home, said.append, remote_url=opened_on) == []
    assert [r.update_id for r in inflight.load_all(home)] == ["u-lakewatch_ingest-s1"]
    assert len(said) == 1 and "u-lakewatch_ingest-s1" in said[0] and said[0].endswith(hint), said


def test_a_record_from_before_endpoints_were_recorded_is_closed_wherever_it_is_opened(home):
    written = record()
    inflight.save(home, written)
    path = inflight.path_for(home, written.pipeline_name)
    data = json.loads(path.read_text())
    del data["remote_url"]
    path.write_text(json.dumps(data))
    loaded = inflight.load(home, written.pipeline_name)
    assert loaded is not None and loaded.ran_where(None) and loaded.ran_where(REMOTE)


def test_a_run_over_an_update_open_on_another_endpoint_is_refused_before_anything_runs(home, project_root):
    """A new update would overwrite the open one's record and journal: it could never be closed."""
    inflight.save(home, record(remote_url=REMOTE))
    journal = inflight.journal_path(home, "lakewatch_ingest")
    journal.write_text('{"id": "e1"}\n')
    bundle, settings = load_local_bundle(project_root, home.root)
    local = LocalSpark(spark=None, log_file=None, home=home, started_seconds=0.0, url="sc://127.0.0.1:1",
                       session_id="s2", lease=object())  # the local engine; no call reaches it
    with pytest.raises(LakewatchError) as refused:
        LocalRunner(local, bundle, settings, home).run_update(UpdateRequest(pipeline="lakewatch_ingest"))
    assert refused.value.error_class == "UPDATE_OPEN_ELSEWHERE"
    assert f"ran on the Spark Connect endpoint {REMOTE}" in str(refused.value)
    assert f"`lakewatch --remote {REMOTE} query" in str(refused.value)
    assert inflight.load(home, "lakewatch_ingest").update_id == "u-lakewatch_ingest-s1"
    assert journal.read_text() == '{"id": "e1"}\n'
