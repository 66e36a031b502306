"""What the local engine checks before it starts, so bad input fails in a second with exit code 2
(before any JVM) instead of as a failed update.

For `lakewatch job`, each SQL file task: its parameters resolve, its file exists and sets no
`{{name}}` the task does not give.

For `lakewatch run` (one pipeline) and `lakewatch job` (each pipeline task of the job):
- the pipeline resource resolves: every `${var.*}`, `${resources.*}` and `${workspace.*}` in it;
- for a pipeline whose configuration names `lakewatch.tables_config`: the table configuration loads
  (unknown keys, types, expectations);
- for a pipeline that ingests landing files (its configuration also names `lakewatch.landing_root`):
  every table's landing is a folder under the landing root, and every landing folder exists. Only
  local folders are checked (a plain path or a `file:` URI); a folder behind another URI scheme
  (`s3://`, `dbfs:/`, ...) is left to the engine. In a job, a pipeline task that runs after a task
  preparing its landing folders (jobs/prepare_landing.py with the pipeline's tables and landing
  root: pipelines/landing.py) is not refused for a missing folder: that task creates it, as the
  bundle's job does on Databricks.
"""

from __future__ import annotations

from typing import Any, Iterable, Mapping

from pipelines.adapter import LANDING_ROOT_KEY, TABLES_CONFIG_KEY
from pipelines.config import load_tables
from pipelines.errors import BundleError, LakewatchError
from pipelines.landing import local_path, prepares, preparing_tasks

__all__ = ["check_job", "check_update", "local_path"]

FOLLOW_BRONZE = "which read it as a stream and cannot follow a table that is reset"
SPLIT_WITH_CLEAN = ("which splits bronze's rows with it under the same expectations (a replayed row would "
                    "otherwise reach the clean table twice, or be lost)")
RUN_HINT = ", run the bundle's job (`lakewatch job`), whose prepare_landing task creates them as it does on Databricks,"


def check_update(project: Any, pipeline_key: str, configuration: Iterable[tuple[str, str]] = (),
                 prepared_by: Mapping[str, Any] | None = None, full_refresh_selection: Iterable[str] = ()) -> None:
    """Everything one update of `pipeline_key` reads, checked without starting the engine.
    `configuration` is the extra pipeline configuration of the update (`--set`). `prepared_by`, for a
    pipeline task of a job: the job's key and the tasks it runs after that prepare landing folders.
    `full_refresh_selection`: the tables the update resets."""
    pipeline = project.pipeline(pipeline_key)  # resolves the whole resource; BundleError names the reference
    conf = {**pipeline.configuration, **project.settings.configuration, **dict(configuration)}
    tables_file = conf.get(TABLES_CONFIG_KEY)
    if not tables_file:
        return  # the pipeline does not read the table configuration
    tables = load_tables(tables_file)
    root = conf.get(LANDING_ROOT_KEY)
    if not root:
        return  # it reads the tables (e.g. observability), not their landing files
    check_full_refresh_selection(pipeline.name, tables, full_refresh_selection)
    folders = tables.landing_paths(root)  # CONFIG_INVALID_LANDING for a landing outside the root
    if prepared_by is not None and any(prepares(project.bundle, prepared_by["job"], t, tables_file, root)
                                       for t in prepared_by["tasks"]):
        return  # a task before it creates the missing folders
    missing = []
    for table, folder in folders.items():
        path = local_path(folder)
        if path is not None and not path.is_dir():
            missing.append((table, folder, path))
    if missing:
        raise LakewatchError("LANDING_FOLDER_NOT_FOUND", {
            "pipeline": pipeline.name,
            "missing": "; ".join(f"table '{t}': {folder}" + ("" if not path.exists() else " (a file, not a folder)")
                                 for t, folder, path in missing),
            "folders": " ".join(str(path) for _, _, path in missing),
            "hint": RUN_HINT if prepared_by is None else
            " (no task this pipeline task runs after prepares them: see `lakewatch check`),",
        })


def check_full_refresh_selection(pipeline: str, tables: Any, selection: Iterable[str]) -> None:
    """A full refresh that resets a bronze table resets every streaming table that reads it too (the
    clean table, the rejected rows): their streams cannot follow a table that was truncated and written
    again, so the update would fail in their flows after bronze was already rewritten. One that resets
    a clean table or its rejected rows resets the other too: the two split bronze's rows between them
    under the same expectations, and a replay (pipelines/replay.py) sends a queued row while it is a
    rejected row, so that a clean table reset alone would receive the row twice (from bronze, and
    replayed again), and rejected rows reset alone would lose the rows queued before."""
    chosen = {name.replace("`", "").split(".")[-1].lower() for name in selection}  # as the runner resolves them
    for table in tables.tables:
        split = table.streaming_tables()[1:]  # the clean table, and its rejected rows when it keeps them
        if table.bronze_name in chosen:
            needed, reset, why = table.streaming_tables(), table.bronze_name, FOLLOW_BRONZE
        elif chosen & set(split):
            reset = next(n for n in split if n in chosen)
            needed, why = split, SPLIT_WITH_CLEAN
        else:
            continue
        if not set(needed) <= chosen:
            raise LakewatchError("FULL_REFRESH_INCOMPLETE", {
                "pipeline": pipeline, "table": reset, "why": why,
                "missing": ", ".join(n for n in needed if n not in chosen),
                "selection": ",".join([*selection, *(n for n in needed if n not in chosen)])})


def check_job(project: Any, job_key: str) -> None:
    """`check_update` for every pipeline task of a job (each pipeline once)."""
    from pipelines.bundle import task_pipeline_key

    jobs = project.bundle.resources("jobs")
    if job_key not in jobs:
        raise BundleError("BUNDLE_INVALID", {
            "where": "resources.jobs", "reason": f"no job '{job_key}' (jobs: {', '.join(jobs) or 'none'})"})
    checked: set[str] = set()
    for task in jobs[job_key].get("tasks") or []:
        if ((task.get("sql_task") or {}).get("file") or {}).get("path"):
            check_sql_task(project, job_key, task)
            continue
        if (task.get("spark_python_task") or {}).get("python_file"):
            check_python_task(project, job_key, task)
            continue
        pipeline_key = task_pipeline_key(task)
        if pipeline_key is not None and pipeline_key not in checked:
            checked.add(pipeline_key)
            preparers = preparing_tasks(project.bundle, job_key, str(task.get("task_key")))
            check_update(project, pipeline_key, prepared_by={"job": job_key, "tasks": preparers})


def check_sql_task(project: Any, job_key: str, task: dict[str, Any]) -> None:
    """A job's SQL file task: parameters resolve (BundleError), the file exists, every `{{name}}` in
    its statements is a parameter of the task."""
    from pipelines.local.job import sql_task_file
    from pipelines.local.sql_task import SqlTaskError, render, split_statements

    sql = task["sql_task"]
    where = f"resources.jobs.{job_key}.tasks[{task['task_key']}].sql_task.parameters"
    parameters = project.bundle.resolve(sql.get("parameters") or {}, where) or {}
    path = sql_task_file(project.bundle, job_key, task)
    try:
        if not path.is_file():
            raise SqlTaskError(f"its SQL file {path} does not exist (sql_task.file.path)")
        render("\n".join(split_statements(path.read_text())), parameters, path.name)
    except SqlTaskError as e:
        raise LakewatchError("JOB_SQL_TASK_INVALID", {"task": task["task_key"], "job": job_key, "reason": str(e)}) from None


def check_python_task(project: Any, job_key: str, task: dict[str, Any]) -> None:
    """A job's Python file task: its parameters resolve (BundleError) and its file exists."""
    from pipelines.local.job import python_task_file, python_task_parameters

    python_task_parameters(project.bundle, job_key, task)
    if str(task["spark_python_task"].get("source", "WORKSPACE")).upper() == "GIT":
        return
    path = python_task_file(project.bundle, job_key, task)
    if not path.is_file():
        raise LakewatchError("JOB_PYTHON_TASK_INVALID", {
            "task": task["task_key"], "job": job_key,
            "reason": f"its Python file {path} does not exist (spark_python_task.python_file)"})
