"""The state of an update that more than one thread touches, in one place.

Four threads share an update:
- the main thread runs the update: it registers the definitions, applies SDP's event stream, and
  closes the update;
- the signal handler (`stopping.Stopping.on_signal`) runs in the main thread too, between two of its
  instructions, so what it writes needs no lock against the main thread, but it must not print
  (it leaves `signal_notes`) nor block;
- the streaming query listener's thread reports micro-batches and query ends, and applies a COMPLETED
  event the completion gate held (`flow_events.FlowEvents.query_ended`);
- the stop thread (`stopping.Stopping.stop_run`), started by the first signal while the run goes on.

What each field's writer is, and which lock guards it, is said next to it. Everything else an update
holds is written by the main thread alone, or written before the run starts and only read after
(the registration fields of `context.UpdateContext`).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field

from pipelines import cancellation
from pipelines.local.sdp_events import SdpEvent
from pipelines.local.update.types import FlowResult


@dataclass
class SharedState:
    # -- the stop: written by the signal handler and the main thread (no lock: one thread), read by the
    #    stop thread ----------------------------------------------------------------------------------
    cancellation: cancellation.Canceled | None = None  # Ctrl-C or SIGTERM while the update ran
    late_cancellation: cancellation.Canceled | None = None  # a signal once the run was over (signal handler)
    hard_stop: bool = False  # a second signal: stop waiting for the run's flows (signal handler)
    run_started: bool = False  # SDP's run was asked for: a signal then stops the run (main thread)
    closing: bool = False  # the update is being closed, `lifecycle.Update.finish` (main thread)
    signal_notes: list[str] = field(default_factory=list)  # appended by the handler, printed by the main thread
    stopper: threading.Thread | None = None  # the stop thread, started by the signal handler
    run_over: threading.Event = field(default_factory=threading.Event)  # set by the main thread once SDP's
    #   run has ended (or never started); the stop thread waits for it

    # -- SDP's flow states: under `events_lock`, written by the main thread (SDP's event stream, the close)
    #    and the listener thread (a held COMPLETED released by its query's end), read by the stop thread --
    events_lock: threading.RLock = field(default_factory=threading.RLock)
    flow_status: dict[str, FlowResult] = field(default_factory=dict)  # SDP's flow name -> its result so far
    sdp_events: list[SdpEvent] = field(default_factory=list)  # every SDP event applied, in order
    run_status: SdpEvent | None = None  # SDP's last "Run is ..." event
    printed_running: bool = False  # the update's RUNNING state was written
    definitions_written: bool = False  # the dataset and flow definitions were written
    started_flows: set[str] = field(default_factory=set)  # flows SDP reported STARTING or RUNNING
    ended_queries: set[str] = field(default_factory=set)  # streaming queries the listener saw end
