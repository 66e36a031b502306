"""`lakewatch`: run the bundle's pipelines on the local engine, generate landing data, query the
local tables, and run the whole demo.

Exit codes (`pipelines.console`): 0 success, 1 a pipeline update failed (or an alert triggered, where
asked), 2 bad input or an error before anything ran. Errors print as one paragraph; `--verbose` adds the
stack trace.
"""

from __future__ import annotations

import argparse
import faulthandler
import json
import signal
import sys
import traceback
from datetime import date, datetime
from decimal import Decimal
from pathlib import Path
from typing import Any, Sequence

from pipelines import cancellation, console
from pipelines.console import EXIT_ERROR, EXIT_FAILED, EXIT_OK, exit_code
from pipelines.console import say as _say
from pipelines.errors import LakewatchError, engine_message


def _split_list(text: str | None) -> tuple[str, ...]:
    return tuple(t.strip() for t in (text or "").split(",") if t.strip())


def _key_values(items: Sequence[str] | None) -> tuple[tuple[str, str], ...]:
    pairs = []
    for item in items or ():
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise LakewatchError("CLI_INVALID_ARGUMENT", {"reason": f"--set expects key=value, got {item!r}"})
        pairs.append((key.strip(), value))
    return tuple(pairs)


def error_paragraph(error: BaseException, verbose: bool) -> str:
    """One readable paragraph for any error; the JVM stack trace only when verbose."""
    text = str(error)
    if "Another instance of Derby may have already booted" in text or "XSDB6" in text:
        from pipelines.local.home import LocalHome

        return str(LakewatchError("METASTORE_LOCKED", {"home": LocalHome.default().root}))
    if not verbose:
        text = engine_message(text)
    text = " ".join(text.split()) if not verbose else text.strip()
    if isinstance(error, LakewatchError):
        return text
    return f"{type(error).__name__}: {text}"


# -- commands ---------------------------------------------------------------------------------
def cmd_run(args: argparse.Namespace, project: Any) -> int:
    from pipelines.local.preflight import check_update
    from pipelines.local.update.types import UpdateRequest

    configuration = _key_values(args.set)
    # Bad input (an unknown pipeline, an unresolved variable, tables.yml, landing folders) fails
    # here, before the engine starts; then the run lock, before anything is read or written.
    check_update(project, args.pipeline, configuration)
    project.lock_runs(f"lakewatch run {args.pipeline}")
    _say(f"landing root: {project.landing_root()}")
    request = UpdateRequest(
        pipeline=args.pipeline,
        full_refresh=args.full_refresh,
        full_refresh_selection=_split_list(args.full_refresh_selection),
        refresh_selection=_split_list(args.refresh),
        cause=args.cause,
        configuration=configuration,
    )
    result = project.runner().run_update(request)
    for line in console.update_report(result, timings=args.verbose):
        _say(line)
    return exit_code(result)


def cmd_generate(args: argparse.Namespace, project: Any) -> int:
    from pipelines.generator import Mix, generate_batch, load_column_settings

    mix = Mix.parse(args.mix)
    tables = project.tables()
    only = _split_list(args.table) or None
    known = {t.name for t in tables.tables}
    for name in (only or ()) + _split_list(args.incomplete_upload):
        if name not in known:
            raise LakewatchError("CLI_INVALID_ARGUMENT", {"reason": f"no table '{name}' in {tables.path}"})
    settings = load_column_settings(project.root / "conf" / "generator.yml")
    for _ in range(args.batches):
        written = generate_batch(
            project.spark, tables, project.landing_root(), rows=args.rows, seed=args.seed, mix=mix,
            files_per_batch=args.files_per_batch, column_settings=settings,
            incomplete_upload=_split_list(args.incomplete_upload), only=only,
        )
        for f in written:
            lines = sum(f.lines.values())
            note = "" if f.complete else "  (incomplete upload: gzip cut short)"
            _say(f"wrote {f.path}: {lines} lines {f.lines}{note}")
    _say(f"manifest: {project.landing_root() / '_manifest.json'}")
    return EXIT_OK


def cmd_redeliver(args: argparse.Namespace, project: Any) -> int:
    from pipelines.generator import redeliver

    fixed = redeliver(project.landing_root())
    for path in fixed:
        _say(f"re-delivered {path}")
    if not fixed:
        _say("nothing to re-deliver: every upload `lakewatch generate` cut short is whole again. `redeliver` knows only "
             "the files `generate` wrote (its manifest); a file from anywhere else that cannot be read must be "
             "delivered again by its producer: replace it in the landing folder, whole, under the same name")
    return EXIT_OK


def _jsonable(value: Any) -> Any:
    if isinstance(value, (datetime, date)):
        return value.isoformat()
    if isinstance(value, Decimal):
        return float(value)
    if isinstance(value, dict):
        return {k: _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if hasattr(value, "asDict"):
        return _jsonable(value.asDict(recursive=True))
    return value


def _valid_text(df: Any) -> Any:
    """`df` with each top-level STRING column made valid UTF-8 (`make_valid_utf8`: a byte that is not
    UTF-8 shows as U+FFFD). A quarantined line that is not UTF-8 is stored as its raw bytes, and pyspark
    fails a whole result holding one (UnicodeDecodeError), so `SELECT * FROM corrupt_records_sink` could
    not be read on the day it mattered. Columns are taken by position: a result may repeat a name."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import StringType

    fields = df.schema.fields
    if not any(isinstance(f.dataType, StringType) for f in fields):
        return df
    positional = df.toDF(*[f"_{i}" for i in range(len(fields))])
    return positional.select(*[
        (F.make_valid_utf8(f"_{i}") if isinstance(f.dataType, StringType) else F.col(f"_{i}")).alias(f.name)
        for i, f in enumerate(fields)])


def cmd_query(args: argparse.Namespace, project: Any) -> int:
    project.use_schema()
    try:
        df = _valid_text(project.spark.sql(args.sql))
        rows = df.collect()
    except Exception as e:  # noqa: BLE001 (reported as a query error)
        raise LakewatchError("QUERY_FAILED", {"reason": error_paragraph(e, args.verbose)}) from e
    if args.json:
        print(json.dumps([_jsonable(r.asDict(recursive=True)) for r in rows], indent=None, default=str))
    else:
        df.show(n=args.limit, truncate=False if args.no_truncate else 60)
    return EXIT_OK


def cmd_job(args: argparse.Namespace, project: Any) -> int:
    from pipelines.local.job import run_job
    from pipelines.local.preflight import check_job

    check_job(project, args.job)  # every pipeline task's input, before the engine starts
    project.lock_runs(f"lakewatch job {args.job}")
    _say(f"landing root: {project.landing_root()}")
    result = run_job(project.runner(), project.bundle, args.job, say=_say)
    for task in result.tasks:
        for line in console.task_report(task.task_key, task.state, task.error, task.update):
            _say(line)
    return exit_code(result)


def cmd_check(args: argparse.Namespace, project: Any) -> int:
    from pipelines.bundle_check import check_bundle, required_inputs
    from pipelines.own_data import landing_lines

    findings = check_bundle(project.root)
    for finding in findings:
        _say(f"error: {finding}")
    if findings:
        _say(f"{len(findings)} problem(s) in the bundle")
        return EXIT_ERROR
    _say("bundle OK: resources match the databricks-bundles models, references resolve for every target, paths "
         "exist, no placeholders, CLI floor set, grants and time zone in place")
    for target, names in required_inputs(project.root).items():
        if names:
            _say(f"  deploying -t {target} needs: {', '.join(names)} (--var=\"name=value\" or BUNDLE_VAR_<name>)")
    for line in landing_lines(project):  # validates conf/tables.yml as a run does
        _say(line)
    if args.queries:
        failed = check_queries(project)
        if failed:
            return EXIT_FAILED
    return EXIT_OK


def check_queries(project: Any) -> int:
    """Runs every alert query and every dashboard widget query on the local tables."""
    from pipelines.alerts import load_alerts, run_alert
    from pipelines.dashboard.files import dashboard_files
    from pipelines.dashboard.lvdash import load_dashboard
    from pipelines.dashboard.render import run_widgets

    project.use_schema()
    failed = 0
    for spec in load_alerts(project.bundle):
        result = run_alert(project.spark, spec)
        ok = result.state != "ERROR"
        failed += not ok
        _say(f"{'ok   ' if ok else 'ERROR'} alert {spec.key}{'' if ok else ': ' + str(result.error)}")
    for key, path in dashboard_files(project):
        for name, widget in run_widgets(project.spark, load_dashboard(path)).items():
            ok = widget.error is None
            failed += not ok
            _say(f"{'ok   ' if ok else 'ERROR'} dashboard {key} widget {name}{'' if ok else ': ' + str(widget.error)}")
    return failed


def cmd_dashboard(args: argparse.Namespace, project: Any) -> int:
    from pipelines.dashboard.files import dashboard_files, write_dashboard_file

    files = dashboard_files(project)
    if not files:
        raise LakewatchError("BUNDLE_INVALID", {"where": "resources.dashboards", "reason": "the bundle has no dashboard"})
    project.use_schema()
    failed = 0
    for key, path in files:
        failed += write_dashboard_file(project, key, path, args.output)
    return EXIT_FAILED if failed else EXIT_OK


def cmd_alerts(args: argparse.Namespace, project: Any) -> int:
    from pipelines.alerts import format_result, load_alerts, run_alert

    project.use_schema()
    results = [run_alert(project.spark, spec) for spec in load_alerts(project.bundle)]
    if args.json:
        print(json.dumps([
            {"alert": r.spec.key, "display_name": r.spec.display_name, "state": r.state, "value": _jsonable(r.value),
             "operator": r.spec.operator, "threshold": _jsonable(r.threshold), "error": r.error}
            for r in results
        ]))
    else:
        for r in results:
            _say(format_result(r))
    alarming = [r for r in results if r.state in ("TRIGGERED", "ERROR")]
    if args.fail_on_trigger and alarming:
        return EXIT_FAILED
    return EXIT_OK


def cmd_report(args: argparse.Namespace, project: Any) -> int:
    """`lakewatch report`: the last updates of the ingest pipeline, from the observability tables."""
    from pipelines import report

    project.use_schema()
    try:
        updates, as_of = report.collect(project.spark, args.last)
    except Exception as e:  # noqa: BLE001 (a missing table is the usual cause; the reason says)
        text = error_paragraph(e, args.verbose)
        key = "REPORT_NO_TABLES" if "TABLE_OR_VIEW_NOT_FOUND" in text else "QUERY_FAILED"
        raise LakewatchError(key, {"home": project.home.root, "reason": text}) from e
    if args.json:
        print(json.dumps({"as_of": _jsonable(as_of), "updates": [_jsonable(dict(u.row)) for u in updates]}, default=str))
    else:
        print(report.render(updates, as_of))
    return EXIT_OK


def cmd_engine(args: argparse.Namespace, project: Any) -> int:
    """`lakewatch engine status|start|stop`: the state folder's resident engine."""
    from datetime import datetime, timezone

    from pipelines.local import engine

    home = project.home
    if args.action == "stop":
        stopped = engine.stop(home)
        _say(f"stopped the local engine of {home.root} (pid {stopped.pid})" if stopped
             else f"no local engine runs for {home.root}")
        return EXIT_OK
    if args.action == "start":
        engine.ensure_running(home, project.settings.spark_conf, say=_say, idle_seconds=args.idle_seconds)
    info = engine.running(home)
    if info is None:
        recorded = engine.read_info(home)
        gone = f" (the last one, pid {recorded.pid}, is gone; its log: {recorded.log_file})" if recorded else ""
        _say(f"no local engine runs for {home.root}{gone}; the next command starts one")
        return EXIT_OK
    since = datetime.fromisoformat(info.started_at)
    uptime = (datetime.now(timezone.utc) - since).total_seconds()
    _say(f"local engine for {home.root}: running, pid {info.pid}, {info.url}, up {uptime:.0f}s, "
         f"{engine.live_clients(home)} client(s) connected, stops after {info.idle_seconds}s idle")
    _say(f"  JVM log: {info.log_file}")
    recorded = engine.read_patches(home)
    if recorded:
        from pipelines.local import patches

        _say(f"  lakewatch's patches ({patches.OFF_ENV} turns them off by name at the next start):")
        for line in patches.describe(recorded):
            _say(f"    {line}")
    return EXIT_OK


def cmd_demo(args: argparse.Namespace, project: Any) -> int:
    from pipelines.demo import open_project, run_demo

    with open_project(args.home, _say, args.verbose, project.remote) as demo:
        demo.lock_runs("lakewatch demo")
        return run_demo(demo, rows=args.rows, seed=args.seed)


def cmd_add_table(args: argparse.Namespace, project: Any) -> int:
    from pipelines.own_data import add_table

    add_table(project, args.name, args.paths, args.format, args.landing, args.all_strings, args.replace,
              args.dry_run, _say)
    return EXIT_OK


def cmd_drift(args: argparse.Namespace, project: Any) -> int:
    from pipelines.own_data import show_drift

    show_drift(project, args.table, args.apply is not None, args.apply or (), _say)
    return EXIT_OK


# -- parser ----------------------------------------------------------------------------------
def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="lakewatch", description=__doc__.split("\n\n")[0])
    parser.add_argument("--verbose", action="store_true", help="show stack traces of errors")
    parser.add_argument("--home", type=Path, default=None,
                        help="local state folder (default: .lakewatch in the project, or $LAKEWATCH_HOME)")
    parser.add_argument("--remote", metavar="sc://HOST:PORT", default=None,
                        help="run on this Spark Connect endpoint instead of the local engine (or $LAKEWATCH_REMOTE)")
    parser.add_argument("--landing-root", type=Path, default=None, metavar="FOLDER",
                        help="the local landing root, any folder (default: variables.landing_root of lakewatch.local.yml)")
    sub = parser.add_subparsers(dest="command", required=True)

    run = sub.add_parser("run", help="run one update of a bundle pipeline on the local engine")
    run.add_argument("pipeline", nargs="?", default="lakewatch_ingest", help="pipeline resource key (default lakewatch_ingest)")
    run.add_argument("--full-refresh", action="store_true", help="reset every dataset and recompute")
    run.add_argument("--full-refresh-selection", metavar="T1,T2", help="reset and recompute these datasets")
    run.add_argument("--refresh", metavar="T1,T2", help="update only these datasets")
    run.add_argument("--set", action="append", metavar="KEY=VALUE", help="extra pipeline configuration")
    run.add_argument("--cause", default="USER_ACTION", choices=["USER_ACTION", "API_CALL", "JOB_TASK", "RETRY_ON_FAILURE"])
    run.set_defaults(handler=cmd_run)

    gen = sub.add_parser("generate", help="write batches of synthetic landing files with bad records mixed in")
    gen.add_argument("--batches", type=int, default=1)
    gen.add_argument("--rows", type=int, default=200, help="records per table per batch")
    gen.add_argument("--seed", type=int, default=7)
    gen.add_argument("--files-per-batch", type=int, default=2)
    gen.add_argument("--mix", help="shares of bad kinds, e.g. malformed=0.05,type_mismatch=0.02,empty_file=0.2")
    gen.add_argument("--table", metavar="T1,T2", help="only these tables")
    gen.add_argument("--incomplete-upload", metavar="T1,T2",
                     help="deliver these tables' last file of the batch as a gzip cut short (fails the read)")
    gen.set_defaults(handler=cmd_generate)

    red = sub.add_parser("redeliver", help="replace incomplete uploads with the whole files")
    red.set_defaults(handler=cmd_redeliver)

    query = sub.add_parser("query", help="run SQL against the local tables")
    query.add_argument("sql")
    query.add_argument("--json", action="store_true", help="print rows as a JSON array")
    query.add_argument("--limit", type=int, default=50)
    query.add_argument("--no-truncate", action="store_true")
    query.set_defaults(handler=cmd_query)

    job = sub.add_parser("job", help="run a bundle job's tasks in order (ingest, archive of the event log, observability)")
    job.add_argument("job", nargs="?", default="lakewatch_job", help="job resource key (default lakewatch_job)")
    job.set_defaults(handler=cmd_job)

    alerts = sub.add_parser("alerts", help="evaluate the bundle's SQL alerts on the local tables")
    alerts.add_argument("--fail-on-trigger", action="store_true", help="exit 1 when an alert is TRIGGERED or in ERROR")
    alerts.add_argument("--json", action="store_true")
    alerts.set_defaults(handler=cmd_alerts)

    rep = sub.add_parser("report", help="the last updates of the ingest pipeline: state, duration against its "
                         "baseline, rows, pass rate, backlog, and why a failed one failed")
    rep.add_argument("--last", type=int, default=10, help="how many updates (default 10)")
    rep.add_argument("--json", action="store_true")
    rep.set_defaults(handler=cmd_report)

    dash = sub.add_parser("dashboard", help="render the bundle's AI/BI dashboard from the local tables to one HTML file")
    dash.add_argument("--output", type=Path, default=None, help="HTML file to write (default: <home>/<dashboard>.html)")
    dash.set_defaults(handler=cmd_dashboard)

    check = sub.add_parser("check", help="check the bundle offline (models, references, paths, deploy safety)")
    check.add_argument("--queries", action="store_true",
                       help="also run every alert query and dashboard widget query on the local tables")
    check.set_defaults(handler=cmd_check)

    eng = sub.add_parser("engine", help="the state folder's resident local engine: status, start or stop")
    eng.add_argument("action", choices=["status", "start", "stop"], nargs="?", default="status")
    eng.add_argument("--idle-seconds", type=int, default=None,
                     help="with start: stop by itself after this many seconds without a client")
    eng.set_defaults(handler=cmd_engine)

    demo = sub.add_parser("demo", help="the whole scenario on a fresh state folder of its own: data, updates, observability")
    demo.add_argument("--rows", type=int, default=400)
    demo.add_argument("--seed", type=int, default=7)
    demo.set_defaults(handler=cmd_demo)

    add = sub.add_parser("add-table", help="add a table to conf/tables.yml, its schema inferred from sample files")
    add.add_argument("name", help="the table's name")
    add.add_argument("--from", dest="paths", type=Path, nargs="+", required=True, metavar="PATH",
                     help="sample files, or folders holding them")
    add.add_argument("--format", choices=["json", "csv", "parquet"], default=None,
                     help="the files' format (default: from their names)")
    add.add_argument("--landing", metavar="FOLDER", default=None,
                     help="landing folder relative to the landing root (default: the samples' folder under it, else NAME)")
    add.add_argument("--all-strings", action="store_true",
                     help="every JSON and CSV column STRING (Auto Loader's default without cloudFiles.inferColumnTypes)")
    add.add_argument("--replace", action="store_true", help="overwrite the table's entry if it exists")
    add.add_argument("--dry-run", action="store_true", help="show the entry, write nothing")
    add.set_defaults(handler=cmd_add_table)

    drift = sub.add_parser("drift", help="fields found in a table's _rescued_data (schema drift); --apply adds them to its schema")
    drift.add_argument("table", nargs="?", default=None, help="the table (default: every table)")
    drift.add_argument("--apply", nargs="*", metavar="FIELD", default=None,
                       help="add these new fields (all new ones when none is named) to the table's schema in conf/tables.yml")
    drift.set_defaults(handler=cmd_drift)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    # `kill -USR1 <pid>` prints every thread's Python stack to stderr: what a run that seems stuck
    # waits on. (Not when stderr is no file, as under a test's capture.)
    try:
        faulthandler.register(signal.SIGUSR1, all_threads=True)
    except (OSError, ValueError):
        pass
    args = build_parser().parse_args(argv)
    cancellation.install()  # Ctrl-C and SIGTERM raise Canceled: an update stops as CANCELED, not killed
    project = None
    try:
        from pipelines.local.home import LocalHome
        from pipelines.local.project import LocalProject

        home = LocalHome(args.home.resolve()) if args.home else LocalHome.default()
        project = LocalProject(home=home, printer=_say, verbose=args.verbose, remote=args.remote,
                               landing_root=args.landing_root)
        return int(args.handler(args, project))
    except KeyboardInterrupt as e:
        stopped = cancellation.canceled(e)
        print(f"interrupted: {stopped.why}", file=sys.stderr)
        return stopped.exit_code
    except Exception as e:  # noqa: BLE001 (the one place errors become messages)
        stopped = project.connection_lost() if project is not None else None
        if stopped is not None and args.verbose:
            print(f"error: {error_paragraph(e, True)}", file=sys.stderr)
        print(f"error: {error_paragraph(stopped or e, args.verbose)}", file=sys.stderr)
        if args.verbose:
            traceback.print_exc()
        return EXIT_ERROR
    finally:
        if project is not None:
            project.close()


if __name__ == "__main__":
    raise SystemExit(main())
