"""The Java agent that stops SDP's waits from spinning or oversleeping (pipelines/local/graph_agent.py).

Oracle: the JDK's own disassembler (`javap -c -p`) on the classes Spark ships and on the classes as the
agent rewrites them: the only differences must be a 0.2 ms `LockSupport.parkNanos` right before the
graph resolution's look at its futures (`ArrayBuffer.partition` in `transformDownNodes`), and the flow
scheduler's `Thread.sleep` replaced by the agent's `pollSleep`; every other instruction of every
method stays as Spark compiled it."""

from __future__ import annotations

import os
import re
import subprocess
import zipfile
from pathlib import Path

import pytest

from pipelines.local import cds, graph_agent, javalib, session
from pipelines.local.home import LocalHome

GRAPH = "org/apache/spark/sql/pipelines/graph/"
PAUSE = ["ldc2_w long 200000l", "invokestatic Method java/util/concurrent/locks/LockSupport.parkNanos:(J)V"]
SLEEP = "invokestatic Method java/lang/Thread.sleep:(J)V"
POLL_SLEEP = "invokestatic Method lakewatch/agent/GraphResolutionWait.pollSleep:(J)V"


@pytest.fixture(scope="module")
def agent_jar() -> Path:
    jar = graph_agent.LIBRARY.current_jar()
    if jar is None:
        pytest.fail(f"make setup built no {graph_agent.LIBRARY.jar_name} from the current sources "
                    "(python -m pipelines.local.javalib says why)")
    return jar


def shipped_class(tmp_path: Path, name: str) -> Path:
    """Spark's own class file `name` (of SDP's graph package), from the pipelines jar pyspark ships."""
    with zipfile.ZipFile(javalib.pyspark_jar("spark-pipelines_")) as jar:
        path = tmp_path / f"{name}.class"
        path.write_bytes(jar.read(f"{GRAPH}{name}.class"))
    return path


def rewrite(agent_jar: Path, source: Path, target: Path) -> subprocess.CompletedProcess:
    class_path = os.pathsep.join(map(str, [agent_jar, *graph_agent.compile_class_path()]))
    return subprocess.run([javalib._tool("java"), "-cp", class_path, graph_agent.AGENT_CLASS, str(source), str(target)],
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


def rewritten(agent_jar: Path, tmp_path: Path, name: str) -> tuple[dict[str, list[str]], dict[str, list[str]]]:
    """The instructions of Spark's class `name` and of the agent's rewrite of it."""
    shipped = shipped_class(tmp_path, name)
    patched = tmp_path / f"{name}.patched.class"
    result = rewrite(agent_jar, shipped, patched)
    assert result.returncode == 0, result.stderr
    before, after = instructions(shipped), instructions(patched)
    assert before.keys() == after.keys()
    return before, after


def the_method(methods: dict[str, list[str]], name: str) -> str:
    (method,) = [m for m in methods if re.search(rf"[ $]{name}\(", m)]
    return method


def others_unchanged(before: dict[str, list[str]], after: dict[str, list[str]], method: str) -> bool:
    return {m: ins for m, ins in after.items() if m != method} == {m: ins for m, ins in before.items() if m != method}


def test_graph_resolution_pauses_before_each_look_at_its_futures_and_changes_nothing_else(agent_jar, tmp_path):
    before, after = rewritten(agent_jar, tmp_path, "DataflowGraphTransformer")
    method = the_method(before, "transformDownNodes")
    old, new = before[method], after[method]
    partition = [i for i, ins in enumerate(new) if ins.startswith("invokevirtual Method scala/collection/mutable/ArrayBuffer.partition")]
    assert len(partition) == 1  # the wait loop's one look at its futures
    at = partition[0]
    assert new[at - 2:at] == PAUSE
    assert new[:at - 2] + new[at:] == old
    assert others_unchanged(before, after, method)


def test_the_flow_scheduler_sleeps_through_the_agent_and_changes_nothing_else(agent_jar, tmp_path):
    before, after = rewritten(agent_jar, tmp_path, "TriggeredGraphExecution")
    method = the_method(before, "topologicalExecution")
    old, new = before[method], after[method]
    assert old.count(SLEEP) == 1 and SLEEP not in new
    assert new == [POLL_SLEEP if ins == SLEEP else ins for ins in old]
    assert others_unchanged(before, after, method)


def test_a_class_without_the_wait_loop_is_left_alone(agent_jar, tmp_path):
    """Another class (or another Spark's transformer without the call): nothing written, exit code 3."""
    with zipfile.ZipFile(javalib.pyspark_jar("spark-pipelines_")) as jar:
        other = tmp_path / "other.class"
        other.write_bytes(jar.read(f"{GRAPH}DataflowGraph.class"))
    result = rewrite(agent_jar, other, tmp_path / "out.class")
    assert result.returncode == 3 and "nothing changed" in result.stderr
    assert not (tmp_path / "out.class").exists()


def test_the_engine_starts_with_the_agent_only_when_its_jar_is_current(agent_jar, tmp_path, monkeypatch):
    conf, _ = session.engine_conf(LocalHome(tmp_path / "home"), "t", 15002)
    assert f"-javaagent:{agent_jar}" in conf["spark.driver.extraJavaOptions"].split()
    # While setup records the class archive the JVM would refuse to start with an agent.
    monkeypatch.setenv(cds.DUMP_ENV, str(tmp_path / "engine.jsa"))
    recording, _ = session.engine_conf(LocalHome(tmp_path / "home"), "t", 15002)
    assert "-javaagent" not in recording["spark.driver.extraJavaOptions"]
    monkeypatch.delenv(cds.DUMP_ENV)
    stale = tmp_path / graph_agent.LIBRARY.jar_name
    stale.write_bytes(agent_jar.read_bytes())  # no stamp of the current sources beside it
    assert graph_agent.java_options(stale) == ""
