"""What the commands print about updates and jobs, and the exit codes they return: an update's summary
(one line per flow), the failure paragraph of an update that did not complete (its error, then the
insight: root-cause category and what to do), and the root cause of a failed flow. `pipelines.cli`
and `pipelines.demo` print through here.

Exit codes: 0 success, 1 a pipeline update failed (or an alert triggered, where asked), 2 bad input
or an error before anything ran, 128 plus the signal's number for a command a signal stopped.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol, Sequence

from pipelines import cancellation, insights
from pipelines.local.sdp_events import error_class

if TYPE_CHECKING:
    from pipelines.local.update.types import FlowResult, UpdateResult

EXIT_OK, EXIT_FAILED, EXIT_ERROR = 0, 1, 2


class Outcome(Protocol):
    """An update's or a job's result, as far as its exit code goes."""

    @property
    def canceled(self) -> cancellation.Canceled | None: ...

    @property
    def ok(self) -> bool: ...


def say(text: str) -> None:
    print(text, flush=True)


def exit_code(result: Outcome) -> int:
    """0 for a completed update or job; 128 plus the signal's number for one a signal stopped (or that
    completed while one came: the command was still asked to stop); else 1."""
    if result.canceled is not None:
        return int(result.canceled.exit_code)
    return EXIT_OK if result.ok else EXIT_FAILED


def summarize(result: UpdateResult) -> Sequence[str]:
    lines = [f"update {result.update_id} of '{result.pipeline_name}': {result.state} "
             f"in {(result.ended_at - result.started_at).total_seconds():.1f}s"]
    for flow in sorted(result.flows.values(), key=lambda f: f.short_name):
        rows = f"{flow.rows_written:>8} rows" if flow.rows_written is not None else " " * 13
        lines.append(f"  {flow.short_name:<40} {flow.status:<10} {rows}")
        if flow.status == "FAILED":
            lines.append(f"      {describe_failure(flow)}")
    return lines


def describe_failure(flow: FlowResult) -> str:
    """Root cause first (class and message), then the file it concerns when Spark names one."""
    # Here, not at the top: the expectations behind it load pyspark, which a command that prints no
    # update (`lakewatch --help`, `lakewatch check`) does not need.
    from pipelines.local.update.messages import databricks_message, one_line

    if not flow.exceptions:
        return one_line(databricks_message(flow.error))
    root = flow.exceptions[-1]
    text = f"{root.class_name}: {root.message}" if root.message else root.class_name
    for e in flow.exceptions:
        if error_class(e.message) and error_class(e.message).startswith(insights.FILE_ERROR_CLASS):
            text += f" ({one_line(e.message)})"
            break
    return one_line(text)


def failure_parts(result: UpdateResult) -> tuple[str, str, str]:
    """A failed update's error line (without `error: `), and its insight: root-cause category and what to do."""
    failed = result.failed_flows()
    if result.state == "CANCELED" and result.canceled is not None:
        detail = f"stopped by {result.canceled.why}"
    elif failed:
        detail = "; ".join(f"flow '{flow.short_name}' failed: {describe_failure(flow)}" for flow in failed)
    else:
        detail = f"{result.error_class_name}: {' '.join((result.error or '').split())[:800]}"
    texts = [result.error_class_name, result.error]
    for flow in failed:
        texts += [flow.error] + [f"{e.class_name} {e.message or ''}" for e in flow.exceptions]
    flows = result.flows.values()
    no_progress = not (result.error or failed) and not any(f.status == "COMPLETED" for f in flows) \
        and not any(f.rows_written for f in flows)
    category, action = insights.classify(insights.facts(result.state, texts, no_progress=no_progress))
    return f"update {result.update_id} of '{result.pipeline_name}' {result.state}: {detail}", category, action


def failure_paragraph(result: UpdateResult) -> str:
    """The error line of a failed update, then its insight: root-cause category and what to do."""
    error, category, action = failure_parts(result)
    return f"error: {error}\ninsight: {category}: {action}"


def update_document(result: UpdateResult) -> dict[str, object]:
    """An update as `lakewatch run -o json` prints it (its shape is documented in docs/cli.md)."""
    error, category, action = failure_parts(result) if not result.ok else (None, None, None)
    return {
        "update_id": result.update_id,
        "pipeline": result.pipeline_name,
        "state": result.state,
        "started_at": result.started_at.isoformat(),
        "ended_at": result.ended_at.isoformat(),
        "duration_seconds": round((result.ended_at - result.started_at).total_seconds(), 3),
        "flows": [{"name": f.short_name, "status": f.status, "rows_written": f.rows_written,
                   "error": describe_failure(f) if f.status == "FAILED" else None}
                  for f in sorted(result.flows.values(), key=lambda f: f.short_name)],
        "error": error,
        "insight": {"category": category, "action": action} if category is not None else None,
    }


def update_report(result: UpdateResult, timings: bool = False) -> list[str]:
    """What `lakewatch run` prints once the update is closed: its summary, its phases' timings when
    asked (`--verbose`), and the failure paragraph when it did not complete."""
    lines = list(summarize(result))
    if timings:
        lines.append("  timings: " + ", ".join(f"{name} {seconds:.2f}s" for name, seconds in result.timings))
    if not result.ok:
        lines.append(failure_paragraph(result))
    return lines


def task_report(task_key: str, state: str, error: str | None, update: UpdateResult | None) -> list[str]:
    """What `lakewatch job` prints for one of its tasks: its state, its error, and its update's summary
    and failure paragraph, indented under it."""
    lines = [f"task {task_key}: {state}"]
    if error is not None:
        lines.append(f"  {error}")
    if update is not None:
        lines += ["  " + line for line in summarize(update)]
        if not update.ok:
            lines.append("  " + failure_paragraph(update))
    return lines


def failed_on_purpose(number: int, result: UpdateResult) -> list[str]:
    """The demo's account of its update that fails on purpose (an incomplete upload): each failed flow's
    root cause, then the downstream flows SDP skipped."""
    lines = [f"update {number} ({result.update_id}) FAILED on purpose: flow {flow.short_name} could not "
             f"read an incomplete upload: {describe_failure(flow)}" for flow in result.failed_flows()]
    skipped = [f.short_name for f in result.flows.values() if f.status == "SKIPPED"]
    if skipped:
        lines.append(f"  downstream flows skipped: {', '.join(sorted(skipped))}")
    return lines
