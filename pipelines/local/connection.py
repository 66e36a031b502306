"""The Spark Connect session of one command: on the state folder's resident engine (`engine`, started
when none runs), or on any Spark Connect endpoint given with `--remote`, with the retry policy that
fits each (`retries`)."""

from __future__ import annotations

import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Mapping

from pipelines.local import engine, retries
from pipelines.local.home import LocalHome
from pipelines.local.processes import pid_alive

if TYPE_CHECKING:
    from pyspark.sql.connect.session import SparkSession as ConnectSession


@dataclass
class LocalSpark:
    """A Spark Connect session for one command: on the state folder's resident engine, or on a
    Spark Connect endpoint given with `--remote` (then there is no JVM log to read)."""

    spark: ConnectSession
    log_file: Path | None
    home: LocalHome
    started_seconds: float
    url: str
    session_id: str
    lease: engine.Lease | None = None  # held while connected to the local engine
    engine_pid: int | None = None  # the local engine's process
    remote_retries: retries.WithinBudget | None = None  # the retry policy of a --remote session
    _lost: str | None = field(default=None, init=False, repr=False)  # why the server is gone, once known
    _stopped: bool = field(default=False, init=False, repr=False)  # stop() was called

    @property
    def remote(self) -> bool:
        return self.lease is None

    @property
    def remote_url(self) -> str | None:
        """The `--remote` endpoint, or None on the state folder's local engine."""
        return self.url if self.remote else None

    def lost(self) -> str | None:
        """Why this session's server is gone, as a clause ("its local engine (pid 12) stopped: ..."), or
        None while it is reachable: the local engine's process died, or a `--remote` endpoint stopped
        answering for longer than its retry budget (retries.WithinBudget)."""
        if self._lost is not None:
            return self._lost
        if self.remote_retries is not None:
            gave_up = self.remote_retries.gave_up
            if gave_up is not None:
                self._lost = f"the Spark Connect endpoint {self.url} stopped answering ({gave_up})"
            elif self._session_gone():
                self._lost = (f"the Spark Connect endpoint {self.url} restarted, and the session the update ran "
                              "on was lost with it")
        elif self.engine_pid is not None and not pid_alive(self.engine_pid):
            time.sleep(engine.POLL_SECONDS)  # let it write why it stopped
            self._lost = f"its local engine (pid {self.engine_pid}) stopped: {engine.stop_reason(self.home)}"
        return self._lost

    def _session_gone(self) -> bool:
        """Whether the server dropped this session without being asked: a server that restarted within
        the retry budget answers with another server-side session (INVALID_HANDLE.SESSION_CHANGED), and
        pyspark's client then closes itself."""
        return not self._stopped and bool(getattr(self.spark, "is_stopped", False))

    def stop(self) -> None:
        self._stopped = True
        try:
            self.spark.stop()  # releases the server-side session
        except Exception:  # noqa: BLE001 (the engine may be gone already)
            pass
        finally:
            if self.lease is not None:
                self.lease.release()


def connect_local(home: LocalHome, spark_conf: Mapping[str, str] | None = None,
                  say: Callable[[str], None] | None = None) -> LocalSpark:
    """Connects to the state folder's resident engine, starting it first when none runs."""
    started = time.monotonic()
    home.create()
    info = engine.ensure_running(home, dict(spark_conf or {}), say=say)
    lease = engine.Lease(home)
    session_id = str(uuid.uuid4())
    try:
        spark = engine.connect(info.url, session_id, retries.WhileAlive(info.pid))
    except Exception:
        lease.release()
        raise
    return LocalSpark(spark=spark, log_file=Path(info.log_file), home=home,
                      started_seconds=time.monotonic() - started, url=info.url, session_id=session_id, lease=lease,
                      engine_pid=info.pid)


def connect_remote(url: str, home: LocalHome) -> LocalSpark:
    """Connects to any Spark Connect endpoint (`sc://host:port`) instead of the local engine; a call
    it does not answer is retried for `retries.remote_retry_seconds()` at most."""
    started = time.monotonic()
    home.create()
    session_id = str(uuid.uuid4())
    policy = retries.WithinBudget(retries.remote_retry_seconds())
    spark = engine.connect(url, session_id, policy)
    return LocalSpark(spark=spark, log_file=None, home=home, started_seconds=time.monotonic() - started,
                      url=url, session_id=session_id, remote_retries=policy)
