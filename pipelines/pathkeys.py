"""The key a landing file's path is joined on, whatever wrote the path (SQL text)."""

from __future__ import annotations

_URI_SCHEME = "^[A-Za-z][A-Za-z0-9+.-]*:/"


def path_key(expr: str) -> str:
    """A file path as the file's real name, whatever wrote it, so the file state, bronze's and the sink's
    `_source_file` and the Databricks line counts join on it.

    A path with a URI scheme (`file:/`, `dbfs:/`, `s3://bucket/`, ...) is a URI, percent-encoded as
    Hadoop's `Path.toUri` writes it: Spark's `_metadata.file_path` (bronze and sink `_source_file`: a
    file named `p%41ct.json` is `.../p%2541ct.json`, a space `%20`, `#` `%23`; `+` and unicode stay as
    they are), and on Databricks `cloud_files_state`'s paths, which carry the scheme too. Its scheme goes
    (`s3://bucket` keeps the bucket as the first segment) and it is decoded, `+` kept as `+` (in a URI
    path it is not a space, as `url_decode`'s form decoding would read it); one that does not decode
    is kept as it is. A path without a scheme is a file-system path, the real name already (the local
    file state writes `os.path` paths, pipelines/local/checkpoints.py): kept as it is, since a `%41`
    in it is part of the name (decoding it would read `p%41ct.json` as `pAct.json`, another file)."""
    stripped = f"regexp_replace({expr}, '{_URI_SCHEME}+', '/')"
    decoded = f"try_url_decode(replace({stripped}, '+', '%2B'))"
    return f"CASE WHEN {expr} RLIKE '{_URI_SCHEME}' THEN coalesce({decoded}, {stripped}) ELSE {expr} END"
