"""The same pipelines on a separately started open-source Spark Connect server (`--remote`), as on a
cluster: Spark's own `SparkConnectServer` launched with pyspark's spark-submit (what
start-connect-server.sh runs) with Delta on its classpath and its own catalog. Two updates with
files arriving in between, then the invariants of the local runs: every landing line in bronze once,
every corrupt line quarantined once, the event log's rows equal to the table."""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
from collections import Counter
from datetime import datetime
from pathlib import Path

import pytest

from pipelines.config import load_tables
from pipelines.generator import Mix, generate_batch, load_column_settings
from pipelines.local import jars
from pipelines.local.session import DELTA_CONF, TEST_TUNING
from tests.integration.helpers import (PROJECT_ROOT, Cli, cli_env, closed_as_failed, local_path, malformed_csv_lines,
                                       project_tables)

pytestmark = pytest.mark.integration

TABLES = ("orders", "customers", "payments")  # payments: CSV with a header line


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class ConnectServer:
    """A Spark Connect server in its own JVM, as a cluster would run it, on a folder and port that stay
    the same across restarts (its catalog and warehouse survive a kill, as a cluster's storage does)."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.port = free_port()
        self.url = f"sc://127.0.0.1:{self.port}"
        self.warehouse = folder / "warehouse"
        self.process: subprocess.Popen | None = None

    def start(self) -> None:
        import pyspark

        conf = {
            **DELTA_CONF, **TEST_TUNING,
            "spark.jars": ",".join(str(p) for p in jars.jar_paths()),
            "spark.connect.grpc.binding.address": "127.0.0.1",
            "spark.connect.grpc.binding.port": str(self.port),
            "spark.sql.catalogImplementation": "hive",
            "spark.sql.warehouse.dir": str(self.warehouse),
            "spark.hadoop.javax.jdo.option.ConnectionURL":
                f"jdbc:derby:;databaseName={self.folder / 'metastore_db'};create=true",
            # The local engine's JIT and collector (pipelines/local/session.py): short runs on 2 cores.
            "spark.driver.extraJavaOptions": f"-Dderby.system.home={self.folder} -XX:TieredStopAtLevel=1 "
                                             "-XX:ReservedCodeCacheSize=256m -XX:+UseParallelGC",
        }
        submit = Path(pyspark.__file__).parent / "bin" / "spark-submit"
        command = [str(submit), "--master", "local[2]", "--class", "org.apache.spark.sql.connect.service.SparkConnectServer"]
        for key, value in conf.items():
            command += ["--conf", f"{key}={value}"]
        log = (self.folder / "server.log").open("ab")
        self.process = subprocess.Popen(
            command + ["spark-internal"], stdout=log, stderr=subprocess.STDOUT, cwd=self.folder,
            env={k: v for k, v in os.environ.items() if k != "SPARK_CONNECT_MODE_ENABLED"}, start_new_session=True)
        deadline = time.monotonic() + 180
        while True:
            assert self.process.poll() is None, (self.folder / "server.log").read_text()[-3000:]
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=0.5).close()
                return
            except OSError:
                assert time.monotonic() < deadline, "the Spark Connect server did not start"
                time.sleep(0.5)

    def kill(self) -> None:
        """The server dies at once, as a cluster's driver that is lost (SIGKILL to its process group)."""
        assert self.process is not None
        os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait(timeout=60)

    def stop(self) -> None:
        if self.process is None or self.process.poll() is not None:
            return
        self.process.terminate()
        try:
            self.process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.process.kill()


@pytest.fixture(scope="module")
def connect_server(tmp_path_factory):
    """Started once for the module, stopped after it."""
    server = ConnectServer(tmp_path_factory.mktemp("connect_server"))
    server.start()
    yield server
    server.stop()


def text_on_disk(path: str) -> str:
    data = Path(path).read_bytes()
    return (gzip.decompress(data) if path.endswith(".gz") else data).decode()


def lines_on_disk(path: str) -> list[str]:
    return [l for l in text_on_disk(path).splitlines() if l.strip()]


def records_on_disk(path: str) -> int:
    """Records of a landing file: its lines with content, less a CSV file's header."""
    lines = lines_on_disk(path)
    return max(len(lines) - 1, 0) if ".csv" in path else len(lines)


def landing_files(home: Path, table: str) -> list[Path]:
    return [p for p in (home / "landing" / table).rglob("*") if p.is_file() and not p.name.startswith(".")]


def documented_remote_run(url: str) -> list[str]:
    """docs/local-engine.md's `--remote` command, this test's server for the endpoint shown."""
    from tests.docs_commands import lakewatch_commands

    [shown] = [args for _, args in lakewatch_commands() if "--remote" in args]
    return [url if word.startswith("sc://") else word for word in shown]


@pytest.fixture(scope="module")
def remote_run(spark, connect_server, tmp_path_factory):
    home = tmp_path_factory.mktemp("remote_home")
    cli = Cli(home)
    tables = load_tables(PROJECT_ROOT / "conf" / "tables.yml")
    settings = load_column_settings(PROJECT_ROOT / "conf" / "generator.yml")
    outputs = []
    for batch in range(2):
        generate_batch(spark, tables, home / "landing", rows=150, seed=11 + batch, column_settings=settings,
                       mix=Mix(malformed=0.05, type_mismatch=0.05, unknown_field=0.05, case_variant=0.03, empty_file=0.0))
        outputs.append(cli.run(*documented_remote_run(connect_server.url)).stdout)
    counts = json.loads(cli.run("--remote", connect_server.url, "query", "--json",
                                " UNION ALL ".join(f"SELECT '{t}' AS t, _source_file AS f, count(*) AS n "
                                                   f"FROM lakewatch.{t}_bronze GROUP BY ALL" for t in TABLES)).stdout)
    return {"home": home, "outputs": outputs, "bronze": counts, "url": connect_server.url,
            "warehouse": connect_server.warehouse}


def test_both_updates_complete_on_the_remote_server_without_a_local_engine(remote_run):
    assert all("COMPLETED in" in out for out in remote_run["outputs"])
    assert not (remote_run["home"] / "engine" / "engine.json").exists()
    assert (remote_run["warehouse"] / "lakewatch.db" / "orders_bronze" / "_delta_log").is_dir()


@pytest.mark.parametrize("table", TABLES)
def test_every_landing_line_is_in_bronze_once(remote_run, table):
    files = [str(p) for p in landing_files(remote_run["home"], table)]
    expected = Counter({f: records_on_disk(f) for f in files})
    actual = Counter({local_path(r["f"]): r["n"] for r in remote_run["bronze"] if r["t"] == table})
    assert +expected == actual and sum(actual.values()) > 0


def test_every_corrupt_line_is_quarantined_once_and_the_event_log_agrees(spark, remote_run):
    sink = spark.read.format("delta").load(str(remote_run["home"] / "sinks" / "lakewatch_ingest" / "corrupt_records_sink"))
    actual = Counter((r["source_table"], local_path(r["_source_file"]), r["_record_hash"]) for r in sink.collect())
    expected: Counter = Counter()
    for table in TABLES:
        for f in landing_files(remote_run["home"], table):
            if ".csv" in f.name:
                for line in malformed_csv_lines(text_on_disk(str(f))):
                    expected[(table, str(f), hashlib.sha256(line.encode()).hexdigest())] += 1
                continue
            for line in lines_on_disk(str(f)):
                try:
                    ok = isinstance(json.loads(line), dict)
                except ValueError:
                    ok = False
                if not ok:
                    expected[(table, str(f), hashlib.sha256(line.encode()).hexdigest())] += 1
    assert expected and actual == expected
    log = spark.read.format("delta").load(str(remote_run["warehouse"] / "lakewatch.db" / "lakewatch_ingest_event_log"))
    written = log.where("level = 'METRICS' AND origin.flow_name LIKE '%_bronze'").selectExpr(
        "sum(CAST(get_json_object(details, '$.flow_progress.metrics.num_output_rows') AS BIGINT))").collect()[0][0]
    assert written == sum(r["n"] for r in remote_run["bronze"])


# Run in a process of its own: a Connect session switches pyspark's functions to Connect columns for
# the whole process, which the classic session of this test worker's other modules cannot use.
DETACH_WHILE_EVENTS_FLOW = """
import json, sys, threading, time
from pipelines.local.capture import ProgressCollector, session_relay
from pipelines.local.engine import connect

client = connect(sys.argv[1])
query = (client.readStream.format("rate").option("rowsPerSecond", 200).load()
         .writeStream.format("noop").trigger(processingTime="10 milliseconds").start())
received, late = [], 0
try:
    deadline = time.monotonic() + 60
    while len(received) < 20 and time.monotonic() < deadline:
        collector = ProgressCollector()
        session_relay(client).attach(collector)
        time.sleep(0.2)
        detached = threading.Event()
        threading.Thread(target=lambda: (session_relay(client).detach(), detached.set()), daemon=True).start()
        if not detached.wait(30):
            print(json.dumps({"blocked": True, "received": received}), flush=True)
            raise SystemExit(3)
        seen = len(collector.snapshot())
        time.sleep(0.2)
        late += len(collector.snapshot()) - seen
        received.append(seen)
finally:
    query.stop()
    client.stop()
print(json.dumps({"blocked": False, "received": received, "late": late}))
"""


def test_detaching_an_update_collector_while_progress_events_flow_never_blocks(connect_server):
    """pyspark's Connect `removeListener` deadlocks when an event arrives during the removal (it waits
    for the event thread while holding the lock that thread needs): an update's collector is detached
    from the session's one relay instead. A stream reporting every few milliseconds, attached and
    detached again and again: each detach returns, the collector got events while attached and none
    after, and the process ends (no listener thread left behind)."""
    done = subprocess.run([sys.executable, "-c", DETACH_WHILE_EVENTS_FLOW, connect_server.url], cwd=PROJECT_ROOT,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr[-3000:]
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert len(result["received"]) == 20 and sum(result["received"]) > 0 and result["late"] == 0, result


def interrupted_remote_run(cli: Cli, server: ConnectServer, retry_seconds: int, back_at_once: bool) -> tuple[int, str]:
    """A `--remote run` of 50 orders whose server is killed once the update is RUNNING, and started
    again on the same folder and port at once (`back_at_once`) or after the run exited; the run's exit
    code and standard error."""
    landing = cli.home / "landing" / "orders"
    landing.mkdir(parents=True)
    _, conf = project_tables(cli.home, ("orders",))
    (landing / "o.json").write_text("".join(json.dumps({"order_id": i, "amount": 2.5}) + "\n" for i in range(50)))
    env = {**cli_env(cli.home), "LAKEWATCH_REMOTE_RETRY_SECONDS": str(retry_seconds)}
    with subprocess.Popen([sys.executable, "-m", "pipelines.cli", "--remote", server.url, "run", *conf],
                          cwd=PROJECT_ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) as run:
        for line in run.stderr:  # type: ignore[union-attr]  (the update's progress)
            if "RUNNING" in line:
                break
        server.kill()
        if back_at_once:
            server.start()
        _, err = run.communicate(timeout=300)
    if not back_at_once:
        server.start()
    return run.returncode, err


def closed_by_the_next_command(cli: Cli, server: ConnectServer, lost: str) -> None:
    """The next `--remote` command closes the interrupted update as FAILED, saying `lost` in its output
    and in the update's terminal event, read back from the server's event log."""
    recovered = cli.run("--remote", server.url, "query", "SELECT 1")
    update = re.search(rf"update (\S+) of 'lakewatch_ingest' was interrupted: {re.escape(lost)}", recovered.stderr)
    assert update is not None, recovered.stdout + recovered.stderr
    failed = closed_as_failed(cli, update[1], "--remote", server.url)
    assert f"[UPDATE_INTERRUPTED] The update was interrupted: {lost}" in failed, failed


def test_a_run_whose_remote_server_dies_fails_at_once_and_the_next_command_closes_its_update(
        connect_server, tmp_path):
    """The server is lost mid-update: Spark Connect's own policy would retry it for at least 10 minutes
    per call. The run retries for LAKEWATCH_REMOTE_RETRY_SECONDS, then exits 2 with REMOTE_UNREACHABLE;
    once the server is back, the next command closes the interrupted update as FAILED in its event log."""
    cli = Cli(tmp_path / "home")
    code, err = interrupted_remote_run(cli, connect_server, retry_seconds=5, back_at_once=False)
    assert code == 2, err
    assert f"[REMOTE_UNREACHABLE] The Spark Connect endpoint {connect_server.url} did not answer for 5 s" in err, err
    closed_by_the_next_command(cli, connect_server, f"the Spark Connect endpoint {connect_server.url} stopped "
                                                    "answering (UNAVAILABLE")


def test_a_run_whose_remote_server_restarts_within_the_retry_budget_fails_and_the_next_command_closes_it(
        connect_server, tmp_path):
    """The server is back before the budget runs out, but as a new server: the session and the pipeline
    run on it are gone (pyspark's client closes itself on INVALID_HANDLE.SESSION_CHANGED). The run exits
    2 with REMOTE_SESSION_LOST instead of an error about no active session, and the update is closed
    as interrupted, not left for a raw error."""
    cli = Cli(tmp_path / "home")
    code, err = interrupted_remote_run(cli, connect_server, retry_seconds=240, back_at_once=True)
    assert code == 2, err
    assert f"[REMOTE_SESSION_LOST] The Spark Connect endpoint {connect_server.url} restarted while this command ran" \
        in err, err
    closed_by_the_next_command(cli, connect_server, f"the Spark Connect endpoint {connect_server.url} restarted, "
                                                    "and the session the update ran on was lost with it")


def test_a_remote_run_stopped_by_ctrl_c_counts_what_it_committed_and_commits_nothing_after_it_closed(
        connect_server, tmp_path):
    """Ctrl-C while the bronze streams run on an endpoint without lakewatch's classes: interrupting the
    run stops SDP's scheduler, but a client cannot stop SDP's streaming queries there, and they went on
    to commit after the update was closed CANCELED, with no event counting their rows. Now the run
    waits for them: by Delta's own history of each bronze table, every commit of the canceled update
    is older than its CANCELED event and holds the rows its METRICS events say; the next update then
    has every landing line in bronze once (counted from the files)."""
    cli = Cli(tmp_path / "home")
    cli.home.mkdir()
    _, conf = project_tables(cli.home, ("orders", "customers"))
    expected = Counter()
    for table, key in (("orders", "order_id"), ("customers", "customer_id")):
        folder = cli.home / "landing" / table
        folder.mkdir(parents=True)
        for part in range(2):
            path = folder / f"{table}-{part}.json"
            path.write_text("".join(json.dumps({key: part * 20_000 + i}) + "\n" for i in range(20_000)))
            expected[(f"{table}_bronze", str(path))] = 20_000
    remote = ("--remote", connect_server.url)
    with subprocess.Popen([sys.executable, "-m", "pipelines.cli", *remote, "run", *conf], cwd=PROJECT_ROOT,
                          env=cli_env(cli.home), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) as run:
        seen = []
        for line in run.stderr:  # type: ignore[union-attr]  (the update's progress)
            seen.append(line)
            if "_bronze" in line and "RUNNING" in line:
                break
        run.send_signal(signal.SIGINT)
        out, err = run.communicate(timeout=300)
    err = "".join(seen) + err
    assert run.returncode == 130 and "STOPPING" in err, out + err
    canceled = re.search(r"update (\S+) of 'lakewatch_ingest': CANCELED", out)
    assert canceled is not None, out
    events = json.loads(cli.run(*remote, "query", "--json", (
        "SELECT origin.flow_name AS flow, event_type, `timestamp`, "
        "get_json_object(details, '$.update_progress.state') AS state, "
        "CAST(get_json_object(details, '$.flow_progress.metrics.num_output_rows') AS BIGINT) AS rows "
        f"FROM lakewatch.lakewatch_ingest_event_log WHERE origin.update_id = '{canceled[1]}'")).stdout)
    [closed_at] = [datetime.fromisoformat(e["timestamp"]) for e in events if e["state"] == "CANCELED"]
    # The server's tables are shared with this module's other tests: their commits came before this update.
    started_at = min(datetime.fromisoformat(e["timestamp"]) for e in events)
    following = re.search(r"update (\S+) of 'lakewatch_ingest': COMPLETED", cli.run(*remote, "run", *conf).stdout)
    assert following is not None
    for table in ("orders_bronze", "customers_bronze"):
        history = json.loads(cli.run(*remote, "query", "--json", f"DESCRIBE HISTORY lakewatch.{table}").stdout)
        commits = [(datetime.fromisoformat(h["timestamp"]), int(h["operationMetrics"]["numOutputRows"]))
                   for h in history if h["operation"] == "STREAMING UPDATE"
                   and following[1] not in (h["userMetadata"] or "")
                   and datetime.fromisoformat(h["timestamp"]) >= started_at]
        assert all(at <= closed_at for at, _ in commits), (table, commits, closed_at)
        counted = [e["rows"] for e in events if e["event_type"] == "flow_progress" and e["rows"] is not None
                   and (e["flow"] or "").endswith(table)]
        assert sum(counted) == sum(rows for _, rows in commits), (table, counted, commits)
    bronze = json.loads(cli.run(*remote, "query", "--json", " UNION ALL ".join(
        f"SELECT '{t}' AS t, _source_file AS f, count(*) AS n FROM lakewatch.{t} GROUP BY ALL"
        for t in ("orders_bronze", "customers_bronze"))).stdout)
    mine = [r for r in bronze if local_path(r["f"]).startswith(str(cli.home))]
    assert Counter({(r["t"], local_path(r["f"])): r["n"] for r in mine}) == expected
