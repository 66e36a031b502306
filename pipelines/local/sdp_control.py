"""Calls into SDP's runs in the local engine's JVM, through SQL's `reflect` (the local engine runs its
tasks in its driver, where SDP runs): lakewatch's classes `lakewatch.sdp.FlowThreads` and
`lakewatch.sdp.PipelineRuns` (pipelines/local/java/lakewatch/sdp/, in lakewatch-sdp.jar: the
`sdp_control` patch of pipelines/local/patches.py).

Each call returns None where the classes are not on the engine's class path (a `--remote` endpoint,
or an engine without the `sdp_control` patch): the callers then fall back to what Spark Connect offers (interrupting operations,
releasing the session). Any other failure (the engine gone, the call's own error) raises.
"""

from __future__ import annotations

import time
from typing import Any, Callable

FLOW_THREADS = "lakewatch.sdp.FlowThreads"
PIPELINE_RUNS = "lakewatch.sdp.PipelineRuns"

# PipelineRuns.stop's answers
ENDED, STOPPED, NOT_STARTED, NO_RUN = 2, 1, 0, -1

# Spark's error classes for a `reflect` whose class or method the engine does not have
_NOT_THERE = ("UNEXPECTED_CLASS_TYPE", "UNEXPECTED_STATIC_METHOD")


def _reflect(spark: Any, cls: str, method: str, *args: int | str) -> int | None:
    values = "".join(f", CAST({int(a)} AS BIGINT)" if isinstance(a, int) else f", '{_literal(a)}'" for a in args)
    try:
        # Over an inline table, Spark's optimizer evaluates the call on the driver (ConvertToLocalRelation):
        # no task, so it does not wait for a free core behind the run's own tasks.
        return int(spark.sql(f"SELECT reflect('{cls}', '{method}'{values}) AS n FROM VALUES (0) AS driver(x)")
                   .collect()[0]["n"])
    except Exception as e:
        if any(name in str(e) for name in _NOT_THERE):
            return None  # not lakewatch's engine (a `--remote` endpoint), or an older lakewatch jar
        raise


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
HARD_STOP_DRAIN_SECONDS = 15  # after a second signal: writes cancelled, only a commit under way is waited for


def drain_flows(spark: Any, say: Callable[[str], None], whose: str, seconds: int = DRAIN_SECONDS) -> None:
    """Waits up to `seconds` for SDP's flows still at work (a view's write that reached its commit,
    or one of a run that was interrupted rather than stopped), so that what they write is there when
    the update is measured and closed; says when some still run then, or when that could not be
    checked. `whose`: the run, in words."""
    try:
        running = await_idle_flows(spark, seconds)
        reason = "" if running is not None else " (the engine has no lakewatch classes)"
    except Exception as e:  # noqa: BLE001 (said; the update is closed regardless)
        running, reason = None, f" ({type(e).__name__}: {' '.join(str(e).split())[:200]})"
    if running is None:
        say(f"  whether flows of {whose} still run could not be checked{reason}; what they write may land "
            "after this update is closed")
    elif running:
        say(f"  {running} flow(s) of {whose} still running after {seconds} s; what they write lands "
            "after this update is closed")


def stop_run(spark: Any, session_id: str, graph_id: str) -> int | None:
    """Stops the run of `graph_id` on Spark Connect session `session_id` the way SDP stops flows
    (queued flows do not start, running ones stop, a view's write under way has its jobs cancelled), and
    leaves the run to end by itself with its events: STOPPED, NOT_STARTED (the run is still setting
    up: ask again), ENDED or NO_RUN."""
    return _reflect(spark, PIPELINE_RUNS, "stop", session_id, graph_id)


def stop_run_until_ended(spark: Any, session_id: str, graph_id: str, over: Callable[[float], bool],
                         started: bool = False) -> int | None:
    """Stops the run (`stop_run`) and asks again until it has ended: every 0.1 s while it is still
    setting up, then every 0.5 s, so that a flow the scheduler was starting as the run stopped is
    stopped too, and a view's write job started after the last call is cancelled. `over(seconds)`
    waits that long and says whether the caller stops asking (the run ended as its caller saw it, or
    a deadline). `started`: the caller has asked for the run, so NO_RUN means "not registered yet"
    (the engine registers a run only once it has built its graph). Returns the last answer (None:
    the engine has no lakewatch classes)."""
    waiting = (NOT_STARTED, NO_RUN) if started else (NOT_STARTED,)
    answer = stop_run(spark, session_id, graph_id)
    while answer in waiting and not over(0.1):
        answer = stop_run(spark, session_id, graph_id)
    while answer == STOPPED and not over(0.5):
        answer = stop_run(spark, session_id, graph_id)
    return answer


def deadline(seconds: float) -> Callable[[float], bool]:
    """An `over` for `stop_run_until_ended` that sleeps, and says over once `seconds` have passed."""
    end = time.monotonic() + seconds

    def over(wait: float) -> bool:
        time.sleep(wait)
        return time.monotonic() >= end
    return over
