"""A Java agent for the local engine: SDP's graph resolution without a thread spinning while it waits.

Open-source Spark Declarative Pipelines (Spark 4.2) resolves a pipeline's graph by handing each flow's
analysis to a pool of threads, and `DataflowGraphTransformer.transformDownNodes` then waits for them
in a loop that never pauses (`futures.partition(_.isDone)`, again and again). It resolves the whole
graph at the start of every update and, for each flow it starts, the flow's part of it again; so for
most of an update with nothing new, and for a fifth of an observability refresh, one thread keeps a
core busy doing nothing (sampled with `jstack`, bench/RESULTS.md): on the 2-core machine, half of the
CPU the analyses and the other flows could use, and in `make test` CPU that the other pytest worker's
engine needs.

`pipelines/local/java/lakewatch/agent/GraphResolutionWait.java` is a Java agent that, as the class is
loaded, inserts `LockSupport.parkNanos(200 µs)` before that loop's `ArrayBuffer.partition` call: the
loop looks at its futures every 0.2 ms instead of continuously, and does the same as before. `make
setup` builds it (`python -m pipelines.local.javalib`) into `.cache/java/lakewatch-agent.jar`, and the
resident engine's JVM starts with `-javaagent` when that jar is current. With another Spark, where the
call is not found, the agent changes nothing and says so in the engine's output; without the jar the
engine runs Spark's class as shipped. `--remote` endpoints are not touched.
"""

from __future__ import annotations

from pathlib import Path

from pipelines.local.javalib import JavaLibrary, pyspark_jar

PACKAGE = "lakewatch.agent"
AGENT_CLASS = f"{PACKAGE}.GraphResolutionWait"
ASM_JAR = "xbean-asm9-shaded"  # the class-file library Spark ships (shaded ASM 9)
PATCHED_CLASS = "org.apache.spark.sql.pipelines.graph.DataflowGraphTransformer"
PATCHED_METHOD = "transformDownNodes"


def compile_class_path() -> list[Path]:
    """Spark's shaded ASM: the agent's only dependency besides the JDK."""
    return [pyspark_jar(ASM_JAR)]


LIBRARY = JavaLibrary("lakewatch-agent", PACKAGE, compile_class_path, manifest=(("Premain-Class", AGENT_CLASS),))


def java_options(jar: Path | None = None) -> str:
    """`-javaagent:<jar>` when the agent's jar is current, else empty (the engine runs without it)."""
    path = LIBRARY.current_jar(jar)
    return f"-javaagent:{path}" if path else ""
