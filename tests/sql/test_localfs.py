"""Hadoop's local file system without a process per call (pipelines/local/localfs.py).

Oracles: Hadoop's own `RawLocalFileSystem` (running the real `chmod` and `readlink`) for what each
call must leave behind or answer, the kernel's file modes (`os.stat`), and the JVM's own record of
the processes it started (Java Flight Recorder's `jdk.ProcessStart` events, recorded inside the test
session's JVM)."""

from __future__ import annotations

import os
import stat
from collections import Counter
from contextlib import contextmanager
from pathlib import Path

import pytest

from pipelines.local import localfs

# The commands Hadoop's Shell runs for a local file system (chmod, readlink, ls -ld, stat, chown).
HADOOP_SHELL_COMMANDS = {"chmod", "readlink", "ls", "stat", "chown"}
MODES = ("644", "600", "755", "700", "444", "640", "777", "000")


@pytest.fixture(scope="module")
def jvm(spark):
    if localfs.current_jar() is None:
        pytest.fail(f"make setup built no {localfs.JAR_NAME} from the current sources "
                    f"({localfs.LIBRARY.build_failure() or 'python -m pipelines.local.patches says why'})")
    return spark._jvm


def hadoop_fs(jvm, cls):
    fs = cls()
    fs.initialize(jvm.java.net.URI.create("file:///"), jvm.org.apache.hadoop.conf.Configuration())
    return fs


@pytest.fixture(scope="module")
def both(jvm):
    """(Hadoop's RawLocalFileSystem, lakewatch's), each initialized on file:///."""
    return (hadoop_fs(jvm, jvm.org.apache.hadoop.fs.RawLocalFileSystem),
            hadoop_fs(jvm, jvm.lakewatch.hadoop.NoShellRawLocalFileSystem))


@contextmanager
def processes_started(jvm, tmp_path: Path):
    """Counts (by command name) the processes the session's JVM starts inside the block."""
    started: Counter = Counter()
    recording = jvm.jdk.jfr.Recording()
    recording.enable("jdk.ProcessStart")
    recording.start()
    try:
        yield started
    finally:
        recording.stop()
        dump = jvm.java.io.File(str(tmp_path / "processes.jfr")).toPath()
        recording.dump(dump)
        recording.close()
        for event in jvm.jdk.jfr.consumer.RecordingFile.readAllEvents(dump):
            started[Path(event.getString("command").split(" ", 1)[0]).name] += 1


def mode_of(path: Path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


@pytest.mark.parametrize("mode", MODES)
def test_set_permission_leaves_the_mode_hadoops_chmod_leaves(jvm, both, tmp_path, mode):
    modes = []
    for fs, name in zip(both, ("hadoop", "lakewatch")):
        path = tmp_path / name
        path.write_text("x")
        fs.setPermission(jvm.org.apache.hadoop.fs.Path(str(path)), jvm.org.apache.hadoop.fs.permission.FsPermission(mode))
        modes.append(mode_of(path))
    assert modes[1] == modes[0] == int(mode, 8)


def set_both(jvm, both, paths: list[Path], mode: str) -> list[int]:
    """Each path's mode after Hadoop's and lakewatch's setPermission (`file:` paths, as FileContext passes them)."""
    for fs, path in zip(both, paths):
        fs.setPermission(jvm.org.apache.hadoop.fs.Path(path.as_uri()), jvm.org.apache.hadoop.fs.permission.FsPermission(mode))
    return [mode_of(p) for p in paths]


def test_a_sticky_bit_is_set_as_hadoop_sets_it(jvm, both, tmp_path):
    paths = [tmp_path / "hadoop", tmp_path / "lakewatch"]
    for path in paths:
        path.mkdir()
    assert set_both(jvm, both, paths, "1777") == [0o1777, 0o1777]


def test_a_directory_keeps_its_set_group_id_bit_as_with_hadoops_chmod(jvm, both, tmp_path):
    """A folder shared by a group (setgid): new folders in it inherit the bit, and chmod with a numeric
    mode keeps it, so files below keep the group."""
    shared = tmp_path / "shared"
    shared.mkdir()
    os.chmod(shared, 0o2775)
    paths = [shared / "hadoop", shared / "lakewatch"]
    for path in paths:
        path.mkdir()
        assert mode_of(path) & stat.S_ISGID
    assert set_both(jvm, both, paths, "755") == [0o2755, 0o2755]


def test_a_files_set_id_bits_are_cleared_as_with_hadoops_chmod(jvm, both, tmp_path):
    paths = [tmp_path / "hadoop", tmp_path / "lakewatch"]
    for path in paths:
        path.write_text("x")
        os.chmod(path, 0o6755)
    assert set_both(jvm, both, paths, "644") == [0o644, 0o644]


def status_fields(status) -> tuple:
    return (status.getPath().toString(), status.getLen(), status.isDirectory(), status.isSymlink(),
            status.getSymlink().toString() if status.isSymlink() else None, status.getModificationTime(),
            status.getPermission().toString(), status.getOwner(), status.getGroup())


@pytest.mark.parametrize("kind", ["file", "directory", "link to a file", "link to nothing"])
def test_link_status_is_what_hadoop_answers(jvm, both, tmp_path, kind):
    target = tmp_path / "target.txt"
    target.write_text("twelve bytes")
    path = tmp_path / "entry"
    if kind == "file":
        path.write_text("some bytes")
    elif kind == "directory":
        path.mkdir()
    elif kind == "link to a file":
        path.symlink_to(target)
    else:
        path.symlink_to(tmp_path / "gone")
    answers = {}
    for name in (str(path), path.as_uri()):  # FileContext passes file: paths
        hadoop, lakewatch = (link_status(jvm, fs, name) for fs in both)
        assert lakewatch == hadoop
        answers[name] = hadoop
    assert answers[str(path)][2:4] == (kind == "directory", kind.startswith("link"))


def link_status(jvm, fs, name: str) -> tuple:
    """The status fields, or the Java exception's class (Hadoop's readlink on a `file:` path finds no
    link, so a link to nothing is then "not found")."""
    from py4j.protocol import Py4JJavaError

    try:
        return status_fields(fs.getFileLinkStatus(jvm.org.apache.hadoop.fs.Path(name)))
    except Py4JJavaError as e:
        return (e.java_exception.getClass().getName(),)


def test_a_missing_path_is_not_found_as_with_hadoop(jvm, both, tmp_path):
    missing = tmp_path / "missing"
    for name in (str(missing), missing.as_uri()):
        assert [link_status(jvm, fs, name) for fs in both] == [("java.io.FileNotFoundException",)] * 2


def test_the_recorder_sees_hadoops_own_chmod(jvm, both, tmp_path):
    """The control for the test below: Hadoop's class, in the same JVM, starts a chmod process."""
    with processes_started(jvm, tmp_path) as started:
        both[0].setPermission(jvm.org.apache.hadoop.fs.Path(str(tmp_path)), jvm.org.apache.hadoop.fs.permission.FsPermission("755"))
    assert started["chmod"] >= 1


def test_delta_writes_and_a_stream_with_its_checkpoint_start_no_hadoop_shell_process(spark, jvm, tmp_path):
    """The session's own local file system (fs.file.impl and FileContext's, from base_conf): a Delta
    table created, appended to and read as a stream into another Delta table with a checkpoint."""
    source, target = str(tmp_path / "source"), str(tmp_path / "target")
    with processes_started(jvm, tmp_path) as started:
        spark.range(5).write.format("delta").save(source)
        spark.range(5, 8).write.format("delta").mode("append").save(source)
        query = (spark.readStream.format("delta").load(source).writeStream.format("delta")
                 .option("checkpointLocation", str(tmp_path / "checkpoint")).trigger(availableNow=True).start(target))
        query.awaitTermination(120)
        assert sorted(r.id for r in spark.read.format("delta").load(target).collect()) == list(range(8))
    assert {c: n for c, n in started.items() if c in HADOOP_SHELL_COMMANDS} == {}
    assert (tmp_path / "checkpoint" / "commits" / "0").is_file()
