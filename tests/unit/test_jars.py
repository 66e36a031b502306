"""Delta's jars (pipelines/local/jars.py): resolved once by Spark, recorded, then used offline.
No network here: Spark's launcher is replaced by a fake that answers as it does."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from pipelines.errors import LakewatchError
from pipelines.local import jars


class FakeGateway:
    """What `launch_gateway` returns after spark-submit resolved `spark.jars.packages`."""

    def __init__(self, spark_jars: str) -> None:
        self.proc = None
        self.stopped = False
        system = type("System", (), {"getProperty": staticmethod(lambda key: spark_jars if key == "spark.jars" else None)})
        self.jvm = type("JVM", (), {"java": type("java", (), {"lang": type("lang", (), {"System": system})})})

    def shutdown(self) -> None:
        self.stopped = True


def resolved_by_spark(cache: Path, names: list[str]) -> str:
    """Spark's `spark.jars` after resolution: file URIs of the jars in the Ivy home's jars folder."""
    (cache / "jars").mkdir(parents=True, exist_ok=True)
    for name in names:
        (cache / "jars" / name).write_bytes(b"PK")
    return ",".join((cache / "jars" / n).as_uri() for n in names)


NAMES = ["io.delta_delta-spark_4.2_2.13-4.4.0.jar", "io.delta_delta-storage-4.4.0.jar"]


def test_resolution_asks_spark_for_the_package_into_the_cache_and_records_the_jars(tmp_path, monkeypatch):
    calls = []
    gateway = FakeGateway(resolved_by_spark(tmp_path, NAMES))

    def launch(conf, popen_kwargs):
        calls.append(dict(conf.getAll()))
        return gateway

    monkeypatch.setattr("pyspark.java_gateway.launch_gateway", launch)
    paths = jars.resolve(tmp_path, quiet=True)
    assert calls == [{"spark.jars.packages": "io.delta:delta-spark_4.2_2.13:4.4.0", "spark.jars.ivy": str(tmp_path.resolve())}]
    assert gateway.stopped
    assert paths == [tmp_path.resolve() / "jars" / n for n in NAMES]
    record = json.loads((tmp_path / jars.RECORD_FILE).read_text())
    assert record["packages"] == ["io.delta:delta-spark_4.2_2.13:4.4.0"]
    assert record["jars"] == [f"jars/{n}" for n in NAMES]  # relative: the cache can move with the project
    assert jars.jar_paths(tmp_path) == paths


def test_resolution_runs_once(tmp_path, monkeypatch):
    monkeypatch.setattr("pyspark.java_gateway.launch_gateway", lambda conf, popen_kwargs: FakeGateway(resolved_by_spark(tmp_path, NAMES)))
    first = jars.resolve(tmp_path, quiet=True)

    def offline(*args, **kwargs):
        raise AssertionError("resolved again")

    monkeypatch.setattr("pyspark.java_gateway.launch_gateway", offline)
    assert jars.resolve(tmp_path, quiet=True) == first


def test_a_failed_resolution_names_what_spark_could_not_resolve(tmp_path, monkeypatch):
    def launch(conf, popen_kwargs):
        popen_kwargs["stdout"].write(b"\t:: io.delta#delta-spark_4.2_2.13;4.4.0: not found\n"
                                     b"Exception in thread \"main\" java.lang.RuntimeException: [unresolved dependency: "
                                     b"io.delta#delta-spark_4.2_2.13;4.4.0: not found]\n")
        raise RuntimeError("[JAVA_GATEWAY_EXITED] Java gateway process exited before sending its port number.")

    monkeypatch.setattr("pyspark.java_gateway.launch_gateway", launch)
    with pytest.raises(LakewatchError) as info:
        jars.resolve(tmp_path, quiet=True)
    assert info.value.error_class == "DELTA_JARS_RESOLUTION_FAILED"
    assert "unresolved dependency: io.delta#delta-spark_4.2_2.13;4.4.0" in str(info.value)
    assert str(tmp_path / jars.LOG_FILE) in str(info.value)
    assert not (tmp_path / jars.RECORD_FILE).exists()


def test_missing_jars_say_which_command_resolves_them(tmp_path):
    with pytest.raises(LakewatchError) as info:
        jars.jar_paths(tmp_path)
    assert info.value.error_class == "DELTA_JARS_MISSING"
    assert "not resolved yet" in str(info.value) and str(tmp_path) in str(info.value)
    assert "`make setup`" in str(info.value) and "`python -m pipelines.local.jars`" in str(info.value)


def test_a_deleted_jar_or_other_coordinates_count_as_missing(tmp_path):
    record = {"packages": list(jars.DELTA_PACKAGES), "jars": [f"jars/{n}" for n in NAMES]}
    (tmp_path / jars.RECORD_FILE).write_text(json.dumps(record))
    resolved_by_spark(tmp_path, NAMES[:1])
    with pytest.raises(LakewatchError) as info:
        jars.jar_paths(tmp_path)
    assert f"missing {NAMES[1]}" in str(info.value)

    resolved_by_spark(tmp_path, NAMES)
    (tmp_path / jars.RECORD_FILE).write_text(json.dumps({**record, "packages": ["io.delta:delta-spark_4.1_2.13:4.0.0"]}))
    with pytest.raises(LakewatchError) as info:
        jars.jar_paths(tmp_path)
    assert "resolved for io.delta:delta-spark_4.1_2.13:4.0.0" in str(info.value)


# The code that installs or fetches something: the Makefile, the packaging, CI, Delta's jar resolution,
# the Java compilation and the class archive's recording. Spark's resolver, pip and the system's package
# manager know where packages come from; this code names no address at all.
INSTALL_CODE = ("Makefile", "pyproject.toml", ".ci", "pipelines/local/jars.py", "pipelines/local/javalib.py",
                "pipelines/local/cds_record.py")
# Any URL: a scheme, then `://`.
URL = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://[^\s\"'`<>)\]}]*")
# Where code lives: every file under these folders (caches and virtual environments aside) and these files.
CODE_FOLDERS = ("pipelines", "transformations", "jobs", "conf", "resources", "dashboards", "tests", "bench")
CODE_FILES = ("Makefile", "pyproject.toml", "databricks.yml", "lakewatch.local.yml")
# The only web addresses code may hold: the XML namespaces of SVG, which name no server.
XML_NAMESPACES = {"http://www.w3.org/2000/svg", "http://www.w3.org/1999/xlink"}
SKIP = {".venv", ".cache", "__pycache__", ".lakewatch", "node_modules", ".pytest_cache", ".import_linter_cache"}


def files_under(root: Path, names: tuple[str, ...]):
    for name in names:
        path = root / name
        if path.is_file():
            yield path
        for found in sorted(path.rglob("*")) if path.is_dir() else ():
            if found.is_file() and not SKIP & set(found.relative_to(root).parts):
                yield found


def texts(root: Path, names: tuple[str, ...]):
    for path in files_under(root, names):
        try:
            yield path.relative_to(root), path.read_text()
        except UnicodeDecodeError:
            continue  # binary (images, parquet fixtures)


def test_the_install_code_holds_no_url(project_root):
    """Jars, wheels and browsers come from the ecosystem's own resolvers and the system, never from an
    address written in the code: no `scheme://` at all in what installs."""
    files = list(texts(project_root, INSTALL_CODE))
    assert {str(where) for where, _ in files} >= {"Makefile", "pyproject.toml", "pipelines/local/jars.py"}
    found = [f"{where}: {url.group(0)}" for where, text in files for url in URL.finditer(text)]
    assert not found, found


def test_the_url_check_finds_any_scheme():
    """The pattern the install code is held to matches an address of any scheme and nothing else."""
    web = "http" + "s://h/p"  # (assembled: this file is code too, and holds no web address)
    text = f"a {web} b git+ssh://h/r c s3://bucket/k d ftp://h e sc://127.0.0.1:15002 f file:/tmp g a::b"
    assert [m.group(0) for m in URL.finditer(text)] == [
        web, "git+ssh://h/r", "s3://bucket/k", "ftp://h", "sc://127.0.0.1:15002"]


def test_no_web_address_anywhere_in_the_code(project_root):
    """No http(s) address in any code file but the SVG namespaces."""
    found = [f"{where}: {url}" for where, text in texts(project_root, CODE_FOLDERS + CODE_FILES)
             for url in re.findall(r"https?://[^\s\"'<>)\]}]+", text) if url.rstrip(".,;:") not in XML_NAMESPACES]
    assert not found, found
