"""Agreement figures between a scorer's binary decisions and labels: each with its interval and n.

Every figure is a dict ``{"value", "ci", "n"}`` plus ``"why_no_ci"`` when there is no interval
(``ci`` None): a figure is never printed as ``None`` without the reason (``interval_text``).

* **Cohen's kappa**: ``sklearn.metrics.cohen_kappa_score`` (Cohen J, *A coefficient of agreement
  for nominal scales*, Educ Psychol Meas 1960;20:37-46), with a 95% percentile bootstrap interval
  (``scipy.stats.bootstrap``, ``N_RESAMPLES`` paired resamples, seed ``SEED``). Undefined when the
  labels hold one value only (agreement beyond chance cannot be measured). A resample holding one
  reference label has no kappa: the interval is then over the resamples that have one when they
  are at least ``MIN_DEFINED`` of them (``ci_note`` says so), else there is none (too few of the
  rarer label). Nor is there one when every resample gives the same kappa (all items agree, or
  the decisions are one value throughout): a zero-width interval is no measure of uncertainty.
* **Proportions** (agreement, sensitivity, specificity, false-pass and false-fail rates): the
  Wilson score interval (``scipy.stats.binomtest(...).proportion_ci(method="wilson")``; Wilson EB,
  J Am Stat Assoc 1927;22:209-212), which stays inside [0, 1] and is defined at 0 and n.

scikit-learn is imported here only, when kappa is computed (the ``calibrate`` extra).
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence
from typing import Any

__all__ = [
    "MIN_DEFINED", "N_RESAMPLES", "SEED", "binary_figures", "figure_text", "interval_text", "kappa", "proportion",
]

N_RESAMPLES = 2000
SEED = 0
MIN_DEFINED = 0.95
"""A kappa interval is given over the resamples that hold both reference labels when they are at
least this share of all resamples (a rare label is then absent from a few, and saying nothing
would hide a measurable interval); below it there is no interval, and the reason says why."""

JSON = dict[str, Any]


def _round(value: float) -> float:
    return round(float(value), 4)


def kappa(truth: Sequence[bool], decided: Sequence[bool]) -> JSON:
    """Cohen's kappa of two binary label sequences, with its bootstrap interval.

    Args:
        truth: The reference labels.
        decided: The labels to compare (same length).

    Returns:
        ``{"value": kappa | None, "ci": [low, high] | None, "n": len, "why_no_ci": str}``
        (``why_no_ci`` only when ``ci`` is None; ``value`` None says why too).
    """
    import numpy as np
    from scipy import stats

    from groundeval.extras import require_extra

    n = len(truth)
    if n == 0:
        return {"value": None, "ci": None, "n": 0, "why_no_ci": "no labelled item"}
    if len(set(truth)) < 2:
        only = "met" if truth[0] else "not met"
        return {"value": None, "ci": None, "n": n,
                "why_no_ci": f"kappa undefined: every reference label is {only}, so agreement beyond chance "
                             "cannot be measured"}
    require_extra("calibrate", "sklearn", "groundeval calibrate (Cohen's kappa)")
    from sklearn.metrics import cohen_kappa_score  # type: ignore[import-untyped]

    t = np.asarray(truth, dtype=float)
    d = np.asarray(decided, dtype=float)
    point = float(cohen_kappa_score(t, d))

    def vectorised(a: Any, b: Any, axis: int = -1) -> Any:
        # the same formula as cohen_kappa_score for two labels, vectorised over resamples
        po = np.mean(a == b, axis=axis)
        pa, pb = np.mean(a, axis=axis), np.mean(b, axis=axis)
        pe = pa * pb + (1 - pa) * (1 - pb)
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(pe < 1, (po - pe) / (1 - pe), np.nan)

    if abs(float(vectorised(t, d)) - point) > 1e-9:  # the resampled statistic must be scikit-learn's kappa
        raise AssertionError(f"vectorised kappa {float(vectorised(t, d))} differs from cohen_kappa_score {point}")
    with warnings.catch_warnings():  # a resample holding one label gives NaN: then there is no interval
        warnings.simplefilter("ignore")
        res = stats.bootstrap((t, d), vectorised, paired=True, vectorized=True, n_resamples=N_RESAMPLES,
                              method="percentile", random_state=SEED)
    low, high = res.confidence_interval
    if not (np.isnan(low) or np.isnan(high)):
        return _interval(point, float(low), float(high), n)
    dist = np.asarray(res.bootstrap_distribution)
    kept = dist[~np.isnan(dist)]
    rarer = int(min(t.sum(), n - t.sum()))
    if len(kept) < MIN_DEFINED * N_RESAMPLES:
        return {"value": _round(point), "ci": None, "n": n,
                "why_no_ci": f"{N_RESAMPLES - len(kept)} of {N_RESAMPLES} bootstrap resamples hold one reference "
                             f"label only (the rarer label has {rarer} of {n} items): label more items of it"}
    low, high = np.percentile(kept, [2.5, 97.5])
    return _interval(point, float(low), float(high), n,
                     ci_note=f"over the {len(kept)} of {N_RESAMPLES} resamples holding both reference labels")


def _interval(point: float, low: float, high: float, n: int, **extra: str) -> JSON:
    """A kappa figure with its percentile interval, or with none when the interval has no width.

    Every resample gives the same kappa when the decisions agree with the labels on every item, or
    are one value throughout: a zero-width percentile interval then says nothing about the
    uncertainty of a small set, so none is given (``why_no_ci``).
    """
    if high - low < 1e-9:
        return {"value": _round(point), "ci": None, "n": n,
                "why_no_ci": f"every bootstrap resample gives kappa {point:.2f} (n {n}): a percentile interval of "
                             "no width measures nothing; label more items"}
    return {"value": _round(point), "ci": [_round(low), _round(high)], "n": n, **extra}


def proportion(hits: Sequence[bool], of: str) -> JSON:
    """A proportion with its Wilson 95% interval.

    Args:
        hits: One bool per item (True counts).
        of: What the items are, for the reason when there are none (``"reference positives"``).

    Returns:
        ``{"value", "ci", "n", "k"}`` (``k`` the hits), or ``why_no_ci`` when there is no item.
    """
    from scipy import stats

    n = len(hits)
    if n == 0:
        return {"value": None, "ci": None, "n": 0, "k": 0, "why_no_ci": f"no {of} in the set"}
    k = sum(bool(h) for h in hits)
    ci = stats.binomtest(k, n).proportion_ci(confidence_level=0.95, method="wilson")
    return {"value": _round(k / n), "ci": [_round(ci.low), _round(ci.high)], "n": n, "k": k}


def binary_figures(pairs: Sequence[tuple[bool, bool]]) -> JSON:
    """Agreement, Cohen's kappa, sensitivity and specificity of ``(reference, decided)`` pairs.

    Returns:
        ``{"n", "positives", "negatives", "agreement", "kappa", "sensitivity", "specificity"}``,
        each figure as ``kappa``/``proportion`` return it. Sensitivity is over the reference's
        positives (``met``), specificity over its negatives.
    """
    truth = [t for t, _ in pairs]
    decided = [d for _, d in pairs]
    return {
        "n": len(pairs), "positives": sum(truth), "negatives": len(truth) - sum(truth),
        "agreement": proportion([t == d for t, d in pairs], "labelled item"),
        "kappa": kappa(truth, decided),
        "sensitivity": proportion([d for t, d in pairs if t], "reference positive (met)"),
        "specificity": proportion([not d for t, d in pairs if not t], "reference negative (not met)"),
    }


def interval_text(figure: Mapping[str, Any] | None) -> str:
    """``[0.61, 0.80]``, or ``(no interval: <why>)``; never ``None``."""
    if not figure:
        return "(no interval: not measured)"
    ci = figure.get("ci")
    if isinstance(ci, list | tuple) and len(ci) == 2 and all(isinstance(v, int | float) for v in ci):
        return f"[{ci[0]:.2f}, {ci[1]:.2f}]"
    return f"(no interval: {figure.get('why_no_ci') or 'not measured'})"


def figure_text(figure: Mapping[str, Any] | None) -> str:
    """``0.72 [0.61, 0.80] n 240``; ``undefined (no interval: <why>) n 12`` when there is no value."""
    if not figure:
        return "not measured"
    value = figure.get("value")
    shown = f"{value:.2f}" if isinstance(value, int | float) else "undefined"
    count = f" ({figure['k']}/{figure['n']})" if "k" in figure and figure.get("n") else f" n {figure.get('n', 0)}"
    return f"{shown} {interval_text(figure)}{count}"
