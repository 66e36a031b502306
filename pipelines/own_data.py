"""Your own files in lakewatch, as the command line offers it: a table entry inferred from sample files
(`lakewatch add-table`), the landing folders as this machine sees them (`lakewatch check`, `run`), and
schema drift turned into a schema change (`lakewatch drift`). The logic lives in
`pipelines.schema_inference`, `pipelines.tables_file` and `pipelines.drift`; this module wires it to
the project (its tables file, landing root and engine session) and says what it did."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, Sequence

from pipelines import adapter, drift, tables_file
from pipelines.errors import LakewatchError
from pipelines.landing import local_path
from pipelines.schema_inference import guess_format, infer_table, landing_for, sample_files


def tables_path(project: Any) -> Path:
    """conf/tables.yml as the ingest pipeline reads it."""
    return Path(project.pipeline_configuration()[adapter.TABLES_CONFIG_KEY])


def landing_lines(project: Any) -> list[str]:
    """The landing root and each table's landing folder, whether it exists on this machine."""
    tables = project.tables()  # the errors a run gives, for tables.yml and each landing
    root = project.landing_root()
    lines = [f"landing root: {root}"]
    for name, folder in tables.landing_paths(str(root)).items():
        path = local_path(folder)
        state = "not local" if path is None else "exists" if path.is_dir() else "missing (the job creates it)"
        lines.append(f"  {name:<20} {folder}  {state}")
    return lines


def add_table(project: Any, name: str, paths: Sequence[Path], fmt: str | None, landing: str | None,
              all_strings: bool, replace: bool, dry_run: bool, say: Callable[[str], None]) -> dict[str, Any]:
    """Infers the entry from the samples, shows it, then writes it to conf/tables.yml (unless dry_run).
    Returns what `lakewatch add-table -o json` prints: the entry and what was done with it."""
    path = tables_path(project)
    existing = {t.name for t in project.tables().tables}
    if name in existing and not replace:
        raise LakewatchError("TABLE_EXISTS", {"name": name, "path": str(path)})
    guess_format(sample_files(paths), fmt)  # missing, mixed or unknown samples: refused before the engine starts
    root = project.landing_root()
    chosen = landing_for(name, paths, root, landing)
    inferred = infer_table(project.spark, name, paths, fmt, chosen, all_strings=all_strings)
    say(f"{'replacing' if name in existing else 'adding'} table '{name}' in {path}:")
    for line in tables_file.entry_text(inferred.table).rstrip("\n").splitlines():
        say(f"  {line}")
    table = inferred.table
    folder = root / chosen
    in_place = folder.is_dir() and all(f.is_relative_to(folder.resolve()) for f in inferred.files)
    document: dict[str, Any] = {
        "table": name, "tables_file": str(path), "written": not dry_run, "replaced": name in existing,
        "format": table.format, "landing": table.landing, "landing_folder": str(folder), "read_in_place": in_place,
        "schema": dict(table.columns), "options": dict(table.options or {}),
        "expectations": [{"name": e.name, "condition": e.condition, "action": e.action} for e in table.expectations],
        "samples": [str(f) for f in inferred.files],
    }
    if dry_run:
        say("nothing written (--dry-run)")
        return document
    tables_file.add_table(path, table, replace=replace, landing_root=str(root))
    say(f"wrote {path}")
    if in_place:
        say(f"its files are read where they are: {folder}")
    else:
        say(f"its landing folder is {folder}: put its files there (or run with --landing-root FOLDER, the "
            f"folder holding '{chosen}/')")
    say("next: lakewatch job (ingest, then the observability tables); edit the entry's expectations as you like")
    return document


def show_drift(project: Any, table: str | None, apply: bool, fields: Sequence[str],
               say: Callable[[str], None]) -> list[dict[str, Any]]:
    """Lists the rescued fields of one table (or of every table) and, with `apply`, adds them to the
    table's schema. Returns what `lakewatch drift -o json` prints: per table, its fields and what was
    added."""
    config = project.tables()
    chosen = drift.tables_of(config, table)
    if apply and len(chosen) != 1:
        raise LakewatchError("CLI_INVALID_ARGUMENT", {"reason": "--apply needs the TABLE to change"})
    project.use_schema()
    schema = project.schema_name()
    documents: list[dict[str, Any]] = []
    for spec in chosen:
        try:
            found = drift.rescued_fields(project.spark, schema, spec)
        except LakewatchError as e:
            if table is not None or e.error_class != "DRIFT_NO_BRONZE":
                raise
            say(f"{spec.name}: {e.text}")  # the other tables are still listed
            documents.append({"table": spec.name, "error": e.text, "fields": [], "added": []})
            continue
        for line in drift.describe(found, spec):
            say(line)
        document: dict[str, Any] = {"table": spec.name, "error": None, "fields": [
            {"name": f.name, "type": f.data_type, "kind": f.kind, "rows": f.rows, "column": f.column,
             "first_file": f.first_file, "first_time": f.first_time, "last_file": f.last_file,
             "last_time": f.last_time, "waiting": f.waiting, "mismatched": f.mismatched} for f in found], "added": []}
        documents.append(document)
        if not apply:
            continue
        added = drift.apply(tables_path(project), spec, found, fields, str(project.landing_root()))
        document["added"] = [{"name": f.name, "type": f.data_type} for f in added]
        if not added:
            say(f"no new field to add to {spec.name}")
            continue
        say(f"added to the schema of {spec.name} in {tables_path(project)}: "
            + ", ".join(f"{f.name} {f.data_type}" for f in added))
        waiting = sum(f.rows for f in added)
        say(f"next update: new files fill the new column(s). The {waiting} row(s) already in "
            f"{spec.bronze_name} keep the value in _rescued_data until a full refresh: lakewatch run "
            f"--full-refresh {','.join(spec.streaming_tables())} (it reads the landing files again)")
    return documents
