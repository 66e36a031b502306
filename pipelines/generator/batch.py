"""Batches of landing files on disk, as files arriving over time, and the manifest that records what
each file holds (the tests' truth); re-delivery of a cut-short upload."""

from __future__ import annotations

import gzip
import json
import os
import random
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Mapping

from pipelines.config import TablesConfig
from pipelines.errors import LakewatchError
from pipelines.generator.content import KINDS, Mix, empty_file, good_rows, landing_files

MANIFEST = "_manifest.json"
REDELIVERY_DIR = "_redelivery"


@dataclass
class FileRecord:
    table: str
    path: str
    batch: int
    lines: dict[str, int]
    nulled_columns: dict[str, int]  # column -> lines where it is NULL because of a bad value
    bytes: int
    complete: bool = True
    compression: str | None = None

    def as_dict(self) -> dict[str, Any]:
        return {
            "table": self.table, "path": self.path, "batch": self.batch, "lines": self.lines,
            "nulled_columns": self.nulled_columns, "bytes": self.bytes, "complete": self.complete,
            "compression": self.compression,
        }


@dataclass
class Manifest:
    path: Path
    files: list[dict[str, Any]] = field(default_factory=list)
    seed: int | None = None

    @classmethod
    def load(cls, landing_root: Path) -> "Manifest":
        path = landing_root / MANIFEST
        if path.is_file():
            data = json.loads(path.read_text())
            return cls(path, data.get("files", []), data.get("seed"))
        return cls(path)

    def save(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_name("." + self.path.name + ".tmp")
        tmp.write_text(json.dumps({"seed": self.seed, "files": self.files}, indent=1))
        tmp.replace(self.path)

    def next_batch(self) -> int:
        return max((f["batch"] for f in self.files), default=-1) + 1

    def totals(self, table: str, complete_only: bool = True) -> dict[str, int]:
        """Lines per kind written for a table (by default only files delivered whole)."""
        totals = {k: 0 for k in KINDS}
        for f in self.files:
            if f["table"] == table and (f["complete"] or not complete_only):
                for k, n in f["lines"].items():
                    totals[k] += n
        return totals

    def nulled(self, table: str, column: str) -> int:
        return sum(f["nulled_columns"].get(column, 0) for f in self.files if f["table"] == table and f["complete"])


def _atomic_write(path: Path, data: bytes) -> None:
    """Writes under a hidden name, then renames: the file source never sees half a file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name("." + path.name + ".tmp")
    tmp.write_bytes(data)
    os.replace(tmp, path)


def generate_batch(
    spark: Any,
    tables: TablesConfig,
    landing_root: Path,
    rows: int = 200,
    seed: int = 7,
    mix: Mix | None = None,
    files_per_batch: int = 2,
    column_settings: Mapping[str, Mapping[str, Mapping[str, Any]]] | None = None,
    incomplete_upload: Iterable[str] = (),
    only: Iterable[str] | None = None,
) -> list[FileRecord]:
    """Writes one batch of files for every table (or `only` these) and records them in the manifest."""
    if rows < 1 or files_per_batch < 1:
        raise LakewatchError("GENERATOR_INVALID_ARGUMENT", {"reason": "rows and files per batch must be at least 1"})
    mix = mix or Mix()
    manifest = Manifest.load(landing_root)
    manifest.seed = manifest.seed if manifest.seed is not None else seed
    batch = manifest.next_batch()
    incomplete = set(incomplete_upload)
    selected = set(only) if only else None
    written: list[FileRecord] = []
    for t_index, table in enumerate(tables.tables):
        if selected is not None and table.name not in selected:
            continue
        rnd = random.Random(seed * 1_000_003 + batch * 1_009 + t_index)
        records = good_rows(spark, table, rows, seed + batch * 101 + t_index, (column_settings or {}).get(table.name))
        shares = (("malformed", mix.malformed), ("type_mismatch", mix.type_mismatch),
                  ("unknown_field", mix.unknown_field), ("case_variant", mix.case_variant))
        kinds: list[tuple[str, dict[str, Any]]] = []
        for record in records:
            roll, kind = rnd.random(), "good"
            for name, share in shares:
                if roll < share:
                    kind = name
                    break
                roll -= share
            kinds.append((kind, record))
        folder = Path(table.landing_path(str(landing_root)))
        for file in landing_files(table, batch, kinds, rnd, files_per_batch):
            gz = table.name in incomplete and file.last_part
            name = file.name + (".gz" if gz else "")
            path = folder / name
            counts = {k: 0 for k in KINDS}
            nulled: dict[str, int] = {}
            for kind, column in file.rows:
                counts[kind] += 1
                if column:
                    nulled[column] = nulled.get(column, 0) + 1
            data = file.data
            record = FileRecord(table.name, str(path), batch, counts, nulled, len(data))
            if gz:
                whole = gzip.compress(data, mtime=0)
                _atomic_write(landing_root / REDELIVERY_DIR / name, whole)
                data = whole[: len(whole) // 2]
                record.complete, record.compression, record.bytes = False, "gzip", len(data)
            _atomic_write(path, data)
            written.append(record)
        if rnd.random() < mix.empty_file:
            path = folder / f"{table.name}-b{batch:04d}-empty.{table.format}"
            empty = empty_file(table)
            _atomic_write(path, empty)
            written.append(FileRecord(table.name, str(path), batch, {k: 0 for k in KINDS}, {}, len(empty)))
    manifest.files.extend(r.as_dict() for r in written)
    manifest.save()
    return written


def redeliver(landing_root: Path) -> list[str]:
    """Replaces every incomplete upload with the whole file, as a producer re-delivering it would."""
    manifest = Manifest.load(landing_root)
    fixed = []
    for entry in manifest.files:
        if entry["complete"]:
            continue
        path = Path(entry["path"])
        whole = (landing_root / REDELIVERY_DIR / path.name).read_bytes()
        _atomic_write(path, whole)
        entry["complete"], entry["bytes"] = True, len(whole)
        fixed.append(str(path))
    manifest.save()
    return fixed
