"""Runs a bundle job's tasks on the local engine, in the order the job declares.

Each `pipeline_task` becomes one update (cause JOB_TASK) of the pipeline its `pipeline_id`
reference names; each `sql_task` with a `file` runs that file's statements on the local engine with
the task's `parameters` (pipelines/local/sql_task.py), where Databricks runs them on the SQL
warehouse `warehouse_id`; each `spark_python_task` with a `python_file` of the bundle runs that file's
`main(parameters, spark, say)` with the local session, where Databricks runs the file as a script with
the parameters as `sys.argv[1:]` (serverless, its `environment_key`). `depends_on` and `run_if` (ALL_SUCCESS by default, ALL_DONE, ...) decide
whether a task runs, as Databricks Jobs do. Tasks of other kinds are reported as not supported locally.
"""

from __future__ import annotations

import importlib.util
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pipelines.bundle import task_pipeline_key
from pipelines.errors import BundleError
from pipelines.local.update.types import UpdateRequest, UpdateResult
from pipelines.local.sql_task import SqlTaskError, SqlTaskResult, run_sql_file



@dataclass
class TaskResult:
    task_key: str
    state: str  # SUCCESS, FAILED, EXCLUDED (not run: run_if unmet), SKIPPED (a kind not run locally),
    # CANCELED (its update was stopped by Ctrl-C or SIGTERM: the job's later tasks are not run)
    update: UpdateResult | None = None  # a pipeline task's update
    sql: SqlTaskResult | None = None  # a SQL file task's statements, when they all ran
    python: Any = None  # what a Python file task's main returned
    error: str | None = None  # why a task that is not an update failed
    seconds: float | None = None


@dataclass
class JobResult:
    job_key: str
    tasks: list[TaskResult] = field(default_factory=list)

    @property
    def canceled(self) -> Any:
        """The signal that stopped the job (cancellation.Canceled), if one did."""
        return next((t.update.canceled for t in self.tasks if t.update is not None and t.update.canceled), None)

    @property
    def ok(self) -> bool:
        return all(t.state in ("SUCCESS", "SKIPPED") for t in self.tasks)


def _should_run(run_if: str, upstream: list[str]) -> bool:
    if not upstream:
        return True
    failed = [s for s in upstream if s != "SUCCESS"]
    return {
        "ALL_SUCCESS": not failed,
        "ALL_DONE": True,
        "NONE_FAILED": all(s in ("SUCCESS", "EXCLUDED", "SKIPPED") for s in upstream),
        "AT_LEAST_ONE_SUCCESS": any(s == "SUCCESS" for s in upstream),
        "ALL_FAILED": all(s == "FAILED" for s in upstream),
        "AT_LEAST_ONE_FAILED": any(s == "FAILED" for s in upstream),
    }.get(run_if, not failed)


def run_job(runner: Any, bundle: Any, job_key: str, say: Any = print) -> JobResult:
    jobs = bundle.resources("jobs")
    if job_key not in jobs:
        raise BundleError("BUNDLE_INVALID", {"where": "resources.jobs", "reason": f"no job '{job_key}' (jobs: {', '.join(jobs) or 'none'})"})
    result = JobResult(job_key)
    states: dict[str, str] = {}
    tasks = list(jobs[job_key].get("tasks") or [])
    for task in tasks:
        key = task["task_key"]
        upstream = [states.get(d["task_key"], "EXCLUDED") for d in task.get("depends_on") or []]
        if not _should_run(task.get("run_if", "ALL_SUCCESS"), upstream):
            states[key] = "EXCLUDED"
            say(f"job {job_key}: task {key} not run (run_if {task.get('run_if', 'ALL_SUCCESS')} unmet)")
            result.tasks.append(TaskResult(key, "EXCLUDED"))
            continue
        if ((task.get("sql_task") or {}).get("file") or {}).get("path"):
            result.tasks.append(run_sql_task(runner, bundle, job_key, task, say))
            states[key] = result.tasks[-1].state
            continue
        if (task.get("spark_python_task") or {}).get("python_file"):
            result.tasks.append(run_python_task(runner, bundle, job_key, task, say))
            states[key] = result.tasks[-1].state
            continue
        pipeline_key = task_pipeline_key(task)
        if pipeline_key is None:
            states[key] = "SKIPPED"
            say(f"job {job_key}: task {key} is not a pipeline task of this bundle; not run locally")
            result.tasks.append(TaskResult(key, "SKIPPED"))
            continue
        say(f"job {job_key}: task {key} -> pipeline {pipeline_key}")
        full_refresh = bool((task.get("pipeline_task") or {}).get("full_refresh", False))
        update = runner.run_update(UpdateRequest(pipeline_key, full_refresh=full_refresh, cause="JOB_TASK"))
        states[key] = "CANCELED" if update.state == "CANCELED" else "SUCCESS" if update.ok else "FAILED"
        result.tasks.append(TaskResult(key, states[key], update))
        if update.canceled is not None:  # the job run was canceled: its other tasks do not run
            left = [t["task_key"] for t in tasks[tasks.index(task) + 1:]]
            if left:
                say(f"job {job_key}: canceled ({update.canceled.why}); not run: {', '.join(left)}")
            break
    return result


def sql_task_file(bundle: Any, job_key: str, task: dict[str, Any]) -> Path:
    """The SQL file of a `sql_task`: its `file.path`, relative to the job's resource file."""
    path = str(task["sql_task"]["file"]["path"])
    return (bundle.resource_file("jobs", job_key).parent / path).resolve()


def run_sql_task(runner: Any, bundle: Any, job_key: str, task: dict[str, Any], say: Any = print) -> TaskResult:
    """A `sql_task` with a `file`: its statements on the local engine with the task's parameters.
    Any failure (a file or parameter missing, a statement failing) makes the task FAILED."""
    key = task["task_key"]
    sql = task["sql_task"]
    started = time.monotonic()
    if str((sql.get("file") or {}).get("source", "WORKSPACE")).upper() == "GIT":
        say(f"job {job_key}: task {key} runs a SQL file from a Git source; not run locally")
        return TaskResult(key, "SKIPPED")
    path = sql_task_file(bundle, job_key, task)
    say(f"job {job_key}: task {key} -> SQL file {path.relative_to(bundle.root) if path.is_relative_to(bundle.root) else path}")
    try:
        where = f"{bundle.resource_file('jobs', job_key).name}: resources.jobs.{job_key}.tasks[{key}].sql_task.parameters"
        parameters = {str(k): v for k, v in (bundle.resolve(sql.get("parameters") or {}, where) or {}).items()}
        done = run_sql_file(runner.spark, path, parameters)
    except (SqlTaskError, BundleError) as e:
        say(f"job {job_key}: task {key} FAILED: {e}")
        return TaskResult(key, "FAILED", error=str(e), seconds=time.monotonic() - started)
    inserted = done.metrics.get("num_inserted_rows")
    say(f"job {job_key}: task {key}: {done.statements} statements in {done.seconds:.1f}s"
        + (f", {inserted} rows inserted" if inserted is not None else ""))
    return TaskResult(key, "SUCCESS", sql=done, seconds=time.monotonic() - started)


def python_task_file(bundle: Any, job_key: str, task: dict[str, Any]) -> Path:
    """The Python file of a `spark_python_task`: its `python_file`, relative to the job's resource file."""
    path = str(task["spark_python_task"]["python_file"])
    return (bundle.resource_file("jobs", job_key).parent / path).resolve()


def python_task_parameters(bundle: Any, job_key: str, task: dict[str, Any]) -> list[str]:
    where = f"{bundle.resource_file('jobs', job_key).name}: resources.jobs.{job_key}.tasks[{task['task_key']}]" \
            ".spark_python_task.parameters"
    return [str(p) for p in bundle.resolve(task["spark_python_task"].get("parameters") or [], where) or []]


def load_task_main(path: Path) -> Any:
    """The `main` of a Python task file, loaded as a module (not run as a script)."""
    if not path.is_file():
        raise FileNotFoundError(f"the Python file {path} does not exist")
    spec = importlib.util.spec_from_file_location(f"lakewatch_job_task_{path.stem}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    main = getattr(module, "main", None)
    if not callable(main):
        raise AttributeError(f"{path.name} defines no main(argv, spark, say), which the local job runner calls")
    return main


def run_python_task(runner: Any, bundle: Any, job_key: str, task: dict[str, Any], say: Any = print) -> TaskResult:
    """A `spark_python_task` with a `python_file` of the bundle: its `main(parameters, spark, say)` on
    the local engine. Any failure (the file, a parameter, an exception in main) makes the task FAILED."""
    key = task["task_key"]
    started = time.monotonic()
    if str(task["spark_python_task"].get("source", "WORKSPACE")).upper() == "GIT":
        say(f"job {job_key}: task {key} runs a Python file from a Git source; not run locally")
        return TaskResult(key, "SKIPPED")
    path = python_task_file(bundle, job_key, task)
    say(f"job {job_key}: task {key} -> Python file {path.relative_to(bundle.root) if path.is_relative_to(bundle.root) else path}")
    try:
        parameters = python_task_parameters(bundle, job_key, task)
        returned = load_task_main(path)(parameters, runner.spark, say)
    except BundleError as e:
        say(f"job {job_key}: task {key} FAILED: {e}")
        return TaskResult(key, "FAILED", error=str(e), seconds=time.monotonic() - started)
    except (Exception, SystemExit) as e:  # noqa: BLE001 (every failure of the file fails the task, as on Databricks)
        from pipelines.errors import engine_message

        message = f"{type(e).__name__}: {engine_message(e).splitlines()[0] if str(e).strip() else ''}".rstrip(": ")
        say(f"job {job_key}: task {key} FAILED: {message}")
        return TaskResult(key, "FAILED", error=message, seconds=time.monotonic() - started)
    seconds = time.monotonic() - started
    say(f"job {job_key}: task {key}: done in {seconds:.1f}s")
    return TaskResult(key, "SUCCESS", python=returned, seconds=seconds)
