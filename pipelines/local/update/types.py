"""What an update is asked to do and what it gives back: the request, each flow's result, the update's
result and the wall-clock timings of its phases."""

from __future__ import annotations

import contextlib
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Callable, Iterator, Protocol

from pipelines import cancellation
from pipelines.local import jvm_log
from pipelines.local.sdp_events import short_name

if TYPE_CHECKING:
    from pyspark.sql.connect.session import SparkSession as ConnectSession

    from pipelines.bundle import Bundle, LocalSettings
    from pipelines.local.connection import LocalSpark
    from pipelines.local.home import ControlPlaneState, LocalHome
    from pipelines.local.plan_schemas import PlanSchemas

Printer = Callable[[str], None]


class UpdateHost(Protocol):
    """What an update takes from the runner that starts it (`pipelines.local.runner.LocalRunner`): the
    session, the bundle and its local settings, the state folder and its control-plane state."""

    local: LocalSpark
    spark: ConnectSession
    bundle: Bundle
    settings: LocalSettings
    home: LocalHome
    state: ControlPlaneState
    plan_schemas: PlanSchemas
    print: Printer


def now() -> datetime:
    return datetime.now(timezone.utc)


@dataclass(frozen=True)
class UpdateRequest:
    pipeline: str  # the pipeline resource key in the bundle
    full_refresh: bool = False
    full_refresh_selection: tuple[str, ...] = ()
    refresh_selection: tuple[str, ...] = ()
    cause: str = "USER_ACTION"
    configuration: tuple[tuple[str, str], ...] = ()  # extra pipeline configuration (like --set)


@dataclass
class FlowResult:
    name: str  # as SDP names it
    status: str
    rows_written: int | None = None
    error: str | None = None
    ended_at: datetime | None = None  # when SDP reported its final state
    seen_at: datetime | None = None  # its last event's time
    exceptions: list[jvm_log.JvmException] = field(default_factory=list)

    @property
    def short_name(self) -> str:
        return short_name(self.name)


@dataclass
class UpdateResult:
    pipeline_name: str
    pipeline_id: str
    update_id: str
    state: str
    started_at: datetime
    ended_at: datetime
    flows: dict[str, FlowResult]
    error: str | None = None
    error_class_name: str | None = None
    events_written: int = 0
    canceled: cancellation.Canceled | None = None  # the signal that stopped it (CANCELED), or came at its end
    timings: list[tuple[str, float]] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.state == "COMPLETED"

    def failed_flows(self) -> list[FlowResult]:
        return [f for f in self.flows.values() if f.status == "FAILED"]


class Timings:
    """Wall-clock seconds of an update's phases, in order (`lakewatch run --verbose`, bench/)."""

    def __init__(self) -> None:
        self.spans: list[tuple[str, float]] = []

    @contextlib.contextmanager
    def __call__(self, name: str) -> Iterator[None]:
        start = time.monotonic()
        try:
            yield
        finally:
            self.spans.append((name, time.monotonic() - start))

    def describe(self) -> str:
        return ", ".join(f"{name} {seconds:.2f}s" for name, seconds in self.spans)
