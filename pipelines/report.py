"""`lakewatch report`: the last updates of the ingest pipeline in a terminal, from the observability tables
(the other observed pipelines' updates are left out: `pipelines_status` names the ingest pipeline's event log).

Per update: start, state, duration against its baseline (the median of up to `BASELINE_UPDATES`
earlier completed incremental updates, none before `MIN_HISTORY` of them), rows written to bronze,
the lowest business pass rate, the files still waiting, the values the `anomalies` table flags as
unusual for their own series, and for a failed or canceled update its insight (`run_insights`). Reads what the last observability refresh wrote; says when that was.
"""

from __future__ import annotations

import shutil
import textwrap
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Mapping, Sequence

from pipelines.observability.catalog import BRONZE_EXPECTATIONS

BASELINE_UPDATES = 20
MIN_HISTORY = 3

REPORT_SQL = f"""
WITH durations AS (
  SELECT
    update_id, start_time, final_state, full_refresh, duration_seconds,
    percentile(CASE WHEN final_state = 'COMPLETED' AND full_refresh IS NOT TRUE THEN duration_seconds END, 0.5)
      OVER (ORDER BY start_time ROWS BETWEEN {BASELINE_UPDATES} PRECEDING AND 1 PRECEDING) AS median_before,
    count(CASE WHEN final_state = 'COMPLETED' AND full_refresh IS NOT TRUE THEN duration_seconds END)
      OVER (ORDER BY start_time ROWS BETWEEN {BASELINE_UPDATES} PRECEDING AND 1 PRECEDING) AS history
  FROM update_status
  WHERE event_log IN (SELECT event_log FROM pipelines_status WHERE follows_lakewatch_pattern)
),
rows_in AS (
  SELECT update_id, sum(rows_written) AS bronze_rows, count_if(rows_written IS NULL) AS unmeasured
  FROM flow_throughput WHERE endswith(dataset, '_bronze') GROUP BY update_id
),
quality AS (
  SELECT update_id, min(pass_rate) AS lowest_pass_rate
  FROM expectation_results WHERE expectation NOT IN {BRONZE_EXPECTATIONS} GROUP BY update_id
),
waiting AS (
  SELECT update_id, sum(backlog_files) AS backlog_files FROM backlog GROUP BY update_id
),
unusual AS (
  SELECT update_id,
         array_sort(collect_list(named_struct('metric', metric, 'subject', subject, 'kind', kind, 'value', value,
                                              'baseline_median', baseline_median, 'score', score))) AS anomalies
  FROM anomalies GROUP BY update_id
)
SELECT
  d.update_id, d.start_time, d.final_state, d.full_refresh, d.duration_seconds,
  CASE WHEN d.history >= {MIN_HISTORY} THEN d.median_before END AS baseline_seconds,
  d.history AS baseline_updates,
  CASE WHEN coalesce(r.unmeasured, 0) = 0 THEN r.bronze_rows END AS bronze_rows,
  q.lowest_pass_rate, w.backlog_files, a.anomalies,
  i.category, i.recommended_action, i.failing_flow, i.definition_file, i.definition_line, i.message,
  i.root_cause_class, i.root_cause_message
FROM durations d
LEFT JOIN rows_in r ON d.update_id = r.update_id
LEFT JOIN quality q ON d.update_id = q.update_id
LEFT JOIN waiting w ON d.update_id = w.update_id
LEFT JOIN unusual a ON d.update_id = a.update_id
LEFT JOIN run_insights i ON d.update_id = i.update_id
ORDER BY d.start_time DESC
LIMIT {{last}}
"""

AS_OF_SQL = "SELECT max(checked_at) AS as_of FROM health_metrics"


def _number(value: float) -> str:
    return f"{value:,.0f}" if abs(value) >= 100 else f"{value:.3g}"


@dataclass(frozen=True)
class UpdateLine:
    """One update of the report (the columns of REPORT_SQL)."""

    row: Mapping[str, Any]

    def __getitem__(self, key: str) -> Any:
        return self.row[key]

    def duration_text(self) -> str:
        seconds = self["duration_seconds"]
        if seconds is None:
            return "duration unknown (still running, or no end event)"
        text = f"{seconds:.1f} s"
        baseline = self["baseline_seconds"]
        if baseline:
            text += f" ({seconds / baseline:.1f}x the median {baseline:.1f} s of {self['baseline_updates']} before)"
        else:
            text += f" (no baseline: {self['baseline_updates']} earlier completed updates, {MIN_HISTORY} needed)"
        return text

    def facts(self) -> list[str]:
        rows = self["bronze_rows"]
        rate = self["lowest_pass_rate"]
        waiting = self["backlog_files"]
        return [
            f"rows to bronze: {rows:,}" if rows is not None else "rows to bronze: not measured",
            f"lowest pass rate: {rate:.1%}" if rate is not None else "lowest pass rate: no business expectation counted",
            f"files waiting: {waiting}" if waiting is not None else "files waiting: not measured",
        ]

    def unusual(self) -> list[str]:
        """One line per flagged value: what, how far from its baseline."""
        return [f"unusual: {a['metric']} of {a['subject']}: {_number(a['value'])}, a {a['kind']} from the median "
                f"{_number(a['baseline_median'])} (score {a['score']:.1f})" for a in self["anomalies"] or []]

    def why(self) -> list[str]:
        if self["category"] is None:
            return []
        where = ""
        if self["failing_flow"]:
            where = f" in flow {self['failing_flow']}"
            if self["definition_file"]:
                where += f" ({self['definition_file']}:{self['definition_line']})"
        lines = [f"why: {self['category']}{where}"]
        if self["message"]:
            lines.append(f"error: {self['message']}")
        if self["root_cause_message"] and self["root_cause_message"] != self["message"]:
            cause = (self["root_cause_class"] or "").rsplit(".", 1)[-1]
            lines.append(f"root cause: {cause + ': ' if cause else ''}{self['root_cause_message']}")
        lines.append(f"do: {self['recommended_action']}")
        return lines


def render(updates: Sequence[UpdateLine], as_of: datetime | None, width: int | None = None) -> str:
    """The report as text, wrapped to `width` (the terminal's, at least 40 columns)."""
    width = max(40, width or shutil.get_terminal_size((80, 24)).columns)
    when = as_of.strftime("%Y-%m-%d %H:%M UTC") if as_of else "never"
    out = textwrap.wrap(f"lakewatch_ingest: last {len(updates)} updates, newest first (observability "
                        f"refreshed: {when})", width=width)
    if not updates:
        out.append("no updates in the observability tables yet")
    for u in updates:
        refresh = ", full refresh" if u["full_refresh"] else ""
        out.append("")
        out.extend(textwrap.wrap(f"{u['start_time']:%Y-%m-%d %H:%M:%S} {u['final_state']}{refresh} "
                                 f"{u['update_id'][:8]}", width=width))
        for line in [u.duration_text(), *u.facts(), *u.unusual(), *u.why()]:
            out.extend(textwrap.wrap(line, width=width, initial_indent="  ", subsequent_indent="      "))
    return "\n".join(out)


def collect(spark: Any, last: int) -> tuple[list[UpdateLine], datetime | None]:
    updates = [UpdateLine(r.asDict(recursive=True)) for r in spark.sql(REPORT_SQL.format(last=int(last))).collect()]
    as_of = spark.sql(AS_OF_SQL).collect()[0]["as_of"]
    return updates, as_of
