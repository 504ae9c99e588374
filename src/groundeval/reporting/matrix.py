"""Compare N runs of one task at once: a model matrix against a named baseline.

Each non-baseline run is compared with the baseline by ``groundeval.reporting.compare.compare_runs``
(the two-run comparison, unchanged: its checks, paired intervals, Wilcoxon p and gate), so a matrix
row never says anything the pairwise comparison would not. The matrix adds:

* per figure, each run's value with its own 95% interval (the record's ``Aggregate.trials``
  intervals: ``groundeval.records.trial_stats``) and the best run marked, where the figure has a
  direction (the mean of a per-case dimension, by ``RunRecord.metric_directions``; ``cost_usd``,
  lower is better); a tie marks every run that has the best value;
* per case, each run's outcome (trials pooled: ``2/3 passed``) and, against the baseline, whether
  it regressed or improved (the gate's per-case verdict);
* per non-baseline run, the **exact McNemar test** on the cases with one counted trial in both
  runs: of the discordant pairs (passed in one run only), the count that passed only in the
  baseline is Binomial(b + c, 1/2) under no difference; ``scipy.stats.binomtest`` gives the
  two-sided p (McNemar 1947; the exact form, Fagerland, Lydersen and Laake 2013, BMC Med Res
  Methodol 13:91). Cases with repeated trials are left to the paired bootstrap and the per-case
  Fisher test of the pairwise comparison.

The gate is each pairwise gate against the baseline; the matrix's gate fails when any of them does.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from groundeval.records.dimensions import figure_dimension
from groundeval.records.run_record import FigureInterval, RunRecord
from groundeval.records.trial_stats import record_trial_stats
from groundeval.reporting.cases import EPS, CaseValues, dimensions, directions, record_values
from groundeval.reporting.compare import Comparison, Figure, compare_runs

__all__ = [
    "LOWER_IS_BETTER",
    "Matrix",
    "MatrixCase",
    "MatrixFigure",
    "McNemar",
    "compare_matrix",
    "labels",
    "mcnemar",
    "pick_baseline",
]

LOWER_IS_BETTER = frozenset({"cost_usd", "spent_usd"})
"""Usage figures a lower value of which is better (every other usage figure is not ranked)."""


def labels(n: int) -> list[str]:
    """``["A", "B", ..., "Z", "R27", ...]``: the runs' names in the order given."""
    return [chr(ord("A") + i) if i < 26 else f"R{i + 1}" for i in range(n)]


@dataclass(frozen=True, slots=True)
class McNemar:
    """The exact McNemar test of one run's per-case pass/fail against the baseline.

    Attributes:
        cases: Cases with one counted trial in both runs.
        baseline_only: Of those, the cases that passed in the baseline only (b).
        current_only: The cases that passed in this run only (c).
        p_value: Two-sided exact p (``scipy.stats.binomtest(b, b + c, 0.5)``), None without a
            discordant pair.
    """

    cases: int
    baseline_only: int
    current_only: int
    p_value: float | None


def mcnemar(a: Mapping[str, CaseValues], b: Mapping[str, CaseValues]) -> McNemar:
    """The exact McNemar test over the cases both runs counted once (see the module docstring).

    Args:
        a: The baseline's cases (``cases.record_values``).
        b: The other run's cases.
    """
    pairs = [(a[k].passes, b[k].passes) for k in a if k in b and a[k].counted == 1 and b[k].counted == 1]
    only_a = sum(x == 1 and y == 0 for x, y in pairs)
    only_b = sum(x == 0 and y == 1 for x, y in pairs)
    p = None
    if only_a + only_b:
        from scipy import stats

        p = float(stats.binomtest(only_a, only_a + only_b, 0.5).pvalue)
    return McNemar(len(pairs), only_a, only_b, p)


@dataclass(frozen=True, slots=True)
class MatrixFigure:
    """One headline figure across the runs.

    Attributes:
        name: The aggregate's name (``pass_rate``, ``macro_f1``, ``cost_usd``, ...).
        values: Each run's value (None where it has none), in the runs' order.
        intervals: Each run's own 95% interval of the figure, or None.
        paired: Each run's pairwise figure against the baseline (its difference, paired interval
            and Wilcoxon p); None in the baseline's place.
        best: Indices of the runs with the best value; empty when the figure has no direction,
            fewer than two runs have it, or every run has the same value.
        direction: ``higher``, ``lower``, or None when not ranked.
    """

    name: str
    values: tuple[float | None, ...]
    intervals: tuple[FigureInterval | None, ...]
    paired: tuple[Figure | None, ...]
    best: frozenset[int]
    direction: Literal["higher", "lower"] | None


@dataclass(frozen=True, slots=True)
class MatrixCase:
    """One case across the runs.

    Attributes:
        case_id: The case id.
        cells: Each run's case (trials pooled), or None when the run does not have it.
        verdicts: Each run's gate verdict against the baseline (``regressed``, ``improved``,
            ``unchanged``, ``lost``), None in the baseline's place and where not compared.
    """

    case_id: str
    cells: tuple[CaseValues | None, ...]
    verdicts: tuple[str | None, ...]


@dataclass(frozen=True, slots=True)
class Matrix:
    """N runs of one task side by side against a baseline.

    Attributes:
        runs: The runs, in the order given.
        labels: Their names (``A``, ``B``, ...).
        baseline: Index of the baseline run.
        comparisons: Each run's pairwise comparison against the baseline (None in its place).
        figures: The headline figures.
        cases: Every case of any run, in first-seen order.
        tests: Each run's exact McNemar test against the baseline (None in its place).
    """

    runs: tuple[RunRecord, ...]
    labels: tuple[str, ...]
    baseline: int
    comparisons: tuple[Comparison | None, ...]
    figures: tuple[MatrixFigure, ...]
    cases: tuple[MatrixCase, ...]
    tests: tuple[McNemar | None, ...]

    @property
    def problems(self) -> list[str]:
        """Why some run cannot be compared with the baseline (different tasks), one line each."""
        return [f"{self.labels[i]}: {p}" for i, c in enumerate(self.comparisons) if c for p in c.problems]

    @property
    def gate_failed(self) -> bool:
        """True when any run's gate against the baseline fails."""
        return any(c.gate.failed for c in self.comparisons if c is not None)

    def gate_reasons(self) -> list[str]:
        """``"C: 1 case regressed"`` style reasons of every failing pairwise gate."""
        return [f"{self.labels[i]}: {r}" for i, c in enumerate(self.comparisons) if c for r in c.gate.reasons()]


def pick_baseline(runs: Sequence[RunRecord], paths: Sequence[str], name: str | None) -> int:
    """The index of the run ``--baseline`` names: one of the paths as given, else a run id, else a letter.

    Raises:
        ValueError: No run or more than one matches (the message lists the choices).
    """
    if name is None:
        return 0
    letters = labels(len(runs))
    found: set[int] = set()
    for key in (list(paths), [r.run_id for r in runs], letters):  # a path first, then a run id, then a letter
        found = {i for i, value in enumerate(key) if value == (name.upper() if key is letters else name)}
        if found:
            break
    if len(found) == 1:
        return found.pop()
    choices = ", ".join(
        f"{label} ({p}, run {r.run_id})" for label, p, r in zip(labels(len(runs)), paths, runs, strict=True)
    )
    why = "names more than one run" if found else "names none of the runs"
    raise ValueError(f"--baseline {name!r} {why}; give a run's path as given, its run id or its letter: {choices}")


def _direction(name: str, dims: Sequence[str], dirs: Mapping[str, str]) -> Literal["higher", "lower"] | None:
    if name in LOWER_IS_BETTER:
        return "lower"
    dim = figure_dimension(name, dims)
    if dim is None and name.startswith("micro_") and name[len("micro_") :] in dims:  # a pooled rate of metric m
        dim = name[len("micro_") :]
    if dim is None:
        return None
    found = dirs.get(dim, "higher")
    return found if found in ("higher", "lower") else None  # type: ignore[return-value]


def _best(values: Sequence[float | None], direction: str | None) -> frozenset[int]:
    present = [(i, v) for i, v in enumerate(values) if v is not None]
    if direction is None or len(present) < 2:
        return frozenset()
    best = min(v for _, v in present) if direction == "lower" else max(v for _, v in present)
    if all(abs(v - best) <= EPS for _, v in present):
        return frozenset()
    return frozenset(i for i, v in present if abs(v - best) <= EPS)


def compare_matrix(runs: Sequence[RunRecord], baseline: int = 0) -> Matrix:
    """Compare every run with ``runs[baseline]``; see the module docstring.

    Args:
        runs: Two or more run records.
        baseline: Index of the baseline in ``runs``.

    Raises:
        ValueError: Fewer than two runs, or ``baseline`` out of range.
    """
    if len(runs) < 2:
        raise ValueError("a matrix needs two or more runs")
    if not 0 <= baseline < len(runs):
        raise ValueError(f"baseline index {baseline} is not one of the {len(runs)} runs")
    base = runs[baseline]
    comparisons = tuple(None if i == baseline else compare_runs(base, r) for i, r in enumerate(runs))
    # a run that cannot be compared with the baseline (another task, other cases) is shown, never
    # ranked: it is not marked best and its cases are not counted among the differing ones
    apart = frozenset(i for i, c in enumerate(comparisons) if c is not None and c.problems)
    dims, dirs = dimensions(*runs), directions(*runs)
    names: dict[str, None] = {}
    for c in comparisons:
        if c is not None:
            names.update(dict.fromkeys(f.name for f in c.figures))
    stats = [record_trial_stats(r).intervals for r in runs]
    figures = []
    for name in names:
        paired = tuple(None if c is None else next((f for f in c.figures if f.name == name), None) for c in comparisons)
        base_value = next((p.a for p in paired if p is not None), None)
        values = tuple(
            (base_value if base_value is not None else _value(base, name))
            if i == baseline
            else (p.b if p is not None else _value(runs[i], name))
            for i, p in enumerate(paired)
        )
        direction = _direction(name, dims, dirs)
        figures.append(
            MatrixFigure(
                name, values, tuple(s.get(name) for s in stats), paired,
                _best(tuple(None if i in apart else v for i, v in enumerate(values)), direction), direction,
            )
        )
    per_run = [{} if i in apart else record_values(r) for i, r in enumerate(runs)]
    ids = list(dict.fromkeys(k for values in per_run for k in values))
    verdicts: list[dict[str, str]] = []
    for c in comparisons:
        found: dict[str, str] = {}
        if c is not None:
            found.update({d.case_id: d.verdict for d in c.cases})
            found.update({lost.case_id: "lost" for lost in c.gate.lost})
        verdicts.append(found)
    cases = tuple(
        MatrixCase(
            k,
            tuple(v.get(k) for v in per_run),
            tuple(None if i == baseline else verdicts[i].get(k) for i in range(len(runs))),
        )
        for k in ids
    )
    tests = tuple(
        None if i == baseline or (c is not None and c.problems) else mcnemar(per_run[baseline], per_run[i])
        for i, c in enumerate(comparisons)
    )
    return Matrix(tuple(runs), tuple(labels(len(runs))), baseline, comparisons, tuple(figures), cases, tests)


def _value(record: RunRecord, name: str) -> float | None:
    """A run's own value of a headline figure (the baseline's, read as the pairwise comparison reads it)."""
    agg = record.aggregate
    if name == "pass_rate":
        return agg.pass_rate
    if name == "answer_rate":
        return agg.answer_rate
    if name == "pass_rate_ran":
        from groundeval.records.scope import pass_rate_ran

        return pass_rate_ran(agg)
    value = agg.metrics.get(name, agg.usage.get(name))
    return value if isinstance(value, int | float) and not isinstance(value, bool) else None
