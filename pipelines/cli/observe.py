"""`lakewatch alerts`, `report`, `dashboard` and `check`: what the observability tables say, and the
bundle checked offline."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pipelines.cli import flags
from pipelines.cli.output import error_paragraph, json_result, jsonable, note, result
from pipelines.console import EXIT_ERROR, EXIT_FAILED, EXIT_OK
from pipelines.errors import LakewatchError

if TYPE_CHECKING:
    from pipelines.local.project import LocalProject


def cmd_alerts(args: argparse.Namespace, project: LocalProject) -> int:
    from pipelines.alerts import format_result, load_alerts, run_alert

    if args.replay:
        return replay_alerts(args, project)
    if args.since is not None:
        raise LakewatchError("CLI_INVALID_ARGUMENT", {"reason": "--since goes with --replay"})
    project.use_schema()
    results = [run_alert(project.spark, spec) for spec in load_alerts(project.bundle)]
    if args.output == "json":
        json_result([
            {"alert": r.spec.key, "display_name": r.spec.display_name, "state": r.state, "value": jsonable(r.value),
             "operator": r.spec.operator, "threshold": jsonable(r.threshold), "reason": r.reason, "error": r.error}
            for r in results
        ])
    else:
        width = max((len(r.spec.key) for r in results), default=0)
        for r in results:
            result(format_result(r, width))
    alarming = [r for r in results if r.state in ("TRIGGERED", "ERROR")]
    if args.fail_on_trigger and alarming:
        return EXIT_FAILED
    return EXIT_OK


def replay_alerts(args: argparse.Namespace, project: LocalProject) -> int:
    """`alerts --replay`: today's alert definitions over the health metrics history."""
    from datetime import datetime, timezone

    from pipelines import alert_replay
    from pipelines.alerts import load_alerts

    if args.fail_on_trigger:
        raise LakewatchError("CLI_INVALID_ARGUMENT", {
            "reason": "--fail-on-trigger judges the alerts' state now; --replay shows their past"})
    now = datetime.now(timezone.utc)
    since = alert_replay.parse_since(args.since or "30d", now)
    project.use_schema()
    history = str(project.bundle.variable("health_metrics_history"))
    found, replays = alert_replay.replay_alerts(project.spark, load_alerts(project.bundle), history, since, now)
    if args.output == "json":
        json_result(alert_replay.document(replays, found, since))
    else:
        for line in alert_replay.render(replays, found, since):
            result(line)
    return EXIT_OK


def since_text(text: str) -> str:
    """`--since`: checked as it is given (a bad value is exit 2), read when the command runs."""
    from datetime import datetime, timezone

    from pipelines.alert_replay import parse_since

    try:
        parse_since(text, datetime.now(timezone.utc))
    except LakewatchError as e:
        raise argparse.ArgumentTypeError(str(e.parameters.get("reason", e))) from None
    return text


def cmd_report(args: argparse.Namespace, project: LocalProject) -> int:
    """The last updates of the ingest pipeline, from the observability tables."""
    from pipelines import report

    project.use_schema()
    try:
        updates, as_of = report.collect(project.spark, args.last)
    except Exception as e:  # noqa: BLE001 (a missing table is the usual cause; the reason says)
        text = error_paragraph(e, args.verbose)
        key = "REPORT_NO_TABLES" if "TABLE_OR_VIEW_NOT_FOUND" in text else "QUERY_FAILED"
        raise LakewatchError(key, {"home": project.home.root, "reason": text}) from e
    if args.output == "json":
        json_result({"as_of": as_of, "updates": [dict(u.row) for u in updates]})
    else:
        result(report.render(updates, as_of))
    return EXIT_OK


def cmd_dashboard(args: argparse.Namespace, project: LocalProject) -> int:
    from pipelines.dashboard.files import dashboard_files
    from pipelines.dashboard.render import render_dashboard

    files = dashboard_files(project)
    if not files:
        raise LakewatchError("BUNDLE_INVALID", {"where": "resources.dashboards", "reason": "the bundle has no dashboard"})
    project.use_schema()
    written = []
    for key, path in files:
        title = project.bundle.resources("dashboards").get(key, {}).get("display_name")
        rendered = render_dashboard(project.spark, path, title=str(title) if title else None)
        target = args.html or project.home.root / f"{key}.html"
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(rendered.html, encoding="utf-8")
        failed = [{"widget": r.widget.name, "error": r.error} for r in rendered.failed()]
        written.append({"key": key, "path": str(target), "widgets": len(rendered.results),
                        "seconds": round(rendered.seconds, 1), "failed_widgets": failed})
        for widget in failed:
            note(f"error: dashboard {key} widget {widget['widget']}: {widget['error']}")
    if args.output == "json":
        json_result({"dashboards": written})
    else:
        for d in written:
            result(f"dashboard {d['key']}: {d['path']} ({d['widgets']} widgets in {d['seconds']:.0f}s; "
                   "open it in a browser)")
    return EXIT_FAILED if any(d["failed_widgets"] for d in written) else EXIT_OK


class DashboardOutput(argparse.Action):
    """`--output`: `json` or `text` is the result format; any other value is the HTML file, the earlier
    meaning of `--output FILE` on `dashboard` (now `--html FILE`), kept working with a warning."""

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: Any,
                 option_string: str | None = None) -> None:
        if values in ("json", "text"):
            namespace.output = values
            return
        note(f"warning: {option_string} FILE is deprecated on dashboard; write --html FILE")
        namespace.html = Path(values)


def cmd_check(args: argparse.Namespace, project: LocalProject) -> int:
    from pipelines.bundle_check import check_bundle, required_inputs
    from pipelines.own_data import landing_lines

    targets = [args.target] if args.target else None
    findings = [str(f) for f in check_bundle(project.root, targets)]
    inputs = {} if findings else {t: names for t, names in required_inputs(project.root).items()
                                  if targets is None or t in targets}
    # conf/tables.yml validated as a local run validates it (its errors exit 2), and the local landing
    # folders; not with -t, whose target's variables need not resolve on this machine
    landing = [] if findings or args.target else landing_lines(project)
    queries = check_queries(project) if args.queries and not findings else None
    failed = bool(queries) and not all(q["ok"] for q in queries or ())
    if args.output == "json":
        json_result({"ok": not findings and not failed, "findings": findings, "required_inputs": inputs,
                     "queries": queries})
    else:
        for finding in findings:
            note(f"error: {finding}")
        if findings:
            note(f"{len(findings)} problem(s) in the bundle")
        else:
            result("bundle OK: resources match the databricks-bundles models, references resolve for every target, "
                   "paths exist, no placeholders, CLI floor set, grants and time zone in place")
            for target, names in inputs.items():
                if names:
                    result(f"  deploying -t {target} needs: {', '.join(names)} (--var=\"name=value\" or BUNDLE_VAR_<name>)")
            for line in landing:
                result(line)
        for q in queries or ():
            result(f"{'ok   ' if q['ok'] else 'ERROR'} {q['kind']} {q['name']}{'' if q['ok'] else ': ' + str(q['error'])}")
    return EXIT_ERROR if findings else EXIT_FAILED if failed else EXIT_OK


def check_queries(project: LocalProject) -> list[dict[str, Any]]:
    """Runs every alert query and every dashboard widget query on the local tables."""
    from pipelines.alerts import load_alerts, run_alert
    from pipelines.dashboard.files import dashboard_files
    from pipelines.dashboard.lvdash import load_dashboard
    from pipelines.dashboard.render import run_widgets

    project.use_schema()
    checked: list[dict[str, Any]] = []
    for spec in load_alerts(project.bundle):
        alert = run_alert(project.spark, spec)
        checked.append({"kind": "alert", "name": spec.key, "ok": alert.state != "ERROR",
                        "error": alert.error if alert.state == "ERROR" else None})
    for key, path in dashboard_files(project):
        for name, widget in run_widgets(project.spark, load_dashboard(path)).items():
            checked.append({"kind": "dashboard", "name": f"{key} widget {name}", "ok": widget.error is None,
                            "error": widget.error})
    return checked


def register(sub: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    verb = flags.add_verb
    alerts = verb(sub, common, "alerts", help="evaluate the bundle's SQL alerts on the local tables",
                  examples=["lakewatch alerts", "lakewatch alerts --fail-on-trigger -o json",
                            "lakewatch alerts --replay --since 30d"])
    alerts.add_argument("--fail-on-trigger", action="store_true", help="exit 1 when an alert is TRIGGERED or in ERROR")
    alerts.add_argument("--replay", action="store_true",
                        help="evaluate today's alert definitions over the health metrics of earlier observability "
                             "refreshes: when each would have fired and cleared, and how often it would have notified")
    alerts.add_argument("--since", type=since_text, default=None, metavar="WHEN",
                        help="with --replay: from when (30d, 12h, 90m, or a date or time in UTC; default 30d)")
    flags.add_output(alerts)
    alerts.set_defaults(handler=cmd_alerts)

    rep = verb(sub, common, "report", help="the last updates of the ingest pipeline: state, duration against its "
               "baseline, rows, pass rate, backlog, and why a failed one failed",
               examples=["lakewatch report --last 10", "lakewatch report -o json"])
    rep.add_argument("--last", type=flags.positive_int, default=10, metavar="N", help="how many updates (default 10)")
    flags.add_output(rep)
    rep.set_defaults(handler=cmd_report)

    dash = verb(sub, common, "dashboard", help="render the bundle's AI/BI dashboard from the local tables to one HTML file",
                examples=["lakewatch dashboard", "lakewatch dashboard --html /tmp/lakewatch.html -o json"])
    dash.add_argument("--html", type=Path, default=None, metavar="FILE",
                      help="HTML file to write (default: <home>/<dashboard>.html)")
    dash.add_argument("-o", "--output", action=DashboardOutput, default="text", metavar="json|text",
                      help="result format on stdout: text (default) or json (its shape: docs/cli.md)")
    dash.add_argument("--json", dest="output", action="store_const", const="json", help="same as -o json")
    dash.set_defaults(handler=cmd_dashboard)

    check = verb(sub, common, "check", help="check the bundle offline (models, references, paths, deploy safety)",
                 examples=["lakewatch check", "lakewatch check -t prod", "lakewatch check --queries -o json"])
    check.add_argument("--queries", action="store_true",
                       help="also run every alert query and dashboard widget query on the local tables")
    flags.add_output(check)
    check.set_defaults(handler=cmd_check)
