"""SDP's two classes rewritten so that SDP waits without spinning or oversleeping (pipelines/local/sdp_waits.py).

Oracles: the JDK's own disassembler (`javap -c -p`) on the classes the pipelines jar pyspark ships
and on the classes in lakewatch's jar: the only differences must be a 0.2 ms
`LockSupport.parkNanos` right before the graph resolution's look at its futures
(`ArrayBuffer.partition` in `transformDownNodes`), and the flow scheduler's `Thread.sleep` replaced by
`SdpWaits.pollSleep`; every other instruction of every method stays as Spark compiled it. And the
test session's own JVM: the class it loads is the one from lakewatch's jar."""

from __future__ import annotations

import os
import re
import subprocess
import zipfile
from pathlib import Path

import pytest

from pipelines.local import javalib, localfs, sdp_waits, session

GRAPH = "org/apache/spark/sql/pipelines/graph/"
PAUSE = ["ldc2_w long 200000l", "invokestatic Method java/util/concurrent/locks/LockSupport.parkNanos:(J)V"]
SLEEP = "invokestatic Method java/lang/Thread.sleep:(J)V"
POLL_SLEEP = "invokestatic Method lakewatch/sdp/SdpWaits.pollSleep:(J)V"


@pytest.fixture(scope="module")
def sdp_jar() -> Path:
    jar = sdp_waits.LIBRARY.current_jar()
    if jar is None:
        pytest.fail(f"make setup built no {sdp_waits.LIBRARY.jar_name} from the current sources "
                    "(python -m pipelines.local.javalib says why)")
    return jar


def class_file(jar: Path, name: str, tmp_path: Path, label: str) -> Path:
    """The class file `name` (of SDP's graph package) from `jar`, written to a file of its own."""
    with zipfile.ZipFile(jar) as archive:
        path = tmp_path / f"{name}.{label}.class"
        path.write_bytes(archive.read(f"{GRAPH}{name}.class"))
    return path


def rewrite(sdp_jar: Path, source: Path, target: Path) -> subprocess.CompletedProcess:
    class_path = os.pathsep.join(map(str, [sdp_jar, javalib.pyspark_jar(sdp_waits.ASM_JAR)]))
    return subprocess.run([javalib._tool("java"), "-cp", class_path, sdp_waits.MAIN_CLASS, str(source), str(target)],
                          capture_output=True, text=True)


def instructions(class_file: Path) -> dict[str, list[str]]:
    """Each method's instructions as `javap -c -p` prints them, without what moves when code is
    inserted (offsets, constant pool indices, branch targets): opcode, then operands or the comment."""
    text = subprocess.run([javalib._tool("javap"), "-c", "-p", str(class_file)], capture_output=True, text=True,
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


def rewritten(sdp_jar: Path, tmp_path: Path, name: str) -> tuple[dict[str, list[str]], dict[str, list[str]]]:
    """The instructions of Spark's class `name` and of lakewatch's jar's rewrite of it."""
    shipped = class_file(javalib.pyspark_jar(sdp_waits.PIPELINES_JAR), name, tmp_path, "shipped")
    ours = class_file(sdp_jar, name, tmp_path, "ours")
    before, after = instructions(shipped), instructions(ours)
    assert before.keys() == after.keys()
    return before, after


def the_method(methods: dict[str, list[str]], name: str) -> str:
    (method,) = [m for m in methods if re.search(rf"[ $]{name}\(", m)]
    return method


def others_unchanged(before: dict[str, list[str]], after: dict[str, list[str]], method: str) -> bool:
    return {m: ins for m, ins in after.items() if m != method} == {m: ins for m, ins in before.items() if m != method}


def test_graph_resolution_pauses_before_each_look_at_its_futures_and_changes_nothing_else(sdp_jar, tmp_path):
    before, after = rewritten(sdp_jar, tmp_path, "DataflowGraphTransformer")
    method = the_method(before, "transformDownNodes")
    old, new = before[method], after[method]
    partition = [i for i, ins in enumerate(new) if ins.startswith("invokevirtual Method scala/collection/mutable/ArrayBuffer.partition")]
    assert len(partition) == 1  # the wait loop's one look at its futures
    at = partition[0]
    assert new[at - 2:at] == PAUSE
    assert new[:at - 2] + new[at:] == old
    assert others_unchanged(before, after, method)


def test_the_flow_scheduler_sleeps_through_poll_sleep_and_changes_nothing_else(sdp_jar, tmp_path):
    before, after = rewritten(sdp_jar, tmp_path, "TriggeredGraphExecution")
    method = the_method(before, "topologicalExecution")
    old, new = before[method], after[method]
    assert old.count(SLEEP) == 1 and SLEEP not in new
    assert new == [POLL_SLEEP if ins == SLEEP else ins for ins in old]
    assert others_unchanged(before, after, method)


def test_a_class_without_the_wait_loops_is_left_alone(sdp_jar, tmp_path):
    """Another class (or another Spark's without the calls): nothing written, exit code 3."""
    other = class_file(javalib.pyspark_jar(sdp_waits.PIPELINES_JAR), "DataflowGraph", tmp_path, "shipped")
    result = rewrite(sdp_jar, other, tmp_path / "out.class")
    assert result.returncode == 3 and "nothing changed" in result.stderr
    assert not (tmp_path / "out.class").exists()


def test_the_test_sessions_jvm_runs_the_rewritten_classes(spark, sdp_jar):
    """The class path puts lakewatch's jar ahead of Spark's: the JVM loads our classes, not Spark's."""
    for name in ("DataflowGraphTransformer", "TriggeredGraphExecution"):
        loaded = spark._jvm.java.lang.Class.forName(f"org.apache.spark.sql.pipelines.graph.{name}")
        source = loaded.getProtectionDomain().getCodeSource().getLocation().getPath()
        assert Path(source) == sdp_jar


def test_local_jvms_get_the_jar_only_when_it_is_current(sdp_jar, tmp_path):
    class_path = session.base_conf()[javalib.CLASS_PATH].split(os.pathsep)
    assert str(sdp_jar) in class_path
    assert localfs.current_jar() is None or str(localfs.current_jar()) in class_path  # both, not one instead of the other
    stale = tmp_path / sdp_waits.LIBRARY.jar_name
    stale.write_bytes(sdp_jar.read_bytes())  # no stamp of the current sources beside it
    assert sdp_waits.spark_conf(stale) == {}
