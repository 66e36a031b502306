"""A Java agent for the local engine: open-source SDP's waits without spinning or oversleeping.

Open-source Spark Declarative Pipelines (Spark 4.2) waits in two loops, and both cost the engine:
- Graph resolution hands each flow's analysis to a pool of threads, and
  `DataflowGraphTransformer.transformDownNodes` then waits for them in a loop that never pauses
  (`futures.partition(_.isDone)`, again and again). SDP resolves the whole graph at the start of every
  update and, for each flow it starts, the flow's part of it again; so for most of an update with
  nothing new, one thread keeps a core busy doing nothing (`jstack`: RUNNABLE in that loop in 44 of
  48 samples of flow starts; bench/RESULTS.md): on the 2-core machine, CPU the analyses, the other
  flows and, in `make test`, the other pytest worker's engine need.
- The flow scheduler (`TriggeredGraphExecution.topologicalExecution`) starts the flows whose inputs
  are done, then sleeps `spark.sql.pipelines.execution.streamstate.pollingInterval` (whole seconds,
  1 by default) before it looks again: each level of the graph can wait up to a second after its
  inputs finished. With 0 (pipelines/local/polling.py sets it for small updates) it yields instead of
  sleeping, and spins too.

`pipelines/local/java/lakewatch/agent/GraphResolutionWait.java` is a Java agent that changes both as
their classes load: `LockSupport.parkNanos(200 µs)` before the first loop's `ArrayBuffer.partition`
call (it looks at its futures every 0.2 ms), and the second loop's `Thread.sleep` through the agent's
`pollSleep`, at most 10 ms (it looks at its flows every 10 ms, whatever the polling interval says).
They do the same as before, in the same order; an interrupt stops the scheduler as before. `make
setup` builds it (`python -m pipelines.local.javalib`) into `.cache/java/lakewatch-agent.jar`, and the
resident engine's JVM starts with `-javaagent` when that jar is current. With another Spark, where a
call is not found, the agent leaves that class alone and says so in the engine's output; without the
jar the engine runs Spark's classes as shipped (and polling.py's choice matters again). `--remote`
endpoints are not touched.
"""

from __future__ import annotations

from pathlib import Path

from pipelines.local.javalib import JavaLibrary, pyspark_jar

PACKAGE = "lakewatch.agent"
AGENT_CLASS = f"{PACKAGE}.GraphResolutionWait"
ASM_JAR = "xbean-asm9-shaded"  # the class-file library Spark ships (shaded ASM 9)


def compile_class_path() -> list[Path]:
    """Spark's shaded ASM: the agent's only dependency besides the JDK."""
    return [pyspark_jar(ASM_JAR)]


LIBRARY = JavaLibrary("lakewatch-agent", PACKAGE, compile_class_path, manifest=(("Premain-Class", AGENT_CLASS),))


def java_options(jar: Path | None = None) -> str:
    """`-javaagent:<jar>` when the agent's jar is current, else empty (the engine runs without it)."""
    path = LIBRARY.current_jar(jar)
    return f"-javaagent:{path}" if path else ""
