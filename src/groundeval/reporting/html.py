"""A self-contained HTML report of one run, or of two runs with their comparison.

One file, no network access when opened: CSS inline, no scripts, no fonts or images, and a
Content-Security-Policy that forbids loading anything. Rendered with jinja2 (imported lazily)
with autoescaping on, because case text (messages, displays, reasons, agent output) is untrusted.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from groundeval.outcomes import POLICY
from groundeval.reporting.compare import compare_runs
from groundeval.reporting.render import comparison_dict, fmt
from groundeval.reporting.stats import METHOD
from groundeval.run_record import CaseRecord, RunRecord
from groundeval.trial_stats import record_trial_stats

__all__ = ["render_report", "write_report"]

ORDER = tuple(rule.outcome for rule in POLICY)
SCORE_COLUMNS = ("f1", "precision", "recall", "display_accuracy")
WRITE_DIMENSIONS = ("schema", "coding", "constraints", "safety")


def _meds(items: object) -> list[str]:
    """``["316049 Hydrochlorothiazide 25 MG", ...]`` from a scorer's missing/extra list."""
    out = []
    for item in items if isinstance(items, list) else []:
        if not isinstance(item, Mapping):
            continue
        codes = item.get("codes")
        code = "/".join(str(c) for c in codes) if isinstance(codes, list) and codes else item.get("rxnorm_code")
        note = f" [{item['note']}]" if item.get("note") else ""
        out.append(f"{code or '(uncoded)'} {item.get('display') or ''}{note}".strip())
    return out


def _case_row(case: CaseRecord) -> dict[str, Any]:
    details = case.details
    found = details.get("dimensions")
    dims: Mapping[str, Any] = found if isinstance(found, Mapping) else {}
    mismatches = [
        f"{d.get('rxnorm_code') or '(uncoded)'}: expected {d.get('expected')!r}, got {d.get('got')!r}"
        for d in details.get("display_mismatches") or [] if isinstance(d, Mapping)
    ]
    return {
        "case_id": case.case_id,
        "trial": case.trial,
        "outcome": case.outcome,
        "scores": {k: fmt(v) if isinstance(v, float) else ("-" if v is None else str(v))
                   for k in SCORE_COLUMNS if k in case.metrics for v in [case.metrics[k]]},
        "missing": _meds(details.get("missing")),
        "extra": _meds(details.get("extra")),
        "mismatches": mismatches,
        "dimensions": [
            {"name": k, "ok": bool(dims[k].get("ok")), "reasons": [str(r) for r in dims[k].get("reasons") or []]}
            for k in WRITE_DIMENSIONS if isinstance(dims.get(k), Mapping)
        ],
        "error": f"{case.error.type}: {case.error.message}" if case.error else "",
        "latency_s": fmt(case.latency_s, 2),
        "cost_usd": case.usage.get("cost_usd"),
    }


def _run_view(record: RunRecord) -> dict[str, Any]:
    agg = record.aggregate
    stats = record_trial_stats(record)
    ivs = stats.intervals
    values: list[tuple[str, Any]] = [("pass_rate", agg.pass_rate), ("answer_rate", agg.answer_rate)]
    values += list(agg.metrics.items())
    figures: list[dict[str, Any]] = []
    for name, value in values:
        iv = ivs.get(name)
        number = isinstance(value, int | float) and not isinstance(value, bool)
        shown = str(value) if isinstance(value, int) and not isinstance(value, bool) else (
            fmt(value) if number else str(value))  # counts (duplicates) stay whole numbers
        figures.append({"name": name, "value": value, "shown": shown,
                        "interval": iv.text() if iv is not None else ""})
    bars = [
        {"name": f["name"], "value": float(f["value"]), "pct": round(100 * float(f["value"]), 1)}
        for f in figures
        if isinstance(f["value"], float) and 0 <= f["value"] <= 1  # rates only: counts are ints
    ]
    usage = {k: ("unknown" if v is None and k == "cost_usd" else v) for k, v in agg.usage.items()}
    return {
        "record": record, "figures": figures, "bars": bars, "usage": usage, "trials": stats,
        "show_trials": stats.k > 1 or stats.min_pass_rate is not None,
        "counts": [(k, agg.counts[k]) for k in ORDER if k in agg.counts],
        "cases": [_case_row(c) for c in record.cases],
        "case_count": len({c.case_id for c in record.cases}),
        "score_columns": [k for k in SCORE_COLUMNS if any(k in c.metrics for c in record.cases)],
        "has_dimensions": any(isinstance(c.details.get("dimensions"), Mapping) for c in record.cases),
        "has_meds": any("missing" in c.details for c in record.cases),
    }


def render_report(record: RunRecord, other: RunRecord | None = None) -> str:
    """The HTML report of ``record``; with ``other`` (the current run), both runs and their comparison.

    Args:
        record: The run (the baseline when ``other`` is given).
        other: A second run compared against ``record``, or None.

    Returns:
        One HTML document (UTF-8 text) that loads nothing from the network.
    """
    import jinja2

    env = jinja2.Environment(
        loader=jinja2.PackageLoader("groundeval.reporting", "templates"), autoescape=True,
        undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True,
    )
    runs = [_run_view(record)] + ([_run_view(other)] if other is not None else [])
    comparison = comparison_dict(compare_runs(record, other)) if other is not None else None
    return env.get_template("report.html").render(
        runs=runs, comparison=comparison, method=METHOD, fmt=fmt,
    )


def write_report(path: str | Path, record: RunRecord, other: RunRecord | None = None) -> Path:
    """Render the report and write it to ``path`` (UTF-8); returns the path."""
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(render_report(record, other), encoding="utf-8")
    return out
