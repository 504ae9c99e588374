"""Compare two run records case by case: headline figures, per-case changes, the regression gate.

Cases are pooled over their trials (``groundeval.reporting.cases``); the gate is
``groundeval.reporting.gate``. What makes two runs comparable is checked and reported, never
assumed: the task, each case's fixture SHA-256 (a case whose file changed is not compared), the
groundeval version (there is no scorer version yet; the package version stands for it),
``task_facts``, the task options (thresholds decide ``passed``) and whether each run is complete.
A case that had a verdict in A and has none in B (excluded, not run, or its case file is one of
B's collection errors) is *lost*, not "not compared", even when its case file changed: it fails
the gate (``groundeval.reporting.gate``), as does every collection error of B.

Nothing here knows a task's metric names. Per case, every dimension of either record is compared
(``passed``, ``answered``, then the metrics of ``RunRecord.metric_names``, current run's order
first; ``cases.dimensions``), and a change is better or worse by the record's
``metric_directions``. The headline figures are the records' own: pass rate (then ``pass_rate_ran``, over every case
that ran, when either run excluded or did not run a case; each such run is also a warning that
states its scope, ``groundeval.records.scope``), answer rate, every
figure of ``Aggregate.metrics`` and usage; a figure gets a paired interval when it is the mean of a
per-case dimension, by the naming rule of ``figure_dimension`` (``macro_<m>``, ``<m>_pass_rate``),
over the original cases, or when it is ``record_sensitivity`` (``[<kind>]``), over the
counterfactual twins judged in both runs (``groundeval.records.sensitivity.pair_values``).
"""

from __future__ import annotations

import json
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from groundeval.records.dimensions import figure_dimension
from groundeval.records.run_record import Counterfactual, RunRecord
from groundeval.records.scope import UNGATED_FACT, pass_rate_ran, ran, scope_needed, statement
from groundeval.records.sensitivity import pair_values, sensitivity_figure
from groundeval.records.trial_ids import split_twin
from groundeval.reporting.cases import (
    EPS,
    CaseValues,
    better,
    case_values,
    dimensions,
    directions,
    load_record,
)
from groundeval.reporting.gate import (
    UNREADABLE,
    CaseGate,
    CaseLost,
    GateResult,
    collection_error_lines,
    gate_case,
    invalid_case_lines,
    lost_case,
    unreadable_files,
)
from groundeval.reporting.stats import Interval, paired_interval
from groundeval.scoring import Direction

__all__ = [
    "CaseDiff",
    "CaseGate",
    "CaseLost",
    "CaseValues",
    "Comparison",
    "Figure",
    "GateResult",
    "case_values",
    "compare_runs",
    "dimensions",
    "figure_dimension",
    "load_record",
    "regressions",
    "sensitivity_lost",
    "unmatched",
    "unmatched_text",
]


def regressions(baseline: RunRecord, current: RunRecord) -> GateResult:
    """The regression gate of ``current`` against ``baseline`` (see ``GateResult``).

    It fails on regressed cases (passed -> not passed), lost cases (a verdict in the baseline, none
    now: excluded, not run or its file unreadable), a pass-rate drop beyond noise, an incomplete
    ``current`` run and any collection error of ``current`` (a case file that could not be read).
    """
    return compare_runs(baseline, current).gate


@dataclass(frozen=True, slots=True)
class CaseDiff:
    """One case present in both runs.

    Attributes:
        case_id: The case id.
        a: The case in run A.
        b: The case in run B.
        changes: Dimension -> (A value, B value) for every dimension whose value changed.
        verdict: The gate's verdict on the case's pass rate.
        directions: Dimension -> direction where higher is not better (``RunRecord.metric_directions``).
    """

    case_id: str
    a: CaseValues
    b: CaseValues
    changes: dict[str, tuple[float, float]]
    verdict: Literal["regressed", "improved", "unchanged"]
    directions: Mapping[str, Direction] = field(default_factory=dict)

    def regressed_dims(self) -> list[str]:
        """Dimensions whose value got worse (down, or up for a ``lower`` one; never a ``none`` one)."""
        return [k for k, (x, y) in self.changes.items() if better(self.directions.get(k), x, y) is False]

    def improved_dims(self) -> list[str]:
        """Dimensions whose value got better."""
        return [k for k, (x, y) in self.changes.items() if better(self.directions.get(k), x, y) is True]


@dataclass(frozen=True, slots=True)
class Figure:
    """One headline figure side by side.

    Attributes:
        name: The aggregate's name (``pass_rate``, ``micro_f1``, ``cost_usd``, ...).
        a: Run A's value, or None.
        b: Run B's value, or None.
        interval: Paired interval of the per-case difference when the figure is a mean of a
            per-case dimension (pass rate, macro means, dimension pass rates), else None.
        comparable: False when the runs are not comparable (different tasks): no difference.
    """

    name: str
    a: float | None
    b: float | None
    interval: Interval | None = None
    comparable: bool = True

    @property
    def diff(self) -> float | None:
        """``b - a``, or None when either is missing or the runs are not comparable."""
        return None if self.a is None or self.b is None or not self.comparable else self.b - self.a


@dataclass(frozen=True, slots=True)
class Comparison:
    """Run A (baseline) against run B (current).

    Attributes:
        a: Run A.
        b: Run B.
        checked: What was compared to decide comparability, one line each.
        warnings: Differences that make figures not strictly comparable (groundeval version,
            task facts, thresholds, fixture hashes); the figures are still shown.
        problems: Differences that stop a case-level comparison (different tasks).
        figures: Headline figures.
        cases: Cases compared (in both runs, counted on both sides, same fixture).
        only_a: Case ids only in run A (a case whose file is a collection error of B and that had a
            verdict in A is lost instead, in ``gate.lost``).
        only_b: Case ids only in run B.
        gate: The regression gate.
        dimensions: The per-case dimensions compared, in display order (``cases.dimensions``).
        directions: Dimension -> direction where higher is not better.
        counts: Dimensions whose every per-case value in both runs is an integer (``tp``, ``fp``,
            ``duplicates``): shown as whole numbers.
    """

    a: RunRecord
    b: RunRecord
    checked: list[str]
    warnings: list[str]
    problems: list[str]
    figures: list[Figure]
    cases: list[CaseDiff]
    only_a: list[str]
    only_b: list[str]
    gate: GateResult
    dimensions: tuple[str, ...] = ()
    directions: Mapping[str, Direction] = field(default_factory=dict)
    counts: frozenset[str] = frozenset()

    @property
    def changed(self) -> list[CaseDiff]:
        """Compared cases with at least one changed dimension, the regressed ones first (then case order)."""
        return sorted((c for c in self.cases if c.changes), key=lambda c: c.verdict != "regressed")


PASSED_LINE = ("regression gate passed (exit status 0): no case regressed or was lost, the pass rate did not drop "
               "beyond noise, and run B is complete with every case file read")
"""What ``groundeval compare --fail-on-regression`` says when its gate passes."""

def _num(value: object) -> float | None:
    """A number as it is (an int count stays an int, so it prints as one), else None."""
    return value if isinstance(value, int | float) and not isinstance(value, bool) else None


def _count_dimensions(dims: Collection[str], *records: RunRecord) -> frozenset[str]:
    """Dimensions some case has whose every value, in every record, is an int (not a bool)."""
    seen: dict[str, bool] = {}
    for record in records:
        for case in record.cases:
            for name, value in case.metrics.items():
                if name in dims and value is not None:
                    whole = isinstance(value, int) and not isinstance(value, bool)
                    seen[name] = seen.get(name, True) and whole
    return frozenset(k for k, whole in seen.items() if whole)


def _differences(a: Any, b: Any, path: str = "") -> list[str]:
    """Each key path where two JSON values differ, as ``path: A vs B`` (values cut to 80 characters).

    ``{"judge_card": {"kappa": 0.87}}`` against ``{"judge_card": {"kappa": 0.91}}`` gives
    ``["judge_card.kappa: 0.87 vs 0.91"]``; a key on one side only shows ``(absent)`` on the other.
    """
    if isinstance(a, dict) and isinstance(b, dict):
        out: list[str] = []
        for key in sorted(set(a) | set(b), key=str):
            where = f"{path}.{key}" if path else str(key)
            if key not in a or key not in b:
                out.append(f"{where}: {_cut(a.get(key), key in a)} vs {_cut(b.get(key), key in b)}")
            elif a[key] != b[key]:
                out += _differences(a[key], b[key], where)
        return out
    return [f"{path or 'value'}: {_cut(a, True)} vs {_cut(b, True)}"]


def _cut(value: Any, present: bool) -> str:
    if not present:
        return "(absent)"
    text = json.dumps(value, sort_keys=True)
    return text if len(text) <= 80 else text[:77] + "..."


def _checks(a: RunRecord, b: RunRecord) -> tuple[list[str], list[str], list[str]]:
    checked = ["task", "groundeval version (no scorer version field yet)", "task_facts", "task options (thresholds)",
               "fixture SHA-256 per case", "trials per case", "counterfactual twins"]
    warnings: list[str] = []
    problems: list[str] = []
    if a.task != b.task:
        problems.append(f"different tasks: {a.task} vs {b.task}")
    va, vb = a.packages.get("groundeval", "?"), b.packages.get("groundeval", "?")
    if va != vb:
        warnings.append(f"groundeval version differs ({va} vs {vb}): scorers may differ")
    if a.task_facts != b.task_facts:
        warnings.append(f"task_facts differ: {'; '.join(_differences(a.task_facts, b.task_facts))}")
    oa, ob = a.settings.get("task_options", {}), b.settings.get("task_options", {})
    if oa != ob:
        warnings.append(f"task options differ: {json.dumps(oa, sort_keys=True)} vs {json.dumps(ob, sort_keys=True)}")
    ta, tb = a.settings.get("trials", 1), b.settings.get("trials", 1)
    if ta != tb:
        warnings.append(f"trials differ ({ta} vs {tb}): each case's pass rate pools a different number of samples, "
                        "so per-case verdicts and pass^k are not like for like")
    ca, cb = a.aggregate.counterfactual, b.aggregate.counterfactual
    if (ca is None) != (cb is None):
        had, lacks = ("A", "B") if cb is None else ("B", "A")
        twins = (ca or cb or Counterfactual()).twins
        warnings.append(f"run {lacks} has no counterfactual twins where run {had} had {twins} (run {lacks} ran without "
                        "--groundeval-counterfactual): record_sensitivity is not compared"
                        + ("; --fail-on-regression fails on it" if lacks == "B" and sensitivity_lost(a, b) else ""))
    for name, run in (("A", a), ("B", b)):
        if scope_needed(run.aggregate):  # its pass rate covers only the counted cases: say what it leaves out
            warnings.append(f"run {name} {statement(run.aggregate, 'scope')}")
        if not run.complete:
            agg = run.aggregate
            warnings.append(
                f"run {name} is incomplete ({run.stop_reason or 'interrupted'}): {ran(agg)} of "
                f"{agg.selected} selected cases ran, {agg.not_run} not run; its figures cover only the cases that ran"
                + ("; --fail-on-regression fails on it" if name == "B" else "")
            )
    return checked, warnings, problems


def compare_runs(a: RunRecord, b: RunRecord) -> Comparison:
    """Compare run B (current) with run A (baseline).

    Returns:
        The comparison; when the tasks differ, only the headline figures are filled and
        ``problems`` says why (nothing is compared case by case or gated).
    """
    checked, warns, problems = _checks(a, b)
    dims, dirs = dimensions(b, a), directions(a, b)
    va, vb = case_values(a.cases, dims), case_values(b.cases, dims)
    only_a = [k for k in va if k not in vb]
    only_b = [k for k in vb if k not in va]
    cases: list[CaseDiff] = []
    gates: list[CaseGate] = []
    not_compared: dict[str, str] = {}
    lost: list[CaseLost] = []
    changed_fixtures = 0
    if not problems:
        for case_id, cb in vb.items():
            ca = va.get(case_id)
            if ca is None:
                continue
            changed = bool(ca.fixture_sha256 and cb.fixture_sha256 and ca.fixture_sha256 != cb.fixture_sha256)
            changed_fixtures += changed
            if (lost_one := lost_case(ca, cb)) is not None:  # a verdict before, none now: fails the gate, file
                lost.append(lost_one)  # changed or not (a file edited into an invalid_case is lost)
                continue
            if changed:  # a changed file stops only the comparison of verdicts
                not_compared[case_id] = "the case file changed (fixture SHA-256 differs)"
                continue
            if not ca.counted or not cb.counted:
                side = "baseline" if not ca.counted else "current run"
                outcomes = ca.outcomes if not ca.counted else cb.outcomes
                not_compared[case_id] = f"not counted in the {side} ({', '.join(sorted(set(outcomes)))})"
                continue
            changes = {
                k: (ca.values[k], cb.values[k]) for k in dims
                if k in ca.values and k in cb.values and abs(ca.values[k] - cb.values[k]) > EPS
            }
            verdict = gate_case(ca, cb)
            gates.append(verdict)
            cases.append(CaseDiff(case_id, ca, cb, changes, verdict.verdict, dirs))
        lost += _unreadable_lost(a, b, va, only_a)
        gone = {c.case_id for c in lost}
        only_a = [k for k in only_a if k not in gone]
    if changed_fixtures:
        warns.append(f"{changed_fixtures} case file(s) changed between the runs (fixture SHA-256): their verdicts are "
                     "not compared (one without a verdict now is still lost)")
    figures = _figures(a, b, cases, dims, comparable=not problems)
    pass_iv = next((f.interval for f in figures if f.name == "pass_rate"), None)
    sens_iv = next((f.interval for f in figures if f.name == "record_sensitivity"), None)
    incomplete = None if b.complete else (b.stop_reason or "interrupted")
    ungated = "; ".join(dict.fromkeys(str(r.task_facts[UNGATED_FACT]) for r in (a, b)
                                      if r.task_facts.get(UNGATED_FACT)))
    gate = GateResult(a.run_id, b.run_id, tuple(gates), not_compared, pass_iv, tuple(problems), tuple(lost),
                      incomplete, collection_error_lines(b), invalid_case_lines(b), len(only_a), sens_iv,
                      ungated or None, None if problems else sensitivity_lost(a, b))
    return Comparison(a, b, checked, warns, problems, figures, cases, only_a, only_b, gate, dims, dirs,
                      _count_dimensions(dims, a, b))


def sensitivity_lost(a: RunRecord, b: RunRecord) -> str | None:
    """Why run B has no ``record_sensitivity`` where baseline A had one (the gate fails on it), or None.

    Args:
        a: The baseline run.
        b: The current run.
    """
    ca, cb = a.aggregate.counterfactual, b.aggregate.counterfactual
    if ca is None or ca.record_sensitivity is None or (cb is not None and cb.record_sensitivity is not None):
        return None
    had = f"the baseline had it over {ca.record_sensitivity.cases} twins"
    if cb is None:
        return f"{had}; the current run has no counterfactual twins (run it with --groundeval-counterfactual)"
    if not cb.not_judged:
        return f"{had}; the current run has no judged twin whose truth changed"
    why = ", ".join(f"{k} {n}" for k, n in cb.not_judged.items())
    return (f"{had}; the current run judged none of its {cb.twins} twins whose truth changed "
            f"({sum(cb.not_judged.values())} not judged: {why})")


def unmatched(ids: Sequence[str]) -> tuple[list[str], dict[str, int]]:
    """Case ids only in one run, split: the original cases' ids, and twins counted per perturbation.

    Returns:
        The ids that are not counterfactual twins, and ``{perturbation: twins}`` (in first-seen order).
    """
    cases: list[str] = []
    kinds: dict[str, int] = {}
    for i in ids:
        kind = split_twin(i)[1]
        if kind is None:
            cases.append(i)
        else:
            kinds[kind] = kinds.get(kind, 0) + 1
    return cases, kinds


def unmatched_text(ids: Sequence[str]) -> str:
    """``2 cases and 177 counterfactual twins (stop-active 44, swap-drug 44, ...)`` for ids only in one run."""
    cases, kinds = unmatched(ids)
    if not kinds:
        return str(len(cases))
    per = ", ".join(f"{k} {n}" for k, n in kinds.items())
    return f"{len(cases)} cases and {sum(kinds.values())} counterfactual twins ({per})"


def _unreadable_lost(a: RunRecord, b: RunRecord, va: Mapping[str, CaseValues], only_a: Sequence[str]) -> list[CaseLost]:
    """Cases only in A, with a verdict there, whose case file (``CaseRecord.source``) is a collection error of B."""
    unreadable = unreadable_files(b)
    if not unreadable:
        return []
    sources = {c.case_id: c.source for c in a.cases if c.source}
    out = []
    for case_id in only_a:
        ca = va[case_id]
        nodeid = unreadable.get(sources.get(case_id) or "")
        if nodeid is None:  # a record without the file name: a file named after the case id
            nodeid = next((v for k, v in unreadable.items() if k.rsplit(".", 1)[0] == case_id), None)
        if nodeid is not None and ca.counted:
            out.append(CaseLost(case_id, ca.passes, ca.counted, (UNREADABLE,), collection_error=nodeid))
    return out


def _figures(
    a: RunRecord, b: RunRecord, cases: Sequence[CaseDiff], dims: Collection[str], comparable: bool,
) -> list[Figure]:
    ga, gb = a.aggregate, b.aggregate
    rows: list[tuple[str, float | None, float | None]] = [("pass_rate", ga.pass_rate, gb.pass_rate)]
    if scope_needed(ga) or scope_needed(gb):  # a pass rate raised by crashing shows next to the one it cannot
        rows.append(("pass_rate_ran", pass_rate_ran(ga), pass_rate_ran(gb)))
    rows.append(("answer_rate", ga.answer_rate, gb.answer_rate))
    names = list(ga.metrics) + [k for k in gb.metrics if k not in ga.metrics]
    # text in the aggregate (a judge's name, its reliability, a prompt's SHA-256) is a fact of the
    # run, not a figure: the facts are compared (``task_facts``) before any figure is; a figure
    # neither run has (None in both: a judge's temperature when no model judges) says nothing
    names = [k for k in names if not isinstance(ga.metrics.get(k), str) and not isinstance(gb.metrics.get(k), str)
             and (ga.metrics.get(k) is not None or gb.metrics.get(k) is not None)]
    rows += [(k, _num(ga.metrics.get(k)), _num(gb.metrics.get(k))) for k in names]
    usage = [k for k in list(ga.usage) + [k for k in gb.usage if k not in ga.usage]
             if not isinstance(ga.usage.get(k), str) and not isinstance(gb.usage.get(k), str)]  # price_source: a fact
    rows += [(k, _num(ga.usage.get(k)), _num(gb.usage.get(k))) for k in usage]
    figures = []
    originals = [c for c in cases if split_twin(c.case_id)[1] is None]  # twins give only record_sensitivity
    for name, x, y in rows:
        dim = figure_dimension(name, dims)
        interval = None
        if (kind := sensitivity_figure(name)) is not None and comparable:  # paired over the twins of both runs
            pa, pb = pair_values(ga.counterfactual, kind), pair_values(gb.counterfactual, kind)
            interval = paired_interval([pb[k] - pa[k] for k in pa if k in pb])
        elif dim is not None:
            diffs = [c.b.values[dim] - c.a.values[dim] for c in originals if dim in c.a.values and dim in c.b.values]
            interval = paired_interval(diffs)
        figures.append(Figure(name, x, y, interval, comparable))
    return figures
