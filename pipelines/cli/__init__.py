"""`lakewatch`: run the bundle's pipelines on the local engine, generate landing data, query the
local tables, and run the whole demo.

Exit codes (`pipelines.console`): 0 success, 1 a pipeline update failed (or an alert triggered, where
asked), 2 bad input or an error before anything ran. A verb's result goes to stdout (text, or JSON with
`-o json`); progress, notes, warnings and errors go to stderr. Errors print as one paragraph;
`--verbose` adds the stack trace.

The package: `parser` (build_parser and the verbs' registration), `flags` (shared flag types, global
flags, `-o`), `output` (stdout and stderr, JSON values, error paragraphs), and one module per verb group:
`updates` (run, job), `data` (generate, redeliver, query), `observe` (alerts, report, dashboard, check),
`engine` (engine, demo), `tables` (add-table, drift).
"""

from __future__ import annotations

import faulthandler
import signal
import sys
import traceback
from typing import Sequence

from pipelines import cancellation
from pipelines.cli.output import error_paragraph, note
from pipelines.cli.parser import build_parser
from pipelines.console import EXIT_ERROR

__all__ = ["build_parser", "error_paragraph", "main"]


def main(argv: Sequence[str] | None = None) -> int:
    # `kill -USR1 <pid>` prints every thread's Python stack to stderr: what a run that seems stuck
    # waits on. (Not when stderr is no file, as under a test's capture.)
    try:
        faulthandler.register(signal.SIGUSR1, all_threads=True)
    except (OSError, ValueError):
        pass
    parser = build_parser()
    try:
        import argcomplete

        argcomplete.autocomplete(parser)  # answers the shell's completion request, if this is one, and exits
    except ImportError:
        pass
    args = parser.parse_args(argv)
    cancellation.install()  # Ctrl-C and SIGTERM raise Canceled: an update stops as CANCELED, not killed
    project = None
    try:
        from pipelines.local.home import LocalHome
        from pipelines.local.project import LocalProject

        home = LocalHome(args.home.resolve()) if args.home else LocalHome.default()
        project = LocalProject(home=home, printer=note, verbose=args.verbose, remote=args.remote,
                               target=args.target, variables=dict(args.var), landing_root=args.landing_root)
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
