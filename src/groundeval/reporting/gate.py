"""The regression gate: which cases passed in the baseline and fail now (trials: Fisher exact test)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

from groundeval.reporting.cases import EPS, CaseValues, case_values, record_values
from groundeval.reporting.stats import ALPHA, Interval, fisher_one_sided
from groundeval.run_record import CaseRecord, RunRecord

__all__ = ["BaselineGate", "CaseGate", "GateResult", "gate_case"]


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


def gate_case(a: CaseValues, b: CaseValues) -> CaseGate:
    """The verdict on one case counted in both runs (A the baseline, B the current run)."""
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


class BaselineGate:
    """Per-case verdicts against a baseline while a run is in progress (for junit ``regression=true``).

    Args:
        baseline: The baseline run record (indexed once).
    """

    def __init__(self, baseline: RunRecord) -> None:
        self.baseline = baseline
        self._values = record_values(baseline)

    def verdict(self, trials: Sequence[CaseRecord]) -> CaseGate | None:
        """The verdict on one case from its trials so far (all with the same ``case_id``).

        Returns:
            The case's ``CaseGate``, or None when it cannot be compared (not in the baseline,
            not counted on either side, or its case file changed).
        """
        if not trials:
            return None
        current = case_values(trials)[trials[0].case_id]
        base = self._values.get(current.case_id)
        if base is None or not base.counted or not current.counted:
            return None
        if base.fixture_sha256 and current.fixture_sha256 and base.fixture_sha256 != current.fixture_sha256:
            return None
        return gate_case(base, current)

    def regressed(self, trials: Sequence[CaseRecord]) -> bool:
        """True when the case regressed (what junit's ``regression=true`` marks)."""
        found = self.verdict(trials)
        return found is not None and found.verdict == "regressed"
