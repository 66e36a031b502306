"""First-run safety: every configured table's landing folder exists before the ingest pipeline reads it.

Neither engine starts a file stream on a folder that is not there. Open-source Spark's file source
refuses it when the stream is defined, `[PATH_NOT_FOUND] Path does not exist` (SQLSTATE 42K03: the
path of a non-glob file stream is checked in `DataSource.sourceSchema`; measured on Spark 4.2 for the
text, binaryFile and JSON sources the local engine uses). Auto Loader on Databricks is reported to fail
the same way (`java.io.FileNotFoundException: No such file or directory`, "path does not exist", in
public write-ups of pipelines run against a real workspace; the Databricks documentation does not say).
And a bundle creates the `landing` volume but cannot create folders inside it.

So the bundle's job runs `jobs/prepare_landing.py` before its ingest task: for each table of
`conf/tables.yml`, the landing folder under the landing root is created when it is missing (with its
parents) and left alone when it is there. It writes only when a folder is missing, so a run after the
first needs no more than READ VOLUME; creating one needs WRITE VOLUME on the landing volume
(docs/deploying.md, Grants). A folder it cannot create, or a file where a folder should be, fails the task with the table,
the folder and the fix, and the job does not start the ingest update. A folder behind a URI scheme
(`s3://`, `abfss://`, `dbfs:`) is not a path this task can create: it says so, names the folder, and
leaves it to Auto Loader.

`lakewatch job` runs the same file with the local landing root; `lakewatch run` alone (the pipeline
without the job) refuses a missing folder before the engine starts (LANDING_FOLDER_NOT_FOUND), as the
pipeline alone fails on Databricks.
"""

from __future__ import annotations

import argparse
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence
from urllib.parse import urlparse
from urllib.request import url2pathname

from pipelines.config import load_tables

# The job task that prepares the landing folders runs this file of the bundle.
TASK_FILE = Path("jobs") / "prepare_landing.py"

EXISTS = "exists"
CREATED = "created"
NOT_CHECKED = "not_checked"  # behind a URI scheme this task does not reach


class LandingPreparationError(Exception):
    """A landing folder could not be created: the message names the table, the folder and the fix."""


@dataclass(frozen=True)
class LandingFolder:
    table: str
    folder: str  # as the pipeline reads it: <landing root>/<landing>
    state: str  # EXISTS, CREATED or NOT_CHECKED


def local_path(path: str) -> Path | None:
    """The local file system path of a folder (a plain path, a Unity Catalog `/Volumes/...` path, or a
    `file:` URI), or None when it lives behind another URI scheme."""
    parsed = urlparse(path)
    if not parsed.scheme or len(parsed.scheme) == 1:  # a plain path (or a Windows drive letter)
        return Path(path)
    if parsed.scheme == "file":
        return Path(url2pathname(parsed.path))
    return None


def prepare_landing_folders(tables_config: str, landing_root: str) -> list[LandingFolder]:
    """Each configured table's landing folder, created when missing. Raises the configuration's own
    errors for a table configuration that does not load or a landing outside the root (nothing is
    created then), LandingPreparationError for a folder that cannot be created."""
    folders = load_tables(tables_config).landing_paths(landing_root)  # every landing checked first
    done: list[LandingFolder] = []
    problems: list[str] = []
    for table, folder in folders.items():
        path = local_path(folder)
        if path is None:
            done.append(LandingFolder(table, folder, NOT_CHECKED))
            continue
        if path.is_dir():
            done.append(LandingFolder(table, folder, EXISTS))
            continue
        if path.exists() or path.is_symlink():
            problems.append(f"table '{table}': {folder} is a file, not a folder: move it away (the pipeline "
                            "reads the files inside the landing folder)")
            continue
        try:
            os.makedirs(path, exist_ok=True)
        except PermissionError as e:
            problems.append(f"table '{table}': cannot create the landing folder {folder} ({e.strerror or e}): "
                            "the identity the job runs as needs WRITE VOLUME (with READ VOLUME) on the landing "
                            "volume to create it (docs/deploying.md, Grants), or create the folder yourself")
            continue
        except OSError as e:
            problems.append(f"table '{table}': cannot create the landing folder {folder}: {e.strerror or e}")
            continue
        done.append(LandingFolder(table, folder, CREATED))
    if problems:
        created = [f.folder for f in done if f.state == CREATED]
        raise LandingPreparationError("; ".join(problems) + (f" (created: {', '.join(created)})" if created else ""))
    return done


def parse_arguments(argv: Sequence[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="prepare_landing", description="Creates each configured table's landing folder.")
    parser.add_argument("--tables-config", required=True, help="conf/tables.yml of the bundle")
    parser.add_argument("--landing-root", required=True, help="the landing root (the landing_root bundle variable)")
    return parser.parse_args(list(argv))


def report(folders: Iterable[LandingFolder]) -> list[str]:
    """The lines the task prints: one per folder it created or could not check, then a summary."""
    folders = list(folders)
    lines = [f"created the landing folder of table '{f.table}': {f.folder}" for f in folders if f.state == CREATED]
    lines += [f"warning: table '{f.table}': {f.folder} is behind a URI scheme this task cannot create folders "
              "in; Auto Loader fails the table's flow if it does not exist: create it there"
              for f in folders if f.state == NOT_CHECKED]
    counts = {state: sum(f.state == state for f in folders) for state in (CREATED, EXISTS, NOT_CHECKED)}
    lines.append(f"landing folders: {counts[CREATED]} created, {counts[EXISTS]} already there"
                 + (f", {counts[NOT_CHECKED]} not checked" if counts[NOT_CHECKED] else ""))
    return lines


def main(argv: Sequence[str], say: Any = print) -> list[LandingFolder]:
    args = parse_arguments(argv)
    folders = prepare_landing_folders(args.tables_config, args.landing_root)
    for line in report(folders):
        say(line)
    return folders


# -- where the bundle's jobs prepare the landing folders (lakewatch check, the local preflight) ----------

def upstream_tasks(tasks: Sequence[Mapping[str, Any]], key: str) -> set[str]:
    """The keys of every task `key` depends on, directly or through other tasks."""
    depends = {str(t.get("task_key")): [str(d.get("task_key")) for d in t.get("depends_on") or [] if isinstance(d, Mapping)]
               for t in tasks if isinstance(t, Mapping)}
    seen: set[str] = set()
    todo = list(depends.get(key, []))
    while todo:
        current = todo.pop()
        if current not in seen:
            seen.add(current)
            todo.extend(depends.get(current, []))
    return seen


def is_preparing_task(bundle: Any, job_key: str, task: Mapping[str, Any]) -> bool:
    """Whether a job task runs this bundle's jobs/prepare_landing.py."""
    python = task.get("spark_python_task") or {}
    path = python.get("python_file")
    if not path or "${" in str(path) or str(python.get("source", "WORKSPACE")).upper() == "GIT":
        return False
    return (bundle.resource_file("jobs", job_key).parent / str(path)).resolve() == (bundle.root / TASK_FILE).resolve()


def preparing_tasks(bundle: Any, job_key: str, task_key: str) -> list[Mapping[str, Any]]:
    """The tasks upstream of `task_key` (in the job `job_key`) that prepare landing folders."""
    tasks = [t for t in (bundle.resources("jobs")[job_key].get("tasks") or []) if isinstance(t, Mapping)]
    upstream = upstream_tasks(tasks, task_key)
    return [t for t in tasks if str(t.get("task_key")) in upstream and is_preparing_task(bundle, job_key, t)]


def prepares(bundle: Any, job_key: str, task: Mapping[str, Any], tables_config: str, landing_root: str) -> bool:
    """Whether a preparing task's resolved parameters name this tables configuration and landing root
    (those of the pipeline it prepares). A parameter that does not resolve, or does not parse, is no."""
    from pipelines.errors import BundleError

    where = f"resources.jobs.{job_key}.tasks[{task.get('task_key')}].spark_python_task.parameters"
    try:
        parameters = bundle.resolve((task.get("spark_python_task") or {}).get("parameters") or [], where) or []
    except BundleError:
        return False
    options = _options([str(p) for p in parameters])
    return options.get("--tables-config") == str(tables_config) and \
        str(options.get("--landing-root", "")).rstrip("/") == str(landing_root).rstrip("/")


def _options(argv: Sequence[str]) -> dict[str, str]:
    """`--name value` and `--name=value` pairs, read without argparse (which prints and exits)."""
    options: dict[str, str] = {}
    i = 0
    while i < len(argv):
        token = argv[i]
        if token.startswith("--") and "=" in token:
            name, value = token.split("=", 1)
            options[name] = value
        elif token.startswith("--") and i + 1 < len(argv):
            options[token] = argv[i + 1]
            i += 1
        i += 1
    return options
