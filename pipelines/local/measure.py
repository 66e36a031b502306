"""Measurements shared by the runner (during an update) and recovery (closing an interrupted one):
a flow's event origin, the backlog of file-reading flows, the local file state, and the rows each
streaming micro-batch committed according to the target table's Delta history."""

from __future__ import annotations

import hashlib
import json
import os
import re
import uuid
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Iterable, Mapping

from pipelines.eventlog import events as event_builders
from pipelines.local import checkpoints
from pipelines.local.inflight import FlowRecord


def checkpoint_of(flow: FlowRecord) -> Path | None:
    """The flow's live checkpoint (the newest numbered folder under its root)."""
    return checkpoints.latest_checkpoint(Path(flow.checkpoint_root)) if flow.checkpoint_root else None


def flow_origin(base: event_builders.Origin, flow: FlowRecord, batch_id: int | None = None) -> event_builders.Origin:
    """Origin of a flow's events. `flow_id` stays while the flow runs incrementally and changes
    with a full refresh (a new checkpoint), as on Databricks."""
    checkpoint = checkpoint_of(flow)
    generation = checkpoint.name if checkpoint is not None else base.update_id
    flow_id = str(uuid.uuid5(uuid.NAMESPACE_URL, f"lakewatch:{base.pipeline_id}:{flow.name}:{generation}"))
    table = None if flow.is_sink else flow.target_table
    return base.replace(flow_id=flow_id, flow_name=flow.sdp_name, dataset_name=table, table_name=table,
                        sink_name=flow.target if flow.is_sink else None, batch_id=batch_id)


CutTimes = Mapping[str, Mapping[int, datetime]]  # flow -> its batches cut by a stop -> their table commit's time


def backlog_events(base: event_builders.Origin, flows: Iterable[FlowRecord], at: datetime,
                   cut: CutTimes | None = None) -> list[dict[str, Any]]:
    """A METRICS event per file-reading flow with the landing files it has not committed yet (a batch
    cut by a stop is committed: `cut_batches`); when the landing folder cannot be listed, the backlog
    is NULL and a WARN event says why."""
    events = []
    for flow in flows:
        if flow.landing is None:
            continue
        origin = flow_origin(base, flow)
        try:
            left = checkpoints.backlog(flow.landing, checkpoint_of(flow), (cut or {}).get(flow.name))
        except OSError as e:
            events.append(event_builders.flow_metrics(origin, at))
            events.append(event_builders.measurement_warning(origin, at, "backlog", f"landing folder not readable: {e}"))
            continue
        events.append(event_builders.flow_metrics(origin, at, backlog_bytes=left.bytes, backlog_files=left.files))
    return events


def write_file_state(spark: Any, table: str, flows: Iterable[FlowRecord], ledger_path: Path,
                     cut: CutTimes | None = None) -> None:
    """The local `cloud_files_state()`: one row per landing file of every file-reading flow (the files
    of a batch cut by a stop committed when its table commit was made: `cut_batches`; the ledger keeps
    that first commit time when a later update commits the batch in the checkpoint)."""
    from pipelines.local.file_ledger import FileLedger
    from pipelines.local.file_state import FILE_STATE_SCHEMA, rows_for

    sources = [f for f in flows if f.landing is not None]
    if not sources:
        return  # this pipeline reads no landing files
    ledger = FileLedger(ledger_path)
    rows = []
    for flow in sources:
        earliest = checkpoints.first_commits(Path(flow.checkpoint_root)) if flow.checkpoint_root else {}
        states = checkpoints.file_states(flow.landing, checkpoint_of(flow), flow.clean_source, flow.archive_dir,
                                         (cut or {}).get(flow.name))
        rows.extend(rows_for(flow.target_table or flow.name, flow.name, states, ledger, earliest,
                             flow.record_counter))
    ledger.save()
    # Rewritten only when it changed (an update with nothing new leaves it as it was); an INSERT
    # OVERWRITE keeps the catalog entry, so only a new table or a new schema needs saveAsTable.
    digest_file = ledger_path.with_suffix(".state-digest")
    digest = hashlib.sha256(f"{table}\n{sorted(map(repr, rows))}".encode()).hexdigest()
    if digest_file.is_file() and digest_file.read_text() == digest and spark.catalog.tableExists(table):
        return
    df = spark.createDataFrame(rows, FILE_STATE_SCHEMA)
    try:
        df.write.insertInto(table, overwrite=True)
    except Exception:  # noqa: BLE001 (no table yet, or one with an older schema)
        df.write.format("delta").mode("overwrite").option("overwriteSchema", "true").saveAsTable(table)
    digest_file.write_text(digest)


def count_before_delete(flows: Iterable[FlowRecord], ledger_path: Path) -> None:
    """Counts, before the update, the lines of landing files that flows with clean_source DELETE have not
    committed: their stream deletes a committed file when its next micro-batch starts, often before the
    runner sees the file committed, and a deleted file cannot be counted any more."""
    from pipelines.local.file_ledger import FileLedger

    deleting = [f for f in flows if f.landing is not None and f.clean_source == "DELETE"]
    if not deleting:
        return
    ledger = FileLedger(ledger_path)
    for flow in deleting:
        for f in checkpoints.list_landing(flow.landing):
            ledger.note_landing(flow.name, f.path, f.size, f.modification_time, flow.record_counter)
    ledger.save()


def query_id(checkpoint: Path) -> str | None:
    """The streaming query id a checkpoint belongs to (its `metadata` file)."""
    try:
        return str(json.loads((checkpoint / "metadata").read_text().splitlines()[0])["id"])
    except (OSError, ValueError, KeyError, IndexError):
        return None


# Every Delta commit an update makes (flows, SDP's table setup, the event log) carries the update in
# its commit info, so the update's own commits, and the version each table had before it, are read
# from the table's history afterwards instead of asked for table by table before the run.
USER_METADATA_CONF = "spark.databricks.delta.commitInfo.userMetadata"


COMMIT_TAG_PREFIX = "lakewatch update "


def commit_tag(update_id: str) -> str:
    """The `userMetadata` of every Delta commit the update makes (DESCRIBE HISTORY shows it)."""
    return f"{COMMIT_TAG_PREFIX}{update_id}"


def tagged_update(user_metadata: str | None) -> str | None:
    """The update a commit's `userMetadata` names (`commit_tag`); None for a commit without lakewatch's tag."""
    return user_metadata[len(COMMIT_TAG_PREFIX):] if (user_metadata or "").startswith(COMMIT_TAG_PREFIX) else None


@dataclass(frozen=True)
class UpdateCommits:
    """One table's commits made by one update, from its Delta history."""

    commits: list[tuple[datetime, dict[str, str]]]  # (commit time in UTC, operation metrics), newest first
    before: int | None  # the table's version before the update's first commit (None: none, or a new table)
    read: bool = True  # False: the history could not be read (no table), so `commits` says nothing
    operations: tuple[str, ...] = ()  # each commit's Delta operation (WRITE, TRUNCATE...), as `commits`

    def wrote(self) -> bool:
        """Whether the update wrote the table's data (a Delta WRITE: a refresh's overwrite, or SDP as
        shipped's append after its TRUNCATE), not only set it up."""
        return "WRITE" in self.operations

    def written(self, metric: str) -> int | None:
        """What the update's writes put in the table, by one Delta operation metric (`numOutputRows`,
        `numOutputBytes`): 0 when it made no write (Delta commits no write that changes nothing, as a
        refresh of no rows into an empty view), None when the history could not be read or a write
        does not carry the metric (not measured is not 0)."""
        if not self.read:
            return None
        operations = self.operations or ("WRITE",) * len(self.commits)
        values = [metric_of(m, metric) for (_, m), op in zip(self.commits, operations) if op == "WRITE"]
        return None if None in values else sum(v for v in values if v is not None)


def update_commits(spark: Any, table: str, update_id: str, limit: int = 50,
                   table_dir: Path | None = None) -> UpdateCommits:
    """The commits `update_id` made to `table` among its newest `limit` (an update makes a few per
    materialized view), and the version before them. A table without history has neither. With
    `table_dir` (the table's folder on this machine) read from its Delta log when that holds them."""
    found = update_commits_in_log(table_dir, update_id, limit) if table_dir is not None else None
    if found is not None:
        return found
    tag = commit_tag(update_id)
    try:
        rows = spark.sql(f"DESCRIBE HISTORY {table} LIMIT {int(limit)}").select(
            "version", "timestamp", "operation", "operationMetrics", "userMetadata").collect()
    except Exception:  # noqa: BLE001 (the table does not exist: the update never created it)
        return UpdateCommits([], None, read=False)
    mine = [r for r in rows if r["userMetadata"] == tag]
    first = min((int(r["version"]) for r in mine), default=None)
    earlier = [int(r["version"]) for r in rows if r["userMetadata"] != tag and (first is None or int(r["version"]) < first)]
    # collect() returns naive local time; make it an aware UTC time.
    commits = [(r["timestamp"].astimezone(timezone.utc), dict(r["operationMetrics"] or {})) for r in mine]
    return UpdateCommits(commits, max(earlier) if mine and earlier else None,
                         operations=tuple(str(r["operation"]) for r in mine))


COMMIT_FILE = re.compile(r"[0-9]{20}\.json")


def local_table_dir(warehouse: Path, table: str) -> Path | None:
    """Where the local engine keeps a managed table `spark_catalog.<schema>.<table>`: its Delta log is
    read there instead of asking Spark for DESCRIBE HISTORY. None for a name in another catalog."""
    parts = table.replace("`", "").split(".")
    if len(parts) != 3 or parts[0].lower() != "spark_catalog":
        return None
    schema, name = parts[1].lower(), parts[2].lower()
    return (warehouse if schema == "default" else warehouse / f"{schema}.db") / name


def log_commits(table_dir: Path, limit: int | None = None) -> list[tuple[int, datetime, dict[str, Any]]] | None:
    """The newest `limit` (or all) commits in the table's Delta log on this machine, oldest first: the
    version, the file's modification time as the commit's time (as DESCRIBE HISTORY gives it for tables
    without in-commit timestamps, in Hadoop's milliseconds), and the `commitInfo` action. None when the
    log cannot be listed or a commit file cannot be read: then ask Spark."""
    log = table_dir / "_delta_log"
    try:
        names = sorted(n for n in os.listdir(log) if COMMIT_FILE.fullmatch(n))
    except OSError:
        return None
    found = []
    for name in names[-limit:] if limit else names:
        path = log / name
        try:
            actions = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
            at = datetime.fromtimestamp(path.stat().st_mtime_ns // 1_000_000 / 1000, tz=timezone.utc)
        except (OSError, ValueError):
            return None
        info = next((a["commitInfo"] for a in actions if isinstance(a, dict) and "commitInfo" in a), None)
        if not isinstance(info, dict):
            return None
        found.append((int(name[:20]), at, info))
    return found


def update_commits_in_log(table_dir: Path, update_id: str, limit: int = 50) -> UpdateCommits | None:
    """`update_commits` read from the table's Delta log on this machine instead of through Spark
    (`log_commits`). None when the log cannot be read or holds no commit of the update: then ask Spark
    (a table elsewhere, or a commit not written to this folder)."""
    commits = log_commits(table_dir, limit)
    if commits is None:
        return None
    tag = commit_tag(update_id)
    mine = [(version, at, dict(info.get("operationMetrics") or {}), str(info.get("operation")))
            for version, at, info in commits if info.get("userMetadata") == tag]
    if not mine:
        return None
    first = min(version for version, _, _, _ in mine)
    earlier = [version for version, _, info in commits if info.get("userMetadata") != tag and version < first]
    newest_first = sorted(mine, key=lambda commit: -commit[0])  # as DESCRIBE HISTORY lists them
    return UpdateCommits([(at, metrics) for _, at, metrics, _ in newest_first], max(earlier) if earlier else None,
                         operations=tuple(operation for _, _, _, operation in newest_first))


def metric_of(metrics: Mapping[str, str], metric: str) -> int | None:
    """One Delta operation metric of a commit as a number (None: not recorded). `numOutputBytes` counts
    what the write job put on disk, and a write of no rows still puts an empty Parquet file there that
    the commit does not add (`numAddedFiles` 0): nothing reached the table, so that commit wrote 0 bytes."""
    value = metrics.get(metric)
    if value is None:
        return None
    if metric == "numOutputBytes" and metrics.get("numAddedFiles") == "0":
        return 0
    return int(value)


def _add_batch_metric(found: dict[int, int], params: Mapping[str, str] | None, metrics: Mapping[str, str] | None,
                      qid: str, wanted: set[int], metric: str, written_by: str | None = None,
                      update_id: str | None = None) -> int | None:
    """Adds one commit's `metric` to its micro-batch when the commit is one of `wanted` of query `qid`;
    returns the commit's micro-batch (None: not a commit of that query). With `update_id`, a commit
    another lakewatch update made (its `userMetadata`, `written_by`) adds 0: that update's run of the
    batch wrote it, and this update's run of it again (the stream's checkpoint lagged behind the table)
    wrote nothing, as Delta skips a batch it already holds."""
    params = params or {}
    if params.get("queryId") != qid or params.get("epochId") is None:
        return None
    batch = int(params["epochId"])
    writer = tagged_update(written_by)
    someone_else = update_id is not None and writer is not None and writer != update_id
    value = 0 if someone_else else metric_of(metrics or {}, metric)
    if batch in wanted and value is not None:
        found[batch] = found.get(batch, 0) + value
    return batch


def rows_per_batch(spark: Any, table: str, checkpoint: Path, batches: Iterable[int],
                   metric: str = "numOutputRows", last_commits: int | None = None,
                   table_dir: Path | None = None, update_id: str | None = None) -> dict[int, int]:
    """Rows (or another Delta operation metric, such as `numOutputBytes`) each of `batches` appended to
    `table`, from the Delta commits the streaming query of `checkpoint` made (Delta records the query
    id and batch as `epochId`); `last_commits` reads only the table's newest commits. With `table_dir`
    (the table's folder on this machine) read from its Delta log when that holds every batch. With
    `update_id`, only what that update wrote (see `_add_batch_metric`)."""
    if table_dir is not None:
        in_log = rows_per_batch_in_log(table_dir, checkpoint, batches, metric, last_commits, update_id)
        if in_log is not None:
            return in_log
    wanted = {int(b) for b in batches}
    qid = query_id(checkpoint)
    if not wanted or qid is None:
        return {}
    limit = f" LIMIT {int(last_commits)}" if last_commits else ""
    rows = spark.sql(f"DESCRIBE HISTORY {table}{limit}").select(
        "operationParameters", "operationMetrics", "userMetadata").collect()
    found: dict[int, int] = {}
    for row in rows:
        _add_batch_metric(found, row["operationParameters"], row["operationMetrics"], qid, wanted, metric,
                          row["userMetadata"], update_id)
    return found


def rows_per_batch_in_log(table_dir: Path, checkpoint: Path, batches: Iterable[int],
                          metric: str = "numOutputRows", last_commits: int | None = None,
                          update_id: str | None = None) -> dict[int, int] | None:
    """`rows_per_batch` read from the table's Delta log on this machine (`log_commits`) instead of
    through Spark. None unless every one of `batches` has a commit there: then ask Spark (a table
    elsewhere, or a batch older than the commits read)."""
    wanted = {int(b) for b in batches}
    qid = query_id(checkpoint)
    if not wanted or qid is None:
        return {}
    commits = log_commits(table_dir, last_commits)
    if commits is None:
        return None
    found: dict[int, int] = {}
    seen: set[int | None] = set()
    for _, _, info in commits:
        seen.add(_add_batch_metric(found, info.get("operationParameters"), info.get("operationMetrics"),
                                   qid, wanted, metric, info.get("userMetadata"), update_id))
    return found if wanted <= seen else None


@dataclass(frozen=True)
class BatchCommit:
    """A micro-batch's Delta commit to its target: what it appended (None: not recorded), when, and the
    lakewatch update that made it (its `userMetadata`; None: a commit without lakewatch's tag)."""

    rows: int | None
    bytes: int | None
    at: datetime
    update_id: str | None = None


CUT_BATCH_COMMITS = 100  # the newest commits of the target read for a cut micro-batch's own


def cut_batches(spark: Any, table: str, checkpoint: Path, table_dir: Path | None = None) -> dict[int, BatchCommit]:
    """Micro-batches of the checkpoint's query that `table` holds while the checkpoint does not hold
    them committed: the stream stopped between its two commits.

    Structured Streaming commits a micro-batch to its sink first and to the checkpoint's commit log
    after. A stop (Ctrl-C, SIGTERM, the recovery of a killed runner) or a crash between the two leaves
    the batch's rows in the table, no progress event for it, and the batch uncommitted in the
    checkpoint. The next run executes the batch again and Delta skips its write (the query id and the
    batch are in the table's transactions), so that update reports 0 rows for it. The rows belong to
    the update that made the commit (`BatchCommit.update_id`, from its `userMetadata`), and only the
    Delta commit says how many; its files were committed then. Found by the commit's `queryId` and
    `epochId`; read from the table's Delta log on this machine when `table_dir` holds commits of the
    query, else from Spark's DESCRIBE HISTORY."""
    planned = set(checkpoints.uncommitted_batches(checkpoint))
    qid = query_id(checkpoint)
    if not planned or qid is None:
        return {}
    commits = log_commits(table_dir, CUT_BATCH_COMMITS) if table_dir is not None else None
    if commits is not None and any((info.get("operationParameters") or {}).get("queryId") == qid
                                   for _, _, info in commits):
        entries = [(at, info.get("operationParameters"), info.get("operationMetrics"), info.get("userMetadata"))
                   for _, at, info in commits]
    else:  # no folder here, or one without this query's commits (maybe another table's): ask Spark
        rows = spark.sql(f"DESCRIBE HISTORY {table} LIMIT {CUT_BATCH_COMMITS}").select(
            "timestamp", "operationParameters", "operationMetrics", "userMetadata").collect()
        # collect() returns naive local time; make it an aware UTC time.
        entries = [(r["timestamp"].astimezone(timezone.utc), r["operationParameters"], r["operationMetrics"],
                    r["userMetadata"]) for r in rows]
    found = {}
    for at, params, metrics, written_by in entries:
        params, metrics = params or {}, metrics or {}
        if params.get("queryId") != qid or params.get("epochId") is None or int(params["epochId"]) not in planned:
            continue
        found[int(params["epochId"])] = BatchCommit(metric_of(metrics, "numOutputRows"),
                                                    metric_of(metrics, "numOutputBytes"), at, tagged_update(written_by))
    return found
