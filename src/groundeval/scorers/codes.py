"""Set scoring on codes: precision, recall and F1 of the codes an answer lists.

For tasks whose answer is a set of codes from one terminology (SNOMED CT conditions, LOINC
observations, RxCUIs without displays). Precision = tp / (tp + fp), recall = tp / (tp + fn),
F1 their harmonic mean. An empty denominator is not applicable, never a made-up number: recall is
None when nothing is expected, precision None when nothing was answered; F1 is always defined (1.0
for an empty truth answered with an empty list, 0.0 when exactly one side is empty or no answer was
found). Macro means skip None values.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from statistics import fmean
from typing import Any, ClassVar, Literal

from groundeval.datasets import Case
from groundeval.scoring import Direction, Metric, Parsed, Score

__all__ = ["CodeSetScorer"]


def _ratio(num: int, den: int, both_empty: bool) -> float:
    if den == 0:
        return 1.0 if both_empty else 0.0
    return num / den


def _f1(p: float, r: float) -> float:
    return 2 * p * r / (p + r) if p + r else 0.0


@dataclass(frozen=True, slots=True)
class CodeSetScorer:
    """Scores a list of codes against the expected set (a ``groundeval.Scorer``).

    Args:
        min_f1: F1 a case needs to pass, in [0, 1]; below it a case with at least one correct
            code is ``partial``, one with none ``failed``.
        label: What a code is, in messages (``"SNOMED CT code"``).

    The truth is a list of expected codes (strings); ``parsed.value`` the answered codes. An
    answer in which no list was found at all (``parsed.found`` False) fails with F1 0, even
    when nothing is expected: no list is not the answer "none".
    """

    min_f1: float = 1.0
    label: str = "code"

    metric_names: ClassVar[tuple[str, ...]] = ("precision", "recall", "f1", "tp", "fp", "fn", "duplicates")
    metric_directions: ClassVar[Mapping[str, Direction]] = {"fp": "lower", "fn": "lower", "duplicates": "lower"}

    def score(self, case: Case, truth: Any, parsed: Parsed) -> Score:
        """Compare answered codes with the expected ones.

        Returns:
            A ``Score`` with metrics ``precision``, ``recall``, ``f1`` (in [0, 1]), ``tp``,
            ``fp``, ``fn``, ``duplicates`` (codes listed more than once, counted once) and details
            ``missing`` and ``extra`` (sorted code lists).
        """
        del case
        expected = {str(c) for c in truth}
        answered = [str(c) for c in parsed.value]
        got = set(answered)
        tp, fp, fn = len(expected & got), len(got - expected), len(expected - got)
        p = tp / (tp + fp) if got else None
        r = tp / (tp + fn) if expected else None
        if not parsed.found:
            f1 = 0.0
        elif not expected and not got:
            f1 = 1.0
        elif p is None or r is None:
            f1 = 0.0
        else:
            f1 = _f1(p, r)
        metrics: dict[str, Metric] = {
            "precision": None if p is None else round(p, 6), "recall": None if r is None else round(r, 6),
            "f1": round(f1, 6),
            "tp": tp, "fp": fp, "fn": fn, "duplicates": len(answered) - len(got),
        }
        details = {"missing": sorted(expected - got), "extra": sorted(got - expected)}
        ok = parsed.found and f1 >= self.min_f1
        outcome: Literal["passed", "partial", "failed"] = (
            "passed" if ok else ("partial" if tp and parsed.found else "failed")
        )
        message = "" if ok else self._message(metrics, details, parsed)
        return Score(outcome=outcome, metrics=metrics, details=details, message=message)

    def _message(self, metrics: Mapping[str, Metric], details: Mapping[str, list[str]], parsed: Parsed) -> str:
        lines = []
        if parsed.error:
            lines.append(f"answer format: {parsed.error}")
        lines.append(
            f"F1 {metrics['f1']} (needs >= {self.min_f1:g}); precision {_shown(metrics['precision'])}, "
            f"recall {_shown(metrics['recall'])}"
        )
        if details["missing"]:
            lines.append(f"missing {self.label}s (expected, not in the answer): {', '.join(details['missing'])}")
        if details["extra"]:
            lines.append(f"extra {self.label}s (in the answer, not expected): {', '.join(details['extra'])}")
        return "\n".join(lines)

    def aggregate(self, metrics: Sequence[Mapping[str, Metric]]) -> dict[str, Metric]:
        """Micro (pooled tp/fp/fn) and macro (mean of per-case values) precision, recall, F1.

        Returns:
            ``micro_precision``, ``micro_recall``, ``micro_f1``, ``macro_precision``,
            ``macro_recall``, ``macro_f1``; all None when no case was scored.
        """
        if not metrics:
            return {f"{a}_{m}": None for a in ("micro", "macro") for m in ("precision", "recall", "f1")}
        tp, fp, fn = (sum(int(m.get(k) or 0) for m in metrics) for k in ("tp", "fp", "fn"))
        empty = tp + fp + fn == 0
        p, r = _ratio(tp, tp + fp, empty), _ratio(tp, tp + fn, empty)

        def mean(key: str) -> float | None:
            values = [float(v) for m in metrics if isinstance(v := m.get(key), int | float)]
            return round(fmean(values), 6) if values else None

        return {
            "micro_precision": round(p, 6), "micro_recall": round(r, 6),
            "micro_f1": round(1.0 if empty else _f1(p, r), 6),
            "macro_precision": mean("precision"), "macro_recall": mean("recall"), "macro_f1": mean("f1"),
        }


def _shown(value: Metric) -> str:
    return "n/a" if value is None else str(value)
