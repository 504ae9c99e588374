"""Repeated trials: pass@k, pass^k, cluster-bootstrap intervals, case verdicts and the exit-status rule."""

from __future__ import annotations

import itertools
import math
from typing import Any

import pytest

from groundeval.options import positive_fraction
from groundeval.plugin.junit import suite_properties
from groundeval.plugin.summary import format_table
from groundeval.records.aggregate import summarize
from groundeval.records.run_record import FigureInterval, PassAtK, RunRecord, TrialStats
from groundeval.records.trial_stats import (
    CONFIDENCE,
    N_RESAMPLES,
    SEED,
    cluster_interval,
    pass_at_k,
    pass_hat_k,
    trial_stats,
    verdict_exit_status,
)
from groundeval.reporting import stats as reporting_stats, summary_markdown
from groundeval.reporting.html import render_report
from groundeval.reporting.stats import paired_interval
from groundeval.tasks import make_task
from tests._records import case, run


def _trials(case_id: str, outcomes: str, **extra: Any) -> list[Any]:
    """One record per trial: ``p`` passed, ``f`` failed, ``e`` infra_error (excluded), ``n`` no_answer."""
    names = {"p": "passed", "f": "failed", "e": "infra_error", "n": "no_answer"}
    return [case(case_id, names[o], trial=i, nodeid=f"groundeval/extraction::{case_id}[trial-{i}]", **extra)
            for i, o in enumerate(outcomes)]


def _by_enumeration(n: int, c: int, k: int) -> tuple[float, float]:
    """pass@k and pass^k straight from their definitions: over every k-subset of the n trials."""
    trials = [True] * c + [False] * (n - c)
    subsets = list(itertools.combinations(trials, k))
    return sum(any(s) for s in subsets) / len(subsets), sum(all(s) for s in subsets) / len(subsets)


@pytest.mark.parametrize(("n", "c", "k"), [(n, c, k) for n in range(1, 8) for c in range(n + 1) for k in range(1, n + 1)])
def test_estimators_equal_the_fraction_of_k_subsets(n: int, c: int, k: int) -> None:
    at, hat = _by_enumeration(n, c, k)
    assert pass_at_k(n, c, k) == pytest.approx(at, abs=1e-12)
    assert pass_hat_k(n, c, k) == pytest.approx(hat, abs=1e-12)


def test_estimators_hand_checked_values() -> None:
    # n=5, c=2, k=3: every 3-subset of 5 holds one of the 2 passes (C(3,3)/C(5,3) = 1/10 of them do not)
    assert pass_at_k(5, 2, 3) == pytest.approx(0.9) and pass_hat_k(5, 2, 3) == 0.0
    # n=4, c=3, k=2: C(3,2)/C(4,2) = 3/6 of the pairs are both passes
    assert pass_hat_k(4, 3, 2) == pytest.approx(0.5) and pass_at_k(4, 3, 2) == 1.0
    assert pass_at_k(10, 3, 1) == pytest.approx(0.3) == pass_hat_k(10, 3, 1)  # k=1: c/n
    with pytest.raises(ValueError, match="n=2, c=1, k=3"):
        pass_at_k(2, 1, 3)
    with pytest.raises(ValueError, match="n=2, c=3, k=1"):
        pass_hat_k(2, 3, 1)


def test_constants_match_the_paired_statistics() -> None:
    assert (N_RESAMPLES, SEED, CONFIDENCE) == (reporting_stats.N_RESAMPLES, reporting_stats.SEED,
                                               reporting_stats.CONFIDENCE)


def test_one_trial_per_case_interval_is_the_ordinary_bootstrap_over_cases() -> None:
    values = [1.0, 0.0, 1.0, 1.0, 0.0, 1.0, 1.0, 1.0, 0.0, 1.0, 0.5, 0.2]
    iv = cluster_interval(values, [1] * len(values))
    plain = paired_interval(values, test=False)  # the single-run bootstrap of groundeval.reporting.stats
    assert iv is not None and plain is not None
    assert iv.low == pytest.approx(plain.low, abs=1e-6) and iv.high == pytest.approx(plain.high, abs=1e-6)
    assert iv.method == "bootstrap-bca" and iv.cases == 12 and iv.low < iv.value < iv.high
    assert cluster_interval([1.0], [1]) is None  # one case: no interval
    same = cluster_interval([2.0, 2.0, 4.0], [2, 2, 4])
    assert same is not None and same.method == "exact" and (same.low, same.high) == (1.0, 1.0)


def test_repeating_identical_trials_does_not_narrow_the_interval() -> None:
    # Each case's 3 trials agree: the cluster bootstrap sees 10 cases, not 30 independent samples.
    per_case = [1.0, 0.0, 1.0, 1.0, 0.0, 1.0, 1.0, 0.0, 1.0, 1.0]
    once = cluster_interval(per_case, [1] * 10)
    thrice = cluster_interval([3 * v for v in per_case], [3] * 10)
    naive = paired_interval([v for v in per_case for _ in range(3)], test=False)
    assert once is not None and thrice is not None and naive is not None
    assert (thrice.low, thrice.high) == (once.low, once.high)
    assert naive.high - naive.low < thrice.high - thrice.low  # trial-level resampling would overstate certainty


def test_k1_aggregate_has_intervals_and_pass_at_1_equals_the_pass_rate() -> None:
    task = make_task("extraction")
    records = [case(f"c{i}", o) for i, o in enumerate(["passed", "failed", "passed", "partial", "passed"])]
    agg = summarize(task, records)
    stats = agg.trials
    assert stats is not None and stats.k == 1 and stats.cases == 5
    assert [p.k for p in stats.pass_k] == [1]
    assert stats.pass_k[0].pass_at_k == stats.pass_k[0].pass_hat_k == agg.pass_rate == 0.6
    assert set(stats.intervals) >= {"pass_rate", "answer_rate", "macro_f1", "macro_precision"}
    assert "micro_f1" not in stats.intervals  # a pooled ratio of counts, not a mean over cases
    iv = stats.intervals["pass_rate"]
    assert iv.value == agg.pass_rate and iv.cases == 5 and iv.low < 0.6 < iv.high
    assert stats.intervals["macro_f1"].value == agg.metrics["macro_f1"]
    assert stats.cases_failed == ["c1", "c3"] and stats.cases_passed == 3  # without R: every trial must pass


def test_several_trials_per_case_and_excluded_trials() -> None:
    task = make_task("extraction")
    records = [*_trials("a", "ppp"), *_trials("b", "pfp"), *_trials("c", "fff"), *_trials("d", "ppe"),
               *_trials("e", "eee"), *_trials("f", "pnf")]
    agg = summarize(task, records, min_pass_rate=0.6)
    stats = agg.trials
    assert stats is not None and stats.k == 3 and stats.cases == 6
    by_id = {c.case_id: c for c in stats.per_case}
    # an excluded trial is left out of n: d is 2 passes of 2 counted trials; e is never judged
    assert (by_id["d"].counted, by_id["d"].passes, by_id["d"].trials) == (2, 2, 3)
    assert by_id["e"].counted == 0 and by_id["e"].passed is None
    assert by_id["b"].outcomes == ["passed", "failed", "passed"]
    assert stats.cases_judged == 5 and stats.cases_passed == 3 and stats.cases_failed == ["c", "f"]
    # pass@1 averages c/n over the judged cases: a 1, b 2/3, c 0, d 1, f 1/3
    p1, _, p3 = stats.pass_k
    assert p1.pass_at_k == pytest.approx(round((1 + 2 / 3 + 0 + 1 + 1 / 3) / 5, 6))
    # k=3 needs 3 counted trials: d (2 counted) is left out; a, b, c, f remain
    assert p3.cases == 4
    assert p3.pass_at_k == pytest.approx((1 + 1 + 0 + 1) / 4)
    assert p3.pass_hat_k == pytest.approx((1 + 0 + 0 + 0) / 4)
    assert p3.pass_hat_k_interval is not None and p3.pass_hat_k_interval.cases == 4
    # the pass-rate interval is centred on the Aggregate's pooled pass rate (excluded trials left out)
    assert agg.counted == 14 and agg.excluded == 4
    assert stats.intervals["pass_rate"].value == agg.pass_rate == round(8 / 14, 6)
    assert stats.intervals["pass_rate"].cases == 5


@pytest.mark.parametrize(("outcomes", "rate", "verdict"), [
    ("ppf", 0.6, True), ("pff", 0.6, False), ("pppff", 0.6, True), ("ppfff", 0.6, False),
    ("ppf", 2 / 3, True), ("ppf", 1.0, False), ("ppp", 1.0, True), ("ppf", None, False), ("pe", 1.0, True),
])
def test_min_pass_rate_verdicts(outcomes: str, rate: float | None, verdict: bool) -> None:
    stats = trial_stats(_trials("x", outcomes), min_pass_rate=rate)
    assert stats.per_case[0].passed is verdict
    assert stats.min_pass_rate == rate


def test_min_pass_rate_values() -> None:
    assert positive_fraction("0.6") == 0.6 and positive_fraction("1") == 1.0
    for bad in ("0", "1.5", "-0.1"):
        with pytest.raises(ValueError, match="greater than 0 and at most 1"):
            positive_fraction(bad)


def _record(records: list[Any], rate: float | None, **extra: Any) -> RunRecord:
    rec = run(records, **extra)
    agg = summarize(make_task("extraction"), records, min_pass_rate=rate)
    return rec.model_copy(update={"aggregate": agg})


def test_exit_status_follows_the_case_verdicts() -> None:
    meets = [*_trials("a", "ppf"), *_trials("b", "ppp")]
    rec = _record(meets, 0.6)
    assert verdict_exit_status(rec, 1, failed_items=1) == 0
    assert verdict_exit_status(rec, 1, failed_items=2) is None  # another test in the session failed
    assert verdict_exit_status(rec, 2, failed_items=1) is None  # interrupted stays interrupted
    assert verdict_exit_status(_record(meets, None), 1, failed_items=1) is None  # no R: items decide
    below = _record([*_trials("a", "pff"), *_trials("b", "ppp")], 0.6)
    assert verdict_exit_status(below, 1, failed_items=2) is None
    excluded = _record([*_trials("a", "ppe"), *_trials("b", "ppp")], 0.6)
    assert verdict_exit_status(excluded, 1, failed_items=1) is None  # an error is never cleared
    not_run = _record([*_trials("a", "ppf"), case("b", "not_run")], 0.6, complete=False)
    assert verdict_exit_status(not_run, 1, failed_items=1) is None
    uncollected = _record(meets, 0.6, collection_errors=[{"nodeid": "groundeval/extraction::bad.json"}])
    assert verdict_exit_status(uncollected, 1, failed_items=1) is None
    # verdicts resting on an uncalibrated judge clear nothing, as they fail no regression gate
    ungated = rec.model_copy(update={"task_facts": {"ungated_verdicts": "the case verdicts rest on the judge x"}})
    assert verdict_exit_status(ungated, 1, failed_items=1) is None


def _fabricated() -> RunRecord:
    """A record whose Aggregate.trials holds values no computation over its cases would give."""
    rec = run([*_trials("a", "ppf"), *_trials("b", "ppp")])
    iv = FigureInterval(value=0.8333, low=0.1234, high=0.9876, cases=2, method="bootstrap-bca")
    stats = TrialStats(
        k=3, cases=2, intervals={"pass_rate": iv, "macro_f1": iv}, interval_method="METHOD-TEXT",
        pass_k=[PassAtK(k=1, pass_at_k=0.4321, pass_hat_k=0.4321, cases=2),
                PassAtK(k=2, pass_at_k=0.5555, pass_hat_k=0.3333, cases=2),
                PassAtK(k=3, pass_at_k=0.7777, pass_hat_k=0.2222, cases=2, pass_hat_k_interval=iv)],
        min_pass_rate=0.6, cases_judged=2, cases_passed=1, cases_failed=["a"], per_case=trial_stats(rec.cases).per_case,
    )
    return rec.model_copy(update={"aggregate": rec.aggregate.model_copy(update={"trials": stats})})


def test_reports_read_the_aggregate_not_recompute() -> None:
    rec = _fabricated()
    text = "\n".join(format_table(rec.aggregate, "header"))
    assert "95% intervals (cluster bootstrap (BCa) over 2 cases): pass_rate [0.123, 0.988]" in text
    assert "trials: 3 per case, 2 cases  pass@1: 0.432  pass@3: 0.778  pass^3: 0.222 [0.123, 0.988]" in text
    assert "cases passing (at least 0.6 of their counted trials): 1/2  below: a (2/3)" in text
    assert any(line.startswith("95% CI") and line.endswith("[0.123, 0.988]") for line in text.splitlines())
    md = summary_markdown(rec)
    assert "95% interval [0.123, 0.988] (cluster bootstrap (BCa), 2 cases)" in md
    assert "| 3 | 0.778 | 0.222 [0.123, 0.988] (cluster bootstrap (BCa), 2 cases) | 2 |" in md
    assert "cases passing (at least 0.6 of their counted trials): **1/2**; below: `a`" in md
    assert "| `a` | 2/3 | 3 | passed, passed, failed |" in md and "METHOD-TEXT" in md
    assert "`a[trial-2]`" in md  # the failed trial, named
    html = render_report(rec)
    assert 'data-figure="pass^3">0.222 [0.123, 0.988]' in html and "METHOD-TEXT" in html
    assert ">1/2</strong>" in html and "[trial-2]" in html
    props = dict(suite_properties(rec))
    assert props["pass_rate_ci_low"] == 0.1234 and props["macro_f1_ci_high"] == 0.9876
    assert props["pass_rate_ci_method"] == "bootstrap-bca"
    assert (props["trials"], props["pass_at_1"], props["pass_at_k"], props["pass_hat_k"]) == (3, 0.4321, 0.7777, 0.2222)
    assert (props["min_pass_rate"], props["cases_judged"], props["cases_passed"]) == (0.6, 2, 1)


def test_k1_reports_show_intervals_but_no_trials_section() -> None:
    records = [case(f"c{i}", o) for i, o in enumerate(["passed", "failed", "passed"])]
    rec = _record(records, None)
    text = "\n".join(format_table(rec.aggregate, "header"))
    assert "95% intervals (Wilson score over 3 cases): pass_rate [0.208, 0.939]  answer_rate [0.439, 1.000]" in text
    assert "pass@" not in text and "cases passing" not in text
    props = dict(suite_properties(rec))
    assert props["trials"] == 1 and props["pass_at_k"] == props["pass_at_1"] == props["pass_rate"]
    assert props["min_pass_rate"] == ""
    md = summary_markdown(rec)
    assert "trials per case" not in md and "**pass rate 0.667** (2/3) 95% interval [" in md


def test_old_records_without_trials_get_intervals_from_their_cases() -> None:
    rec = run([case("c1"), case("c2", "failed"), case("c3")])
    assert rec.aggregate.trials is None
    assert "**pass rate 0.667** (2/3) 95% interval [" in summary_markdown(rec)
    assert math.isclose(RunRecord.model_validate_json(rec.model_dump_json()).aggregate.pass_rate or 0, 2 / 3)


def test_many_cases_take_the_percentile_interval_in_bounded_batches(monkeypatch: pytest.MonkeyPatch) -> None:
    # BCa's jackknife grows with cases squared; above BCA_MAX_CASES the percentile method is used,
    # and every bootstrap draws its resamples in batches of at most BATCH_VALUES values.
    from scipy import stats

    from groundeval.records import trial_stats as ts

    calls: list[dict[str, Any]] = []
    real = stats.bootstrap

    def spy(*args: Any, **kwargs: Any) -> Any:
        calls.append(kwargs)
        return real(*args, **kwargs)

    monkeypatch.setattr(stats, "bootstrap", spy)
    values = [1.0, 0.0, 1.0, 1.0, 0.0, 1.0, 1.0, 1.0, 0.0, 1.0, 0.5, 0.2]
    small = cluster_interval(values, [1] * len(values))
    default_batch = ts.BATCH_VALUES
    monkeypatch.setattr(ts, "BCA_MAX_CASES", len(values) - 1)
    monkeypatch.setattr(ts, "BATCH_VALUES", 600)
    large = cluster_interval(values, [1] * len(values))
    assert small is not None and small.method == "bootstrap-bca"
    assert large is not None and large.method == "bootstrap-percentile" and large.low < large.value < large.high
    assert [c["method"] for c in calls] == ["BCa", "percentile"]
    assert calls[1]["batch"] * len(values) <= 600 and calls[0]["batch"] * len(values) <= default_batch


def test_a_proportion_gets_a_wilson_interval_that_behaves_at_0_and_n() -> None:
    from scipy.stats import binomtest

    from groundeval.records.trial_stats import proportion_interval

    every = proportion_interval(1.0, 25)  # 25 of 25 passed: compatible with a true rate well under 0.9
    none = proportion_interval(0.0, 10)
    assert every is not None and none is not None
    assert every.low == pytest.approx(0.866808, abs=1e-6) and every.high == 1.0 and every.method == "wilson"
    assert none.low == 0.0 and none.high == pytest.approx(0.277533, abs=1e-6)
    ci = binomtest(7, 12).proportion_ci(0.95, method="wilson")  # the maintained implementation, not ours
    seven = proportion_interval(7 / 12, 12)
    assert seven is not None and seven.low == pytest.approx(ci.low, abs=1e-6) and seven.high == pytest.approx(ci.high, abs=1e-6)
    assert proportion_interval(0.5, 0) is None


def test_with_trials_the_rate_is_over_cases_and_identical_trials_do_not_narrow_it() -> None:
    task = make_task("extraction")
    outcomes = ["passed"] * 7 + ["failed"] * 3
    once = summarize(task, [case(f"c{i}", o) for i, o in enumerate(outcomes)]).trials
    thrice = summarize(task, [r for i, o in enumerate(outcomes) for r in _trials(f"c{i}", "ppp" if o == "passed" else "fff")]).trials
    assert once is not None and thrice is not None
    a, b = once.intervals["pass_rate"], thrice.intervals["pass_rate"]
    assert (a.low, a.high, a.cases) == (b.low, b.high, b.cases) == (a.low, a.high, 10)
    # a pooled rate that is not a whole number of cases is widened to the whole numbers either side
    mixed = summarize(task, [*_trials("a", "ppf"), *_trials("b", "ppp"), *_trials("c", "fff")]).trials
    assert mixed is not None
    iv = mixed.intervals["pass_rate"]
    low = proportion_interval_at(1, 3)
    high = proportion_interval_at(2, 3)
    assert iv.method == "wilson-cases" and (iv.low, iv.high) == (low[0], high[1]) and iv.low < iv.value < iv.high


def proportion_interval_at(k: int, n: int) -> tuple[float, float]:
    from scipy.stats import binomtest

    ci = binomtest(k, n).proportion_ci(0.95, method="wilson")
    return round(float(ci.low), 6), round(float(ci.high), 6)


def test_no_summarised_figure_of_a_finite_sample_has_a_zero_width_interval() -> None:
    task = make_task("extraction")
    for outcomes in (["passed"] * 25, ["failed"] * 10):
        stats = summarize(task, [case(f"c{i}", o) for i, o in enumerate(outcomes)]).trials
        assert stats is not None and stats.intervals
        for name, iv in stats.intervals.items():
            assert iv.high - iv.low > 0.05 and iv.method != "exact", (name, iv)
    # a mean over cases with no spread (every macro F1 1.0) falls back to the Wilson interval at that mean
    stats = summarize(task, [case(f"c{i}") for i in range(25)]).trials
    assert stats is not None and stats.intervals["macro_f1"].method == "wilson"


def test_the_wilson_interval_is_scipys_binomtest_interval_for_every_k() -> None:
    """The interval computed from ``scipy.special.ndtri`` is ``binomtest``'s, to the last bit we record and beyond."""
    from scipy.stats import binomtest

    from groundeval.records.trial_stats import _wilson

    for n in (*range(1, 41), 64, 99, 500, 5000):
        for k in range(n + 1) if n <= 99 else (0, 1, n // 3, n // 2, n - 1, n):
            ci = binomtest(k, n).proportion_ci(0.95, method="wilson")
            low, high = _wilson(k, n)
            assert low == pytest.approx(float(ci.low), abs=1e-12) and high == pytest.approx(float(ci.high), abs=1e-12), (k, n)


def test_a_run_of_proportions_imports_neither_numpy_nor_scipy() -> None:
    """Pass and answer rates need only the normal quantile (the standard library's): no numpy, no SciPy."""
    import subprocess
    import sys

    code = (
        "import sys\n"
        "from groundeval.records.aggregate import summarize\n"
        "from groundeval.tasks import make_task\n"
        "sys.path.insert(0, 'tests')\nfrom _records import case\n"
        "agg = summarize(make_task('extraction'), [case(f'c{i}', 'passed' if i % 3 else 'failed') for i in range(9)])\n"
        "assert agg.trials is not None and agg.trials.intervals['pass_rate'].method == 'wilson'\n"
        "print('numpy' in sys.modules, 'scipy' in sys.modules)\n"
    )
    from tests._paths import REPO

    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, check=True).stdout
    assert out.split() == ["False", "False"]
