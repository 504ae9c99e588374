"""The terminal summary: one table of run-level numbers, then the partial cases."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from groundeval.records import Metric
from groundeval.runner import summarize
from groundeval.tracing import redact

if TYPE_CHECKING:
    from groundeval.plugin.session import GroundevalSession

__all__ = ["format_table", "write_summary"]

COUNT_ORDER = ("passed", "partial", "failed", "error", "infra_error", "auth_error", "truncated", "agent_loop")


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


def format_table(aggregate: dict[str, Any], header: str) -> list[str]:
    """Render a run summary as text lines.

    Metrics named ``micro_<m>``/``macro_<m>`` become a two-row table with one column per ``<m>``;
    other metrics are listed as ``name: value``.
    """
    lines = [header]
    counts = aggregate.get("counts", {})
    names = [k for k in COUNT_ORDER if k in counts or k in ("passed", "partial", "failed", "error")]
    lines.append(
        f"cases: {aggregate.get('cases', 0)}  "
        + "  ".join(f"{k}: {counts.get(k, 0)}" for k in names)
        + f"  (excluded from scores: {aggregate.get('excluded', 0)})"
    )
    metrics: dict[str, Metric] = aggregate.get("metrics", {})
    columns = [k[len("micro_"):] for k in metrics if k.startswith("micro_")]
    if columns:
        width = max(12, *(len(c) + 2 for c in columns))
        lines.append(" " * 8 + "".join(c.rjust(width) for c in columns))
        for avg in ("micro", "macro"):
            lines.append(avg.ljust(8) + "".join(_fmt(metrics.get(f"{avg}_{c}")).rjust(width) for c in columns))
    for key, value in metrics.items():
        if not key.startswith(("micro_", "macro_")):
            lines.append(f"{key}: {_fmt(value)}")
    usage = aggregate.get("usage") or {}
    if usage:
        lines.append("usage: " + "  ".join(f"{k}: {_fmt_usage(k, v)}" for k, v in usage.items()))
    return lines


def write_summary(tr: Any, gs: GroundevalSession) -> None:
    """Write the groundeval section to pytest's terminal reporter."""
    records = list(gs.records.values())
    aggregate = summarize(gs.task, records)
    info = gs.info
    tr.write_sep("=", f"groundeval {info.task}")
    header = f"agent: {info.agent}  model: {info.model or '-'}  run: {info.run_id}"
    for line in format_table(aggregate, header):
        tr.write_line(redact(line))
    if gs.collection_errors:
        tr.write_line(f"malformed case files (collection errors): {len(gs.collection_errors)}")
    if not gs.complete:
        tr.write_line(
            "INCOMPLETE: the run stopped early (-x, Ctrl-C, a signal, an auth error or an unreachable "
            "API); these numbers cover only the cases that ran", red=True, bold=True,
        )
    if gs.record_path is not None:
        tr.write_line(f"run record: {gs.record_path}")
    partial = sorted((r for r in records if r["outcome"] == "partial"), key=lambda r: r["case_id"])
    if partial:
        tr.write_sep("-", "partial cases")
        for rec in partial:
            tr.write_line(f"PARTIAL {rec['nodeid']}")
            for line in str(rec.get("message", "")).splitlines():
                tr.write_line(f"    {redact(line)}")
