"""Spark settings of the local engine's JVM, and the tests' classic session built from them.

The local engine (see `engine`) is one JVM per state folder running Spark `local[2]` with Delta
Lake, a persistent catalog (Hive metastore on embedded Derby) and a Spark Connect server. Commands
connect to it (`connection`); open-source SDP runs only through Spark Connect.

Static settings (catalog, extensions, jars) go to the JVM at start; they cannot be set per pipeline.
JVM logs go to a file under the home's `logs/`, so the terminal shows lakewatch's own output; the
runner reads that file to name the exception class of a failed flow.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Mapping

from pipelines.local import cds, delta_catalog, jars, javalib, patches
from pipelines.local.home import LocalHome

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

TEST_TUNING = {
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    "spark.sql.shuffle.partitions": "2",
    "spark.default.parallelism": "2",
    "spark.sql.session.timeZone": "UTC",
    # Delta rebuilds a table's state from its log with this many shuffle partitions. Local logs are
    # small (a checkpoint every 10 commits; every 100 for views and event logs, whose commits are
    # small), so one task each: every dataset of an update loads several tables' state, and more
    # tasks cost more to schedule than they save.
    "spark.databricks.delta.snapshotPartitions": "1",
    "spark.sql.sources.parallelPartitionDiscovery.parallelism": "2",
}

# For many small queries over little data (the observability tables, unit tests): compiling code
# for every plan and re-planning adaptively cost more than they save.
SMALL_DATA_TUNING = {
    "spark.sql.codegen.wholeStage": "false",
    "spark.sql.codegen.factoryMode": "NO_CODEGEN",
    "spark.sql.adaptive.enabled": "false",
}

DELTA_CONF = {
    # Tables default to Delta, as on Databricks (SDP would otherwise create parquet tables).
    "spark.sql.sources.default": "delta",
    "spark.sql.extensions": "io.delta.sql.DeltaSparkSessionExtension",
    delta_catalog.SESSION_CATALOG: delta_catalog.DELTA_CATALOG,
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


def write_log_config(logs: Path, stem: str) -> tuple[Path, Path]:
    logs.mkdir(parents=True, exist_ok=True)
    log_file = logs / f"{stem}.log"
    config = logs / f"{stem}.log4j2.properties"
    config.write_text(LOG4J2_TEMPLATE.format(path=log_file))
    return config, log_file


def base_conf(extra_java_options: str = "") -> dict[str, str]:
    """Settings every local Spark JVM shares; its Java options start from the class archive's (cds)."""
    os.environ["PYSPARK_PYTHON"] = project_python()
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", project_python())
    conf = {
        "spark.master": "local[2]",
        "spark.pyspark.python": project_python(),
        "spark.driver.memory": "2g",
        **DELTA_CONF,
        **TEST_TUNING,
        javalib.JARS: ",".join(map(str, jars.jar_paths())),
    }
    # lakewatch's active patches (patches.py): their jars after Delta's in spark.jars or ahead of Spark's
    # on the class path, and the classes they name.
    conf = javalib.with_class_path(conf, patches.spark_conf())
    java_options = " ".join(o for o in (extra_java_options, cds.java_options()) if o)
    if java_options:
        conf["spark.driver.extraJavaOptions"] = java_options
    return conf


# Jobs share the task slots fairly: a small job (an event-log write, a query from another command)
# gets the next free slot instead of queueing behind every task of a long micro-batch.
FAIR_POOLS = """<?xml version="1.0"?>
<allocations>
  <pool name="default"><schedulingMode>FAIR</schedulingMode><weight>1</weight><minShare>0</minShare></pool>
</allocations>
"""


def engine_conf(home: LocalHome, stem: str, port: int, spark_conf: Mapping[str, str] | None = None) -> tuple[dict[str, str], Path]:
    """Settings of the resident engine's JVM for one state folder, and its log file."""
    log_config, log_file = write_log_config(home.logs, stem)
    pools = home.logs / "fairscheduler.xml"
    pools.write_text(FAIR_POOLS)
    # C1-only JIT: local runs are short and small, where C2's compile time never pays back.
    # Without tiers the JVM reserves a small code cache (48 MB) that many queries fill; give it room.
    # The parallel collector instead of G1: the engine keeps hundreds of MB of query plans and Delta
    # state alive, so G1 would mark its old generation concurrently all the time; the price is a full
    # collection now and then.
    java_options = (f"-Dderby.system.home={home.root} -Dlog4j2.configurationFile=file:{log_config} "
                    "-XX:TieredStopAtLevel=1 -XX:ReservedCodeCacheSize=256m -XX:+UseParallelGC")
    conf = {
        **base_conf(java_options),
        "spark.app.name": f"lakewatch engine ({home.root})",
        "spark.sql.catalogImplementation": "hive",
        "spark.hadoop.javax.jdo.option.ConnectionURL": f"jdbc:derby:;databaseName={home.metastore};create=true",
        "spark.sql.warehouse.dir": str(home.warehouse),
        "spark.plugins": "org.apache.spark.sql.connect.SparkConnectPlugin",
        "spark.scheduler.mode": "FAIR",
        "spark.scheduler.allocation.file": str(pools),
        "spark.connect.grpc.binding.address": "127.0.0.1",
        "spark.connect.grpc.binding.port": str(port),
    }
    return javalib.with_class_path(conf, dict(spark_conf or {})), log_file


def classic_test_session(tmp: Path) -> SparkSession:
    """A classic session with Delta (in-memory catalog) for unit tests and path-based reads."""
    from pyspark.sql import SparkSession as ClassicSession

    config, _ = write_log_config(tmp / "logs", "unit")
    builder = ClassicSession.builder.appName("lakewatch-tests")
    conf = {
        **base_conf(f"-Dlog4j2.configurationFile=file:{config} -Dderby.system.home={tmp}"),
        "spark.master": "local[1]",
        "spark.sql.warehouse.dir": str(tmp / "warehouse"),
        **SMALL_DATA_TUNING,
    }
    for key, value in conf.items():
        builder = builder.config(key, value)
    return builder.getOrCreate()
