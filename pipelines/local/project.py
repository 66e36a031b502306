"""The project as the local engine sees it: the bundle, the local settings, the state folder, and
one Spark Connect session opened on first use and shared by every step of a command: on the state
folder's resident engine (started when none runs), or on the Spark Connect endpoint given by
`--remote` / `LAKEWATCH_REMOTE`."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Mapping

from pipelines import adapter
from pipelines.local import adapter as local_adapter
from pipelines.bundle import Bundle, LocalSettings, PipelineResource, load_local_bundle
from pipelines.config import TablesConfig, load_tables
from pipelines.local.home import PROJECT_ROOT, LocalHome

if TYPE_CHECKING:
    from pyspark.sql.connect.session import SparkSession as ConnectSession

    from pipelines.local.connection import LocalSpark
    from pipelines.local.lock import RunLock
    from pipelines.local.runner import LocalRunner

INGEST_PIPELINE = "lakewatch_ingest"
REMOTE_ENV = "LAKEWATCH_REMOTE"
LANDING_ROOT_VARIABLE = "landing_root"  # the bundle variable of the pipelines' landing root


def register_local_engine() -> None:
    """Makes `lakewatch.engine=local`, which the runner sets in every update's configuration, choose the
    local engine in the definitions (`adapter.engine_for`)."""
    adapter.register_engine(local_adapter.LocalEngine.name, local_adapter.LocalEngine)


def _notice(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


class LocalProject:
    def __init__(self, root: Path = PROJECT_ROOT, home: LocalHome | None = None,
                 printer: Callable[[str], None] = print, verbose: bool = False, remote: str | None = None,
                 target: str | None = None, variables: Mapping[str, str] | None = None,
                 landing_root: Path | None = None) -> None:
        """`target` and `variables` are `-t` and `--var` of the bundle commands: the target whose
        variables resolve (default: base_target of lakewatch.local.yml) and variable values over all others.
        `landing_root` (`--landing-root`) is the local landing root, any folder, where the files are read
        as they lie: the `landing_root` variable's value, over lakewatch.local.yml's and `--var`'s."""
        self.root = root
        self.remote = remote or os.environ.get(REMOTE_ENV) or None
        self.home = home or LocalHome.default()
        self.print = printer
        self.verbose = verbose
        self.bundle: Bundle
        self.settings: LocalSettings
        if landing_root is not None:
            variables = {**(variables or {}), LANDING_ROOT_VARIABLE: str(landing_root.expanduser().resolve())}
        self.bundle, self.settings = load_local_bundle(root, self.home.root, target=target, variables=variables)
        self._local: LocalSpark | None = None
        self._lock: RunLock | None = None

    # -- configuration ---------------------------------------------------------------------
    def pipeline(self, key: str = INGEST_PIPELINE) -> PipelineResource:
        return self.bundle.pipeline(key)

    def pipeline_configuration(self, key: str = INGEST_PIPELINE) -> dict[str, str]:
        return {**self.pipeline(key).configuration, **self.settings.configuration}

    def tables(self) -> TablesConfig:
        conf = self.pipeline_configuration()
        tables = load_tables(conf[adapter.TABLES_CONFIG_KEY])
        tables.landing_paths(conf[adapter.LANDING_ROOT_KEY])  # each landing a folder under the root, or raises
        return tables

    def landing_root(self) -> Path:
        return Path(self.pipeline_configuration()[adapter.LANDING_ROOT_KEY])

    def schema_name(self, key: str = INGEST_PIPELINE) -> str:
        p = self.pipeline(key)
        return f"{p.catalog or 'spark_catalog'}.{p.schema or 'default'}"

    # -- engine ----------------------------------------------------------------------------
    @property
    def spark(self) -> ConnectSession:
        if self._local is None:
            from pipelines.local.connection import connect_local, connect_remote

            if self.remote:
                self._local = connect_remote(self.remote, self.home)
            else:
                # Progress notices, not results: stderr, so `--json` output stays parseable.
                self._local = connect_local(self.home, self.settings.spark_conf, say=_notice)
            from pipelines.local.recovery import recover_unfinished

            recover_unfinished(self._local.spark, self.home, self.print, self._lock, self._local.remote_url)
        return self._local.spark

    def lock_runs(self, command: str) -> None:
        """Takes the state folder's run lock before anything is read or written (one run at a time)."""
        if self._lock is not None:
            return
        from pipelines.local.lock import RunLock

        lock = RunLock(self.home).acquire(command)
        if lock.stale is not None:
            self.print(f"note: took over the run lock of {self.home.root} from a run that did not finish "
                       f"({lock.stale.describe()})")
        self._lock = lock

    @property
    def local(self) -> LocalSpark:
        _ = self.spark
        assert self._local is not None
        return self._local

    def runner(self) -> LocalRunner:
        from pipelines.local.runner import LocalRunner

        register_local_engine()
        return LocalRunner(self.local, self.bundle, self.settings, self.home, printer=self.print, verbose=self.verbose)

    def use_schema(self, key: str = INGEST_PIPELINE) -> None:
        """Makes the pipeline's schema the current one, if it exists, so names need no prefix."""
        name = self.schema_name(key)
        if self.spark.catalog.databaseExists(name.split(".")[-1]):
            self.spark.sql(f"USE {name}")

    def connection_lost(self) -> Exception | None:
        """What an error while connected most likely comes from, when the connection is gone:
        ENGINE_STOPPED when this command's local engine died, REMOTE_UNREACHABLE when a `--remote`
        endpoint stopped answering, REMOTE_SESSION_LOST when it restarted; else None. The update this
        command was running then carries the cause, for the command that closes it (see
        inflight.note_stop)."""
        from pipelines.errors import LakewatchError
        from pipelines.local import engine, inflight, retries

        local = self._local
        cause = local.lost() if local is not None else None
        if local is None or cause is None:
            return None
        inflight.note_stop(self.home, local.session_id, cause)
        if local.remote_retries is not None and local.remote_retries.gave_up is None:
            return LakewatchError("REMOTE_SESSION_LOST", {"url": local.url})
        if local.remote_retries is not None:
            return LakewatchError("REMOTE_UNREACHABLE", {
                "url": local.url, "seconds": local.remote_retries.seconds,
                "reason": local.remote_retries.gave_up, "env": retries.REMOTE_RETRY_ENV})
        return LakewatchError("ENGINE_STOPPED", {
            "home": self.home.root, "pid": local.engine_pid, "reason": engine.stop_reason(self.home),
            "log": local.log_file, "out": engine.engine_dir(self.home) / "engine.out"})

    def close_session(self) -> None:
        """Disconnects from the engine (the run lock, if held, stays)."""
        if self._local is not None:
            self._local.stop()
            self._local = None

    def close(self) -> None:
        self.close_session()
        if self._lock is not None:
            self._lock.release()
            self._lock = None

    def __enter__(self) -> "LocalProject":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
