"""`make demo`: the product's story on one machine, from a fresh local state.

The demo runs in a state folder of its own (`.lakewatch-demo/` in the project, or the folder given with
`--home` / LAKEWATCH_HOME), with its landing root inside it, so it never touches the state, tables or
landing files `lakewatch run` uses. It starts over by removing what is in that folder, and only in a
folder it made itself (one holding its marker file) or an empty one. It runs on whatever tables
conf/tables.yml declares: the truncated upload is the first JSON table's (else the first table's).

Files arrive in batches (with malformed lines, type mismatches, drift, case variants, empty files);
an ingest update runs after each. One producer's upload is cut short, so one update fails the way
users meet it (the bronze flow fails on an unreadable gzip, downstream flows are skipped, files
stay in the backlog); the producer re-delivers the file and the next update catches up. The demo
ends with a summary of the tables and of the failed update.

Beside the ingest pipeline it runs the bundle's example of a pipeline of the user's own, `orders_daily`
(plain `pyspark.pipelines`, observed through its event log), when the bundle has it and the
configuration has an `orders` table: once before the first ingest update (it fails: `orders` does not
exist yet), after the first ingest update, and before the job, so that the observability tables show
two pipelines and the second one's incident, opened and closed.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from pipelines.alerts import format_result, load_alerts, run_alert
from pipelines.config import CORRUPT_RECORDS_SINK, TablesConfig
from pipelines.console import failed_on_purpose, failure_paragraph, summarize, update_document
from pipelines.dashboard.files import dashboard_files, write_dashboard_file
from pipelines.generator import generate_batch, load_column_settings, redeliver
from pipelines.errors import LakewatchError
from pipelines.local.home import PROJECT_ROOT, LocalHome
from pipelines.local.job import run_job
from pipelines.local.project import LocalProject
from pipelines.local.update.types import UpdateRequest, UpdateResult

JOB = "lakewatch_job"
# The bundle's example of another pipeline the observability pipeline observes, and the table it reads.
OBSERVED_EXAMPLE = "orders_daily"
OBSERVED_EXAMPLE_SOURCE = "orders"


@dataclass(frozen=True)
class Step:
    title: str
    incomplete_upload: tuple[str, ...] = ()
    redeliver_first: bool = False
    expect_failure: bool = False
    job: bool = False  # run the bundle's job (ingest, archive, observability) instead of an ingest update
    # OBSERVED_EXAMPLE's updates around the step's ingest update or job, and how each is meant to end
    example_before: tuple[str, ...] = ()
    example_after: tuple[str, ...] = ()


@dataclass
class DemoOutcome:
    """What the demo did: `ok` when everything went as intended, and the result `lakewatch demo -o json`
    prints (its shape: docs/cli.md)."""

    ok: bool
    document: dict[str, Any] = field(default_factory=dict)


DEMO_HOME = PROJECT_ROOT / ".lakewatch-demo"
MARKER = ".lakewatch-demo"  # the file that marks a state folder as the demo's own


def scenario(truncated: str) -> tuple[Step, ...]:
    """The demo's steps; `truncated` is the table whose producer's upload is cut short."""
    return (
        Step("batch 1: the first files land", example_before=("FAILED",), example_after=("COMPLETED",)),
        Step("batch 2: more files, some with new fields (schema drift)"),
        Step(f"batch 3: the {truncated} producer's upload is cut short (a truncated gzip)",
             incomplete_upload=(truncated,), expect_failure=True),
        Step("batch 4: the producer re-delivers the whole file, new files land, and the job runs "
             "(ingest, archive of the event log, then observability)", redeliver_first=True, job=True,
             example_before=("COMPLETED",)),
    )


def runs_example(project: Any, tables: TablesConfig) -> bool:
    """Whether the demo runs OBSERVED_EXAMPLE: the bundle declares it and the configuration has the
    table it reads."""
    return (OBSERVED_EXAMPLE in project.bundle.resources("pipelines")
            and any(t.name == OBSERVED_EXAMPLE_SOURCE for t in tables.tables))


def truncated_table(tables: TablesConfig) -> str:
    """The table whose upload the demo cuts short: the first JSON table, else the first table."""
    return next((t.name for t in tables.tables if t.format == "json"), tables.tables[0].name)


def demo_home(given: Path | None) -> LocalHome:
    """The demo's state folder: `given` (--home), else LAKEWATCH_HOME, else `.lakewatch-demo/`. Raises
    DEMO_HOME_IN_USE for a folder that holds anything but a former demo's state (the demo empties it);
    marks the folder as the demo's."""
    configured = os.environ.get("LAKEWATCH_HOME")
    root = (given or (Path(configured) if configured else DEMO_HOME)).resolve()
    if root.is_dir() and any(root.iterdir()) and not (root / MARKER).is_file():
        raise LakewatchError("DEMO_HOME_IN_USE", {"home": root, "marker": MARKER, "default": DEMO_HOME})
    root.mkdir(parents=True, exist_ok=True)
    (root / MARKER).write_text("lakewatch demo's state folder: `lakewatch demo` empties it when it starts\n")
    return LocalHome(root)


def open_project(given_home: Path | None, printer: Callable[[str], None], verbose: bool,
                 remote: str | None) -> LocalProject:
    """The project as the demo runs it: its own state folder, its landing root inside it."""
    home = demo_home(given_home)
    return LocalProject(home=home, printer=printer, verbose=verbose, remote=remote, landing_root=home.landing)


def reset(project: Any) -> None:
    """A fresh local state: the engine stopped, everything under the demo's state folder removed but
    the run lock this demo holds and the folder's demo marker."""
    from pipelines.local import engine

    project.close_session()
    if engine.stop(project.home) is not None:
        project.print(f"stopped the local engine of {project.home.root}")
    root = project.home.root
    if not root.exists():
        return
    project.print(f"resetting the local state in {root}")
    for entry in root.iterdir():
        if entry.name == MARKER:
            continue
        if entry.name == "state" and entry.is_dir():
            for item in entry.iterdir():
                if item.name != "run.lock":
                    shutil.rmtree(item) if item.is_dir() else item.unlink()
        elif entry.is_dir() and not entry.is_symlink():
            shutil.rmtree(entry)
        else:
            entry.unlink()


def run_demo(project: Any, rows: int = 400, seed: int = 7) -> DemoOutcome:
    say: Callable[[str], None] = project.print
    reset(project)
    tables = project.tables()
    landing = project.landing_root()
    settings = load_column_settings(project.root / "conf" / "generator.yml")
    runner = project.runner()
    results: list[tuple[Step, UpdateResult]] = []
    failed_tasks: list[Any] = []  # job tasks other than updates that failed (the event log's archive)
    say(f"demo state folder {project.home.root} (landing root {landing}); nothing outside it is changed")
    document: dict[str, Any] = {"home": str(project.home.root), "landing_root": str(landing), "steps": []}
    example = runs_example(project, tables)
    unexpected_example: list[UpdateResult] = []

    def run_example(intended: tuple[str, ...]) -> list[UpdateResult]:
        ran = []
        for state in intended if example else ():
            result = runner.run_update(UpdateRequest(OBSERVED_EXAMPLE))
            for line in summarize(result):
                say(line)
            if result.state != state:
                unexpected_example.append(result)
            ran.append(result)
        return ran

    if not example:
        say(f"the bundle's example of another pipeline, {OBSERVED_EXAMPLE}, is not run: it needs the pipeline "
            f"in the bundle and a table {OBSERVED_EXAMPLE_SOURCE} in the configuration")
    for number, step in enumerate(scenario(truncated_table(tables)), start=1):
        say("")
        say(f"== {step.title}")
        before = run_example(step.example_before)
        if step.redeliver_first:
            for path in redeliver(landing):
                say(f"re-delivered {path}")
        written = generate_batch(project.spark, tables, landing, rows=rows, seed=seed,
                                 column_settings=settings, incomplete_upload=step.incomplete_upload)
        say(f"wrote {len(written)} files to {landing}")
        if step.job:
            job = run_job(runner, project.bundle, JOB, say=say)
            updates = [t.update for t in job.tasks if t.update is not None]
            result, observability = updates[0], updates[-1]
            failed_tasks = [t for t in job.tasks if t.update is None and t.state == "FAILED"]
            for update in updates:
                for line in summarize(update):
                    say(line)
        else:
            updates = [runner.run_update(UpdateRequest("lakewatch_ingest"))]
            result = updates[0]
            for line in summarize(result):
                say(line)
        after = run_example(step.example_after)
        results.append((step, result))
        document["steps"].append({"step": number, "title": step.title, "files_written": len(written),
                                  "expect_failure": step.expect_failure,
                                  "updates": [update_document(u) for u in [*before, *updates, *after]]})

    say("")
    say("== summary")
    ok, document["tables"] = print_summary(project, tables, results)
    for task in failed_tasks:
        say(f"UNEXPECTED: job task {task.task_key} FAILED: {task.error}")
        ok = False
    for update in unexpected_example:
        say(f"UNEXPECTED: {OBSERVED_EXAMPLE} update {update.update_id} ended {update.state}")
        say(failure_paragraph(update))
        ok = False
    document.update(health_metrics=None, alerts=None, dashboard_failed_widgets=None)
    if not observability.ok:
        say(f"UNEXPECTED: the observability update ended {observability.state}")
        say(failure_paragraph(observability))
        ok = False
    else:
        document["health_metrics"] = print_health(project)
        document["alerts"] = print_alerts(project)
        document["dashboard_failed_widgets"] = failed = print_dashboard(project)
        ok = ok and failed == 0
    document["as_intended"] = ok
    return DemoOutcome(ok, document)


def print_dashboard(project: Any) -> int:
    """Renders every dashboard of the bundle; the number of widgets whose query failed."""
    return sum(write_dashboard_file(project, key, path, say=project.print) for key, path in dashboard_files(project))


def print_alerts(project: Any) -> dict[str, str]:
    """Evaluates and prints every alert; its state by alert."""
    project.use_schema()
    project.print("alerts (the bundle's SQL alerts, evaluated on the local tables):")
    specs = load_alerts(project.bundle)
    width = max((len(spec.key) for spec in specs), default=0)
    states = {}
    for spec in specs:
        evaluated = run_alert(project.spark, spec)
        project.print("  " + format_result(evaluated, width))
        states[spec.key] = evaluated.state
    return states


def print_health(project: Any) -> dict[str, float | None]:
    """Prints the health metrics; their values by metric name (NULL: not measured)."""
    rows = project.spark.sql(
        f"SELECT metric_name, metric_value FROM {project.schema_name()}.health_metrics ORDER BY metric_name"
    ).collect()
    project.print("health metrics (what the SQL alerts read):")
    for row in rows:
        value = "NULL" if row["metric_value"] is None else f"{row['metric_value']:.4g}"
        project.print(f"  {row['metric_name']:<36} {value}")
    return {row["metric_name"]: None if row["metric_value"] is None else float(row["metric_value"]) for row in rows}


def print_summary(project: Any, tables: Any, results: list[tuple[Step, UpdateResult]]
                  ) -> tuple[bool, list[dict[str, Any]]]:
    """Prints each table's rows and the updates that did not end as the scenario meant; whether all
    did, and the table rows printed."""
    say = project.print
    spark = project.spark
    schema = project.schema_name()
    say(f"tables live in the local catalog, schema {schema} (files under {project.home.warehouse})")
    say(f"{'table':<12} {'bronze rows':>12} {'rescued':>9} {'corrupt':>9} {'clean rows':>11} {'rejected':>9} "
        f"{'quarantined':>12}")
    counted = []
    for table in tables.tables:
        rejected = (f"(SELECT count(*) FROM {schema}.{table.rejected_name})" if table.drop_expectations
                    else "CAST(NULL AS BIGINT)")
        row = spark.sql(
            f"SELECT count(*) AS n, count(_rescued_data) AS rescued, count(_corrupt_record) AS corrupt, "
            f"(SELECT count(*) FROM {schema}.{table.clean_name}) AS clean, {rejected} AS rejected, "
            f"(SELECT count(*) FROM {schema}.{CORRUPT_RECORDS_SINK} WHERE source_table = '{table.name}') AS quarantined "
            f"FROM {schema}.{table.bronze_name}"
        ).collect()[0]
        say(f"{table.name:<12} {row['n']:>12} {row['rescued']:>9} {row['corrupt']:>9} {row['clean']:>11} "
            f"{'-' if row['rejected'] is None else row['rejected']:>9} {row['quarantined']:>12}")
        counted.append({"table": table.name, "bronze_rows": row["n"], "rescued": row["rescued"],
                        "corrupt": row["corrupt"], "clean_rows": row["clean"], "rejected": row["rejected"],
                        "quarantined": row["quarantined"]})
    event_log = project.pipeline().event_log
    say(f"event log: {event_log.full_name if event_log else '-'}; file state: {schema}.lakewatch_file_state")
    say(f"query them with: .venv/bin/lakewatch query \"SELECT * FROM {table.bronze_name} LIMIT 5\"")
    as_expected = True
    for number, (step, result) in enumerate(results, start=1):
        if result.ok == step.expect_failure:
            as_expected = False
            say(f"UNEXPECTED: update {number} ({result.update_id}) ended {result.state}")
        if not result.ok:
            for line in failed_on_purpose(number, result):
                say(line)
    say("the demo ran as intended" if as_expected else "the demo did NOT run as intended (see above)")
    return as_expected, counted
