"""Calls into SDP's runs in the local engine's JVM, through SQL's `reflect` (the local engine runs its
tasks in its driver, where SDP runs): lakewatch's classes `lakewatch.sdp.FlowThreads` and
`lakewatch.sdp.PipelineRuns` (pipelines/local/java/lakewatch/sdp/, in lakewatch-sdp.jar).

Each call returns None where the classes are not on the engine's class path (a `--remote` endpoint,
or SDP as shipped): the callers then fall back to what Spark Connect offers (interrupting operations,
releasing the session).
"""

from __future__ import annotations

from typing import Any, Callable

FLOW_THREADS = "lakewatch.sdp.FlowThreads"
PIPELINE_RUNS = "lakewatch.sdp.PipelineRuns"

# PipelineRuns.stop's answers
STOPPED, NOT_STARTED, NO_RUN = 1, 0, -1


def _reflect(spark: Any, cls: str, method: str, *args: int | str) -> int | None:
    values = "".join(f", CAST({int(a)} AS BIGINT)" if isinstance(a, int) else f", '{_literal(a)}'" for a in args)
    try:
        # Over an inline table, Spark's optimizer evaluates the call on the driver (ConvertToLocalRelation):
        # no task, so it does not wait for a free core behind the run's own tasks.
        return int(spark.sql(f"SELECT reflect('{cls}', '{method}'{values}) AS n FROM VALUES (0) AS driver(x)")
                   .collect()[0]["n"])
    except Exception:  # noqa: BLE001 (the class is not on the engine's class path)
        return None


def _literal(text: str) -> str:
    if not all(c.isalnum() or c in "-_" for c in text):
        raise ValueError(f"not an identifier: {text!r}")
    return text


def running_flows(spark: Any) -> int | None:
    """How many flows SDP's flow thread pool of the engine runs now (of every run of the JVM)."""
    return _reflect(spark, FLOW_THREADS, "running")


def await_idle_flows(spark: Any, seconds: int) -> int | None:
    """Waits up to `seconds` until SDP's flow threads run no flow; how many still run then (0: none)."""
    return _reflect(spark, FLOW_THREADS, "awaitIdle", seconds * 1000)


DRAIN_SECONDS = 120  # the longest a stopped or interrupted run's flows still at work are waited for


def drain_flows(spark: Any, say: Callable[[str], None], whose: str) -> None:
    """Waits up to DRAIN_SECONDS for SDP's flows still at work (a view's write that reached its commit,
    or one of a run that was interrupted rather than stopped), so that what they write is there when the update is measured and closed; says
    when some still run then, or when that could not be checked. `whose`: the run, in words."""
    running = await_idle_flows(spark, DRAIN_SECONDS)
    if running is None:
        say(f"  whether flows of {whose} still run could not be checked; what they write may land after "
            "this update is closed")
    elif running:
        say(f"  {running} flow(s) of {whose} still running after {DRAIN_SECONDS} s; what they write lands "
            "after this update is closed")


def stop_run(spark: Any, session_id: str, graph_id: str) -> int | None:
    """Stops the run of `graph_id` on Spark Connect session `session_id` the way SDP stops flows
    (queued flows do not start, running ones stop, a view's write under way has its jobs cancelled), and
    leaves the run to end by itself with its events: STOPPED, NOT_STARTED (the run is still setting
    up: ask again) or NO_RUN."""
    return _reflect(spark, PIPELINE_RUNS, "stop", session_id, graph_id)
