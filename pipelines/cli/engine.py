"""`lakewatch engine` (the state folder's resident local engine) and `lakewatch demo`."""

from __future__ import annotations

import argparse
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

from pipelines.cli import flags
from pipelines.cli.output import json_result, note, result
from pipelines.console import EXIT_FAILED, EXIT_OK

if TYPE_CHECKING:
    from pipelines.local.project import LocalProject


def cmd_engine(args: argparse.Namespace, project: LocalProject) -> int:
    from pipelines.local import engine, patches

    home = project.home
    if args.action == "stop":
        stopped = engine.stop(home)
        if args.output == "json":
            json_result({"action": "stop", "home": str(home.root), "stopped": stopped is not None,
                         "pid": stopped.pid if stopped else None})
        else:
            result(f"stopped the local engine of {home.root} (pid {stopped.pid})" if stopped
                   else f"no local engine runs for {home.root}")
        return EXIT_OK
    if args.action == "start":
        engine.ensure_running(home, project.settings.spark_conf, say=note, idle_seconds=args.idle_seconds)
    info = engine.running(home)
    status: dict[str, Any] = {"action": args.action, "home": str(home.root), "running": info is not None,
                              "pid": None, "url": None, "uptime_seconds": None, "clients": None,
                              "idle_seconds": None, "log_file": None, "patches": []}
    if info is None:
        recorded = engine.read_info(home)
        if args.output == "json":
            json_result({**status, "log_file": str(recorded.log_file) if recorded else None})
            return EXIT_OK
        gone = f" (the last one, pid {recorded.pid}, is gone; its log: {recorded.log_file})" if recorded else ""
        result(f"no local engine runs for {home.root}{gone}; the next command starts one")
        return EXIT_OK
    uptime = (datetime.now(timezone.utc) - datetime.fromisoformat(info.started_at)).total_seconds()
    recorded_patches = engine.read_patches(home)
    status.update(pid=info.pid, url=info.url, uptime_seconds=round(uptime, 1), clients=engine.live_clients(home),
                  idle_seconds=info.idle_seconds, log_file=str(info.log_file),
                  patches=[{"name": p["name"], "active": p["active"], "why": p.get("why")} for p in recorded_patches])
    if args.output == "json":
        json_result(status)
        return EXIT_OK
    result(f"local engine for {home.root}: running, pid {info.pid}, {info.url}, up {uptime:.0f}s, "
           f"{status['clients']} client(s) connected, stops after {info.idle_seconds}s idle")
    result(f"  JVM log: {info.log_file}")
    if recorded_patches:
        result(f"  lakewatch's patches ({patches.OFF_ENV} turns them off by name at the next start):")
        for line in patches.describe(recorded_patches):
            result(f"    {line}")
    return EXIT_OK


def cmd_demo(args: argparse.Namespace, project: LocalProject) -> int:
    from pipelines.demo import open_project, run_demo

    with open_project(args.home, project.print, args.verbose, project.remote) as demo:
        demo.lock_runs("lakewatch demo")
        outcome = run_demo(demo, rows=args.rows, seed=args.seed)
    if args.output == "json":
        json_result(outcome.document)
    return EXIT_OK if outcome.ok else EXIT_FAILED


def register(sub: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    eng = flags.add_verb(sub, common, "engine", help="the state folder's resident local engine: status, start or stop",
                         examples=["lakewatch engine status", "lakewatch engine start --idle-seconds 600",
                                   "lakewatch engine status -o json", "lakewatch engine stop"])
    eng.add_argument("action", choices=["status", "start", "stop"], nargs="?", default="status",
                     help="status (default), start or stop")
    eng.add_argument("--idle-seconds", type=flags.positive_int, default=None, metavar="N",
                     help="with start: stop by itself after this many seconds without a client")
    flags.add_output(eng)
    eng.set_defaults(handler=cmd_engine)

    demo = flags.add_verb(sub, common, "demo", help="the whole scenario on a fresh state folder of its own (.lakewatch-demo/): data, updates, observability",
                          examples=["LAKEWATCH_HOME=/tmp/lakewatch-demo lakewatch demo --rows 150"],
                          exits="exit codes:\n  0    everything went as intended\n  1    something did not\n"
                                "  2    bad input or an error before anything ran")
    demo.add_argument("--rows", type=flags.positive_int, default=400, metavar="N", help="records per table per batch (default 400)")
    demo.add_argument("--seed", type=flags.non_negative_int, default=7, metavar="N", help="random seed (default 7)")
    flags.add_output(demo)
    demo.set_defaults(handler=cmd_demo)
