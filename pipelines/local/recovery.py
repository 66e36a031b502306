"""Closes updates whose runner died (killed, out of memory, a closed laptop), as Databricks does when
an update's compute is lost: the update ends FAILED with an error saying it was interrupted.

Any command that opens a state folder calls `recover_unfinished` first. An update is interrupted
when its in-flight record (see `inflight`) is there but no live process holds the run lock. Closing
it, from what the record and the state folder say:
1. stop what the dead runner left running on the engine: its pipeline run is stopped as a canceled
   update's is (streams stop, queued flows do not start), its session released, and the flows still
   writing are waited for;
2. record the micro-batches that committed after the runner's last event-log write: rows from the
   target tables' Delta history; their expectation counts are lost with the runner and stay NULL,
   with a WARN event saying so;
3. settle the materialized views whose refresh the event log does not show completed: a view the
   update wrote (Delta's history holds its WRITE) was refreshed whole, after the runner's last event:
   its flow is recorded COMPLETED with the rows of that write; a view it only truncated (open-source SDP
   as shipped truncates views at setup) gets its previous contents back. With lakewatch's rewrite of
   SDP (pipelines/local/sdp_classes.py) a view is written only by its refresh's one overwrite;
4. mark flows that were still running FAILED, write the backlog and rewrite the file state from the
   checkpoints;
5. write the terminal `update_progress` FAILED with the interruption as its error.
An update its runner was canceling (Ctrl-C or SIGTERM, then killed before it closed the update: a
scheduler that follows SIGTERM with SIGKILL) ends CANCELED instead, with the stop's
`cancellation_cause`, and its running flows STOPPED.
The data needs no repair: streaming checkpoints and Delta's idempotent streaming writes make the next
update process every uncommitted file exactly once.
"""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any, Callable

from pipelines import cancellation
from pipelines.eventlog import events as event_builders
from pipelines.eventlog.schema import TERMINAL_FLOW_STATES, TERMINAL_UPDATE_STATES
from pipelines.eventlog.writer import PENDING_ERROR, EventLogStream, EventLogWriter, read_journal
from pipelines.local import checkpoints
from pipelines.local import inflight, measure, sdp_control
from pipelines.local.home import ControlPlaneState, LocalHome
from pipelines.local.lock import RunLock

INTERRUPTED_CLASS = "com.lakewatch.pipelines.UpdateInterruptedException"
INTERRUPTED_ERROR = "UPDATE_INTERRUPTED"
FILE_STATE_TABLE = "lakewatch_file_state"

Say = Callable[[str], None]


def recover_unfinished(spark: Any, home: LocalHome, say: Say, lock: RunLock | None = None,
                       remote_url: str | None = None) -> list[str]:
    """Closes every interrupted update of the state folder that ran where `spark` runs (the local
    engine, or the `--remote` endpoint `remote_url`); returns their update ids.

    An update that ran elsewhere is left open, with a notice: its event log is there, and closing
    events written here would land in the wrong one. Takes the run lock for the time it needs it
    unless `lock` is already held; when a live run holds it, nothing is interrupted and nothing is done.
    """
    records = inflight.load_all(home)
    for record in [r for r in records if not r.ran_where(remote_url)]:
        say(f"note: update {record.update_id} of '{record.pipeline_name}' was interrupted on {record.ran_on()}; "
            f"it stays open until {record.closed_by()} closes it")
    records = [r for r in records if r.ran_where(remote_url)]
    if not records:
        return []
    own = lock is None or not lock.held
    if own:
        lock = RunLock(home)
        if not lock.try_acquire("lakewatch recovery"):
            return []
    closed = []
    try:
        for record in records:
            close_interrupted(spark, home, record, say)
            closed.append(record.update_id)
    finally:
        if own and lock is not None:
            lock.release()
    return closed


def _stop_session(spark: Any, record: inflight.InFlightUpdate, say: Say) -> None:
    """Stops what a dead runner's Spark Connect session runs, then releases the session.

    Releasing alone does not stop a pipeline run: Spark 4.2's `PipelineExecution.runPipeline` holds
    the execution's lock until the run ends, and the session's close waits for that lock before it
    stops the run, so the release returns when the dead runner's update has run to its end (a jstack of
    the engine: `SessionHolder.close` blocked in `executionStarted`). On the local engine the run is
    stopped first as a canceled update's is, asked again until it has ended
    (`sdp_control.stop_run_until_ended`: queued flows do not start, streams stop, a view's write under
    way has its jobs cancelled); the run then ends by itself once its flows have ended, and the
    release closes the session cleanly. For a record without the run's graph (the runner died while
    registering, or an earlier lakewatch wrote it) the session's operations are interrupted instead: that cancels the run's Spark jobs and ends the operation that holds the lock,
    and the close stops the scheduler (it then fails reporting queued flows SKIPPED to the interrupted
    operation's event stream: tolerated, said). Either way the recovery then waits for SDP's flow
    threads (`FlowThreads`) before it reads what the run left and before the next update starts.
    Elsewhere (a `--remote` endpoint, no lakewatch classes) the release waits for the run to end.
    """
    from pyspark.sql.connect.client import SparkConnectClient

    stopped = None
    if record.graph_id and record.remote_url is None:
        try:
            stopped = sdp_control.stop_run_until_ended(spark, record.session_id, record.graph_id,
                                                       sdp_control.deadline(sdp_control.DRAIN_SECONDS))
        except Exception as e:  # noqa: BLE001 (said; its operations are interrupted instead)
            say(f"  the interrupted run could not be stopped ({type(e).__name__}: {' '.join(str(e).split())[:200]}); "
                "interrupting its operations instead")
    drainable = record.remote_url is None and (stopped is not None or sdp_control.running_flows(spark) is not None)
    client = SparkConnectClient(f"{record.url.rstrip('/')}/;session_id={record.session_id}")
    # No retries: the engine that ran it is often gone (killed with its runner), and Spark Connect's
    # default policy would retry an unreachable server for 10 minutes before the update is closed.
    client.set_retry_policies([])
    try:
        if drainable and stopped not in (sdp_control.STOPPED, sdp_control.ENDED):
            client.interrupt_all()
        try:
            client.release_session()
        except Exception as e:  # noqa: BLE001 (see above)
            if not drainable or "STREAM_LIFECYCLE_EVENT_SEND_AFTER_SHUTDOWN" not in str(e):
                raise
            say("  the engine could not report the interrupted run's queued flows SKIPPED (its event stream "
                "was shut); its scheduler is stopped")
    finally:
        client.close()
        if drainable:
            sdp_control.drain_flows(spark, say, "the interrupted run")


def _replay_journal(spark: Any, home: LocalHome, record: inflight.InFlightUpdate) -> None:
    """Writes the events the dead runner journaled but had not written to the table yet."""
    journaled = read_journal(inflight.journal_path(home, record.pipeline_name))
    if not journaled:
        return
    writer = EventLogWriter(spark, record.event_log)
    writer.ensure_table()
    present = {r["id"] for r in spark.sql(
        f"SELECT id FROM {record.event_log} WHERE origin.update_id = '{record.update_id}'").collect()}
    missing = [e for e in journaled if e["id"] not in present]
    if not missing:
        return
    for event in missing:
        pending = event.pop(PENDING_ERROR, None)
        if pending is not None:  # a FAILED flow event still waiting for its exception chain
            cause = event_builders.ExceptionInfo("org.apache.spark.SparkException", pending.get("error") or "")
            event["error"] = event_builders.error([cause], fatal=bool(pending.get("fatal")))
    state = ControlPlaneState(home)
    stream = EventLogStream(writer, lambda n: state.next_sequence(record.pipeline_name, n), record.cluster_id)
    for event in missing:
        stream.add(event)
    stream.close()


def _existing_events(spark: Any, record: inflight.InFlightUpdate) -> list[Any]:
    if not spark.catalog.tableExists(record.event_log):
        return []
    return spark.sql(
        f"SELECT event_type, level, `timestamp`, origin.flow_name AS flow_name, origin.batch_id AS batch_id, "
        f"get_json_object(details, '$.update_progress.state') AS update_state, "
        f"get_json_object(details, '$.flow_progress.status') AS flow_status "
        f"FROM {record.event_log} WHERE origin.update_id = '{record.update_id}'"
    ).collect()


def interrupted_error(why: str) -> Any:
    """The error the recovery writes for an update that could not finish because its runner or its
    server was lost (`why`)."""
    message = (f"[{INTERRUPTED_ERROR}] The update was interrupted: {why}. lakewatch closed it at "
               f"{datetime.now(timezone.utc):%Y-%m-%d %H:%M:%S} UTC; the next update ingests what it did not commit.")
    return event_builders.error([event_builders.ExceptionInfo(INTERRUPTED_CLASS, message)], fatal=True)


def close_interrupted(spark: Any, home: LocalHome, record: inflight.InFlightUpdate, say: Say) -> None:
    why = record.stopped_by or f"its runner (pid {record.pid}) stopped before the update finished"
    # An update its runner was stopping (Ctrl-C, SIGTERM) ends CANCELED, as the runner would have closed
    # it, with the stop's cause: a scheduler that follows SIGTERM with SIGKILL cut only the close.
    final = "CANCELED" if record.cancellation_cause else "FAILED"
    say(f"update {record.update_id} of '{record.pipeline_name}' was interrupted: {why}; closing it as {final}")
    notes: list[tuple[str, str, inflight.FlowRecord | None]] = []
    try:
        _stop_session(spark, record, say)
    except Exception as e:  # noqa: BLE001 (the engine that ran it may be gone, and its work with it)
        say(f"  the interrupted run's engine session could not be released ({type(e).__name__}); "
            "it ended with its engine")
    _replay_journal(spark, home, record)
    events = _existing_events(spark, record)
    if any(r["event_type"] == "update_progress" and r["update_state"] in TERMINAL_UPDATE_STATES for r in events):
        inflight.remove(home, record)  # the runner died after closing the update: nothing to do
        return
    origin = event_builders.Origin(pipeline_id=record.pipeline_id, pipeline_name=record.pipeline_name,
                                   update_id=record.update_id, cluster_id=record.cluster_id,
                                   catalog_name=record.catalog, schema_name=record.schema)
    state = ControlPlaneState(home)
    stream = EventLogStream(EventLogWriter(spark, record.event_log),
                            lambda n: state.next_sequence(record.pipeline_name, n), record.cluster_id)
    # collect() gives naive times in this machine's zone: made aware UTC times, as the commit times are.
    last_seen = [r["timestamp"].astimezone(timezone.utc) for r in events if r["timestamp"] is not None]
    last_status: dict[str, tuple[datetime, str]] = {}
    logged_batches: set[tuple[str, int]] = set()
    measured: set[str] = set()  # flows with a METRICS event of their whole update (materialized views)
    for r in events:
        if r["event_type"] != "flow_progress" or not r["flow_name"]:
            continue
        if r["level"] == "METRICS" and r["batch_id"] is not None:
            logged_batches.add((r["flow_name"], int(r["batch_id"])))
            continue
        if r["level"] == "METRICS":
            measured.add(r["flow_name"])
        if r["flow_status"]:
            at = r["timestamp"]
            if r["flow_name"] not in last_status or at >= last_status[r["flow_name"]][0]:
                last_status[r["flow_name"]] = (at, r["flow_status"])

    cut: dict[str, dict[int, datetime]] = {}  # flow -> its batches the kill cut -> their table commit's time
    if record.registered:
        for flow in record.flows:
            times, cut[flow.name] = _record_missing_batches(spark, home, flow, origin, logged_batches, stream, notes,
                                                            remote=record.remote_url is not None)
            last_seen += times
        completed, times = _settle_views(spark, home, record, origin, last_status, measured, stream, notes, say)
        last_seen += times
        for flow_name in completed:
            last_status[flow_name] = (max(times), "COMPLETED")
    ended = max(last_seen, default=datetime.fromisoformat(record.started_at))
    error = interrupted_error(record.stopped_by or f"its runner (pid {record.pid}) stopped before the update "
                              "finished (killed, out of memory, or the machine stopped)")
    for flow in record.flows:
        status = last_status.get(flow.sdp_name)
        if status is not None and status[1] not in TERMINAL_FLOW_STATES:
            if final == "CANCELED":  # as the runner closes a canceled update's flows
                ended_as = cancellation.flow_closed_as(status[1])
                stream.add(event_builders.flow_progress(
                    measure.flow_origin(origin, flow), ended, ended_as,
                    message=f"Flow '{flow.name}' {'SKIPPED' if ended_as == 'SKIPPED' else 'has STOPPED'}: the update "
                            f"was canceled ({record.cancellation_cause}), and its runner stopped before it closed "
                            "the update."))
            else:
                stream.add(event_builders.flow_progress(measure.flow_origin(origin, flow), ended, "FAILED",
                                                        error_struct=error))
    for measurement, reason, flow in notes:
        stream.add(event_builders.measurement_warning(measure.flow_origin(origin, flow) if flow else origin, ended,
                                                      measurement, reason))
    if record.registered:
        for event in measure.backlog_events(origin, record.flows, ended, cut):
            stream.add(event)
        try:
            measure.write_file_state(spark, record.qualified(FILE_STATE_TABLE), record.flows,
                                     inflight.ledger_path(home, record.pipeline_name), cut)
        except Exception as e:  # noqa: BLE001 (a measurement; the update is closed regardless)
            stream.add(event_builders.measurement_warning(origin, ended, "file state", " ".join(str(e).split())[:300]))
    if final == "CANCELED":
        stream.add(event_builders.update_progress(origin, ended, "CANCELED", cancellation_cause=record.cancellation_cause))
    else:
        stream.add(event_builders.update_progress(origin, ended, "FAILED", error_struct=error))
    stream.close()
    inflight.remove(home, record)
    say(f"  closed update {record.update_id[:8]} as " + (
        f"CANCELED ({record.cancellation_cause})" if final == "CANCELED" else f"FAILED ({INTERRUPTED_ERROR})"))


def _record_missing_batches(spark: Any, home: LocalHome, flow: inflight.FlowRecord, origin: event_builders.Origin,
                            logged: set[tuple[str, int]], stream: EventLogStream, notes: list,
                            remote: bool = False) -> tuple[list[datetime], dict[int, datetime]]:
    """METRICS events for the flow's batches that committed in the update but were never logged; returns
    the times of the batches the update committed, and those of the batches it cut (committed to the
    table, not to the checkpoint)."""
    if not flow.measured:
        return [], {}
    checkpoint = measure.checkpoint_of(flow)
    if checkpoint is None:
        return [], {}
    commits = checkpoints.committed_batches(checkpoint)
    same = flow.checkpoint_before == str(checkpoint)
    new = {b: t for b, t in commits.items() if not same or b > flow.batch_before}
    missing = sorted(b for b in new if (flow.sdp_name, b) not in logged)
    rows: dict[int, int | None] = {}
    held: dict[int, measure.BatchCommit] = {}
    if flow.target_table:
        # Read from the table's Delta log where it is on this machine (not a sink's: at its own path).
        table_dir = None if remote or flow.is_sink else measure.local_table_dir(home.warehouse, flow.target_table)
        try:
            # A batch the stream committed to the table but not to its checkpoint (stopped between the
            # two): only its Delta commit says so, and which update wrote it (measure.cut_batches).
            held = measure.cut_batches(spark, flow.target_table, checkpoint, table_dir)
        except Exception as e:  # noqa: BLE001 (said; the batches the checkpoint holds are still counted)
            notes.append(("rows written", f"micro-batches cut by the interruption not looked up, Delta history of "
                          f"{flow.target_table} not readable: {' '.join(str(e).split())[:200]}", flow))
        cut = {batch: commit for batch, commit in held.items()
               if commit.update_id == origin.update_id and (flow.sdp_name, batch) not in logged}
        rows |= {batch: commit.rows for batch, commit in cut.items()}
        new |= {batch: commit.at for batch, commit in cut.items()}
        missing += sorted(cut)
        unread = [b for b in missing if b not in rows]
        try:
            # By this update's commits only: a batch it ran again after a cut wrote nothing (Delta skipped it).
            rows |= measure.rows_per_batch(spark, flow.target_table, checkpoint, unread, table_dir=table_dir,
                                           update_id=origin.update_id)
        except Exception as e:  # noqa: BLE001 (then the rows are not known: NULL with a warning)
            if unread:
                notes.append(("rows written", f"Delta history of {flow.target_table} not readable: "
                              f"{' '.join(str(e).split())[:200]}", flow))
    if missing:
        for batch in missing:
            stream.add(event_builders.flow_metrics(measure.flow_origin(origin, flow, batch), new[batch],
                                                   num_output_rows=rows.get(batch)))
        notes.append(("expectation counts",
                      f"micro-batch(es) {', '.join(map(str, missing))} committed after the runner's last event-log "
                      "write; their rows come from the table's Delta history, their expectation counts were lost "
                      "with the runner", flow))
    # Their files were committed when the table took them, whoever wrote them (the file state, the backlog).
    return list(new.values()), {batch: commit.at for batch, commit in held.items()}


def _settle_views(spark: Any, home: LocalHome, record: inflight.InFlightUpdate, origin: event_builders.Origin,
                  last_status: dict[str, tuple[datetime, str]], measured: set[str], stream: EventLogStream,
                  notes: list, say: Say) -> tuple[set[str], list[datetime]]:
    """The materialized views of the interrupted update, from what their Delta logs say it wrote.

    A view the update wrote (a Delta WRITE: the refresh's one overwrite, or SDP as shipped's append
    after its TRUNCATE) was refreshed whole: when the event log does not show its flow completed, the
    refresh ended after the runner's last event-log write, and its flow is recorded COMPLETED. Each
    completed refresh gets the METRICS event the runner writes at the end of an update, with the rows
    of its write (0 for a completed refresh that wrote nothing, as the runner counts). A view the update
    only truncated gets its previous contents back. Returns the flows recorded COMPLETED here and when.
    """
    flows = {f.target: f for f in record.flows if f.target}
    settled: set[str] = set()
    times: list[datetime] = []
    for name in record.materialized_views:
        flow = flows.get(name)
        if flow is None or flow.sdp_name in measured:
            continue
        status = last_status.get(flow.sdp_name)
        completed = status is not None and status[1] == "COMPLETED"
        table = record.qualified(name)
        table_dir = measure.local_table_dir(home.warehouse, table) if record.remote_url is None else None
        found = measure.update_commits(spark, table, record.update_id, table_dir=table_dir)
        if found.wrote() or completed:
            # No earlier than the flow's last event (a STOPPED recorded after the commit, while Delta's
            # post-commit work ran), so COMPLETED is its last status.
            seen = [status[0] if status[0].tzinfo else status[0].astimezone(timezone.utc)] if status else []
            at = max([*(t for t, _ in found.commits), *seen], default=datetime.now(timezone.utc))
            flow_origin = measure.flow_origin(origin, flow)
            stream.add(event_builders.flow_metrics(flow_origin, at, num_output_rows=found.written("numOutputRows"),
                                                   status="COMPLETED", streaming=False,
                                                   num_output_bytes=found.written("numOutputBytes")))
            if name in record.expectation_datasets:
                notes.append(("expectation counts", "the runner stopped before it counted the view's expectations; "
                              "its rows come from the view's Delta history", flow))
            if not completed:
                stream.add(event_builders.flow_progress(flow_origin, at, "COMPLETED"))
                settled.add(flow.sdp_name)
                times.append(at)
                say(f"  {name}: refresh completed after the runner stopped; kept its new contents")
        elif found.before is not None:
            spark.sql(f"RESTORE TABLE {table} TO VERSION AS OF {found.before}")
            say(f"  {name}: refresh did not complete; kept its previous contents (version {found.before})")
    return settled, times
