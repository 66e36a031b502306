"""How long open-source SDP sleeps between its checks of the running flows, chosen per update.

SDP's triggered execution starts the flows whose inputs are done, then sleeps for
`spark.sql.pipelines.execution.streamstate.pollingInterval` (whole seconds, 1 by default) before it
looks again. Every level of the graph waits at least one such sleep: an ingest update has two (bronze,
then the clean tables and the quarantine), so an update with nothing new spends a large part of its
time asleep while its flows have long finished. With 0, HotSpot's `Thread.sleep(0)` yields the core
instead of sleeping, so the loop checks again as soon as other threads let it: on a small update that
saves those seconds at no measured cost, but on a large ingest the looping thread takes CPU from the
executors and makes the update slower (see bench/RESULTS.md).

So an update with less than `codegen.SMALL_UPDATE_BYTES` of landing files to read polls without
sleeping, and every other update (a large or unknown backlog, a pipeline that reads no landing files,
such as the observability refresh, where it saved nothing) sets SDP's one second explicitly, so the
choice of an earlier update on the same session does not carry over. A value set in the pipeline's
configuration is kept.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from pipelines.local.codegen import SMALL_UPDATE_BYTES

POLLING_INTERVAL = "spark.sql.pipelines.execution.streamstate.pollingInterval"
EVERY_SECOND = "1"  # SDP's default (seconds)
WITHOUT_SLEEP = "0"


def choose(backlog_bytes: Iterable[int | None], configured: Mapping[str, str],
           threshold: int = SMALL_UPDATE_BYTES) -> dict[str, str]:
    """The polling setting of one update from the bytes each file source has left to read (None:
    unknown); empty when the pipeline's configuration sets it."""
    if POLLING_INTERVAL in configured:
        return {}
    sizes = list(backlog_bytes)
    if not sizes or any(size is None for size in sizes) or sum(sizes) >= threshold:  # type: ignore[misc]
        return {POLLING_INTERVAL: EVERY_SECOND}
    return {POLLING_INTERVAL: WITHOUT_SLEEP}
