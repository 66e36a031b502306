"""`lakewatch add-table` and `drift`: your own files into conf/tables.yml (pipelines/own_data.py)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from pipelines.cli import flags
from pipelines.cli.output import json_result, note, result
from pipelines.console import EXIT_OK

if TYPE_CHECKING:
    from pipelines.local.project import LocalProject


def cmd_add_table(args: argparse.Namespace, project: LocalProject) -> int:
    from pipelines.own_data import add_table

    as_json = args.output == "json"
    document = add_table(project, args.name, args.paths, args.format, args.landing, args.all_strings, args.replace,
                         args.dry_run, note if as_json else result)
    if as_json:
        json_result(document)
    return EXIT_OK


def cmd_drift(args: argparse.Namespace, project: LocalProject) -> int:
    from pipelines.own_data import show_drift

    as_json = args.output == "json"
    documents = show_drift(project, args.table, args.apply is not None, args.apply or (), note if as_json else result)
    if as_json:
        json_result(documents)
    return EXIT_OK


def register(sub: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    add = flags.add_verb(sub, common, "add-table",
                         help="add a table to conf/tables.yml, its schema inferred from sample files",
                         examples=["lakewatch --landing-root ~/exports add-table shipments --from ~/exports/shipments",
                                   "lakewatch add-table events --from events.json.gz --all-strings --dry-run"])
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
    flags.add_output(add)
    add.set_defaults(handler=cmd_add_table)

    drift = flags.add_verb(sub, common, "drift",
                           help="fields found in a table's _rescued_data (schema drift); --apply adds them to its schema",
                           examples=["lakewatch drift", "lakewatch drift orders --apply promo_code"])
    drift.add_argument("table", nargs="?", default=None, help="the table (default: every table)")
    drift.add_argument("--apply", nargs="*", metavar="FIELD", default=None,
                       help="add these new fields (all new ones when none is named) to the table's schema in conf/tables.yml")
    flags.add_output(drift)
    drift.set_defaults(handler=cmd_drift)
