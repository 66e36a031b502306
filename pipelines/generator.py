"""Synthetic landing files with bad records mixed in, and a manifest of what was written.

Good rows come from dbldatagen (seeded, typed from the table's schema, with optional per-column
settings from conf/generator.yml); the generator then turns a seeded share of them into the kinds of
bad input file ingestion meets, and writes files batch by batch in the table's format (JSON lines, JSON
documents, CSV or Parquet), as files arriving over time. The manifest (`<landing root>/_manifest.json`) records per file how many lines of each kind it
holds; tests use it as the truth.

Kinds of line:
- good            a JSON object that fits the schema
- malformed       a JSON object cut short: not JSON, lands in `_corrupt_record`
- type_mismatch   a typed column holds a value of the wrong type: rescued, the column is NULL
- unknown_field   an extra field the schema does not know (drift): rescued
- case_variant    a schema column spelled in another case: rescued, the column is NULL
In CSV, drift and case variants are a file's header, not a row's: such rows come in a file of their own
whose header has the extra column or the other spelling; a malformed CSV row is a field short. In
Parquet every bad kind is a file's schema (a text column, an extra column, another spelling) and there
are no malformed records. A malformed JSON document is a file of its own, cut short.
Plus empty files, and optionally an incomplete upload: a gzip file cut short, which fails the read
until the producer re-delivers it whole (`redeliver`).
"""

from __future__ import annotations

import contextlib
import gzip
import io
import json
import os
import random
import warnings
from dataclasses import dataclass, field
from datetime import date, datetime, timezone
from pathlib import Path
from typing import Any, Iterable, Mapping

from pipelines import yamltext
from pipelines.config import TableSpec, TablesConfig
from pipelines.errors import LakewatchError

MANIFEST = "_manifest.json"
REDELIVERY_DIR = "_redelivery"
KINDS = ("good", "malformed", "type_mismatch", "unknown_field", "case_variant")
RESCUED_KINDS = ("type_mismatch", "unknown_field", "case_variant")
_NON_STRING = ("BIGINT", "INT", "INTEGER", "LONG", "SMALLINT", "TINYINT", "DOUBLE", "FLOAT", "BOOLEAN",
               "DATE", "TIMESTAMP")
_DRIFT_FIELDS = ("promo_code", "channel", "device", "campaign_id", "region_code")


@dataclass(frozen=True)
class Mix:
    """Share of each bad kind among a batch's lines, and of empty files among its files."""

    malformed: float = 0.03
    type_mismatch: float = 0.04
    unknown_field: float = 0.05
    case_variant: float = 0.02
    empty_file: float = 0.15

    @classmethod
    def parse(cls, text: str | None) -> "Mix":
        """`malformed=0.1,unknown_field=0` -> Mix with those shares (the rest default)."""
        if not text:
            return cls()
        values: dict[str, float] = {}
        for part in text.split(","):
            key, _, value = part.partition("=")
            key = key.strip()
            if key not in cls.__dataclass_fields__:
                raise LakewatchError("GENERATOR_INVALID_ARGUMENT",
                                     {"reason": f"unknown kind '{key}' in --mix; kinds: {', '.join(cls.__dataclass_fields__)}"})
            try:
                values[key] = float(value)
            except ValueError:
                raise LakewatchError("GENERATOR_INVALID_ARGUMENT", {"reason": f"--mix {key}={value!r} is not a number"}) from None
            if not 0 <= values[key] <= 1:
                raise LakewatchError("GENERATOR_INVALID_ARGUMENT", {"reason": f"--mix {key} must be between 0 and 1"})
        mix = cls(**values)
        if mix.malformed + mix.type_mismatch + mix.unknown_field + mix.case_variant > 1:
            raise LakewatchError("GENERATOR_INVALID_ARGUMENT", {"reason": "the bad kinds add up to more than 1"})
        return mix


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


def load_column_settings(path: Path | None) -> dict[str, dict[str, dict[str, Any]]]:
    """Optional dbldatagen settings per table and column (conf/generator.yml)."""
    if path is None or not path.is_file():
        return {}
    data = yamltext.load(path.read_text()) or {}
    return {str(t): dict(cols or {}) for t, cols in (data.get("tables") or {}).items()}


def _default_options(data_type: str) -> tuple[str, dict[str, Any]]:
    t = data_type.upper()
    if t in ("BIGINT", "LONG", "INT", "INTEGER", "SMALLINT", "TINYINT"):
        return "bigint", {"minValue": 1, "maxValue": 1_000_000, "random": True}
    if t in ("DOUBLE", "FLOAT") or t.startswith("DECIMAL"):
        return "double", {"minValue": 0, "maxValue": 1000, "step": 0.01, "random": True}
    if t == "BOOLEAN":
        return "boolean", {"expr": "rand() < 0.8"}
    if t == "DATE":
        return "date", {"begin": "2024-01-01", "end": "2026-11-01", "interval": "1 day", "random": True}
    if t in ("TIMESTAMP", "TIMESTAMP_NTZ"):
        return "timestamp", {"begin": "2026-01-01 00:00:00", "end": "2026-11-28 00:00:00", "interval": "1 second", "random": True}
    return "string", {"template": r"\\w", "random": True}


def good_rows(spark: Any, table: TableSpec, rows: int, seed: int,
              settings: Mapping[str, Mapping[str, Any]] | None = None) -> list[dict[str, Any]]:
    """`rows` good records of the table, generated by dbldatagen with a fixed seed."""
    import dbldatagen as dg

    with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()):
        # dbldatagen prints notes and sets an Arrow option Spark Connect warns about; both are noise here.
        warnings.simplefilter("ignore")
        spec = dg.DataGenerator(spark, name=f"{table.name}_gen", rows=rows, partitions=1,
                                randomSeedMethod="fixed", randomSeed=seed)
        for column in table.columns:
            spark_type, defaults = _default_options(column.data_type)
            # Settings of a column replace its defaults (a `values` list and a default `template` clash).
            options = dict((settings or {}).get(column.name) or defaults)
            spec = spec.withColumn(column.name, spark_type, **options)
        records = [r.asDict() for r in spec.build().collect()]
    for record in records:
        for column in table.columns:
            value = record[column.name]
            if isinstance(value, float):
                record[column.name] = round(value, 2)
    return records


def _json_value(value: Any) -> Any:
    if isinstance(value, datetime):
        return value.replace(tzinfo=timezone.utc).isoformat().replace("+00:00", "Z")
    if isinstance(value, date):
        return value.isoformat()
    return value


def _line(record: Mapping[str, Any]) -> str:
    return json.dumps({k: _json_value(v) for k, v in record.items()}, separators=(", ", ": "))


def _case_variant(name: str) -> str:
    variant = name[:1].upper() + name[1:]
    return variant if variant != name else name.upper()


def corrupt(record: Mapping[str, Any], kind: str, table: TableSpec, rnd: random.Random) -> tuple[str, str | None]:
    """The line for one bad record of `kind`, and the schema column it makes NULL (if any)."""
    values = {k: _json_value(v) for k, v in record.items()}
    if kind == "malformed":
        text = json.dumps(values)
        cut = rnd.randint(1, max(1, len(text) - 2))
        return text[:cut].rstrip("}"), None
    if kind == "type_mismatch":
        typed = [c.name for c in table.columns if c.data_type.upper() in _NON_STRING]
        column = rnd.choice(typed)
        values[column] = rnd.choice(["n/a", "unknown", "#VALUE!", "--"])
        return json.dumps(values), column
    if kind == "unknown_field":
        values[rnd.choice(_DRIFT_FIELDS)] = rnd.choice(["A1", "web", 7, True])
        return json.dumps(values), None
    if kind == "case_variant":
        column = rnd.choice([c.name for c in table.columns if _case_variant(c.name) != c.name])
        values = {(_case_variant(k) if k == column else k): v for k, v in values.items()}
        return json.dumps(values), column
    raise ValueError(kind)


@dataclass(frozen=True)
class LandingFile:
    """One file to write: its name, bytes, and per record its kind and the column it makes NULL."""

    name: str
    data: bytes
    rows: list[tuple[str, str | None]]
    last_part: bool = False  # the batch's last regular part (the one an incomplete upload cuts)


def landing_files(table: TableSpec, batch: int, kinds: list[tuple[str, dict[str, Any]]], rnd: random.Random,
                  parts: int) -> list[LandingFile]:
    """The batch's files of one table in its format."""
    if table.format == "csv":
        return csv_files(table, batch, kinds, rnd, parts)
    if table.format == "parquet":
        return parquet_files(table, batch, kinds, rnd, parts)
    if table.multi_line:
        return json_document_files(table, batch, kinds, rnd, parts)
    lines = []
    for kind, record in kinds:
        if kind == "good":
            lines.append(("good", _line(record), None))
        else:
            text, column = corrupt(record, kind, table, rnd)
            lines.append((kind, text, column))
    files = []
    for part in range(parts):
        part_lines = lines[part::parts]
        files.append(LandingFile(f"{table.name}-b{batch:04d}-{part:02d}.json",
                                 "".join(line + "\n" for _, line, _ in part_lines).encode(),
                                 [(kind, column) for kind, _, column in part_lines], last_part=part == parts - 1))
    return files


def json_document_files(table: TableSpec, batch: int, kinds: list[tuple[str, dict[str, Any]]],
                        rnd: random.Random, parts: int) -> list[LandingFile]:
    """JSON documents (`multi_line`): each part is one pretty-printed array of its records (type
    mismatches, drift and case variants are records of it); a malformed record would make its whole
    document corrupt, so each comes alone in a file of its own, a document cut short."""
    regular: list[tuple[str, Any, str | None]] = []
    files = []
    for kind, record in kinds:
        if kind == "malformed":
            text = json.dumps({k: _json_value(v) for k, v in record.items()}, indent=2)
            cut = text[: rnd.randint(1, max(1, len(text) - 2))].rstrip("}")
            files.append(LandingFile(f"{table.name}-b{batch:04d}-cut{len(files):03d}.json", cut.encode(),
                                     [("malformed", None)]))
        elif kind == "good":
            regular.append((kind, {k: _json_value(v) for k, v in record.items()}, None))
        else:
            text, column = corrupt(record, kind, table, rnd)
            regular.append((kind, json.loads(text), column))
    for part in range(parts):
        part_rows = regular[part::parts]
        data = json.dumps([value for _, value, _ in part_rows], indent=2).encode() + b"\n"
        files.append(LandingFile(f"{table.name}-b{batch:04d}-{part:02d}.json", data,
                                 [(kind, column) for kind, _, column in part_rows], last_part=part == parts - 1))
    return files


_ARROW_TYPES = {"BIGINT": "int64", "INT": "int32", "SMALLINT": "int16", "TINYINT": "int8", "DOUBLE": "float64",
                "FLOAT": "float32", "BOOLEAN": "bool_", "STRING": "string", "DATE": "date32"}


def _arrow_type(data_type: str) -> Any:
    import pyarrow as pa

    t = data_type.upper()
    if t in _ARROW_TYPES:
        return getattr(pa, _ARROW_TYPES[t])()
    if t.startswith("DECIMAL("):
        precision, scale = (int(x) for x in t[len("DECIMAL("):-1].split(","))
        return pa.decimal128(precision, scale)
    if t == "TIMESTAMP":
        return pa.timestamp("us", tz="UTC")
    if t == "TIMESTAMP_NTZ":
        return pa.timestamp("us")
    raise LakewatchError("GENERATOR_INVALID_ARGUMENT", {
        "reason": f"the generator writes Parquet columns of simple types, not {data_type}"})


def _arrow_value(value: Any, data_type: str) -> Any:
    from decimal import Decimal

    if value is None:
        return None
    if data_type.upper().startswith("DECIMAL("):
        scale = int(data_type[:-1].split(",")[1])
        return Decimal(str(round(float(value), scale)))
    if isinstance(value, datetime) and value.tzinfo is None:
        return value.replace(tzinfo=timezone.utc)
    return value


def _parquet_bytes(columns: list[tuple[str, Any, list[Any]]]) -> bytes:
    """A Parquet file of (name, arrow type, values) columns."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = pa.table({name: pa.array(values, type=arrow_type) for name, arrow_type, values in columns})
    sink = io.BytesIO()
    pq.write_table(table, sink)
    return sink.getvalue()


def parquet_files(table: TableSpec, batch: int, kinds: list[tuple[str, dict[str, Any]]], rnd: random.Random,
                  parts: int) -> list[LandingFile]:
    """Parquet files of one batch. A Parquet file has one schema, so bad kinds are files: rows of a
    type mismatch come in a file where one typed column is text, rows of drift in a file with an extra
    column, rows of a case variant in a file that spells a column in another case. Parquet has no
    malformed records: those rows are written as good ones (and counted good)."""
    import pyarrow as pa

    names = list(table.column_names)
    types = {c.name: c.data_type for c in table.columns}
    typed = [c.name for c in table.columns if c.data_type.upper() != "STRING"]
    groups: dict[str, list[dict[str, Any]]] = {"good": [], "type_mismatch": [], "unknown_field": [], "case_variant": []}
    for kind, record in kinds:
        groups["good" if kind == "malformed" else kind].append(record)

    def columns(records: list[dict[str, Any]]) -> list[tuple[str, Any, list[Any]]]:
        return [(n, _arrow_type(types[n]), [_arrow_value(r[n], types[n]) for r in records]) for n in names]

    base = f"{table.name}-b{batch:04d}"
    files = []
    for part in range(parts):
        rows = groups["good"][part::parts]
        files.append(LandingFile(f"{base}-{part:02d}.parquet", _parquet_bytes(columns(rows)),
                                 [("good", None)] * len(rows), last_part=part == parts - 1))
    if groups["type_mismatch"] and typed:
        rows, column = groups["type_mismatch"], rnd.choice(typed)
        cols = [(n, pa.string(), [rnd.choice(["n/a", "unknown", "#VALUE!", "--"]) for _ in rows]) if n == column else c
                for n, c in zip(names, columns(rows))]
        files.append(LandingFile(f"{base}-mismatch.parquet", _parquet_bytes(cols), [("type_mismatch", column)] * len(rows)))
    if groups["unknown_field"]:
        rows, extra = groups["unknown_field"], rnd.choice(_DRIFT_FIELDS)
        cols = columns(rows) + [(extra, pa.string(), [rnd.choice(["A1", "web", "7"]) for _ in rows])]
        files.append(LandingFile(f"{base}-drift.parquet", _parquet_bytes(cols), [("unknown_field", None)] * len(rows)))
    if groups["case_variant"]:
        rows = groups["case_variant"]
        varied = rnd.choice([n for n in names if _case_variant(n) != n])
        cols = [(_case_variant(n) if n == varied else n, t, v) for n, t, v in columns(rows)]
        files.append(LandingFile(f"{base}-variant.parquet", _parquet_bytes(cols), [("case_variant", varied)] * len(rows)))
    return files


def _csv_text(value: Any, table: TableSpec) -> str:
    """A value as a CSV field: empty for NULL, ISO dates and times, quoted when it holds a delimiter,
    a quote or an escape character."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, datetime):
        return value.strftime("%Y-%m-%d %H:%M:%S")
    if isinstance(value, date):
        return value.isoformat()
    text = str(value)
    if any(c in text for c in (table.delimiter, table.quote, table.escape, "\n", "\r")) or text != text.strip():
        inner = text.replace(table.escape, table.escape * 2).replace(table.quote, table.escape + table.quote)
        return f"{table.quote}{inner}{table.quote}"
    return text


def csv_files(table: TableSpec, batch: int, kinds: list[tuple[str, dict[str, Any]]], rnd: random.Random,
              parts: int) -> list[LandingFile]:
    """CSV files of one batch. Rows that fit the header of the schema (good, type mismatches,
    malformed rows: a field short) are spread over `parts` files; rows of drift come in a file whose
    header has an extra column, rows of a case variant in a file whose header spells a column in
    another case (drift and case are a file's header in CSV, not a row's)."""
    names = list(table.column_names)
    typed = [c.name for c in table.columns if c.data_type.upper() in _NON_STRING or c.data_type.startswith("DECIMAL")]

    def row(values: list[str]) -> str:
        return table.delimiter.join(values)

    def fields(record: Mapping[str, Any]) -> list[str]:
        return [_csv_text(record[n], table) for n in names]

    regular: list[tuple[str, str, str | None]] = []
    drift: list[tuple[str, str | None]] = []
    variant: list[tuple[str, str | None]] = []
    extra = rnd.choice(_DRIFT_FIELDS)
    varied = rnd.choice([n for n in names if _case_variant(n) != n])
    drift_lines, variant_lines = [], []
    for kind, record in kinds:
        values = fields(record)
        if kind == "type_mismatch":
            column = rnd.choice(typed)
            values[names.index(column)] = rnd.choice(["n/a", "unknown", "#VALUE!", "--"])
            regular.append((kind, row(values), column))
        elif kind == "malformed":
            regular.append((kind, row(values[:-1]), None))
        elif kind == "unknown_field":
            drift_lines.append(row(values + [rnd.choice(["A1", "web", "7", "true"])]))
            drift.append((kind, None))
        elif kind == "case_variant":
            variant_lines.append(row(values))
            variant.append((kind, varied))
        else:
            regular.append((kind, row(values), None))
    base = f"{table.name}-b{batch:04d}"
    header = row(names) if table.header else None
    files = []
    for part in range(parts):
        part_rows = regular[part::parts]
        lines = ([header] if header else []) + [text for _, text, _ in part_rows]
        files.append(LandingFile(f"{base}-{part:02d}.csv", "".join(f"{x}\n" for x in lines).encode(),
                                 [(kind, column) for kind, _, column in part_rows], last_part=part == parts - 1))
    if not table.header:
        # without a header, drift and case cannot be told from the rows: they are written as good rows
        return files + ([LandingFile(f"{base}-more.csv", "".join(f"{x[:x.rfind(table.delimiter)]}\n" for x in drift_lines).encode()
                                     + "".join(f"{x}\n" for x in variant_lines).encode(),
                                     [("good", None)] * (len(drift) + len(variant)))] if drift or variant else [])
    if drift:
        lines = [row(names + [extra])] + drift_lines
        files.append(LandingFile(f"{base}-drift.csv", "".join(f"{x}\n" for x in lines).encode(), drift))
    if variant:
        lines = [row([_case_variant(n) if n == varied else n for n in names])] + variant_lines
        files.append(LandingFile(f"{base}-variant.csv", "".join(f"{x}\n" for x in lines).encode(), variant))
    return files


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
            # an empty Parquet file is one without rows (zero bytes is not Parquet)
            empty = (_parquet_bytes([(c.name, _arrow_type(c.data_type), []) for c in table.columns])
                     if table.format == "parquet" else b"")
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
