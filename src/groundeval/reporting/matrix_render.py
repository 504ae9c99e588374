"""Render a model matrix (``groundeval compare A B C ...``) as text, Markdown or JSON; all read ``matrix_dict``."""

from __future__ import annotations

import json
from typing import Any

from groundeval.records.run_record import FigureInterval
from groundeval.records.trial_stats import INTERVAL_METHOD
from groundeval.reporting.cases import CaseValues
from groundeval.reporting.matrix import Matrix, MatrixCase, MatrixFigure
from groundeval.reporting.render import comparison_dict, fmt, fmt_p, run_line
from groundeval.reporting.stats import METHOD
from groundeval.reporting.summary_md import MAX_LISTED, md_code, md_escape

__all__ = ["MCNEMAR_METHOD", "cell_text", "matrix_dict", "matrix_json", "matrix_markdown", "matrix_text"]

MCNEMAR_METHOD = (
    "exact McNemar test (scipy.stats.binomtest on the discordant cases, two-sided) over the cases with "
    "one counted trial in both runs"
)
"""How the per-run pass/fail test against the baseline is computed."""

MARKS = {"regressed": "!", "lost": "!", "improved": "+"}
"""A cell's mark in text and Markdown: against the baseline, ``!`` regressed or lost, ``+`` improved."""


def cell_text(cell: CaseValues | None) -> str:
    """``passed`` for one trial, ``2/3 passed`` for trials, the outcomes when none was counted, ``-`` when absent."""
    if cell is None:
        return "-"
    if cell.trials == 1:
        return cell.outcomes[0]
    if not cell.counted:
        return "/".join(dict.fromkeys(cell.outcomes))
    return f"{cell.passes}/{cell.counted} passed"


def _iv(iv: FigureInterval | None) -> str:
    return f"[{iv.low:.3f}, {iv.high:.3f}]" if iv is not None else ""


def _figure_dict(m: Matrix, f: MatrixFigure) -> dict[str, Any]:
    return {
        "name": f.name,
        "direction": f.direction,
        "best": [m.labels[i] for i in sorted(f.best)],
        "runs": [
            {
                "label": m.labels[i],
                "value": v,
                "interval": None
                if iv is None
                else {"low": iv.low, "high": iv.high, "cases": iv.cases, "method": iv.method},
                "vs_baseline": None
                if p is None
                else {
                    "diff": p.diff,
                    "interval": None
                    if p.interval is None
                    else {
                        "mean": p.interval.mean,
                        "low": p.interval.low,
                        "high": p.interval.high,
                        "n": p.interval.n,
                        "p_value": p.interval.p_value,
                        "distinguishable": p.interval.distinguishable,
                    },
                },
            }
            for i, (v, iv, p) in enumerate(zip(f.values, f.intervals, f.paired, strict=True))
        ],
    }


def _case_dict(m: Matrix, c: MatrixCase) -> dict[str, Any]:
    return {
        "case_id": c.case_id,
        "runs": [
            {
                "label": m.labels[i],
                "outcomes": list(cell.outcomes) if cell else None,
                "passes": cell.passes if cell else None,
                "counted": cell.counted if cell else None,
                "verdict": c.verdicts[i],
            }
            for i, cell in enumerate(c.cells)
        ],
    }


def matrix_dict(m: Matrix) -> dict[str, Any]:
    """The matrix as JSON-safe data (``groundeval compare A B C --format json``).

    Each non-baseline run's ``comparison`` is the two-run ``comparison_dict`` against the baseline.
    """
    return {
        "baseline": m.labels[m.baseline],
        "runs": [
            {
                "label": label,
                "run_id": r.run_id,
                "task": r.task,
                "agent": r.agent,
                "model": r.model,
                "complete": r.complete,
            }
            for label, r in zip(m.labels, m.runs, strict=True)
        ],
        "interval_method": INTERVAL_METHOD,
        "paired_interval_method": METHOD,
        "mcnemar_method": MCNEMAR_METHOD,
        "figures": [_figure_dict(m, f) for f in m.figures],
        "cases": [_case_dict(m, c) for c in m.cases],
        "mcnemar": {
            m.labels[i]: None
            if t is None
            else {
                "cases": t.cases,
                "baseline_only": t.baseline_only,
                "current_only": t.current_only,
                "p_value": t.p_value,
            }
            for i, t in enumerate(m.tests)
            if i != m.baseline
        },
        "comparisons": {m.labels[i]: comparison_dict(c) for i, c in enumerate(m.comparisons) if c is not None},
        "problems": m.problems,
        "gate_failed": m.gate_failed,
        "gate_reasons": m.gate_reasons(),
    }


def matrix_json(m: Matrix) -> str:
    """``matrix_dict`` as indented JSON."""
    return json.dumps(matrix_dict(m), indent=2, ensure_ascii=False)


def _differing(m: Matrix) -> list[MatrixCase]:
    """Cases whose outcome is not the same in every run: the regressed or lost first, then the rest."""
    rows = [c for c in m.cases if len({cell_text(cell) for cell in c.cells}) > 1]
    return sorted(rows, key=lambda c: not any(v in ("regressed", "lost") for v in c.verdicts))


def _cell(m: Matrix, c: MatrixCase, i: int) -> str:
    mark = MARKS.get(c.verdicts[i] or "", "")
    return f"{cell_text(c.cells[i])}{mark}"


def _gate_line(m: Matrix, fail_on_regression: bool) -> str | None:
    base = m.labels[m.baseline]
    if m.problems:
        return f"regression gate FAILED (exit status 2: some runs cannot be compared with {base}): " + "; ".join(
            m.problems
        )
    if m.gate_failed:
        head = (
            "regression gate FAILED (exit status 1)"
            if fail_on_regression
            else "regression gate: would fail with --fail-on-regression (exit status 0 without it)"
        )
        return f"{head} against {base}: " + "; ".join(m.gate_reasons())
    if fail_on_regression:
        return (
            f"regression gate passed (exit status 0): against {base}, no run has a case that regressed or was "
            "lost, a pass-rate drop beyond noise, or is incomplete or has an unreadable case file"
        )
    return None


def _value_text(m: Matrix, f: MatrixFigure, i: int) -> str:
    value = f.values[i]
    star = "*" if i in f.best else ""
    iv = _iv(f.intervals[i])
    return f"{fmt(value)}{star} {iv}".rstrip()


def matrix_text(m: Matrix, fail_on_regression: bool = False) -> str:
    """The terminal matrix: runs, warnings, figures per run with intervals, paired tests, differing cases.

    Args:
        m: The matrix.
        fail_on_regression: The command exits 1 when a gate fails (the gate's line says so).
    """
    base = m.labels[m.baseline]
    lines = [
        f"{label}{' (baseline)' if i == m.baseline else ''}: {run_line(r)}"
        for i, (label, r) in enumerate(zip(m.labels, m.runs, strict=True))
    ]
    for i, c in enumerate(m.comparisons):
        if c is not None:
            lines += [f"PROBLEM {m.labels[i]}: {p}: not compared case by case" for p in c.problems]
            lines += [f"WARNING {m.labels[i]} vs {base}: {w}" for w in c.warnings]
    w = max([16, *(len(f.name) + 2 for f in m.figures)])
    col = 26
    lines.append(f"{'figure':<{w}}" + "".join(f"{label:<{col}}" for label in m.labels))
    for f in m.figures:
        lines.append(f"{f.name:<{w}}" + "".join(f"{_value_text(m, f, i):<{col}}" for i in range(len(m.runs))))
    lines.append(f"* = best of the row; [interval] = the run's own 95% interval ({INTERVAL_METHOD})")
    lines.append(f"against {base}, per run: difference, 95% paired interval, Wilcoxon p ({METHOD})")
    for f in m.figures:
        cells = []
        for i, p in enumerate(f.paired):
            if p is None or p.diff is None:
                continue
            iv = p.interval
            ivs = f" {iv.text()}{' *' if iv.distinguishable else ''}" if iv else ""
            pv = f" p={fmt_p(iv.p_value)}" if iv and iv.p_value is not None else ""
            cells.append(f"{m.labels[i]}-{base} {fmt(p.diff, sign=True)}{ivs}{pv}")
        if cells:
            lines.append(f"  {f.name}: " + "; ".join(cells))
    for i, t in enumerate(m.tests):
        if t is not None:
            exact = fmt_p(t.p_value) or "- (no discordant case)"
            lines.append(
                f"  McNemar {m.labels[i]} vs {base}: {t.cases} cases, passed in {base} only "
                f"{t.baseline_only}, in {m.labels[i]} only {t.current_only}, exact p {exact}"
            )
    differing = _differing(m)
    lines.append(
        f"cases: {len(m.cases)}, {len(differing)} with outcomes that differ between runs "
        f"(! = regressed or lost against {base}, + = improved)"
    )
    cw = max([10, *(len(row.case_id) + 2 for row in differing)])
    if differing:
        lines.append(f"  {'case':<{cw}}" + "".join(f"{label:<16}" for label in m.labels))
    for row in differing:
        lines.append(f"  {row.case_id:<{cw}}" + "".join(f"{_cell(m, row, i):<16}" for i in range(len(m.runs))))
    gate = _gate_line(m, fail_on_regression)
    if gate:
        lines.append(gate)
    return "\n".join(line.rstrip() for line in lines)


def matrix_markdown(m: Matrix, fail_on_regression: bool = False) -> str:
    """The matrix as Markdown (``groundeval compare A B C --format markdown``, e.g. a CI step summary)."""
    base = m.labels[m.baseline]
    lines = ["### groundeval compare", ""]
    lines += [
        f"- {label}{' (baseline)' if i == m.baseline else ''}: {md_code(run_line(r))}"
        for i, (label, r) in enumerate(zip(m.labels, m.runs, strict=True))
    ]
    for i, c in enumerate(m.comparisons):
        if c is not None:
            lines += [f"- **problem** {m.labels[i]}: {md_escape(p)}" for p in c.problems]
            lines += [f"- **warning** {m.labels[i]} vs {base}: {md_escape(w)}" for w in c.warnings]
    lines += ["", "| figure | " + " | ".join(m.labels) + " |", "| --- |" + " ---: |" * len(m.labels)]
    for f in m.figures:
        cells = []
        for i, value in enumerate(f.values):
            text = fmt(value)
            text = f"**{text}**" if i in f.best else text
            iv = _iv(f.intervals[i])
            p = f.paired[i]
            vs = ""
            if p is not None and p.diff is not None:
                star = " \\*" if p.interval is not None and p.interval.distinguishable else ""
                vs = f"({fmt(p.diff, sign=True)}{star})"
            cells.append(" ".join(part for part in (text, iv, vs) if part))
        lines.append(f"| {md_escape(f.name)} | " + " | ".join(cells) + " |")
    lines += [
        "",
        f"<sub>bold = best of the row; [interval] = the run's own 95% interval; (difference from {base}, "
        f"\\* = its paired interval excludes 0: {md_escape(METHOD)})</sub>",
        "",
    ]
    for i, t in enumerate(m.tests):
        if t is not None:
            lines.append(
                f"- McNemar {m.labels[i]} vs {base}: {t.cases} cases, passed in {base} only "
                f"{t.baseline_only}, in {m.labels[i]} only {t.current_only}, exact p "
                f"{fmt_p(t.p_value) or '-'}"
            )
    differing = _differing(m)
    if differing:
        lines += [
            "",
            f"{len(differing)} of {len(m.cases)} cases differ (! = regressed or lost against {base}, + = improved)",
            "",
            "| case | " + " | ".join(m.labels) + " |",
            "| --- |" + " --- |" * len(m.labels),
        ]
        for row in differing[:MAX_LISTED]:
            lines.append(
                f"| {md_code(row.case_id)} | " + " | ".join(_cell(m, row, i) for i in range(len(m.runs))) + " |"
            )
        if len(differing) > MAX_LISTED:
            lines.append(f"\n... and {len(differing) - MAX_LISTED} more differing cases (the JSON has them all)")
    gate = _gate_line(m, fail_on_regression)
    if gate:
        lines += ["", f"**{md_escape(gate)}**"]
    return "\n".join(lines) + "\n"
