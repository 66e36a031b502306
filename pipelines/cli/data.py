"""`lakewatch generate`, `redeliver` and `query`: landing data in, local tables out."""

from __future__ import annotations

import argparse
import json
from typing import TYPE_CHECKING, Any

from pipelines.cli import flags
from pipelines.cli.output import error_paragraph, json_result, jsonable, note, result
from pipelines.console import EXIT_OK
from pipelines.errors import LakewatchError
from pipelines.progress import Counter

if TYPE_CHECKING:
    from pyspark.sql.connect.dataframe import DataFrame

    from pipelines.local.project import LocalProject


def cmd_generate(args: argparse.Namespace, project: LocalProject) -> int:
    from pipelines.generator import Mix, generate_batch, load_column_settings

    mix = Mix.parse(args.mix)
    tables = project.tables()
    only = args.table or None
    incomplete = args.incomplete_upload or ()
    known = {t.name for t in tables.tables}
    for name in (only or ()) + tuple(incomplete):
        if name not in known:
            raise LakewatchError("CLI_INVALID_ARGUMENT", {"reason": f"no table '{name}' in {tables.path}"})
    settings = load_column_settings(project.root / "conf" / "generator.yml")
    files = []
    with Counter("batches written", total=args.batches) as counter:
        for batch in range(args.batches):
            written = generate_batch(
                project.spark, tables, project.landing_root(), rows=args.rows, seed=args.seed, mix=mix,
                files_per_batch=args.files_per_batch, column_settings=settings,
                incomplete_upload=incomplete, only=only,
            )
            files += written
            counter.advance(1, f"batch {batch + 1} of {args.batches}: {len(written)} files written")
    manifest = project.landing_root() / "_manifest.json"
    if args.output == "json":
        json_result({"landing_root": str(project.landing_root()), "manifest": str(manifest), "files": [
            {"table": f.table, "path": f.path, "batch": f.batch, "lines": f.lines, "bytes": f.bytes,
             "complete": f.complete} for f in files]})
        return EXIT_OK
    for f in files:
        note_text = "" if f.complete else "  (incomplete upload: gzip cut short)"
        result(f"wrote {f.path}: {sum(f.lines.values())} lines {f.lines}{note_text}")
    result(f"manifest: {manifest}")
    return EXIT_OK


def cmd_redeliver(args: argparse.Namespace, project: LocalProject) -> int:
    from pipelines.generator import redeliver

    fixed = redeliver(project.landing_root())
    if args.output == "json":
        json_result({"redelivered": [str(path) for path in fixed]})
        return EXIT_OK
    for path in fixed:
        result(f"re-delivered {path}")
    if not fixed:
        note("nothing to re-deliver: every upload `lakewatch generate` cut short is whole again. `redeliver` knows "
             "only the files `generate` wrote (its manifest); a file from anywhere else that cannot be read must be "
             "delivered again by its producer: replace it in the landing folder, whole, under the same name")
    return EXIT_OK


def valid_text(df: DataFrame) -> DataFrame:
    """`df` with each top-level STRING column made valid UTF-8 (`make_valid_utf8`: a byte that is not
    UTF-8 shows as U+FFFD). A quarantined line that is not UTF-8 is stored as its raw bytes, and pyspark
    fails a whole result holding one (UnicodeDecodeError), so `SELECT * FROM corrupt_records_sink` could
    not be read on the day it mattered. Columns are taken by position: a result may repeat a name."""
    from pyspark.sql import functions
    from pyspark.sql.types import StringType

    fields = df.schema.fields
    if not any(isinstance(f.dataType, StringType) for f in fields):
        return df
    positional = df.toDF(*[f"_{i}" for i in range(len(fields))])
    return positional.select(*[
        (functions.make_valid_utf8(f"_{i}") if isinstance(f.dataType, StringType) else functions.col(f"_{i}")).alias(f.name)
        for i, f in enumerate(fields)])


def cmd_query(args: argparse.Namespace, project: LocalProject) -> int:
    """Runs the query once, with `--limit` pushed into it: the text table (Spark's `show`) or the JSON
    array streamed row by row from the engine."""
    project.use_schema()
    limit = args.limit if args.limit is not None else (None if args.output == "json" else 50)
    try:
        df = valid_text(project.spark.sql(args.sql))
        if args.output != "json":
            # one row more than shown, so that `show` can say the result has more
            df.limit(limit + 1).show(n=limit, truncate=False if args.no_truncate else 60)
            return EXIT_OK
        rows = iter((df.limit(limit) if limit is not None else df).toLocalIterator())
        first = next(rows, None)  # the query's errors come before anything is printed
    except Exception as e:  # noqa: BLE001 (reported as a query error)
        raise LakewatchError("QUERY_FAILED", {"reason": error_paragraph(e, args.verbose)}) from e
    if first is None:
        result("[]")
        return EXIT_OK
    print("[" + _row_json(first), end="", flush=False)
    for row in rows:
        print(", " + _row_json(row), end="")
    print("]", flush=True)
    return EXIT_OK


def _row_json(row: Any) -> str:
    return json.dumps(jsonable(row.asDict(recursive=True)), default=str)


def register(sub: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    gen = flags.add_verb(
        sub, common, "generate", help="write batches of synthetic landing files with bad records mixed in",
        examples=["lakewatch generate --batches 2 --rows 500",
                  "lakewatch generate --mix malformed=0.1,empty_file=0 --table orders -o json"])
    gen.add_argument("--batches", type=flags.positive_int, default=1, metavar="N", help="batches to write (default 1)")
    gen.add_argument("--rows", type=flags.positive_int, default=200, metavar="N", help="records per table per batch (default 200)")
    gen.add_argument("--seed", type=flags.non_negative_int, default=7, metavar="N", help="random seed (default 7)")
    gen.add_argument("--files-per-batch", type=flags.positive_int, default=2, metavar="N",
                     help="files per table per batch (default 2)")
    gen.add_argument("--mix", metavar="KIND=SHARE,...",
                     help="shares (0 to 1) of bad kinds, e.g. malformed=0.05,type_mismatch=0.02,empty_file=0.2")
    gen.add_argument("--table", type=flags.name_list, metavar="T1,T2", help="only these tables")
    gen.add_argument("--incomplete-upload", type=flags.name_list, metavar="T1,T2",
                     help="deliver these tables' last file of the batch as a gzip cut short (fails the read)")
    flags.add_output(gen)
    gen.set_defaults(handler=cmd_generate)

    red = flags.add_verb(sub, common, "redeliver", help="replace incomplete uploads with the whole files",
                         examples=["lakewatch redeliver", "lakewatch redeliver -o json"])
    flags.add_output(red)
    red.set_defaults(handler=cmd_redeliver)

    query = flags.add_verb(
        sub, common, "query", help="run SQL against the local tables",
        description="Runs SQL against the local tables (the pipeline's schema is the current one), once, "
                    "with --limit pushed into the query.",
        examples=['lakewatch query "SELECT count(*) FROM orders_bronze"',
                  'lakewatch query "SELECT * FROM corrupt_records_sink" --limit 10 -o json'],
        exits="exit codes:\n  0    success\n  2    bad input or the query failed ([QUERY_FAILED] on stderr)")
    query.add_argument("sql", help="the SQL statement")
    query.add_argument("--limit", type=flags.positive_int, default=None, metavar="N",
                       help="at most this many rows (default: 50 in the text table, all with -o json)")
    query.add_argument("--no-truncate", action="store_true", help="do not cut long values in the text table")
    flags.add_output(query)
    query.set_defaults(handler=cmd_query)
