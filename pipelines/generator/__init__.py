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

from pipelines.generator.batch import MANIFEST, REDELIVERY_DIR, FileRecord, Manifest, generate_batch, redeliver
from pipelines.generator.content import (KINDS, RESCUED_KINDS, Mix, corrupt, good_rows, landing_files,
                                         load_column_settings)

__all__ = ["KINDS", "MANIFEST", "REDELIVERY_DIR", "RESCUED_KINDS", "FileRecord", "Manifest", "Mix", "corrupt",
           "generate_batch", "good_rows", "landing_files", "load_column_settings", "redeliver"]
