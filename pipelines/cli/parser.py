"""The `lakewatch` argument parser. Each verb lives in a module of this package with a
`register(sub, common)` function that adds its subparser with `flags.add_verb(sub, common, NAME, ...)`
and sets `handler=` (and, where flags exclude each other, `check=`); `VERB_MODULES` lists the modules
in the order `lakewatch --help` shows their verbs.
"""

from __future__ import annotations

import argparse
import re
from pathlib import Path
from typing import Sequence

from pipelines.cli import data, engine, observe, tables, updates
from pipelines.cli.flags import AFTER_VERB, EXIT_CODES, global_flags

DESCRIPTION = """Run the bundle's pipelines and job on the local engine, generate landing data, query the
local tables, evaluate the alerts, render the dashboard and check the bundle. Global flags go before or
after the verb; `lakewatch VERB --help` shows a verb's flags, examples and exit codes."""

VERB_MODULES = (updates, data, observe, engine, tables)


class LakewatchParser(argparse.ArgumentParser):
    """argparse with two additions: global flags after the verb merge into those before it, and a
    verb's `check(args)` (mutually exclusive selections, ...) runs after parsing, its message
    reported as argparse reports a bad flag (usage, then the message, exit 2)."""

    def parse_known_args(self, args: Sequence[str] | None = None,  # type: ignore[override]
                         namespace: argparse.Namespace | None = None) -> tuple[argparse.Namespace, list[str]]:
        parsed, rest = super().parse_known_args(args, namespace)
        after = getattr(parsed, AFTER_VERB + "var", None)
        if after is not None:
            delattr(parsed, AFTER_VERB + "var")
            parsed.var = [*getattr(parsed, "var", []), *after]
        check = getattr(parsed, "check", None)
        problem = check(parsed) if check is not None else None
        if problem:
            self.verb_parser(parsed.command).error(problem)
        return parsed, rest

    def verb_parser(self, name: str) -> argparse.ArgumentParser:
        [sub] = [a for a in self._actions if isinstance(a, argparse._SubParsersAction)]  # noqa: SLF001
        return sub.choices[name]


def version() -> str:
    """The installed package's version, or pyproject.toml's when the package is not installed."""
    from importlib import metadata

    try:
        return metadata.version("lakewatch")
    except metadata.PackageNotFoundError:
        pyproject = Path(__file__).resolve().parents[2] / "pyproject.toml"
        found = re.search(r'^version\s*=\s*"([^"]+)"', pyproject.read_text(encoding="utf-8"), re.M) \
            if pyproject.is_file() else None
        return found.group(1) if found else "unknown"


def build_parser() -> LakewatchParser:
    parser = LakewatchParser(prog="lakewatch", description=DESCRIPTION, epilog=EXIT_CODES,
                             formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--version", action="version", version=f"lakewatch {version()}",
                        help="print lakewatch's version and exit")
    global_flags(parser, after_verb=False)
    common = argparse.ArgumentParser(add_help=False)
    global_flags(common, after_verb=True)
    sub = parser.add_subparsers(dest="command", required=True, metavar="VERB",
                                parser_class=argparse.ArgumentParser)
    for module in VERB_MODULES:
        module.register(sub, common)
    return parser

