"""Paired statistics for comparing two runs case by case (scipy, imported lazily).

Two runs of the same cases are paired data: each case gives one difference (current minus
baseline, of the case's value averaged over its trials). Whether a change in a mean is
distinguishable from noise is judged on those per-case differences:

* a **paired bootstrap interval** of the mean difference: ``scipy.stats.bootstrap`` with the
  BCa method (Efron 1987), ``N_RESAMPLES`` resamples of the cases and a fixed seed, so the
  interval is reproducible; resampling whole cases keeps a case's trials together (a cluster
  bootstrap);
* the **Wilcoxon signed-rank test** (``scipy.stats.wilcoxon``, zero differences dropped, Wilcoxon's
  original method) as a second opinion, reported as a two-sided p-value.

Per case, with repeated trials, a change in pass rate is tested with the **one-sided Fisher exact
test** on the 2x2 table of passes and non-passes (``scipy.stats.fisher_exact``).

Sources: https://docs.scipy.org/doc/scipy/reference/generated/scipy.stats.bootstrap.html,
https://docs.scipy.org/doc/scipy/reference/generated/scipy.stats.wilcoxon.html,
https://docs.scipy.org/doc/scipy/reference/generated/scipy.stats.fisher_exact.html.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

__all__ = ["ALPHA", "CONFIDENCE", "METHOD", "N_RESAMPLES", "Interval", "fisher_one_sided", "paired_interval"]

CONFIDENCE = 0.95
"""Confidence level of every interval."""
ALPHA = 0.05
"""Significance level of the per-case Fisher exact test."""
N_RESAMPLES = 9_999
"""Bootstrap resamples."""
SEED = 0
"""Seed of the bootstrap's generator (intervals are reproducible)."""
METHOD = (
    f"paired bootstrap of the mean per-case difference (scipy.stats.bootstrap, BCa, {N_RESAMPLES} resamples, "
    f"seed {SEED}, {CONFIDENCE:.0%}); Wilcoxon signed-rank p (scipy.stats.wilcoxon, zero differences dropped)"
)
"""How intervals are computed, for every report that prints one."""


@dataclass(frozen=True, slots=True)
class Interval:
    """A confidence interval of a mean per-case difference (current minus baseline).

    Attributes:
        mean: The observed mean difference.
        low: Lower bound.
        high: Upper bound.
        n: Paired cases the interval is computed over.
        p_value: Two-sided Wilcoxon signed-rank p-value, or None when every difference is zero
            or there are too few cases.
        method: ``"bootstrap-bca"``, ``"bootstrap-percentile"`` (BCa was degenerate) or ``"exact"``
            (every difference equal: the interval is that value).
    """

    mean: float
    low: float
    high: float
    n: int
    p_value: float | None
    method: Literal["bootstrap-bca", "bootstrap-percentile", "exact"]

    @property
    def distinguishable(self) -> bool:
        """True when the interval excludes 0 (the change is not explained by case-to-case noise)."""
        return self.low > 0 or self.high < 0

    def text(self, digits: int = 3, sign: bool = True) -> str:
        """``[-0.320, -0.040]`` style bounds (unsigned ``[0.040, 0.320]`` with ``sign=False``)."""
        spec = f"+.{digits}f" if sign else f".{digits}f"
        return f"[{self.low:{spec}}, {self.high:{spec}}]"


def paired_interval(diffs: Sequence[float], confidence: float = CONFIDENCE, test: bool = True) -> Interval | None:
    """Bootstrap interval of the mean of per-case differences (or of per-case values of one run).

    Args:
        diffs: One difference per case (current minus baseline), any units; or, with
            ``test=False``, one value per case of a single run (the interval of its mean).
        confidence: Confidence level.
        test: Also compute the Wilcoxon signed-rank p-value (against 0).

    Returns:
        The interval, or None for fewer than 2 differences.
    """
    if len(diffs) < 2:
        return None
    import numpy as np
    from scipy import stats

    data = np.asarray(diffs, dtype=float)
    mean = float(data.mean())
    if np.all(data == data[0]):
        return Interval(mean, mean, mean, len(data), None, "exact")
    method: Literal["bootstrap-bca", "bootstrap-percentile"] = "bootstrap-bca"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # DegenerateDataWarning: handled by the percentile fallback
        res = stats.bootstrap(
            (data,), np.mean, n_resamples=N_RESAMPLES, confidence_level=confidence, method="BCa",
            rng=np.random.default_rng(SEED),
        )
        low, high = float(res.confidence_interval.low), float(res.confidence_interval.high)
        if math.isnan(low) or math.isnan(high):
            method = "bootstrap-percentile"
            res = stats.bootstrap(
                (data,), np.mean, n_resamples=N_RESAMPLES, confidence_level=confidence, method="percentile",
                rng=np.random.default_rng(SEED),
            )
            low, high = float(res.confidence_interval.low), float(res.confidence_interval.high)
    return Interval(mean, low, high, len(data), _wilcoxon(data) if test else None, method)


def _wilcoxon(data: object) -> float | None:
    from scipy import stats

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            p = float(stats.wilcoxon(data, zero_method="wilcox").pvalue)
        except ValueError:
            return None
    return None if math.isnan(p) else p


def fisher_one_sided(passes_a: int, trials_a: int, passes_b: int, trials_b: int) -> float:
    """One-sided Fisher exact p-value that run B's pass rate is lower than run A's.

    Args:
        passes_a: Passing trials of the case in run A (baseline).
        trials_a: Counted trials in run A.
        passes_b: Passing trials in run B (current).
        trials_b: Counted trials in run B.

    Returns:
        The p-value (1.0 when B's rate is not lower).
    """
    from scipy import stats

    table = [[passes_a, trials_a - passes_a], [passes_b, trials_b - passes_b]]
    return float(stats.fisher_exact(table, alternative="greater").pvalue)
