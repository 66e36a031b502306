"""The resident local engine: one JVM per state folder, started on first use, shared by every command.

The engine is a background process (`python -m pipelines.local.engine serve --home H`) that runs
Spark `local[2]` with Delta Lake, the state folder's catalog (Hive metastore on embedded Derby) and a
Spark Connect server on a loopback port. Commands are Spark Connect clients: they find the engine
through `<home>/engine/engine.json`, start it when there is none (or when the one recorded there is
dead), and connect in well under a second once it runs.

Each client holds a lease (`<home>/engine/clients/<pid>`) while it is connected; the engine stops by
itself after `idle_seconds` without a live lease. `lakewatch engine status|start|stop` manage it.
Two state folders get two engines (each has its own catalog).

The JVM is a child of the serve process and exits with it (pyspark's gateway ends on EOF of its
stdin), so killing the engine process never leaves an orphaned JVM holding the catalog.
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import json
import logging
import os
import signal
import socket
import subprocess
import sys
import time
import uuid
from dataclasses import asdict, dataclass
from datetime import datetime, timezone
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, Any, Callable, Iterator, Mapping

from pipelines.errors import LakewatchError
from pipelines.local.home import LocalHome
from pipelines.local.processes import pid_alive

if TYPE_CHECKING:
    from pyspark.sql.connect.client.retries import RetryPolicy
    from pyspark.sql.connect.session import SparkSession as ConnectSession

    from pipelines.local.patches import PatchRecord

DEFAULT_IDLE_SECONDS = 30 * 60
IDLE_ENV = "LAKEWATCH_ENGINE_IDLE_SECONDS"
START_TIMEOUT_SECONDS = 180.0
POLL_SECONDS = 1.0
PATCHES_KEY = "patches"  # engine.json: which of lakewatch's patches the engine runs (patches.py)


@dataclass(frozen=True)
class EngineInfo:
    """What `<home>/engine/engine.json` records about a running engine."""

    pid: int
    port: int
    started_at: str
    log_file: str
    out_file: str
    fingerprint: str
    idle_seconds: int
    home: str

    @property
    def url(self) -> str:
        return f"sc://127.0.0.1:{self.port}"


def engine_dir(home: LocalHome) -> Path:
    return home.root / "engine"


def info_file(home: LocalHome) -> Path:
    return engine_dir(home) / "engine.json"


def clients_dir(home: LocalHome) -> Path:
    return engine_dir(home) / "clients"


def idle_seconds_default() -> int:
    text = os.environ.get(IDLE_ENV)
    if text:
        try:
            return max(5, int(float(text)))
        except ValueError:
            raise LakewatchError("CLI_INVALID_ARGUMENT", {"reason": f"{IDLE_ENV}={text!r} is not a number of seconds"}) from None
    return DEFAULT_IDLE_SECONDS


def port_open(port: int, timeout: float = 0.5) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=timeout):
            return True
    except OSError:
        return False


def read_info(home: LocalHome) -> EngineInfo | None:
    path = info_file(home)
    try:
        data = json.loads(path.read_text())
        return EngineInfo(**{k: data[k] for k in EngineInfo.__dataclass_fields__})
    except (OSError, ValueError, KeyError, TypeError):
        return None


def read_patches(home: LocalHome) -> "list[PatchRecord]":
    """The state of each of lakewatch's patches (patches.PatchRecord) in the engine recorded in
    `<home>/engine/engine.json`, as it started; empty when none is recorded."""
    try:
        return list(json.loads(info_file(home).read_text()).get(PATCHES_KEY, []))
    except (OSError, ValueError, AttributeError):
        return []


def _write_json(path: Path, data: Mapping[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(data, indent=2, sort_keys=True))
    tmp.replace(path)


def fingerprint(conf: Mapping[str, str]) -> str:
    """Identifies the static settings an engine was started with (a change needs a restart)."""
    import hashlib

    text = json.dumps({"conf": dict(sorted(conf.items())), "python": sys.executable}, sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


# -- the engine process ------------------------------------------------------------------------
def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _live_leases(home: LocalHome) -> int:
    live = 0
    folder = clients_dir(home)
    if not folder.is_dir():
        return 0
    for lease in folder.iterdir():
        try:
            pid = int(lease.name.split("-")[0])
        except ValueError:
            continue
        if pid_alive(pid):
            live += 1
        else:
            with contextlib.suppress(OSError):
                lease.unlink()
    return live


def serve(home: LocalHome, spark_conf: Mapping[str, str], idle_seconds: int) -> int:
    """Runs the engine until it has been idle for `idle_seconds` or gets SIGTERM/SIGINT."""
    from pyspark.sql import SparkSession as ClassicSession

    from pipelines.local import patches
    from pipelines.local.session import engine_conf

    home.create()
    stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%S")
    port = _free_port()
    conf, log_file = engine_conf(home, f"engine-{stamp}-{os.getpid()}", port, spark_conf)
    stopping: list[int] = []

    def on_signal(signum: int, _frame: FrameType | None) -> None:
        stopping.append(signum)

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    builder = ClassicSession.builder
    for key, value in conf.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    # A trivial query warms the catalog (Derby boots lazily) so the first client does not wait for it.
    spark.sql("SHOW DATABASES").collect()
    info = EngineInfo(
        pid=os.getpid(), port=port, started_at=datetime.now(timezone.utc).isoformat(),
        log_file=str(log_file), out_file=str(engine_dir(home) / "engine.out"),
        fingerprint=fingerprint(spark_conf), idle_seconds=idle_seconds, home=str(home.root),
    )
    patch_records = patches.records()  # as engine_conf saw them: the same environment and jars
    _write_json(info_file(home), {**asdict(info), PATCHES_KEY: patch_records})
    print(f"lakewatch engine ready on {info.url} (pid {info.pid}, idle stop after {idle_seconds}s)", flush=True)
    print(patches.summary(patch_records), flush=True)
    last_busy = time.monotonic()
    reason = "stopped"
    jvm = getattr(spark.sparkContext._gateway, "proc", None)  # the JVM this process launched
    try:
        while not stopping:
            time.sleep(POLL_SECONDS)
            if jvm is not None and jvm.poll() is not None:
                # Its clients retry while this process lives (see connect): a dead JVM ends it.
                reason = f"its JVM exited (code {jvm.returncode}; killed or out of memory?)"
                break
            if _live_leases(home):
                last_busy = time.monotonic()
            elif time.monotonic() - last_busy > idle_seconds:
                reason = f"idle for {idle_seconds}s"
                break
            current = read_info(home)
            if current is None or current.pid != os.getpid():
                reason = "replaced (engine.json no longer names this process)"
                break
        else:
            reason = f"signal {stopping[0]}"
    finally:
        current = read_info(home)
        if current is not None and current.pid == os.getpid():
            with contextlib.suppress(OSError):
                info_file(home).unlink()
        print(f"lakewatch engine stopping: {reason}", flush=True)
        if jvm is None or jvm.poll() is None:
            spark.stop()
    return 0


def stop_reason(home: LocalHome) -> str:
    """Why the state folder's last engine stopped, as it said in its output (or that it did not say)."""
    out = engine_dir(home) / "engine.out"
    lines = out.read_text(errors="replace").splitlines() if out.is_file() else []
    said = [line for line in lines if line.startswith("lakewatch engine stopping: ")]
    return said[-1].removeprefix("lakewatch engine stopping: ") if said else "its process ended without saying why"


# -- clients -----------------------------------------------------------------------------------
@contextlib.contextmanager
def _start_lock(home: LocalHome) -> Iterator[None]:
    """Serializes engine starts for one state folder (the OS frees it if the holder dies)."""
    path = engine_dir(home) / "start.lock"
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a+") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def running(home: LocalHome) -> EngineInfo | None:
    """The engine serving this state folder, if its process is alive and its port answers."""
    info = read_info(home)
    if info is None or not pid_alive(info.pid):
        return None
    return info if port_open(info.port) else None


def _spawn(home: LocalHome, spark_conf: Mapping[str, str], idle_seconds: int) -> EngineInfo:
    folder = engine_dir(home)
    folder.mkdir(parents=True, exist_ok=True)
    out_file = folder / "engine.out"
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable}
    env.pop("SPARK_CONNECT_MODE_ENABLED", None)
    env.pop("SPARK_REMOTE", None)
    command = [sys.executable, "-m", "pipelines.local.engine", "serve", "--home", str(home.root),
               "--idle-seconds", str(idle_seconds), "--spark-conf", json.dumps(dict(spark_conf))]
    with out_file.open("ab") as out:
        process = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                                   env=env, start_new_session=True, cwd=str(Path(__file__).resolve().parents[2]))
    deadline = time.monotonic() + START_TIMEOUT_SECONDS
    while time.monotonic() < deadline:
        info = read_info(home)
        if info is not None and info.pid == process.pid and port_open(info.port):
            return info
        code = process.poll()
        if code is not None:
            tail = out_file.read_text(errors="replace")[-3000:] if out_file.is_file() else ""
            raise LakewatchError("ENGINE_START_FAILED", {"home": home.root, "code": code, "log": out_file,
                                                         "tail": " ".join(tail.split())[-800:]})
        time.sleep(0.1)
    process.kill()
    raise LakewatchError("ENGINE_START_FAILED", {"home": home.root, "code": "timeout", "log": out_file,
                                                 "tail": f"not ready after {START_TIMEOUT_SECONDS:.0f}s"})


def ensure_running(home: LocalHome, spark_conf: Mapping[str, str], say: Callable[[str], None] | None = None,
                   idle_seconds: int | None = None) -> EngineInfo:
    """The state folder's engine: the running one, or a new one (also after a crash)."""
    notify = say or (lambda text: print(text, file=sys.stderr, flush=True))
    info = running(home)
    if info is not None:
        _warn_if_stale_settings(info, spark_conf, notify)
        return info
    with _start_lock(home):
        info = running(home)  # another client may have started it while this one waited
        if info is not None:
            return info
        previous = read_info(home)
        if previous is not None:
            if pid_alive(previous.pid):
                notify(f"the local engine (pid {previous.pid}) does not answer on port {previous.port}; restarting it")
                _terminate(previous.pid, grace=10.0)
            else:
                notify(f"the local engine (pid {previous.pid}) is gone (crashed or killed); starting a new one. "
                       f"Its log: {previous.log_file}")
            with contextlib.suppress(OSError):
                info_file(home).unlink()
        seconds = idle_seconds if idle_seconds is not None else idle_seconds_default()
        notify(f"starting the local engine (Spark local[2], Delta, catalog in {home.root}; "
               f"stops after {seconds}s idle)")
        started = time.monotonic()
        info = _spawn(home, spark_conf, seconds)
        notify(f"local engine ready in {time.monotonic() - started:.1f}s (pid {info.pid}, {info.url})")
        recorded = read_patches(home)
        if recorded:
            from pipelines.local import patches

            notify(patches.summary(recorded))
        return info


def _warn_if_stale_settings(info: EngineInfo, spark_conf: Mapping[str, str], notify: Callable[[str], None]) -> None:
    if info.fingerprint != fingerprint(spark_conf):
        notify("note: the local engine was started with other Spark settings than lakewatch.local.yml now has; "
               "`lakewatch engine stop` applies them at the next start")


def _terminate(pid: int, grace: float) -> bool:
    """SIGTERM, then SIGKILL after `grace` seconds. True when the process is gone."""
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline:
        if not pid_alive(pid):
            return True
        time.sleep(0.1)
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGKILL)
    time.sleep(0.2)
    return not pid_alive(pid)


def stop(home: LocalHome, grace: float = 30.0) -> EngineInfo | None:
    """Stops the state folder's engine (waits for it to exit). Returns what was stopped."""
    info = read_info(home)
    if info is None:
        return None
    if pid_alive(info.pid):
        _terminate(info.pid, grace)
    with contextlib.suppress(OSError):
        info_file(home).unlink()
    return info


class Lease:
    """Marks this process as a client of the engine while it is connected."""

    def __init__(self, home: LocalHome) -> None:
        self.path = clients_dir(home) / f"{os.getpid()}-{uuid.uuid4().hex[:8]}"
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.path.write_text(datetime.now(timezone.utc).isoformat())

    def release(self) -> None:
        with contextlib.suppress(OSError):
            self.path.unlink()


def live_clients(home: LocalHome) -> int:
    return _live_leases(home)


# pyspark's Connect client logs every error that has a query context as an ERROR JSON line on stderr,
# JVM stack included, before it raises the error: a mistyped table name in `lakewatch query` printed
# 5 KB above the one-paragraph error. lakewatch reports each error itself (the stack with --verbose).
QUERY_CONTEXT_LOGGERS = ("SQLQueryContextLogger", "DataFrameQueryContextLogger")


def quiet_query_context_logs() -> None:
    from pyspark.logger import PySparkLogger

    for name in QUERY_CONTEXT_LOGGERS:
        PySparkLogger.getLogger(name).setLevel(logging.CRITICAL)  # it logs at ERROR


def connect(url: str, session_id: str | None = None, retries: RetryPolicy | None = None) -> ConnectSession:
    """A Spark Connect session on `url` (a new server-side session unless `session_id` is given),
    retrying unanswered calls by `retries` (a pyspark retry policy; see `retries.py`), or by
    Spark Connect's own policy when None."""
    from pyspark.sql.connect.session import SparkSession as ConnectSession

    quiet_query_context_logs()

    sid = session_id or str(uuid.uuid4())
    # pyspark's functions build Connect columns only when this process-wide flag is set.
    os.environ["SPARK_CONNECT_MODE_ENABLED"] = "1"
    session = ConnectSession.builder.remote(f"{url.rstrip('/')}/;session_id={sid}").create()
    if retries is not None:
        session.client.set_retry_policies([retries])
    return session


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m pipelines.local.engine")
    sub = parser.add_subparsers(dest="command", required=True)
    run = sub.add_parser("serve", help="run the engine for a state folder (started by lakewatch itself)")
    run.add_argument("--home", type=Path, required=True)
    run.add_argument("--idle-seconds", type=int, default=DEFAULT_IDLE_SECONDS)
    run.add_argument("--spark-conf", default="{}", help="JSON object of extra Spark settings (lakewatch.local.yml)")
    args = parser.parse_args(argv)
    return serve(LocalHome(args.home.resolve()), json.loads(args.spark_conf), args.idle_seconds)


if __name__ == "__main__":
    raise SystemExit(main())
