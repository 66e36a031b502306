"""SDP's classes rewritten one patch at a time, so that SDP waits without spinning or oversleeping,
refreshes a materialized view in one commit and starts a flow that reads no table without analysing it
again (pipelines/local/sdp_classes.py).

Oracles: the JDK's own disassembler (`javap -c -p`) on the classes the pipelines jar pyspark ships
and on the classes in each patch's jar: the only differences must be a 0.2 ms
`LockSupport.parkNanos` right before the graph resolution's look at its futures
(`ArrayBuffer.partition` in `transformDownNodes`, resolution_pause), the flow scheduler's
`Thread.sleep` replaced by `SdpWaits.pollSleep` (scheduler_poll), the table setup's `TRUNCATE TABLE`
statement run through `ViewRefresh.truncate` (given the table) and the batch flow's `saveAsTable`
through `ViewRefresh.saveAsTable` (given the write and its rows; view_refresh), and `reanalyzeFlow`
first asking `FlowStarts.unchanged` (flow_starts); every other instruction of every method stays as
Spark compiled it, and each jar holds only its own patch's classes. A patch given a class it was not
written for changes nothing, and its jar is then not built, which the registry reports. And the test
session's own JVM: the classes it loads are the ones from the patches' jars. What the rewritten
refresh does to real views, Delta's own history says (tests/integration/test_trust.py)."""

from __future__ import annotations

import os
import re
import subprocess
import zipfile
from pathlib import Path

import pytest

from pipelines.local import javalib, localfs, patches, sdp_classes, session

GRAPH = "org/apache/spark/sql/pipelines/graph/"
PAUSE = ["ldc2_w long 200000l", "invokestatic Method java/util/concurrent/locks/LockSupport.parkNanos:(J)V"]
SLEEP = "invokestatic Method java/lang/Thread.sleep:(J)V"
POLL_SLEEP = "invokestatic Method lakewatch/sdp/SdpWaits.pollSleep:(J)V"
SQL = "invokevirtual Method org/apache/spark/sql/classic/SparkSession.sql:(Ljava/lang/String;)Lorg/apache/spark/sql/classic/Dataset;"
TRUNCATE = ["aload_2", "invokestatic Method lakewatch/sdp/ViewRefresh.truncate:(Lorg/apache/spark/sql/classic/SparkSession;"
            "Ljava/lang/String;Lorg/apache/spark/sql/pipelines/graph/Table;)Lorg/apache/spark/sql/classic/Dataset;"]
SAVE = "invokevirtual Method org/apache/spark/sql/classic/DataFrameWriter.saveAsTable:(Ljava/lang/String;)V"
OVERWRITE = ["aload_0", "aload_1", "invokestatic Method lakewatch/sdp/ViewRefresh.saveAsTable:(Lorg/apache/spark/sql/classic/"
             "DataFrameWriter;Ljava/lang/String;Lorg/apache/spark/sql/pipelines/graph/BatchTableWrite;"
             "Lorg/apache/spark/sql/classic/Dataset;)V"]
REUSE = ["aload_0", "aload_1", "invokestatic Method lakewatch/sdp/FlowStarts.unchanged:(Lorg/apache/spark/sql/pipelines/graph/"
         "DataflowGraph;Lorg/apache/spark/sql/pipelines/graph/Flow;)Lorg/apache/spark/sql/pipelines/graph/ResolvedFlow;",
         "dup", "ifnull", "areturn", "pop"]


# Each rewritten class of SDP's graph package, and the patch whose jar holds it.
OWNER = {"DataflowGraphTransformer": sdp_classes.RESOLUTION_PAUSE, "TriggeredGraphExecution": sdp_classes.SCHEDULER_POLL,
         "DatasetManager$": sdp_classes.VIEW_REFRESH, "BatchTableWrite": sdp_classes.VIEW_REFRESH,
         "DataflowGraph": sdp_classes.FLOW_STARTS}


@pytest.fixture(scope="module")
def sdp_jars() -> dict[str, Path]:
    """Each SDP patch's jar (and the control classes' jar), by jar name."""
    found = {}
    for library in (sdp_classes.CONTROL, *set(OWNER.values())):
        jar = library.current_jar()
        if jar is None:
            pytest.fail(f"make setup built no {library.jar_name} from the current sources "
                        f"({library.build_failure() or 'python -m pipelines.local.patches says why'})")
        found[library.name] = jar
    return found


def class_file(jar: Path, name: str, tmp_path: Path, label: str) -> Path:
    """The class file `name` (of SDP's graph package) from `jar`, written to a file of its own."""
    with zipfile.ZipFile(jar) as archive:
        path = tmp_path / f"{name}.{label}.class"
        path.write_bytes(archive.read(f"{GRAPH}{name}.class"))
    return path


def instructions(class_file: Path) -> dict[str, list[str]]:
    """Each method's instructions as `javap -c -p` prints them, without what moves when code is
    inserted (offsets, constant pool indices, branch targets): opcode, then operands or the comment."""
    text = subprocess.run([javalib.java_tool("javap"), "-c", "-p", str(class_file)], capture_output=True, text=True,
                          check=True).stdout
    methods: dict[str, list[str]] = {}
    current: list[str] | None = None
    for line in text.splitlines():
        if line.startswith("  ") and not line.startswith("   ") and "(" in line:
            current = methods.setdefault(line.strip(), [])
        elif current is not None and (m := re.match(r"\s+\d+: (\w+)\s*(.*)", line)):
            opcode, rest = m.groups()
            comment = rest.split("//", 1)[1].strip() if "//" in rest else ""
            operands = "" if comment or opcode.startswith(("if", "goto")) else rest.strip()
            current.append(" ".join(p for p in (opcode, comment or operands) if p))
    return methods


def rewritten(sdp_jars: dict[str, Path], tmp_path: Path, name: str) -> tuple[dict[str, list[str]], dict[str, list[str]]]:
    """The instructions of Spark's class `name` and of its patch's jar's rewrite of it."""
    shipped = class_file(javalib.pyspark_jar(sdp_classes.PIPELINES_JAR), name, tmp_path, "shipped")
    ours = class_file(sdp_jars[OWNER[name].name], name, tmp_path, "ours")
    before, after = instructions(shipped), instructions(ours)
    assert before.keys() == after.keys()
    return before, after


def the_method(methods: dict[str, list[str]], name: str) -> str:
    (method,) = [m for m in methods if re.search(rf"[ $]{name}\(", m)]
    return method


def others_unchanged(before: dict[str, list[str]], after: dict[str, list[str]], method: str) -> bool:
    return {m: ins for m, ins in after.items() if m != method} == {m: ins for m, ins in before.items() if m != method}


def test_graph_resolution_pauses_before_each_look_at_its_futures_and_changes_nothing_else(sdp_jars, tmp_path):
    before, after = rewritten(sdp_jars, tmp_path, "DataflowGraphTransformer")
    method = the_method(before, "transformDownNodes")
    old, new = before[method], after[method]
    partition = [i for i, ins in enumerate(new) if ins.startswith("invokevirtual Method scala/collection/mutable/ArrayBuffer.partition")]
    assert len(partition) == 1  # the wait loop's one look at its futures
    at = partition[0]
    assert new[at - 2:at] == PAUSE
    assert new[:at - 2] + new[at:] == old
    assert others_unchanged(before, after, method)


def test_the_flow_scheduler_sleeps_through_poll_sleep_and_changes_nothing_else(sdp_jars, tmp_path):
    before, after = rewritten(sdp_jars, tmp_path, "TriggeredGraphExecution")
    method = the_method(before, "topologicalExecution")
    old, new = before[method], after[method]
    assert old.count(SLEEP) == 1 and SLEEP not in new
    assert new == [POLL_SLEEP if ins == SLEEP else ins for ins in old]
    assert others_unchanged(before, after, method)


def test_table_setup_runs_its_truncate_statement_through_view_refresh_and_changes_nothing_else(sdp_jars, tmp_path):
    """The one `TRUNCATE TABLE` statement (built from that constant just before) is given the table
    (materializeTable's second parameter); the other statement (DROP TABLE of a full refresh's
    auxiliary table) still goes to Spark."""
    before, after = rewritten(sdp_jars, tmp_path, "DatasetManager$")
    method = the_method(before, "materializeTable")
    old, new = before[method], after[method]
    calls = [i for i, ins in enumerate(old) if ins == SQL]
    assert len(calls) == 2
    at = calls[0]
    assert old[at - 1].startswith("invokedynamic") and "makeConcatWithConstants" in old[at - 1]
    assert new[:at] + [SQL] + new[at + len(TRUNCATE):] == old
    assert new[at:at + len(TRUNCATE)] == TRUNCATE
    assert others_unchanged(before, after, method)


def test_a_batch_flow_writes_through_view_refresh_and_changes_nothing_else(sdp_jars, tmp_path):
    before, after = rewritten(sdp_jars, tmp_path, "BatchTableWrite")
    (method,) = [m for m, ins in before.items() if SAVE in ins]
    old, new = before[method], after[method]
    assert old.count(SAVE) == 1 and SAVE not in new
    at = old.index(SAVE)
    assert new[:at] + [SAVE] + new[at + len(OVERWRITE):] == old
    assert new[at:at + len(OVERWRITE)] == OVERWRITE
    assert "static" in method and "(org.apache.spark.sql.pipelines.graph.BatchTableWrite, org.apache.spark.sql.classic.Dataset)" in method
    assert others_unchanged(before, after, method)


def test_reanalyze_flow_first_asks_flow_starts_and_changes_nothing_else(sdp_jars, tmp_path):
    """`r = FlowStarts.unchanged(this, flow); if (r != null) return r;`, then the method as compiled."""
    before, after = rewritten(sdp_jars, tmp_path, "DataflowGraph")
    method = the_method(before, "reanalyzeFlow")
    assert after[method][:len(REUSE)] == REUSE
    assert after[method][len(REUSE):] == before[method]
    assert others_unchanged(before, after, method)


def test_each_jar_holds_its_own_patchs_classes_only(sdp_jars):
    """A patch's jar replaces only the classes it rewrites (and adds its own helpers): turning one patch
    off leaves every other class of SDP as the other patches have it."""
    def classes(jar: Path) -> set[str]:
        with zipfile.ZipFile(jar) as archive:
            return {n.removesuffix(".class") for n in archive.namelist() if n.endswith(".class")}

    spark_classes = {library.name: {f"{GRAPH}{name}" for name, owner in OWNER.items() if owner == library}
                     for library in set(OWNER.values())}
    for library in set(OWNER.values()):
        ours = classes(sdp_jars[library.name])
        assert {c for c in ours if c.startswith(GRAPH)} == spark_classes[library.name]
        assert {c for c in ours if not c.startswith(GRAPH)} == {f"lakewatch/sdp/{Path(h).stem}" for h in library.sources}
    assert {c for c in classes(sdp_jars[sdp_classes.CONTROL.name]) if not c.startswith("lakewatch/sdp/")} == set()


def test_a_class_without_the_calls_is_left_alone(tmp_path):
    """Another class (or another Spark's without the calls): nothing written, exit code 3, whichever patch."""
    other = class_file(javalib.pyspark_jar(sdp_classes.PIPELINES_JAR), "FlowAnalysis", tmp_path, "shipped")
    result = sdp_classes.rewrite("flow_starts", other, tmp_path / "out.class")
    assert result.returncode == sdp_classes.REFUSED and "nothing changed" in result.stderr
    assert not (tmp_path / "out.class").exists()


def test_a_patch_whose_class_has_another_shape_is_refused_and_reported(tmp_path):
    """A patch given a class whose shape it was not written for (here flow_starts given the scheduler,
    which has no reanalyzeFlow) builds no jar; the registry says why, and no JVM loads it."""
    library = sdp_classes.patch_library("flow_starts", ("TriggeredGraphExecution",), helpers=("FlowStarts",))
    jar = tmp_path / sdp_classes.FLOW_STARTS.jar_name
    with pytest.raises(javalib.BuildRefused, match="TriggeredGraphExecution is not in the shape flow_starts"):
        library.build(jar)
    assert not jar.exists() and library.current_jar(jar) is None
    assert library.build_failure(jar).startswith("refused: TriggeredGraphExecution is not in the shape")
    # The registry reads such a record beside the registered library's jar: as if its own build had been refused.
    record = jar.with_suffix(".failed")
    reason = record.read_text().split("\n", 1)[1].strip()
    record.write_text(f"{sdp_classes.FLOW_STARTS.sources_digest()}\n{reason}\n")
    [state] = [r for r in patches.records(cache=tmp_path) if r["name"] == "flow_starts"]
    assert state == {"name": "flow_starts", "active": False, "jar": None, "why": f"not built: {reason}"}
    assert sdp_classes.FLOW_STARTS.jar_name not in patches.spark_conf(patches.records(cache=tmp_path)).get(
        javalib.CLASS_PATH, "")


def test_the_test_sessions_jvm_runs_the_rewritten_classes(spark, sdp_jars):
    """The class path puts each patch's jar ahead of Spark's: the JVM loads our classes, not Spark's."""
    for name, library in OWNER.items():
        loaded = spark._jvm.java.lang.Class.forName(f"org.apache.spark.sql.pipelines.graph.{name}")
        source = loaded.getProtectionDomain().getCodeSource().getLocation().getPath()
        assert Path(source).resolve() == sdp_jars[library.name].resolve()  # the JVM names the real file


def test_flow_threads_reads_sdps_flow_pool_of_this_spark(spark, sdp_jars):
    """`FlowThreads` (the recovery's wait for an interrupted run's flows) links against the flow
    thread pool of the SDP this pyspark ships: SQL's `reflect` calls it in the JVM, where no flow runs."""
    row = spark.sql("SELECT reflect('lakewatch.sdp.FlowThreads', 'running') AS running, "
                    "reflect('lakewatch.sdp.FlowThreads', 'awaitIdle', CAST(1000 AS BIGINT)) AS left").collect()[0]
    assert (row["running"], row["left"]) == ("0", "0")


def test_local_jvms_get_the_jars_only_when_they_are_current(sdp_jars, tmp_path):
    class_path = session.base_conf()[javalib.CLASS_PATH].split(os.pathsep)
    assert set(map(str, sdp_jars.values())) <= set(class_path)
    assert localfs.current_jar() is None or str(localfs.current_jar()) in class_path  # both, not one instead of the other
    stale = tmp_path / sdp_classes.CONTROL.jar_name
    stale.write_bytes(sdp_jars[sdp_classes.CONTROL.name].read_bytes())  # no stamp of the current sources beside it
    assert sdp_classes.CONTROL.current_jar(stale) is None
    by_name = {r["name"]: r for r in patches.records(cache=tmp_path)}
    assert not by_name["sdp_control"]["active"] and by_name["sdp_control"]["why"].startswith("not built")
    assert by_name["view_refresh"]["why"] == "needs sdp_control, which is not active"  # it calls ViewRefresh
