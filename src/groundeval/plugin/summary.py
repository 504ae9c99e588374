"""The terminal summary, read from the finished run record: never recomputed here.

It leads with what cannot be gamed (how many cases were scored, the pass rate, the answer rate),
then the task's means, then usage; partial cases are listed above the table so that the table is
the last thing a run prints.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from groundeval.outcomes import POLICY
from groundeval.redaction import clean_text
from groundeval.run_record import Aggregate, RunRecord
from groundeval.scoring import Metric

__all__ = ["format_table", "write_summary"]

ORDER = tuple(rule.outcome for rule in POLICY)


def _fmt(value: Metric) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.3f}"
    return str(value)


def _fmt_usage(key: str, value: Metric) -> str:
    """Token counts as integers; cost in USD to 1e-6, or ``unknown`` when a model is unpriced."""
    if key == "cost_usd":
        return "unknown (no list price for the model)" if value is None else f"{float(value):.6f}"
    return _fmt(value)


def format_table(agg: Aggregate, header: str) -> list[str]:
    """Render a run's aggregate as text lines.

    Metrics named ``micro_<m>``/``macro_<m>`` become a two-row table with one column per ``<m>``;
    other metrics are listed as ``name: value``.
    """
    lines = [header]
    ran = agg.cases - agg.not_run
    if agg.excluded or agg.not_run:
        excluded = ", ".join(
            f"{k} {agg.counts[k]}" for k in ORDER if k in agg.counts and k not in ("not_run",)
            and k not in ("passed", "partial", "failed", "no_answer", "truncated", "agent_loop", "refusal")
        )
        lines.append(
            f"scored {agg.counted} of {agg.selected} cases: {agg.excluded} excluded"
            + (f" ({excluded})" if excluded else "") + f", {agg.not_run} not run"
            + (f"; pass rate over every case that ran: {_fmt(agg.pass_rate_ran)}" if agg.excluded else "")
        )
    passed = agg.counts.get("passed", 0)
    lines.append(
        f"pass rate: {_fmt(agg.pass_rate)} ({passed}/{agg.counted})  answer rate: {_fmt(agg.answer_rate)}"
        f"  (over the {agg.counted} counted cases; {ran} ran)"
    )
    lines.append("outcomes: " + "  ".join(f"{k}: {agg.counts[k]}" for k in ORDER if k in agg.counts))
    metrics = agg.metrics
    columns = [k[len("micro_"):] for k in metrics if k.startswith("micro_")]
    if columns:
        width = max(12, *(len(c) + 2 for c in columns))
        lines.append(" " * 8 + "".join(c.rjust(width) for c in columns))
        for avg in ("micro", "macro"):
            lines.append(avg.ljust(8) + "".join(_fmt(metrics.get(f"{avg}_{c}")).rjust(width) for c in columns))
    for key, value in metrics.items():
        if not key.startswith(("micro_", "macro_")):
            lines.append(f"{key}: {_fmt(value)}")
    if agg.usage:
        lines.append("usage: " + "  ".join(f"{k}: {_fmt_usage(k, v)}" for k, v in agg.usage.items()))
    return lines


def _run_shape(record: RunRecord) -> list[str]:
    """Trials and concurrency, when they are not the plain one-call-per-item run."""
    settings = record.settings
    lines = []
    trials = settings.get("trials")
    if isinstance(trials, int) and trials > 1:
        lines.append(f"trials: {trials} per case")
    n = settings.get("concurrency")
    workers = settings.get("workers")
    if isinstance(n, int) and n > 1:
        total = f" per worker x {workers} workers = {n * workers}" if isinstance(workers, int) and workers > 1 else ""
        lines.append(f"concurrency: {n} agent calls in flight at most{total}")
    if record.dropped_calls:
        lines.append(
            f"{record.dropped_calls} agent calls made ahead were dropped when the run stopped "
            "(paid for or in flight, never scored; --groundeval-cache keeps answers for the next run)"
        )
    return lines


def write_summary(tr: Any, record: RunRecord, path: Path | None) -> None:
    """Write the groundeval section to pytest's terminal reporter.

    Args:
        tr: pytest's ``TerminalReporter``.
        record: The finished run record (the summary reads it, never recomputes it).
        path: Where the record was written, or None.
    """
    partial = [c for c in record.cases if c.outcome == "partial"]
    if partial:  # pytest's short summary does not list a custom category: one line each, reason first
        tr.write_sep("-", "partial cases")
        for case in partial:
            first, *rest = case.message.splitlines() or [""]
            tr.write_line(f"PARTIAL {case.nodeid} - {clean_text(first)}")
            for line in rest:
                tr.write_line(f"    {clean_text(line)}")
    tr.write_sep("=", f"groundeval {record.task}")
    header = f"agent: {record.agent}  model: {record.model or '-'}  run: {record.run_id}"
    lines = format_table(record.aggregate, header)
    if record.collection_errors:  # files that never became cases: said at the top, not the bottom
        lines.insert(1, f"malformed case files (collection errors, not scored): {len(record.collection_errors)}")
    lines[1:1] = _run_shape(record)
    for line in lines:
        tr.write_line(clean_text(line))
    if not record.complete:
        tr.write_line(
            f"INCOMPLETE: {record.stop_reason}; {record.aggregate.not_run} selected case(s) did not run and "
            "these numbers cover only the cases that ran", red=True, bold=True,
        )
    if path is not None:
        tr.write_line(f"run record: {path}")
