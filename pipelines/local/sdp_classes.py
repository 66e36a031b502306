"""Five of open-source SDP's classes, rewritten at setup: SDP waits without spinning or oversleeping,
a materialized view's refresh is one commit, and a flow that reads no table starts without being
analysed again.

Open-source Spark Declarative Pipelines (Spark 4.2) waits in two loops, and both cost the engine:
- Graph resolution hands each flow's analysis to a pool of threads, and
  `DataflowGraphTransformer.transformDownNodes` then waits for them in a loop that never pauses
  (`futures.partition(_.isDone)`, again and again). SDP resolves the whole graph at the start of every
  update and, for each flow it starts, the flow's part of it again; so for most of an update with
  nothing new, one thread keeps a core busy doing nothing (`jstack`: RUNNABLE in that loop in 44 of
  48 samples of flow starts; bench/RESULTS.md, stop 34): on the 2-core machine, CPU the analyses, the
  other flows and, in `make test`, the other pytest worker's engine need.
- The flow scheduler (`TriggeredGraphExecution.topologicalExecution`) starts the flows whose inputs
  are done, then sleeps `spark.sql.pipelines.execution.streamstate.pollingInterval` (whole seconds,
  1 by default) before it looks again: each level of the graph can wait up to a second after its
  inputs finished. With 0 (pipelines/local/polling.py sets it for small updates) it yields instead of
  sleeping, and spins too.

And it refreshes a materialized view in two commits, far apart: `DatasetManager.materializeTable`
empties every view (`TRUNCATE TABLE`) while SDP sets up tables, and `BatchTableWrite` appends the new
rows when the view's flow runs, tens of seconds later in an observability refresh. In between, an
alert, the dashboard or a query reads the view empty (measured: `update_status` read 0 rows while a
refresh ran, and the alerts went UNKNOWN; bench/RESULTS.md, stop 35), and a view whose flow fails
stays empty until the runner restores it. On Databricks a refresh replaces a view's rows at once.

And at each flow start `DataflowGraph.reanalyzeFlow` resolves the flow's part of the graph again (the
flow and those upstream of it, up to the tables), so that a flow reading a table sees it as
materialized. A bronze flow reads files through its `{table}_source` view: its rescue plan was
analysed twice more at each start, one flow after another (0.3-0.5 s per bronze flow of an empty
update; bench/RESULTS.md, stop 35).

`pipelines/local/java/lakewatch/sdp/SdpClasses.java` rewrites the five with Spark's own shaded ASM:
- `LockSupport.parkNanos(200 µs)` before the first loop's `ArrayBuffer.partition` call (it looks at
  its futures every 0.2 ms);
- the second loop's `Thread.sleep` through `SdpWaits.pollSleep`, at most 10 ms (it looks at its flows
  every 10 ms, whatever the polling interval says);
- the `TRUNCATE TABLE` through `ViewRefresh.truncate`, which runs it for a streaming table (a full
  refresh) and leaves a materialized view as it is;
- the flow's `saveAsTable` through `ViewRefresh.saveAsTable`, which overwrites a materialized view in
  one commit (columns by name, `writeTo(...).overwrite(true)`) and appends to a streaming table as
  before;
- `reanalyzeFlow` first asks `FlowStarts.unchanged`, which gives the flow as the update resolved it
  when neither it nor a flow upstream of it reads a table (of the graph or outside it); any other flow
  is analysed again as before.
Everything else runs as before, in the same order; an interrupt stops the scheduler as before. `make
setup` (`python -m pipelines.local.javalib`) compiles the classes, rewrites the five classes of the
pipelines jar pyspark ships, and puts them all in `.cache/java/lakewatch-sdp.jar`, which every local
JVM has on `spark.driver.extraClassPath`: ahead of Spark's jars, so the JVM loads the rewritten classes
(and the class data sharing archive holds them). With another pyspark the jar is rebuilt for its
classes; where a call is not found, setup builds no jar and the JVMs run Spark's classes as shipped
(then polling.py's choice matters again, and the runner gives a view whose refresh failed its previous
rows back, `LocalUpdate.keep_unrefreshed_views`). `--remote` endpoints are not touched.

The jar also holds `FlowThreads`, which the recovery of an update whose runner died calls through SQL's
`reflect` to wait for the flows SDP still runs (pipelines/local/recovery.py).
"""

from __future__ import annotations

import os
import subprocess
import zipfile
from pathlib import Path

from pipelines.local.javalib import CLASS_PATH, JavaLibrary, _tool, pyspark_jar, pyspark_jars

PACKAGE = "lakewatch.sdp"
MAIN_CLASS = f"{PACKAGE}.SdpClasses"
ASM_JAR = "xbean-asm9-shaded"  # the class-file library Spark ships (shaded ASM 9)
PIPELINES_JAR = "spark-pipelines_"  # SDP's classes
REWRITTEN = (  # class files of the pipelines jar that the library's jar holds rewritten
    "org/apache/spark/sql/pipelines/graph/DataflowGraphTransformer.class",
    "org/apache/spark/sql/pipelines/graph/TriggeredGraphExecution.class",
    "org/apache/spark/sql/pipelines/graph/DatasetManager$.class",
    "org/apache/spark/sql/pipelines/graph/BatchTableWrite.class",
    "org/apache/spark/sql/pipelines/graph/DataflowGraph.class",
)


def compile_class_path() -> list[Path]:
    """pyspark's jars: Spark's shaded ASM, Spark SQL's API, and SDP's jar (whose classes are rewritten:
    another pyspark, another jar)."""
    return pyspark_jars()


def rewrite_classes(classes: Path) -> None:
    """Writes the rewritten REWRITTEN classes into `classes` (the compiled SdpClasses is there); raises
    CalledProcessError when SdpClasses has nothing to change in one of them (another Spark)."""
    class_path = os.pathsep.join([str(classes), str(pyspark_jar(ASM_JAR))])
    with zipfile.ZipFile(pyspark_jar(PIPELINES_JAR)) as jar:
        for name in REWRITTEN:
            shipped = classes.parent / Path(name).name
            shipped.write_bytes(jar.read(name))
            target = classes / name
            target.parent.mkdir(parents=True, exist_ok=True)
            subprocess.run([_tool("java"), "-cp", class_path, MAIN_CLASS, str(shipped), str(target)], check=True)


LIBRARY = JavaLibrary("lakewatch-sdp", PACKAGE, compile_class_path, after_compile=rewrite_classes)


def spark_conf(jar: Path | None = None) -> dict[str, str]:
    """`spark.driver.extraClassPath` with the jar when it is current, else empty (Spark's classes run)."""
    path = LIBRARY.current_jar(jar)
    return {CLASS_PATH: str(path)} if path else {}
