"""Starts the local engine: one JVM running Spark `local[2]` with Delta Lake, a persistent catalog
(Hive metastore on embedded Derby) and a Spark Connect server, plus the Connect client that drives
pipelines (open-source SDP runs only through Spark Connect).

Static settings (catalog, extensions, jars) go to the JVM at start; they cannot be set per pipeline.
JVM logs go to a file under the home's `logs/`, so the terminal shows lakewatch's own output; the
runner reads that file to name the exception class of a failed flow.
"""

from __future__ import annotations

import os
import socket
import sys
import time
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Mapping

from pipelines.local import jars
from pipelines.local.home import LocalHome

TEST_TUNING = {
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    "spark.sql.shuffle.partitions": "2",
    "spark.default.parallelism": "2",
    "spark.sql.session.timeZone": "UTC",
    "spark.databricks.delta.snapshotPartitions": "2",
    "spark.sql.sources.parallelPartitionDiscovery.parallelism": "2",
}

DELTA_CONF = {
    # Tables default to Delta, as on Databricks (SDP would otherwise create parquet tables).
    "spark.sql.sources.default": "delta",
    "spark.sql.extensions": "io.delta.sql.DeltaSparkSessionExtension",
    "spark.sql.catalog.spark_catalog": "org.apache.spark.sql.delta.catalog.DeltaCatalog",
}

LOG4J2_TEMPLATE = """\
status = error
appender.file.type = File
appender.file.name = file
appender.file.fileName = {path}
appender.file.layout.type = PatternLayout
appender.file.layout.pattern = %d{{yyyy-MM-dd HH:mm:ss.SSS}}{{UTC}} %p %c{{1}}: %m%n%ex
rootLogger.level = warn
rootLogger.appenderRef.file.ref = file
logger.pipelines.name = org.apache.spark.sql.pipelines
logger.pipelines.level = info
logger.derby.name = org.apache.hadoop.hive
logger.derby.level = error
"""


def project_python() -> str:
    """The interpreter Python workers must use (the project's venv), not whatever is on PATH."""
    return sys.executable


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def write_log_config(logs: Path, stem: str) -> tuple[Path, Path]:
    logs.mkdir(parents=True, exist_ok=True)
    log_file = logs / f"{stem}.log"
    config = logs / f"{stem}.log4j2.properties"
    config.write_text(LOG4J2_TEMPLATE.format(path=log_file))
    return config, log_file


def base_conf(extra_java_options: str = "") -> dict[str, str]:
    os.environ["PYSPARK_PYTHON"] = project_python()
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", project_python())
    conf = {
        "spark.master": "local[2]",
        "spark.jars": ",".join(str(p) for p in jars.jar_paths()),
        "spark.pyspark.python": project_python(),
        "spark.driver.memory": "2g",
        **DELTA_CONF,
        **TEST_TUNING,
    }
    if extra_java_options:
        conf["spark.driver.extraJavaOptions"] = extra_java_options
    return conf


@dataclass
class LocalSpark:
    """A running local engine: the Connect session that runs pipelines, and its JVM log."""

    spark: "object"  # pyspark.sql.connect.session.SparkSession
    log_file: Path
    home: LocalHome
    started_seconds: float

    def stop(self) -> None:
        from pyspark.sql import SparkSession as ClassicSession

        try:
            self.spark.stop()  # type: ignore[attr-defined]
        finally:
            classic = ClassicSession._instantiatedSession
            if classic is not None:
                classic.stop()
            os.environ.pop("SPARK_CONNECT_MODE_ENABLED", None)


def start_local_spark(home: LocalHome, spark_conf: Mapping[str, str] | None = None, app_name: str = "lakewatch") -> LocalSpark:
    """Starts the JVM (classic session with the Connect plugin) and connects a client to it.

    After this, pyspark functions build Spark Connect columns in this process (the Connect mode
    flag is process-wide), so use only the returned session.
    """
    from pyspark.sql import SparkSession as ClassicSession
    from pyspark.sql.connect.session import SparkSession as ConnectSession

    started = time.monotonic()
    home.create()
    stem = datetime.now(timezone.utc).strftime("spark-%Y%m%dT%H%M%S") + f"-{os.getpid()}"
    log_config, log_file = write_log_config(home.logs, stem)
    # C1-only JIT: local runs are short and small, where C2's compile time never pays back (~10% faster).
    # Without tiers the JVM reserves a small code cache (48 MB) that many queries fill; give it room.
    java_options = (f"-Dderby.system.home={home.root} -Dlog4j2.configurationFile=file:{log_config} "
                    "-XX:TieredStopAtLevel=1 -XX:ReservedCodeCacheSize=256m")
    port = _free_port()
    conf = {
        **base_conf(java_options),
        "spark.app.name": app_name,
        "spark.sql.catalogImplementation": "hive",
        "spark.hadoop.javax.jdo.option.ConnectionURL": f"jdbc:derby:;databaseName={home.metastore};create=true",
        "spark.sql.warehouse.dir": str(home.warehouse),
        "spark.plugins": "org.apache.spark.sql.connect.SparkConnectPlugin",
        "spark.connect.grpc.binding.address": "127.0.0.1",
        "spark.connect.grpc.binding.port": str(port),
        **dict(spark_conf or {}),
    }
    builder = ClassicSession.builder
    for key, value in conf.items():
        builder = builder.config(key, value)
    builder.getOrCreate()
    os.environ["SPARK_CONNECT_MODE_ENABLED"] = "1"
    spark = ConnectSession.builder.remote(f"sc://127.0.0.1:{port}").getOrCreate()
    return LocalSpark(spark=spark, log_file=log_file, home=home, started_seconds=time.monotonic() - started)


def classic_test_session(tmp: Path) -> "object":
    """A classic session with Delta (in-memory catalog) for unit tests and path-based reads."""
    from pyspark.sql import SparkSession as ClassicSession

    config, _ = write_log_config(tmp / "logs", "unit")
    builder = ClassicSession.builder.appName("lakewatch-tests")
    conf = {
        **base_conf(f"-Dlog4j2.configurationFile=file:{config} -Dderby.system.home={tmp}"),
        "spark.master": "local[1]",
        "spark.sql.warehouse.dir": str(tmp / "warehouse"),
    }
    for key, value in conf.items():
        builder = builder.config(key, value)
    return builder.getOrCreate()
