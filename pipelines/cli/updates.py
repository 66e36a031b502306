"""`lakewatch run` and `lakewatch job`: updates of the bundle's pipelines on the local engine. The
refresh selection is spelled as `databricks bundle run` spells it, with its rule that the selections
exclude each other."""

from __future__ import annotations

import argparse
import re
from typing import TYPE_CHECKING

from pipelines import console
from pipelines.cli import flags
from pipelines.cli.output import json_result, note, result
from pipelines.console import exit_code
from pipelines.progress import Counter

if TYPE_CHECKING:
    from pipelines.local.project import LocalProject
    from pipelines.local.update.types import UpdateRequest

# A flow's final state as the runner prints it while the update runs: "    12:00:01  orders_bronze  COMPLETED".
_FLOW_DONE = re.compile(r"^\s+\d\d:\d\d:\d\d\s+\S+\s+(COMPLETED|FAILED|SKIPPED|STOPPED|EXCLUDED|CANCELED)\b")
SELECTIONS = ("refresh", "full_refresh_all", "full_refresh")


class DeprecatedFullRefreshSelection(argparse.Action):
    """`--full-refresh-selection T1,T2`: the earlier spelling of `--full-refresh T1,T2`, kept working;
    it says so on standard error."""

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: object,
                 option_string: str | None = None) -> None:
        note("warning: --full-refresh-selection is deprecated; write --full-refresh T1,T2 (as `databricks bundle run`)")
        setattr(namespace, "full_refresh", values)


def check_selection(args: argparse.Namespace) -> str | None:
    """`databricks bundle run`'s rule: at most one of --full-refresh, --full-refresh-all, --refresh."""
    given = [f"--{name.replace('_', '-')}" for name in SELECTIONS if getattr(args, name, None)]
    if len(given) > 1:
        return f"pipeline run arguments are mutually exclusive (got {', '.join(given)})"
    return None


def configuration(items: list[str] | None) -> tuple[tuple[str, str], ...]:
    """`--set key=value` pairs; a pair without `=` is refused as bad input (exit 2)."""
    from pipelines.errors import LakewatchError

    pairs = []
    for item in items or ():
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise LakewatchError("CLI_INVALID_ARGUMENT", {"reason": f"--set expects key=value, got {item!r}"})
        pairs.append((key.strip(), value))
    return tuple(pairs)


def update_request(args: argparse.Namespace, cause: str | None = None) -> UpdateRequest:
    """The update `run`'s flags ask for."""
    from pipelines.local.update.types import UpdateRequest

    return UpdateRequest(
        pipeline=args.pipeline,
        full_refresh=bool(args.full_refresh_all),
        full_refresh_selection=tuple(args.full_refresh or ()),
        refresh_selection=tuple(args.refresh or ()),
        cause=cause or args.cause,
        configuration=configuration(args.set),
    )


class UpdatePrinter:
    """The runner's lines while an update runs, on standard error, counting the flows that finished
    (a progress bar when standard error is a terminal)."""

    def __init__(self, counter: Counter) -> None:
        self.counter = counter

    def __call__(self, text: str) -> None:
        if _FLOW_DONE.match(text):
            self.counter.advance(1, text)
        else:
            self.counter.say(text)


def cmd_run(args: argparse.Namespace, project: LocalProject) -> int:
    from pipelines.local.preflight import check_update

    request = update_request(args)
    # Bad input (an unknown pipeline, an unresolved variable, tables.yml, landing folders) fails
    # here, before the engine starts; then the run lock, before anything is read or written.
    check_update(project, request.pipeline, request.configuration, full_refresh_selection=request.full_refresh_selection)
    project.lock_runs(f"lakewatch run {request.pipeline}")
    note(f"landing root: {project.landing_root()}")
    with Counter("flows finished") as counter:
        project.print = UpdatePrinter(counter)
        update = project.runner().run_update(request)
    if args.output == "json":
        json_result(console.update_document(update))
    else:
        for line in console.summarize(update):
            result(line)
        if args.verbose:  # where the update's seconds went, part of the summary when asked
            result("  timings: " + ", ".join(f"{name} {seconds:.2f}s" for name, seconds in update.timings))
    if not update.ok:
        note(console.failure_paragraph(update))
    return exit_code(update)


def cmd_job(args: argparse.Namespace, project: LocalProject) -> int:
    from pipelines.local.job import run_job
    from pipelines.local.preflight import check_job

    check_job(project, args.job)  # every pipeline task's input, before the engine starts
    project.lock_runs(f"lakewatch job {args.job}")
    note(f"landing root: {project.landing_root()}")
    with Counter("flows finished") as counter:
        printer = UpdatePrinter(counter)
        project.print = printer
        outcome = run_job(project.runner(), project.bundle, args.job, say=printer)
    if args.output == "json":
        json_result({"job": outcome.job_key, "ok": outcome.ok, "tasks": [
            {"task_key": t.task_key, "state": t.state, "seconds": t.seconds, "error": t.error,
             "update": console.update_document(t.update) if t.update is not None else None}
            for t in outcome.tasks]})
    else:
        for task in outcome.tasks:
            for line in console.task_report(task.task_key, task.state, task.error, task.update):
                result(line)
    return exit_code(outcome)


def register(sub: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    run = flags.add_verb(
        sub, common, "run", help="run one update of a bundle pipeline on the local engine",
        description="One update of a bundle pipeline on the local engine. Its progress goes to stderr; "
                    "the result (one line per flow, or -o json) to stdout.",
        examples=["lakewatch run", "lakewatch run --full-refresh-all",
                  "lakewatch run --full-refresh orders_bronze,orders,orders_rejected", "lakewatch run --refresh orders_bronze",
                  "lakewatch run lakewatch_observability -o json", "lakewatch run -t dev --var landing_root=/data"])
    run.add_argument("pipeline", nargs="?", default="lakewatch_ingest",
                     help="pipeline resource key (default lakewatch_ingest)")
    run.add_argument("--full-refresh", type=flags.name_list, metavar="T1,T2",
                     help="reset and recompute these tables (comma-separated)")
    run.add_argument("--full-refresh-all", action="store_true", help="reset every table and recompute")
    run.add_argument("--refresh", type=flags.name_list, metavar="T1,T2",
                     help="update only these tables (comma-separated)")
    run.add_argument("--full-refresh-selection", type=flags.name_list, action=DeprecatedFullRefreshSelection, default=argparse.SUPPRESS,
                     help=argparse.SUPPRESS)
    run.add_argument("--set", action="append", metavar="KEY=VALUE",
                     help="extra pipeline configuration (repeatable)")
    run.add_argument("--cause", default="USER_ACTION", choices=["USER_ACTION", "API_CALL", "JOB_TASK", "RETRY_ON_FAILURE"],
                     help="the update's cause in the event log (default USER_ACTION)")
    flags.add_output(run)
    run.set_defaults(handler=cmd_run, check=check_selection)

    job = flags.add_verb(
        sub, common, "job", help="run a bundle job's tasks in order (ingest, archive of the event log, observability)",
        examples=["lakewatch job", "lakewatch job lakewatch_job -o json"])
    job.add_argument("job", nargs="?", default="lakewatch_job", help="job resource key (default lakewatch_job)")
    flags.add_output(job)
    job.set_defaults(handler=cmd_job)
