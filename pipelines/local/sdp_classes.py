"""Open-source SDP's classes, rewritten one patch at a time, and lakewatch's classes that control SDP's
runs.

Four patches, each rewriting its own classes of the pipelines jar pyspark ships, each in a jar of its
own (`.cache/java/lakewatch-sdp-<patch>.jar`) that a local JVM puts on `spark.driver.extraClassPath`,
ahead of Spark's jars, so the JVM loads the rewritten classes (and the class data sharing archive
holds them):

- `resolution_pause`: graph resolution (`DataflowGraphTransformer.transformDownNodes`) hands each
  flow's analysis to a pool of threads and waits for them in a loop that never pauses
  (`futures.partition(_.isDone)`, again and again). SDP resolves the whole graph at the start of every
  update and, for each flow it starts, the flow's part of it again; so for most of an update with
  nothing new one thread keeps a core busy doing nothing, CPU that the analyses and the other flows
  need. The rewrite parks 0.2 ms before each look. Spark 4.2.0 ships the loop as described (its jar's
  `transformDownNodes` still calls `ArrayBuffer.partition`); upstream's fix, SPARK-57638, replaces the
  loop with an `ExecutorCompletionService`, and with a Spark that has it this patch is refused.
- `scheduler_poll`: the flow scheduler (`TriggeredGraphExecution.topologicalExecution`) starts the
  flows whose inputs are done, then sleeps `spark.sql.pipelines.execution.streamstate.pollingInterval`
  (whole seconds, 1 by default) before it looks again: each level of the graph can wait up to a second
  after its inputs finished. With 0 (pipelines/local/polling.py sets it for small updates) it yields
  instead of sleeping, and spins. The rewrite sleeps through `SdpWaits.pollSleep`: at most 10 ms.
- `view_refresh`: SDP refreshes a materialized view in two commits, far apart:
  `DatasetManager.materializeTable` empties every view (`TRUNCATE TABLE`) while SDP sets up tables,
  and `BatchTableWrite` appends the new rows when the view's flow runs. In between, an alert, the
  dashboard or a query reads the view empty, and a view whose flow fails stays empty until the runner
  restores it (`keep_unrefreshed_views`). On Databricks a refresh replaces a view's rows at once. The
  rewrite sends the `TRUNCATE TABLE` through `ViewRefresh.truncate` (a streaming table's full refresh
  only) and the flow's `saveAsTable` through `ViewRefresh.saveAsTable` (a view: one overwrite, columns
  by name). The two classes are one patch: either alone would lose or duplicate a view's rows.
- `flow_starts`: at each flow start `DataflowGraph.reanalyzeFlow` resolves the flow's part of the graph
  again (the flow and those upstream of it, up to the tables), so that a flow reading a table sees it
  as materialized. A bronze flow reads files through its `{table}_source` view, so its rescue plan was
  analysed twice more at each start, one flow after another. The rewrite first asks
  `FlowStarts.unchanged`, which gives the flow as the update resolved it when neither it nor a flow
  upstream of it reads a table; any other flow is analysed again as before.

Everything else runs as before, in the same order; an interrupt stops the scheduler as before.
`SdpClasses` (pipelines/local/java/lakewatch/sdp/SdpClasses.java) is the rewriter, compiled and run
at setup, never loaded by the engine. Where a patch finds nothing to change in one of its classes
(another Spark), its jar is not built and the engine runs Spark's class as shipped; the other patches
are not affected.

And one library that changes no SDP class: `sdp_control` (`lakewatch-sdp.jar`) holds `PipelineRuns`,
which stops an update's run on Ctrl-C, `FlowThreads`, which the recovery of an update whose runner
died calls through SQL's `reflect` to wait for the flows SDP still runs (pipelines/local/sdp_control.py),
and `ViewRefresh`, which the `view_refresh` patch calls and which cancels a stopped view's write.
`--remote` endpoints are not touched.
"""

from __future__ import annotations

import atexit
import functools
import os
import shutil
import subprocess
import tempfile
import zipfile
from pathlib import Path
from typing import Callable

from pipelines.local.javalib import (CLASS_PATH, JAVAC_OPTIONS, BuildRefused, JavaLibrary, java_tool, pyspark_jar,
                                     pyspark_jars)

PACKAGE = "lakewatch.sdp"
SOURCE_DIR = "lakewatch/sdp"
REWRITER_SOURCE = f"{SOURCE_DIR}/SdpClasses.java"
MAIN_CLASS = f"{PACKAGE}.SdpClasses"
ASM_JAR = "xbean-asm9-shaded"  # the class-file library Spark ships (shaded ASM 9)
PIPELINES_JAR = "spark-pipelines_"  # SDP's classes
GRAPH = "org/apache/spark/sql/pipelines/graph/"
REFUSED = 3  # SdpClasses' exit code when a patch finds nothing to change in a class

CONTROL = JavaLibrary("lakewatch-sdp", tuple(f"{SOURCE_DIR}/{name}.java" for name in
                                             ("FlowThreads", "PipelineRuns", "ViewRefresh")), pyspark_jars)


@functools.cache
def rewriter_classes() -> Path:
    """A folder with the compiled rewriter (SdpClasses, against Spark's shaded ASM), for this process."""
    folder = Path(tempfile.mkdtemp(prefix="lakewatch-sdp-rewriter-"))
    atexit.register(shutil.rmtree, folder, ignore_errors=True)
    subprocess.run([java_tool("javac"), *JAVAC_OPTIONS, "-d", str(folder), "-cp", str(pyspark_jar(ASM_JAR)),
                    str(Path(__file__).resolve().parent / "java" / REWRITER_SOURCE)], check=True)
    return folder


def rewrite(patch: str, shipped: Path, target: Path) -> subprocess.CompletedProcess[str]:
    """Runs the rewriter: patch `patch` of class file `shipped`, written to `target` (exit code REFUSED
    and nothing written when the patch finds nothing to change)."""
    class_path = os.pathsep.join([str(rewriter_classes()), str(pyspark_jar(ASM_JAR))])
    return subprocess.run([java_tool("java"), "-cp", class_path, MAIN_CLASS, patch, str(shipped), str(target)],
                          capture_output=True, text=True)


def rewritten_classes(patch: str, classes: tuple[str, ...]) -> Callable[[Path], None]:
    """The build step of a patch's jar: writes its rewrites of `classes` (names in SDP's graph package)
    into the jar's classes; raises BuildRefused when one of them is not in the shape the patch expects."""

    def write(into: Path) -> None:
        with zipfile.ZipFile(pyspark_jar(PIPELINES_JAR)) as jar:
            for name in classes:
                entry = f"{GRAPH}{name}.class"
                shipped = into.parent / f"{name}.class"
                shipped.write_bytes(jar.read(entry))
                target = into / entry
                target.parent.mkdir(parents=True, exist_ok=True)
                result = rewrite(patch, shipped, target)
                if result.returncode == REFUSED:
                    raise BuildRefused(f"{name} is not in the shape {patch} was written for ({result.stderr.strip()})")
                result.check_returncode()

    return write


def patch_library(patch: str, classes: tuple[str, ...], helpers: tuple[str, ...] = ()) -> JavaLibrary:
    """The jar of one patch: its rewrites of `classes` and the classes of its own they call (`helpers`)."""
    return JavaLibrary(f"lakewatch-sdp-{patch.replace('_', '-')}", tuple(f"{SOURCE_DIR}/{h}.java" for h in helpers),
                       pyspark_jars, after_compile=rewritten_classes(patch, classes), inputs=(REWRITER_SOURCE,))


RESOLUTION_PAUSE = patch_library("resolution_pause", ("DataflowGraphTransformer",))
SCHEDULER_POLL = patch_library("scheduler_poll", ("TriggeredGraphExecution",), helpers=("SdpWaits",))
VIEW_REFRESH = patch_library("view_refresh", ("DatasetManager$", "BatchTableWrite"))
FLOW_STARTS = patch_library("flow_starts", ("DataflowGraph",), helpers=("FlowStarts",))


def spark_conf(jar: Path) -> dict[str, str]:
    """`spark.driver.extraClassPath` with `jar`: ahead of Spark's jars."""
    return {CLASS_PATH: str(jar)}
