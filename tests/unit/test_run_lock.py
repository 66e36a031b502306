"""The state folder's run lock with real processes: a live holder refuses others and is named; a
holder killed with SIGKILL leaves a record that the next run recognises as stale and takes over."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

from pipelines.errors import LakewatchError
from pipelines.local.home import LocalHome
from pipelines.local.lock import RunLock

HOLD = """
import sys, time
from pathlib import Path
from pipelines.local.home import LocalHome
from pipelines.local.lock import RunLock
lock = RunLock(LocalHome(Path(sys.argv[1]))).acquire("lakewatch run (holder)")
print("held", flush=True)
time.sleep(600)
"""


def hold_in_subprocess(home: LocalHome) -> subprocess.Popen:
    process = subprocess.Popen([sys.executable, "-c", HOLD, str(home.root)], stdout=subprocess.PIPE, text=True)
    assert process.stdout is not None and process.stdout.readline().strip() == "held"
    return process


def test_a_live_holder_refuses_a_second_run_and_is_named(tmp_path):
    home = LocalHome(tmp_path)
    holder = hold_in_subprocess(home)
    try:
        with pytest.raises(LakewatchError) as refused:
            RunLock(home).acquire("lakewatch run")
        assert refused.value.error_class == "RUN_IN_PROGRESS"
        assert f"pid {holder.pid}" in str(refused.value) and "lakewatch run (holder)" in str(refused.value)
    finally:
        holder.kill()
        holder.wait()


def test_a_killed_holder_leaves_a_stale_lock_that_is_taken_over(tmp_path):
    home = LocalHome(tmp_path)
    holder = hold_in_subprocess(home)
    os.kill(holder.pid, signal.SIGKILL)
    holder.wait()
    lock = RunLock(home).acquire("lakewatch run")
    try:
        assert lock.stale is not None and lock.stale.pid == holder.pid
        assert lock.holder is not None and lock.holder.pid == os.getpid()
    finally:
        lock.release()


def test_a_released_lock_is_not_stale(tmp_path):
    home = LocalHome(tmp_path)
    RunLock(home).acquire("first").release()
    lock = RunLock(home).acquire("second")
    assert lock.stale is None
    lock.release()


def test_the_lock_is_free_again_once_the_holder_exits(tmp_path):
    home = LocalHome(tmp_path)
    holder = hold_in_subprocess(home)
    holder.terminate()
    holder.wait()
    deadline = time.monotonic() + 10
    lock = RunLock(home)
    while not lock.try_acquire("after"):
        assert time.monotonic() < deadline
        time.sleep(0.05)
    lock.release()
