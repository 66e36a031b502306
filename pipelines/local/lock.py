"""One run at a time per state folder: an exclusive lock taken before anything is read or written.

The lock is an OS file lock (`flock`) on `<home>/state/run.lock`, so it is released by the kernel
when its holder exits, however it exits (SIGKILL and out-of-memory included). The file also records
the holder (pid, command, start time): a second run is refused with a message naming them, and a
record left by a holder that died is recognised as stale when the next run takes the lock over
(a clean release empties the file).
"""

from __future__ import annotations

import fcntl
import json
import os
import socket
from dataclasses import asdict, dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import IO, Any

from pipelines.errors import LakewatchError
from pipelines.local.home import LocalHome


@dataclass(frozen=True)
class LockHolder:
    pid: int
    command: str
    started_at: str
    host: str

    def describe(self) -> str:
        return f"pid {self.pid} on {self.host}, `{self.command}`, started {self.started_at}"


def _read_holder(text: str) -> LockHolder | None:
    try:
        data = json.loads(text)
        return LockHolder(int(data["pid"]), str(data["command"]), str(data["started_at"]), str(data["host"]))
    except (ValueError, KeyError, TypeError):
        return None


class RunLock:
    """The state folder's run lock. Use `acquire()`; `stale` names a dead holder it took over."""

    def __init__(self, home: LocalHome) -> None:
        self.path: Path = home.root / "state" / "run.lock"
        self.holder: LockHolder | None = None
        self.stale: LockHolder | None = None
        self._file: IO[str] | None = None

    @property
    def held(self) -> bool:
        return self._file is not None

    def try_acquire(self, command: str) -> bool:
        """Takes the lock if it is free; False when another live process holds it."""
        if self._file is not None:
            return True
        self.path.parent.mkdir(parents=True, exist_ok=True)
        f = self.path.open("a+")
        try:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            f.seek(0)
            self.holder = _read_holder(f.read())
            f.close()
            return False
        f.seek(0)
        previous = _read_holder(f.read())
        self.stale = previous if previous is not None and previous.pid != os.getpid() else None
        me = LockHolder(os.getpid(), command, datetime.now(timezone.utc).isoformat(timespec="seconds"),
                        socket.gethostname())
        f.seek(0)
        f.truncate()
        f.write(json.dumps(asdict(me)))
        f.flush()
        os.fsync(f.fileno())
        self._file = f
        self.holder = me
        return True

    def acquire(self, command: str) -> "RunLock":
        """Takes the lock or raises RUN_IN_PROGRESS naming the live holder."""
        if not self.try_acquire(command):
            holder = self.holder
            raise LakewatchError("RUN_IN_PROGRESS", {
                "home": self.path.parents[1],
                "holder": holder.describe() if holder else "another process (its record is not readable)",
            })
        return self

    def release(self) -> None:
        if self._file is None:
            return
        try:
            self._file.seek(0)
            self._file.truncate()
            self._file.flush()
            fcntl.flock(self._file, fcntl.LOCK_UN)
        finally:
            self._file.close()
            self._file = None

    def __enter__(self) -> "RunLock":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.release()
