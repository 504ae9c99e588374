"""Render a comparison as plain text (terminal) or JSON (scripts); both read ``comparison_dict``."""

from __future__ import annotations

import json
from typing import Any

from groundeval.records.run_record import RunRecord
from groundeval.reporting.compare import CaseDiff, CaseLost, Comparison, Figure, unmatched, unmatched_text
from groundeval.reporting.stats import METHOD, Interval

__all__ = ["comparison_dict", "comparison_json", "comparison_text", "fmt", "fmt_count", "fmt_p", "run_line"]


def fmt(value: float | None, digits: int = 3, sign: bool = False) -> str:
    """A number to ``digits`` decimals (``+`` sign when asked), ``-`` for None; an int (a count) as an int."""
    if value is None:
        return "-"
    if isinstance(value, int) and not isinstance(value, bool):  # format_not_ok, duplicates, tp: whole numbers
        return f"{value:+d}" if sign else str(value)
    return f"{value:+.{digits}f}" if sign else f"{value:.{digits}f}"


def fmt_p(value: float | None) -> str:
    """A p-value: ``<0.001`` below 0.001, else 3 significant digits (``0.0312``, ``0.5``, ``1``); ``""`` for None."""
    if value is None:
        return ""
    return "<0.001" if value < 0.001 else f"{value:.3g}"


def fmt_count(value: float | None, sign: bool = False) -> str:
    """A per-case value of a count dimension: whole numbers as ints, a mean over trials to 3 significant digits."""
    if value is None:
        return "-"
    if abs(value - round(value)) < 1e-9:
        return fmt(round(value), sign=sign)
    return f"{value:+.3g}" if sign else f"{value:.3g}"


def run_line(record: RunRecord) -> str:
    """``20261201T...  extraction  agent baseline  model -  25 cases`` (then ``+ 88 counterfactual twins``, if any)."""
    cases, kinds = unmatched(list(dict.fromkeys(c.case_id for c in record.cases)))
    twins = f" + {sum(kinds.values())} counterfactual twins" if kinds else ""
    agent = f"agent {record.agent}  model {record.model or '-'}"
    return f"{record.run_id}  {record.task}  {agent}  {len(cases)} cases{twins}"


def _interval(iv: Interval | None) -> dict[str, Any] | None:
    if iv is None:
        return None
    return {"mean": iv.mean, "low": iv.low, "high": iv.high, "n": iv.n, "p_value": iv.p_value,
            "method": iv.method, "distinguishable": iv.distinguishable}


def _figure(f: Figure) -> dict[str, Any]:
    return {"name": f.name, "a": f.a, "b": f.b, "diff": f.diff, "interval": _interval(f.interval)}


def _lost(c: CaseLost) -> dict[str, Any]:
    return {"case_id": c.case_id, "baseline_passes": c.baseline_passes, "baseline_trials": c.baseline_trials,
            "outcomes": list(c.outcomes), "outcome": c.outcome, "file_changed": c.file_changed,
            "collection_error": c.collection_error, "text": c.text()}


def _case(c: CaseDiff) -> dict[str, Any]:
    return {
        "case_id": c.case_id, "verdict": c.verdict,
        "outcomes_a": list(c.a.outcomes), "outcomes_b": list(c.b.outcomes),
        "pass_rate_a": c.a.pass_rate, "pass_rate_b": c.b.pass_rate,
        "changes": {k: {"a": x, "b": y, "diff": y - x} for k, (x, y) in c.changes.items()},
        "worse": c.regressed_dims(), "better": c.improved_dims(),
    }


def comparison_dict(comp: Comparison) -> dict[str, Any]:
    """The comparison as JSON-safe data (the ``--format json`` output)."""
    gate = comp.gate
    return {
        "a": {"run_id": comp.a.run_id, "task": comp.a.task, "agent": comp.a.agent, "model": comp.a.model},
        "b": {"run_id": comp.b.run_id, "task": comp.b.task, "agent": comp.b.agent, "model": comp.b.model},
        "checked": comp.checked, "warnings": comp.warnings, "problems": comp.problems,
        "dimensions": list(comp.dimensions), "directions": dict(comp.directions),
        "interval_method": METHOD,
        "figures": [_figure(f) for f in comp.figures],
        "cases": [_case(c) for c in comp.cases],
        "only_a": comp.only_a, "only_b": comp.only_b,
        "not_compared": gate.not_compared,
        "regressed": [c.case_id for c in gate.regressed], "improved": [c.case_id for c in gate.improved],
        "lost": [_lost(c) for c in gate.lost], "incomplete": gate.incomplete,
        "collection_errors": list(gate.collection_errors),
        "invalid_cases": list(gate.invalid_cases),
        "count_dimensions": sorted(comp.counts),
        "gate_failed": gate.failed, "gate_reasons": gate.reasons(), "ungated": gate.ungated,
    }


def comparison_json(comp: Comparison) -> str:
    """``comparison_dict`` as indented JSON."""
    return json.dumps(comparison_dict(comp), indent=2, ensure_ascii=False)


def change_value(comp: Comparison, name: str, value: float) -> str:
    """A per-case dimension value: a count dimension (``Comparison.counts``) as a whole number, else ``fmt``."""
    return fmt_count(value) if name in comp.counts else fmt(value)


def _change_text(comp: Comparison, c: CaseDiff) -> str:
    return ", ".join(f"{k} {change_value(comp, k, x)}->{change_value(comp, k, y)}" for k, (x, y) in c.changes.items())


def gate_verdict(comp: Comparison, fail_on_regression: bool) -> str:
    """The gate's line, saying what the exit status is: ``FAILED`` only when it makes the command fail."""
    reasons = "; ".join(comp.gate.reasons())
    if fail_on_regression:
        return f"regression gate FAILED (exit status 1): {reasons}"
    return f"regression gate: would fail with --fail-on-regression (exit status 0 without it): {reasons}"


def comparison_text(comp: Comparison, fail_on_regression: bool = False) -> str:
    """The terminal report: runs, checks, headline figures per task, changed cases, one-sided cases.

    Args:
        comp: The comparison.
        fail_on_regression: The command exits 1 when the gate fails (the gate's line says so).
    """
    lines = [f"A (baseline): {run_line(comp.a)}", f"B (current):  {run_line(comp.b)}"]
    lines.append("checked: " + "; ".join(comp.checked))
    lines += [f"PROBLEM: {p}: not compared case by case" for p in comp.problems]
    lines += [f"WARNING: {w}" for w in comp.warnings]
    if not comp.problems and not comp.warnings:
        lines.append("comparable: same task, groundeval version, task facts, task options, case files, trials "
                     "and twins")
    tasks = comp.a.task if comp.a.task == comp.b.task else f"{comp.a.task} | {comp.b.task}"
    lines.append(f"== {tasks} ==")
    w = max([26, *(len(f.name) + 2 for f in comp.figures)])
    lines.append(f"{'figure':<{w}}{'A':>10}{'B':>10}{'B-A':>10}  {'95% interval':<18}{'Wilcoxon p':>11}")
    for f in comp.figures:
        iv = f.interval
        ivs = iv.text() + (" *" if iv.distinguishable else "") if iv else ""
        p = fmt_p(iv.p_value) if iv else ""
        lines.append(f"{f.name:<{w}}{fmt(f.a):>10}{fmt(f.b):>10}{fmt(f.diff, sign=True):>10}  {ivs:<18}{p:>11}")
    lines.append(f"interval: {METHOD}; * = the interval excludes 0")
    gate = comp.gate
    lines.append(
        f"cases: {len(comp.cases)} compared, {len(comp.changed)} changed; regressed (passed->not passed): "
        f"{len(gate.regressed)}, lost (a verdict->none: excluded, not run or unreadable): {len(gate.lost)}, "
        f"improved (not->passed): {len(gate.improved)}; only in A: {unmatched_text(comp.only_a)}; "
        f"only in B: {unmatched_text(comp.only_b)}; "
        f"not compared: {len(gate.not_compared)}"
    )
    if gate.ungated is not None:
        lines.append(gate.ungated_line())
    if gate.failed:
        lines.append(gate_verdict(comp, fail_on_regression))
    elif gate.ungated is not None and (gate.regressed or gate.pass_rate_dropped):
        lines.append("regression gate passed (exit status 0): the regressions above rest on verdicts that are not "
                     "gated")
    for c in comp.changed:
        if c.verdict != "unchanged":
            label = c.verdict.upper()
        elif c.regressed_dims() and not c.improved_dims():
            label = "worse"
        elif c.improved_dims() and not c.regressed_dims():
            label = "better"
        else:
            label = "mixed"
        lines.append(f"  {label:<9} {c.case_id}: {_change_text(comp, c)}")
    lines += [f"  LOST      {c.text()}" for c in gate.lost]
    lines += [f"  UNREADABLE {e}" for e in gate.collection_errors]
    lines += [f"  INVALID {e}" for e in gate.invalid_cases]
    if not comp.problems:  # with different tasks every case is in one run only: counted above
        lines += [f"  only in A {k}" for k in unmatched(comp.only_a)[0]]  # twins: counted per perturbation above
        lines += [f"  only in B {k}" for k in unmatched(comp.only_b)[0]]
    lines += [f"  not compared {k}: {why}" for k, why in gate.not_compared.items()]
    return "\n".join(lines)
