"""Statistics over cases and repeated trials, computed once into ``Aggregate.trials``.

Several case records with the same ``case_id`` are trials of one case (``--groundeval-trials K``;
``CaseRecord.trial`` is the 0-based index). Every report (terminal, Markdown, HTML, junit) reads
what this module put in the run record; nothing downstream recomputes it.

**Counted trials.** A case's ``n`` is its *counted* trials (``groundeval.records.outcomes``): excluded
trials (``infra_error``, ``agent_error``, ...) and not-run ones are left out of every mean and of
``n``, exactly as a K = 1 run leaves excluded cases out of its pass rate; agent-behaviour failures
(``no_answer``, ``truncated``, ...) count, scored as empty answers. ``c`` is the counted trials
that passed. A case with no counted trial has no values and no verdict.

**Intervals** (95%), chosen by what a figure is, never zero-width for a finite sample:

* a **proportion** (every counted trial's value is 0 or 1: ``pass_rate``, ``answer_rate``, the
  write task's ``<dimension>_pass_rate``) and a **chance** (pass@k, pass^k): the Wilson score
  interval (Wilson 1927; ``scipy.stats.binomtest(k, n).proportion_ci(method="wilson")``), which
  behaves at 0 and n (25 of 25 passed gives [0.867, 1.000], not [1.000, 1.000]). ``n`` is the
  number of cases, because a case is the unit that is independent: with one trial per case ``k``
  is the passes; with K trials the trials of one case are not independent samples, so each case is
  one observation at its pooled rate: ``k`` is the pooled figure times the cases, and when that is
  not a whole number the interval is widened to the Wilson intervals at the whole numbers either
  side (method ``wilson-cases``). Repeating identical trials therefore never narrows it.
* any other **mean over cases** (``macro_*``): a cluster bootstrap over cases: whole cases are
  resampled with all their trials, and the statistic is the pooled mean over the resampled cases'
  counted trials (sum of values / number of trials, so the point estimate is the Aggregate's own
  figure). ``scipy.stats.bootstrap`` with the BCa method (Efron 1987), ``paired=True`` over
  (per-case sum, per-case trial count), 9,999 resamples, seed 0; when BCa is degenerate, or above
  ``BCA_MAX_CASES`` cases (BCa's jackknife grows with the square of the cases), the percentile
  method. Resamples are drawn in batches of ``BATCH_VALUES`` values, so memory stays bounded
  whatever the number of cases. When every case has the same value the bootstrap can show no spread; a
  mean of values in [0, 1] then gets the Wilson interval at that mean (a value in [0, 1] varies
  at most as a 0/1 value with the same mean does), any other mean none.

Figures that are not the mean of a per-case value (micro means, counts, tokens, cost) get no
interval. ``FigureInterval.method`` says which rule made each interval, and every report prints
the method beside the interval. Sources:
https://docs.scipy.org/doc/scipy/reference/generated/scipy.stats.binomtest.html,
https://docs.scipy.org/doc/scipy/reference/generated/scipy.stats.bootstrap.html.

**pass@k** (Chen et al. 2021, "Evaluating Large Language Models Trained on Code",
arXiv:2107.03374, eq. 1): the unbiased estimator ``1 - C(n-c, k) / C(n, k)`` of the chance that at
least one of k trials passes, averaged over cases. **pass^k** (Yao et al. 2024, "tau-bench",
arXiv:2406.12045, section 5): the chance that all k trials pass, estimated as ``C(c, k) / C(n, k)``,
averaged over cases. Both need ``n >= k``: a case with fewer counted trials is left out at that k
(``PassAtK.cases`` says how many were averaged). pass@1 = pass^1 = the mean over cases of ``c / n``.

**Case verdicts** (``--groundeval-min-pass-rate R``): a case passes when ``c >= R * n``; without R,
when every counted trial passed. The trial items keep their own outcomes; the session's exit
status follows the verdicts (``verdict_exit_status``).
"""

from __future__ import annotations

import math
import warnings
from array import array
from collections import defaultdict
from collections.abc import Iterable, Sequence
from functools import lru_cache
from statistics import NormalDist
from typing import Any, Literal

from groundeval.records.dimensions import dimension_values, figure_dimension
from groundeval.records.run_record import (
    Aggregate,
    CaseRecord,
    CaseTrials,
    FigureInterval,
    PassAtK,
    RunRecord,
    TrialStats,
)
from groundeval.records.scope import UNGATED_FACT

__all__ = [
    "INTERVAL_METHOD",
    "METHOD_NAMES",
    "cluster_interval",
    "interval_methods",
    "interval_note",
    "pass_at_k",
    "pass_hat_k",
    "proportion_interval",
    "record_trial_stats",
    "trial_stats",
    "verdict_exit_status",
    "with_trial_stats",
]

N_RESAMPLES = 9_999
"""Bootstrap resamples (as ``groundeval.reporting.stats``)."""
SEED = 0
"""Seed of the bootstrap's generator: intervals are reproducible."""
CONFIDENCE = 0.95
"""Confidence level."""
BCA_MAX_CASES = 1_000
"""Most cases for a BCa interval; above it, the percentile method. BCa's acceleration comes from a
jackknife that scipy computes as n leave-one-out resamples of n - 1 cases: time and memory grow
with n squared (5,000 cases: 25 million values per figure), while BCa's correction over the
percentile interval shrinks as 1/sqrt(n) (Efron and Tibshirani 1993, section 14.3)."""
BATCH_VALUES = 2_000_000
"""Values per bootstrap batch (resamples x cases): bounds the arrays scipy builds (about 16 MB each)."""
INTERVAL_METHOD = (
    f"{CONFIDENCE:.0%}; rates and pass@k/pass^k: Wilson score interval (scipy.stats.binomtest proportion_ci) "
    "over cases, each case one observation (with trials, at its pooled rate, widened to the whole numbers of "
    f"passes either side); other means over cases: cluster bootstrap, each case's trials pooled "
    f"(scipy.stats.bootstrap, BCa up to {BCA_MAX_CASES:,} cases and percentile above, {N_RESAMPLES} resamples, "
    f"seed {SEED}), or the Wilson interval at the mean "
    "when every case has the same value in [0, 1]"
)
"""How ``TrialStats.intervals`` are computed, for every report that prints one."""
METHOD_NAMES: dict[str, str] = {
    "wilson": "Wilson score", "wilson-cases": "Wilson score (trials pooled per case)",
    "bootstrap-bca": "cluster bootstrap (BCa)", "bootstrap-percentile": "cluster bootstrap (percentile)",
    "exact": "every case equal (an older record)",
}
"""``FigureInterval.method`` -> its short name where an interval is printed."""
EPS = 1e-9
def pass_at_k(n: int, c: int, k: int) -> float:
    """pass@k of one case: ``1 - C(n-c, k) / C(n, k)`` (Chen et al. 2021, arXiv:2107.03374, eq. 1).

    The unbiased estimate, from ``n`` trials of which ``c`` passed, of the chance that at least one
    of ``k`` trials drawn without replacement passes.

    Raises:
        ValueError: Unless ``1 <= k <= n`` and ``0 <= c <= n``.
    """
    _check(n, c, k)
    return 1.0 - math.comb(n - c, k) / math.comb(n, k)


def pass_hat_k(n: int, c: int, k: int) -> float:
    """pass^k of one case: ``C(c, k) / C(n, k)`` (tau-bench, Yao et al. 2024, arXiv:2406.12045).

    The unbiased estimate, from ``n`` trials of which ``c`` passed, of the chance that all ``k``
    trials drawn without replacement pass.

    Raises:
        ValueError: Unless ``1 <= k <= n`` and ``0 <= c <= n``.
    """
    _check(n, c, k)
    return math.comb(c, k) / math.comb(n, k)


def _check(n: int, c: int, k: int) -> None:
    if not 1 <= k <= n or not 0 <= c <= n:
        raise ValueError(f"need 1 <= k <= n and 0 <= c <= n; got n={n}, c={c}, k={k}")


def cluster_interval(sums: Sequence[float], counts: Sequence[int]) -> FigureInterval | None:
    """Cluster-bootstrap interval of a pooled mean: ``sum(sums) / sum(counts)`` over resampled cases.

    Args:
        sums: Per case, the sum of its counted trials' values (any units; 0/1 for rates).
        counts: Per case, how many trials the sum covers; cases with 0 are dropped.

    Returns:
        The interval (see the module docstring), or None for fewer than 2 cases.
    """
    pairs = [(float(s), int(n)) for s, n in zip(sums, counts, strict=True) if n > 0]
    if len(pairs) < 2:
        return None
    value = sum(s for s, _ in pairs) / sum(n for _, n in pairs)
    means = [s / n for s, n in pairs]
    if all(abs(m - means[0]) <= EPS for m in means):
        return FigureInterval(value=round(value, 6), low=round(value, 6), high=round(value, 6), cases=len(pairs),
                              method="exact")
    import numpy as np
    from scipy import stats

    s_arr = np.array([s for s, _ in pairs], dtype=float)
    n_arr = np.array([n for _, n in pairs], dtype=float)

    def pooled(s: Any, n: Any, axis: int = -1) -> Any:
        return np.sum(s, axis=axis) / np.sum(n, axis=axis)

    method: Literal["bootstrap-bca", "bootstrap-percentile"] = "bootstrap-bca"
    low = high = math.nan
    names = ("BCa", "percentile") if len(pairs) <= BCA_MAX_CASES else ("percentile",)
    if len(pairs) > BCA_MAX_CASES:
        method = "bootstrap-percentile"
    batch = max(1, BATCH_VALUES // len(pairs))  # resamples per batch: scipy's arrays stay this small
    for name in names:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # DegenerateDataWarning: handled by the percentile fallback
            res = stats.bootstrap(
                (s_arr, n_arr), pooled, paired=True, vectorized=True, n_resamples=N_RESAMPLES, batch=batch,
                confidence_level=CONFIDENCE, method=name, rng=np.random.default_rng(SEED),
            )
        low, high = float(res.confidence_interval.low), float(res.confidence_interval.high)
        if not (math.isnan(low) or math.isnan(high)):
            break
        method = "bootstrap-percentile"
    return FigureInterval(value=round(value, 6), low=round(low, 6), high=round(high, 6), cases=len(pairs),
                          method=method)


def proportion_interval(value: float, cases: int) -> FigureInterval | None:
    """Wilson score interval of a proportion (or a chance) observed over ``cases`` independent cases.

    Args:
        value: The observed proportion in [0, 1] (the pooled rate, with trials).
        cases: The cases it is observed over (each case one observation).

    Returns:
        ``scipy.stats.binomtest(k, cases).proportion_ci(0.95, method="wilson")`` with ``k =
        value x cases`` (method ``wilson``); when ``k`` is not a whole number, from the low end at
        ``floor(k)`` to the high end at ``ceil(k)`` (method ``wilson-cases``). None for no case.
    """
    if cases < 1:
        return None
    share = min(1.0, max(0.0, float(value)))
    k = share * cases
    below, above = math.floor(k + EPS), math.ceil(k - EPS)
    low = _wilson(below, cases)[0]
    high = _wilson(above, cases)[1]
    method: Literal["wilson", "wilson-cases"] = "wilson" if below == above else "wilson-cases"
    return FigureInterval(value=round(share, 6), low=round(low, 6), high=round(high, 6), cases=cases, method=method)


@lru_cache(maxsize=4096)
def _wilson(k: int, n: int) -> tuple[float, float]:
    """The Wilson score interval of ``k`` successes in ``n`` trials at ``CONFIDENCE``, as ``(low, high)``.

    The interval ``scipy.stats.binomtest(k, n).proportion_ci(CONFIDENCE, method="wilson")`` gives,
    by SciPy's own formula (Newcombe 1998, method 3, as ``scipy.stats._binomtest`` computes it;
    0 and 1 at ``k = 0`` and ``k = n``), with the normal quantile from the standard library
    (``statistics.NormalDist().inv_cdf``, Wichura's algorithm AS241, equal to ``scipy.special.ndtri``
    to double precision): a run of proportions imports neither numpy nor SciPy (about 0.5 CPU-s).
    A test checks it against ``binomtest`` for every ``k`` of many ``n``.

    Remembered: a run asks for the same few ``(k, n)`` several times (pass rate, answer rate,
    pass@k and pass^k over the same cases).
    """
    p = k / n
    z = NormalDist().inv_cdf(0.5 + 0.5 * CONFIDENCE)
    denom = 2 * (n + z**2)
    center = (2 * n * p + z**2) / denom
    delta = z / denom * math.sqrt(4 * n * p * (1 - p) + z**2)
    return (0.0 if k == 0 else center - delta), (1.0 if k == n else center + delta)


def interval_methods(intervals: Iterable[FigureInterval]) -> str:
    """Name the methods of the intervals printed together: ``"Wilson score / cluster bootstrap (BCa)"``."""
    return " / ".join(dict.fromkeys(METHOD_NAMES.get(iv.method, iv.method) for iv in intervals))


def interval_note(intervals: Iterable[FigureInterval], unit: str = "cases") -> str:
    """Name the methods of the intervals printed together, with their n when they share it.

    Args:
        intervals: The intervals printed together.
        unit: What each interval's ``cases`` counts (``cases``; ``twins`` for counterfactual figures).

    Returns:
        ``"Wilson score over 33 cases"`` when every interval is over the same n, else the methods
        alone (``"Wilson score"``): then each interval must be printed with its own n.
    """
    shown = list(intervals)
    names = interval_methods(shown)
    ns = {iv.cases for iv in shown}
    if not names or len(ns) != 1:
        return names
    (n,) = ns
    return f"{names} over {n} {unit[:-1] if n == 1 else unit}"


def _groups(records: Iterable[CaseRecord]) -> dict[str, list[CaseRecord]]:
    groups: dict[str, list[CaseRecord]] = defaultdict(list)
    for rec in records:
        groups[rec.case_id].append(rec)
    # one trial: the list as it is (a sorted copy per case is a list more per case at the run's end)
    return {k: v if len(v) == 1 else sorted(v, key=lambda r: r.trial) for k, v in groups.items()}


def _verdict(passes: int, counted: int, min_pass_rate: float | None) -> bool | None:
    if counted == 0:
        return None
    need = 1.0 if min_pass_rate is None else min_pass_rate
    return passes >= need * counted - EPS


class _Column:
    """One dimension's per-case figures over the run: what ``_intervals`` reads, without each case's values.

    Per case that has the dimension: the sum of its counted trials' values (``sum`` over them in
    trial order, as the interval rules read it) and their number; over the run, whether every value
    is 0 or 1 and whether every value is in [0, 1]. 16 bytes a case, where a list of values per
    case and dimension cost about 1.8 KB a case (the transient of a 50,000-case run's end).
    """

    __slots__ = ("bounded", "counts", "proportion", "sums")

    def __init__(self) -> None:
        self.sums = array("d")
        self.counts = array("q")
        self.proportion = True  # every value is 0 or 1
        self.bounded = True  # every value is in [0, 1]

    def add(self, values: Sequence[float]) -> None:
        """Add one case's counted trials' values (in trial order)."""
        self.sums.append(sum(values))
        self.counts.append(len(values))
        if self.proportion and not all(v in (0.0, 1.0) for v in values):
            self.proportion = False
        if self.bounded and not all(0.0 <= v <= 1.0 for v in values):
            self.bounded = False


def _intervals(groups: dict[str, list[CaseRecord]], figures: Iterable[str]) -> dict[str, FigureInterval]:
    wanted = {figure: dim for figure in figures if (dim := figure_dimension(figure)) is not None}
    columns = {dim: _Column() for dim in wanted.values()}
    for trials in groups.values():
        case: dict[str, list[float]] = {}
        for rec in trials:
            for name, value in dimension_values(rec).items():
                if name in columns:
                    case.setdefault(name, []).append(value)
        for name, values in case.items():
            columns[name].add(values)
    out: dict[str, FigureInterval] = {}
    for figure, dim in wanted.items():
        column = columns[dim]
        if not column.counts:
            continue
        pooled = sum(column.sums) / sum(column.counts)
        if column.proportion:  # a proportion: Wilson over cases
            interval = proportion_interval(pooled, len(column.counts))
        else:
            interval = cluster_interval(column.sums, column.counts)
            if interval is not None and interval.method == "exact":  # no spread for the bootstrap to show
                interval = proportion_interval(pooled, len(column.counts)) if column.bounded else None
        if interval is not None:
            out[figure] = interval
    return out


def _pass_k(cases: Sequence[CaseTrials], k_max: int) -> list[PassAtK]:
    out: list[PassAtK] = []
    for k in range(1, k_max + 1):
        usable = [c for c in cases if c.counted >= k]
        at = [pass_at_k(c.counted, c.passes, k) for c in usable]
        hat = [pass_hat_k(c.counted, c.passes, k) for c in usable]
        entry: dict[str, Any] = {
            "k": k, "cases": len(usable),
            "pass_at_k": round(sum(at) / len(at), 6) if at else None,
            "pass_hat_k": round(sum(hat) / len(hat), 6) if hat else None,
        }
        if k == k_max and usable:  # the headline k: chances, so the Wilson interval over cases
            entry["pass_at_k_interval"] = proportion_interval(sum(at) / len(at), len(at))
            entry["pass_hat_k_interval"] = proportion_interval(sum(hat) / len(hat), len(hat))
        out.append(PassAtK.model_validate(entry))
    return out


_CASE_TRIALS_FIELDS: set[str] = set(CaseTrials.model_fields)
"""``__pydantic_fields_set__`` of every ``CaseTrials`` a run builds (all its fields are given)."""


def trial_stats(
    records: Iterable[CaseRecord], figures: Iterable[str] = ("pass_rate", "answer_rate"),
    min_pass_rate: float | None = None,
) -> TrialStats:
    """Per-case passes out of K, intervals of the headline means, pass@k, pass^k, case verdicts.

    Args:
        records: Every case record of the run (trials, excluded and not-run ones included).
        figures: Headline figure names to give intervals (``pass_rate``, ``answer_rate`` and the
            task's aggregate names); those that are not a mean of a per-case value are skipped.
        min_pass_rate: ``--groundeval-min-pass-rate`` R in (0, 1], or None.

    Returns:
        The ``TrialStats`` (see the module docstring for every definition).
    """
    groups = _groups(records)
    per_case = []
    for case_id, trials in groups.items():
        counted = [t for t in trials if t.counted]
        passes = sum(t.outcome == "passed" for t in counted)
        # built without validation (every value already has its type) and with one field-name set
        # for all: 50,000 validated CaseTrials would each hold their own copy (about 0.5 KB a case)
        per_case.append(CaseTrials.model_construct(
            _fields_set=_CASE_TRIALS_FIELDS, case_id=case_id, trials=len(trials), counted=len(counted),
            passes=passes, outcomes=[t.outcome for t in trials],
            passed=_verdict(passes, len(counted), min_pass_rate),
        ))
    judged = [c for c in per_case if c.passed is not None]
    k_max = max((c.trials for c in per_case), default=1)
    return TrialStats(
        k=k_max, cases=len(per_case), intervals=_intervals(groups, figures), interval_method=INTERVAL_METHOD,
        pass_k=_pass_k(judged, k_max) if judged else [], min_pass_rate=min_pass_rate,
        cases_judged=len(judged), cases_passed=sum(bool(c.passed) for c in judged),
        cases_failed=[c.case_id for c in judged if not c.passed], per_case=per_case,
    )


def with_trial_stats(
    aggregate: Aggregate, records: Iterable[CaseRecord], min_pass_rate: float | None = None
) -> Aggregate:
    """``aggregate`` with ``trials`` filled from ``records`` (intervals for its own figures)."""
    figures = ["pass_rate", "answer_rate", *(k for k, v in aggregate.metrics.items() if isinstance(v, float))]
    stats = trial_stats(records, figures, min_pass_rate)
    return aggregate.model_copy(update={"trials": stats})


def record_trial_stats(record: RunRecord) -> TrialStats:
    """The run record's ``Aggregate.trials``; for a record written before that field, computed from its cases."""
    if record.aggregate.trials is not None:
        return record.aggregate.trials
    stats = with_trial_stats(record.aggregate, record.cases).trials
    assert stats is not None
    return stats


def verdict_exit_status(record: RunRecord, exit_status: int, failed_items: int) -> int | None:
    """The exit status when the case verdicts at ``--groundeval-min-pass-rate`` decide it, else None.

    A run that failed only because some trials of cases that meet R failed exits 0: R was given,
    the verdicts are gated (no ``task_facts["ungated_verdicts"]``: a verdict resting on an
    uncalibrated or unreliable judge clears nothing, as it fails no regression gate),
    pytest's status is 1 (tests failed), the run is complete with nothing excluded, not run or
    uncollectable, every case meets R, and every failed item (``session.testsfailed``) is a
    groundeval trial (so no other test in the session failed).

    Args:
        record: The finished run record.
        exit_status: pytest's exit status so far.
        failed_items: Items pytest counted as failed or errored in the session.

    Returns:
        0 when the verdicts clear the run, else None (keep pytest's status).
    """
    stats, agg = record.aggregate.trials, record.aggregate
    if stats is None or stats.min_pass_rate is None or exit_status != 1:
        return None
    if record.task_facts.get(UNGATED_FACT):  # no gate reads verdicts of an uncalibrated or unreliable judge
        return None
    if not record.complete or record.collection_errors or agg.excluded or agg.not_run:
        return None
    if stats.cases_failed or stats.cases_judged != stats.cases:
        return None
    failing_trials = sum(c.counted and c.outcome != "passed" for c in record.cases)
    return 0 if failed_items == failing_trials else None
