"""Compare two run records case by case: headline figures, per-case changes, the regression gate.

Several case records with the same ``case_id`` are trials of one case: a case's value of a
dimension is its mean over the counted trials (for ``passed``, the case's pass rate), so the same
code serves single runs and ``--groundeval-trials K`` runs.

Dimensions (higher is better for all) are ``passed`` (1 when the outcome is ``passed``), ``answered``
and the task's per-case scores listed in ``DIMENSIONS`` that the case records carry. Only counted
cases have values (``groundeval.outcomes``: scored answers and agent-behaviour failures, the latter
scored as empty answers); excluded and not-run cases have none and are listed, never compared.

What makes two runs comparable is checked and reported, never assumed: the task, each case's
fixture SHA-256 (a case whose file changed is not compared), the groundeval version (there is no
scorer version yet; the package version stands for it), ``task_facts`` and the task options
(thresholds decide ``passed``).
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from groundeval.reporting.stats import ALPHA, Interval, fisher_one_sided, paired_interval
from groundeval.run_record import CaseRecord, RunRecord

__all__ = [
    "DIMENSIONS",
    "CaseDiff",
    "CaseGate",
    "CaseValues",
    "Comparison",
    "Figure",
    "GateResult",
    "case_values",
    "compare_runs",
    "figure_dimension",
    "load_record",
    "regressions",
]

DIMENSIONS = (
    "passed", "answered", "f1", "precision", "recall", "display_accuracy", "schema", "coding", "constraints", "safety",
)
"""Per-case dimensions compared, in display order (those a task does not emit are skipped)."""
EPS = 1e-9


def load_record(path: str | Path) -> RunRecord:
    """Read and validate a run record file.

    Raises:
        ValueError: The file is not valid JSON or not a schema-2 run record (the message names the file).
        OSError: The file cannot be read.
    """
    path = Path(path)
    try:
        return RunRecord.model_validate_json(path.read_text(encoding="utf-8"))
    except ValueError as exc:
        first = str(exc).splitlines()[0]
        raise ValueError(f"{path}: not a groundeval run record (schema_version 2): {first}") from exc


@dataclass(frozen=True, slots=True)
class CaseValues:
    """One case of one run, trials pooled.

    Attributes:
        case_id: The case id.
        trials: Case records with this id (trials), counted or not.
        counted: Counted trials.
        passes: Counted trials whose outcome is ``passed``.
        outcomes: Each trial's outcome, in record order.
        values: Dimension -> mean over the counted trials that have it (0..1 for booleans).
        fixture_sha256: The case file's hash (first trial's), or None.
    """

    case_id: str
    trials: int
    counted: int
    passes: int
    outcomes: tuple[str, ...]
    values: dict[str, float]
    fixture_sha256: str | None

    @property
    def pass_rate(self) -> float | None:
        """Passes / counted trials, or None when no trial was counted."""
        return self.passes / self.counted if self.counted else None


def _dimension_values(record: CaseRecord) -> dict[str, float]:
    if not record.counted:
        return {}
    out = {"passed": 1.0 if record.outcome == "passed" else 0.0, "answered": 1.0 if record.answered else 0.0}
    for name in DIMENSIONS[2:]:
        value = record.metrics.get(name)
        if isinstance(value, bool | int | float) and value is not None:
            out[name] = float(value)
    return out


def case_values(cases: Iterable[CaseRecord]) -> dict[str, CaseValues]:
    """Group case records by ``case_id`` (trials) and pool each dimension; keeps first-seen order."""
    groups: dict[str, list[CaseRecord]] = defaultdict(list)
    for case in cases:
        groups[case.case_id].append(case)
    out: dict[str, CaseValues] = {}
    for case_id, trials in groups.items():
        sums: dict[str, list[float]] = defaultdict(list)
        for trial in trials:
            for name, value in _dimension_values(trial).items():
                sums[name].append(value)
        counted = [t for t in trials if t.counted]
        out[case_id] = CaseValues(
            case_id=case_id, trials=len(trials), counted=len(counted),
            passes=sum(t.outcome == "passed" for t in counted), outcomes=tuple(t.outcome for t in trials),
            values={k: sum(v) / len(v) for k, v in sums.items()}, fixture_sha256=trials[0].fixture_sha256,
        )
    return out


@dataclass(frozen=True, slots=True)
class CaseGate:
    """The gate's verdict on one case.

    Attributes:
        case_id: The case id.
        baseline_passes: Passing counted trials in the baseline (of ``baseline_trials``).
        baseline_trials: Counted trials in the baseline.
        current_passes: Passing counted trials now.
        current_trials: Counted trials now.
        p_value: One-sided Fisher exact p-value when either side has more than one trial, else None
            (one sample each: passed before and not now is a regression).
        verdict: ``regressed``, ``improved`` or ``unchanged``.
    """

    case_id: str
    baseline_passes: int
    baseline_trials: int
    current_passes: int
    current_trials: int
    p_value: float | None
    verdict: Literal["regressed", "improved", "unchanged"]

    def text(self) -> str:
        """``Liz_Conn-ee9f8dd8: passed 1/1 -> 0/1`` (plus ``p=0.050`` with trials)."""
        p = f" (Fisher p={self.p_value:.3f})" if self.p_value is not None else ""
        return (
            f"{self.case_id}: passed {self.baseline_passes}/{self.baseline_trials} -> "
            f"{self.current_passes}/{self.current_trials}{p}"
        )


def _gate_case(a: CaseValues, b: CaseValues) -> CaseGate:
    ra, rb = a.passes / a.counted, b.passes / b.counted
    p: float | None = None
    if a.counted == 1 and b.counted == 1:
        verdict: Literal["regressed", "improved", "unchanged"] = (
            "regressed" if ra > rb else "improved" if rb > ra else "unchanged"
        )
    else:
        if rb < ra:
            p = fisher_one_sided(a.passes, a.counted, b.passes, b.counted)
            verdict = "regressed" if p <= ALPHA + EPS else "unchanged"
        elif ra < rb:
            p = fisher_one_sided(b.passes, b.counted, a.passes, a.counted)
            verdict = "improved" if p <= ALPHA + EPS else "unchanged"
        else:
            verdict = "unchanged"
    return CaseGate(a.case_id, a.passes, a.counted, b.passes, b.counted, p, verdict)


@dataclass(frozen=True, slots=True)
class GateResult:
    """The regression gate: which cases passed in the baseline and fail now.

    A case regressed when it passed in the baseline and does not pass now (one trial each), or,
    with trials, when its pass rate dropped and the one-sided Fisher exact test gives p <= 0.05.
    ``pass_rate_interval`` is the paired bootstrap interval of the pass-rate difference over the
    cases both runs counted. Cases that are not comparable (only in one run, excluded or not run on
    either side, fixture changed) are listed in ``not_compared`` and never count as regressions.

    Attributes:
        baseline_run_id: The baseline run's id.
        current_run_id: The current run's id.
        cases: Every compared case's verdict, in the current run's order.
        not_compared: case id -> why it was not compared.
        pass_rate_interval: Interval of the mean per-case pass-rate difference, or None.
        problems: Why the runs are not comparable at all (different tasks); then nothing is gated.
    """

    baseline_run_id: str
    current_run_id: str
    cases: tuple[CaseGate, ...] = ()
    not_compared: dict[str, str] = field(default_factory=dict)
    pass_rate_interval: Interval | None = None
    problems: tuple[str, ...] = ()

    @property
    def regressed(self) -> tuple[CaseGate, ...]:
        """Cases that regressed."""
        return tuple(c for c in self.cases if c.verdict == "regressed")

    @property
    def improved(self) -> tuple[CaseGate, ...]:
        """Cases that improved."""
        return tuple(c for c in self.cases if c.verdict == "improved")

    @property
    def regression_ids(self) -> frozenset[str]:
        """Ids of the regressed cases (for junit ``regression=true``)."""
        return frozenset(c.case_id for c in self.regressed)

    @property
    def failed(self) -> bool:
        """True when any case regressed (what ``--groundeval-fail-on-regression`` fails on)."""
        return bool(self.regressed)

    def summary_lines(self) -> list[str]:
        """Lines for the terminal summary: the count, then one line per regressed case."""
        if self.problems:
            return [f"regression gate: not applied ({'; '.join(self.problems)})"]
        head = (
            f"regressions vs {self.baseline_run_id}: {len(self.regressed)}  improved: {len(self.improved)}"
            f"  compared: {len(self.cases)}"
        )
        if self.not_compared:
            head += f"  not compared: {len(self.not_compared)}"
        lines = [head]
        lines += [f"REGRESSED {c.text()}" for c in self.regressed]
        if self.pass_rate_interval is not None:
            iv = self.pass_rate_interval
            lines.append(f"pass rate change {iv.mean:+.3f}, 95% interval {iv.text()} over {iv.n} cases")
        return lines


def regressions(baseline: RunRecord, current: RunRecord) -> GateResult:
    """The regression gate of ``current`` against ``baseline`` (see ``GateResult``)."""
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
    """

    case_id: str
    a: CaseValues
    b: CaseValues
    changes: dict[str, tuple[float, float]]
    verdict: Literal["regressed", "improved", "unchanged"]

    def regressed_dims(self) -> list[str]:
        """Dimensions whose value went down."""
        return [k for k, (x, y) in self.changes.items() if y < x]

    def improved_dims(self) -> list[str]:
        """Dimensions whose value went up."""
        return [k for k, (x, y) in self.changes.items() if y > x]


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
        only_a: Case ids only in run A.
        only_b: Case ids only in run B.
        gate: The regression gate.
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

    @property
    def changed(self) -> list[CaseDiff]:
        """Compared cases with at least one changed dimension."""
        return [c for c in self.cases if c.changes]


def figure_dimension(name: str) -> str | None:
    """The per-case dimension whose mean a headline figure is, or None (micro means, usage)."""
    if name in ("pass_rate", "all_pass_rate"):
        return "passed"
    if name == "answer_rate":
        return "answered"
    if name.startswith("macro_"):
        return name[len("macro_"):]
    if name.endswith("_pass_rate"):
        return name[: -len("_pass_rate")]
    return None


def _num(value: object) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def _checks(a: RunRecord, b: RunRecord) -> tuple[list[str], list[str], list[str]]:
    checked = ["task", "groundeval version (no scorer version field yet)", "task_facts", "task options (thresholds)",
               "fixture SHA-256 per case"]
    warnings: list[str] = []
    problems: list[str] = []
    if a.task != b.task:
        problems.append(f"different tasks: {a.task} vs {b.task}")
    va, vb = a.packages.get("groundeval", "?"), b.packages.get("groundeval", "?")
    if va != vb:
        warnings.append(f"groundeval version differs ({va} vs {vb}): scorers may differ")
    if a.task_facts != b.task_facts:
        warnings.append(f"task_facts differ: {json.dumps(a.task_facts, sort_keys=True)} vs "
                        f"{json.dumps(b.task_facts, sort_keys=True)}")
    oa, ob = a.settings.get("task_options", {}), b.settings.get("task_options", {})
    if oa != ob:
        warnings.append(f"task options differ: {json.dumps(oa, sort_keys=True)} vs {json.dumps(ob, sort_keys=True)}")
    return checked, warnings, problems


def compare_runs(a: RunRecord, b: RunRecord) -> Comparison:
    """Compare run B (current) with run A (baseline).

    Returns:
        The comparison; when the tasks differ, only the headline figures are filled and
        ``problems`` says why (nothing is compared case by case or gated).
    """
    checked, warns, problems = _checks(a, b)
    va, vb = case_values(a.cases), case_values(b.cases)
    only_a = [k for k in va if k not in vb]
    only_b = [k for k in vb if k not in va]
    cases: list[CaseDiff] = []
    gates: list[CaseGate] = []
    not_compared: dict[str, str] = {}
    changed_fixtures = 0
    if not problems:
        for case_id, cb in vb.items():
            ca = va.get(case_id)
            if ca is None:
                continue
            if ca.fixture_sha256 and cb.fixture_sha256 and ca.fixture_sha256 != cb.fixture_sha256:
                not_compared[case_id] = "the case file changed (fixture SHA-256 differs)"
                changed_fixtures += 1
                continue
            if not ca.counted or not cb.counted:
                side = "baseline" if not ca.counted else "current run"
                outcomes = ca.outcomes if not ca.counted else cb.outcomes
                not_compared[case_id] = f"not counted in the {side} ({', '.join(sorted(set(outcomes)))})"
                continue
            changes = {
                k: (ca.values[k], cb.values[k]) for k in DIMENSIONS
                if k in ca.values and k in cb.values and abs(ca.values[k] - cb.values[k]) > EPS
            }
            verdict = _gate_case(ca, cb)
            gates.append(verdict)
            cases.append(CaseDiff(case_id, ca, cb, changes, verdict.verdict))
    if changed_fixtures:
        warns.append(f"{changed_fixtures} case file(s) changed between the runs (fixture SHA-256): not compared")
    figures = _figures(a, b, cases, comparable=not problems)
    pass_iv = next((f.interval for f in figures if f.name == "pass_rate"), None)
    gate = GateResult(a.run_id, b.run_id, tuple(gates), not_compared, pass_iv, tuple(problems))
    return Comparison(a, b, checked, warns, problems, figures, cases, only_a, only_b, gate)


def _figures(a: RunRecord, b: RunRecord, cases: Sequence[CaseDiff], comparable: bool) -> list[Figure]:
    ga, gb = a.aggregate, b.aggregate
    rows: list[tuple[str, float | None, float | None]] = [
        ("pass_rate", ga.pass_rate, gb.pass_rate), ("answer_rate", ga.answer_rate, gb.answer_rate),
    ]
    names = list(ga.metrics) + [k for k in gb.metrics if k not in ga.metrics]
    rows += [(k, _num(ga.metrics.get(k)), _num(gb.metrics.get(k))) for k in names if k != "all_pass_rate"]
    usage = list(ga.usage) + [k for k in gb.usage if k not in ga.usage]
    rows += [(k, _num(ga.usage.get(k)), _num(gb.usage.get(k))) for k in usage]
    figures = []
    for name, x, y in rows:
        dim = figure_dimension(name)
        interval = None
        if dim is not None:
            diffs = [c.b.values[dim] - c.a.values[dim] for c in cases if dim in c.a.values and dim in c.b.values]
            interval = paired_interval(diffs)
        figures.append(Figure(name, x, y, interval, comparable))
    return figures
