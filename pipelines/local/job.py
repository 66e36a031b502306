"""Runs a bundle job's pipeline tasks on the local engine, in the order the job declares.

Each `pipeline_task` becomes one update (cause JOB_TASK) of the pipeline its `pipeline_id`
reference names; `depends_on` and `run_if` (ALL_SUCCESS by default, ALL_DONE, ...) decide whether a
task runs, as Databricks Jobs do. Tasks of other kinds are reported as not supported locally.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from pipelines.errors import BundleError
from pipelines.local.runner import UpdateRequest, UpdateResult

PIPELINE_REFERENCE = re.compile(r"^\$\{resources\.pipelines\.([A-Za-z0-9_-]+)\.id\}$")


@dataclass
class TaskResult:
    task_key: str
    state: str  # SUCCESS, FAILED, EXCLUDED (not run: run_if unmet), SKIPPED (not a pipeline task)
    update: UpdateResult | None = None


@dataclass
class JobResult:
    job_key: str
    tasks: list[TaskResult] = field(default_factory=list)

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
    for task in jobs[job_key].get("tasks") or []:
        key = task["task_key"]
        upstream = [states.get(d["task_key"], "EXCLUDED") for d in task.get("depends_on") or []]
        if not _should_run(task.get("run_if", "ALL_SUCCESS"), upstream):
            states[key] = "EXCLUDED"
            say(f"job {job_key}: task {key} not run (run_if {task.get('run_if', 'ALL_SUCCESS')} unmet)")
            result.tasks.append(TaskResult(key, "EXCLUDED"))
            continue
        reference = (task.get("pipeline_task") or {}).get("pipeline_id", "")
        match = PIPELINE_REFERENCE.match(str(reference))
        if not match:
            states[key] = "SKIPPED"
            say(f"job {job_key}: task {key} is not a pipeline task of this bundle; not run locally")
            result.tasks.append(TaskResult(key, "SKIPPED"))
            continue
        say(f"job {job_key}: task {key} -> pipeline {match.group(1)}")
        full_refresh = bool((task.get("pipeline_task") or {}).get("full_refresh", False))
        update = runner.run_update(UpdateRequest(match.group(1), full_refresh=full_refresh, cause="JOB_TASK"))
        states[key] = "SUCCESS" if update.ok else "FAILED"
        result.tasks.append(TaskResult(key, states[key], update))
    return result
