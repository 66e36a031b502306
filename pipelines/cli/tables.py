"""`lakewatch add-table` and `drift`: your own files into conf/tables.yml (pipelines/own_data.py);
`replay`: a table's rejected rows through its clean table again after a fix (pipelines/replay.py)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from pipelines.cli import flags
from pipelines.cli.output import json_result, note, result
from pipelines.console import EXIT_FAILED, EXIT_OK, exit_code
from pipelines.errors import LakewatchError

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


def cmd_replay(args: argparse.Namespace, project: LocalProject) -> int:
    """Queues the keys of the table's rejected rows that meet today's expectations (`replay.queue`),
    then runs an ingest update, whose flow `{table}_replayed` sends their rows into the clean table."""
    import uuid

    from pipelines import adapter, console, replay
    from pipelines.cli.updates import UpdatePrinter, configuration
    from pipelines.config import load_tables
    from pipelines.ingestion import clean_columns
    from pipelines.local.preflight import check_update
    from pipelines.local.project import INGEST_PIPELINE
    from pipelines.local.update.types import UpdateRequest
    from pipelines.progress import Counter

    settings = configuration(args.set)
    tables = load_tables({**project.pipeline_configuration(), **dict(settings)}[adapter.TABLES_CONFIG_KEY])
    spec = next((t for t in tables.tables if t.name == args.table), None)
    if spec is None:
        raise LakewatchError("CLI_INVALID_ARGUMENT", {"reason": f"no table '{args.table}' in {tables.path} "
                                                                f"(tables: {', '.join(t.name for t in tables.tables)})"})
    if not spec.drop_expectations:
        raise LakewatchError("CLI_INVALID_ARGUMENT", {"reason": (
            f"table '{spec.name}' has no drop expectation in {tables.path}, so the pipeline keeps no rejected rows "
            f"for it: to replay the rows a rule removed before you take the rule out, relax its condition "
            f"(`condition: true`), replay, then remove it")})
    replay_id, columns = str(uuid.uuid4()), clean_columns(spec)
    if args.sql:
        statements = replay.queue_statements(spec, columns, replay_id, args.expectation)
        if args.output == "json":
            json_result({"table": spec.name, "expectation": args.expectation, "replay_id": replay_id,
                         "statements": statements})
            return EXIT_OK
        result(f"-- Replay {replay_id} of {spec.name}'s rejected rows. Run with the ingest pipeline's catalog and")
        result(f"-- schema current; its next update sends the rows. Refresh {spec.clean_name} only together with "
               f"{spec.rejected_name}.")
        for statement in statements:
            result(statement + ";")
        return EXIT_OK
    check_update(project, INGEST_PIPELINE, settings)
    project.lock_runs(f"lakewatch replay {spec.name}")
    project.use_schema()
    spark = project.spark
    if not spark.catalog.tableExists(spec.rejected_name):
        raise LakewatchError("CLI_INVALID_ARGUMENT", {"reason": (
            f"table '{spec.name}' has no rejected rows yet: {spec.rejected_name} does not exist (no ingest "
            "update has run since the table got its drop expectation)")})
    if args.expectation is not None:
        failed = replay.failed_expectation_names(spark, spec)
        if args.expectation not in failed:
            raise LakewatchError("CLI_INVALID_ARGUMENT", {"reason": (
                f"no row of {spec.rejected_name} failed '{args.expectation}' (its rows failed: "
                f"{', '.join(failed) or 'none: the table is empty'})")})
    # The content key over the columns the two tables have now: a column added to conf/tables.yml since
    # the last update (`drift --apply`) is not in them yet, and would be NULL (left out of the key) anyway.
    rejected_columns = set(spark.table(spec.rejected_name).columns)
    present = [c for c in spark.table(spec.clean_name).columns if c in rejected_columns]
    queued = replay.queue(spark, spec, present, replay_id, args.expectation)
    which = f"failed {queued.expectation}" if queued.expectation else "are rejected"
    note(f"{spec.name}: {queued.selected} row(s) of {spec.rejected_name} {which}; {queued.passing} meet today's "
         f"expectations: {queued.queued} queued in {spec.replay_name} (replay {replay_id}), {queued.not_queued} "
         f"replayed or queued before; {queued.still_failing} still fail and stay rejected")
    note(f"landing root: {project.landing_root()}")
    with Counter("flows finished") as counter:
        project.print = UpdatePrinter(counter)
        update = project.runner().run_update(UpdateRequest(pipeline=INGEST_PIPELINE, configuration=settings))
    flow = next((f for f in update.flows.values() if f.short_name == spec.replay_flow_name), None)
    replayed = flow.rows_written if flow is not None else None
    if args.output == "json":
        json_result({"table": spec.name, "expectation": queued.expectation, "replay_id": replay_id,
                     "queue": spec.replay_name, "selected": queued.selected, "passing": queued.passing,
                     "queued": queued.queued, "not_queued": queued.not_queued,
                     "still_failing": queued.still_failing, "replayed_rows": replayed,
                     "update": console.update_document(update)})
    else:
        for line in console.summarize(update):
            result(line)
        if flow is not None:
            result(f"{spec.replay_flow_name} {flow.status}: "
                   f"{'an unknown number of' if replayed is None else replayed} row(s) into {spec.clean_name}")
    if not update.ok:
        note(console.failure_paragraph(update))
        return exit_code(update)
    if queued.queued and (replayed is None or replayed < queued.queued):
        # The flow wrote fewer rows than this replay queued (it writes earlier queued rows too): the
        # missing ones left the rejected table before the update, or were not counted.
        note(f"error: {spec.replay_flow_name} wrote {'an unknown number of' if replayed is None else replayed} "
             f"row(s), fewer than the {queued.queued} this replay queued: their rows are no longer in "
             f"{spec.rejected_name}, or the flow's count was lost; compare {spec.clean_name} with {spec.replay_name}")
        return EXIT_FAILED
    return exit_code(update)


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

    rep = flags.add_verb(
        sub, common, "replay",
        help="send a table's rejected rows through its clean table again after a fix, each row once",
        description="Queues the rows of TABLE_rejected (those that failed --expectation, or all) that meet the "
                    "table's drop and fail expectations as they are now in TABLE_replay, each row once, then runs "
                    "an ingest update whose flow TABLE_replayed sends them into the clean table. Rows that still "
                    "fail stay rejected.",
        examples=["lakewatch replay orders --expectation has_order_id", "lakewatch replay orders -o json",
                  "lakewatch replay orders --sql"],
        exits="exit codes:\n  0    the rows were queued and the update completed\n"
              "  1    the update failed, or its replay flow wrote fewer rows than were queued\n"
              "  2    bad input, or an error before anything ran")
    rep.add_argument("table", help="the table whose rejected rows to replay")
    rep.add_argument("--expectation", metavar="NAME", default=None,
                     help="only the rows that failed this expectation (default: every rejected row)")
    rep.add_argument("--sql", action="store_true",
                     help="print the SQL that queues the rows (for a Databricks SQL warehouse) and run nothing")
    rep.add_argument("--set", action="append", metavar="KEY=VALUE",
                     help="extra pipeline configuration of the update (repeatable), as for `lakewatch run`")
    flags.add_output(rep)
    rep.set_defaults(handler=cmd_replay)
