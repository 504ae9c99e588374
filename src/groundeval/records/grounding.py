"""A run's grounding figures, from the per-case grounding metrics (``groundeval.scorers.grounding``), computed once.

Added to ``Aggregate.metrics`` when some counted case carries them (a tool-using agent on a task
that declares ``lookups``), so every output and ``groundeval compare`` shows them like the task's
own figures:

* ``macro_grounded_answer_rate`` and ``macro_lookup_recall``: means over the counted cases that have
  the value (their intervals come from ``trial_stats``, by the ``macro_<m>`` naming rule);
* ``tool_errors`` and ``repeated_calls``: totals over the counted cases;
* ``tool_plan_consistency`` (with repeated trials): per case with at least two counted trials, the
  share of its trials whose set of tools called is the case's most common one; the mean over
  those cases. 1.0 means every trial of every case followed the same plan.

``statements["grounding"]`` names, once, the answer items that were reasoned, not looked up, and
the required lookups that were missed, case by case.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Sequence
from itertools import islice

from groundeval.records.run_record import CaseRecord
from groundeval.scoring import Metric

__all__ = ["GROUNDING_STATEMENT", "MAX_NAMED", "grounding_figures", "grounding_text"]

GROUNDING_STATEMENT = "grounding"
"""The key of ``Aggregate.statements`` holding ``grounding_text``."""

MAX_NAMED = 5
"""Cases named at most in the grounding sentence (all of them are in the case records)."""


def _mean(values: list[float]) -> float | None:
    return round(sum(values) / len(values), 6) if values else None


def grounding_figures(counted: Sequence[CaseRecord]) -> dict[str, Metric]:
    """The run's grounding figures over its counted case records; empty when none carries them."""
    carried = [r for r in counted if "tool_errors" in r.metrics]
    if not carried:
        return {}
    figures: dict[str, Metric] = {}
    for name in ("grounded_answer_rate", "lookup_recall"):
        values = [float(v) for r in carried if isinstance(v := r.metrics.get(name), int | float)]
        figures[f"macro_{name}"] = _mean(values)
    for name in ("tool_errors", "repeated_calls"):
        figures[name] = sum(int(v) for r in carried if isinstance(v := r.metrics.get(name), int))
    plans: dict[str, list[frozenset[str]]] = defaultdict(list)
    for r in carried:
        plans[r.case_id].append(frozenset(str(c.get("tool")) for c in r.trace))
    shares = [Counter(p).most_common(1)[0][1] / len(p) for p in plans.values() if len(p) > 1]
    if shares:
        figures["tool_plan_consistency"] = _mean(shares)
    return figures


def grounding_text(counted: Sequence[CaseRecord]) -> str:
    """``grounding: 2 answer items in 1 case reasoned, not looked up (Liz_Conn_27c911c6: 1049630 ...); ...``.

    Empty when no counted case carries grounding details.
    """
    if not any("tool_errors" in r.metrics for r in counted):
        return ""
    # only the cases that have labels: a list entry per counted case was a transient of 0.3 KB a case
    reasoned = [(r, labels) for r in counted if (labels := r.details.get("reasoned_not_looked_up"))]
    missed = [(r, labels) for r in counted if (labels := r.details.get("missed_lookups"))]

    def named(pairs: list[tuple[CaseRecord, list[str]]]) -> str:
        shown = [f"{r.case_id}: {'; '.join(map(str, labels))}" for r, labels in islice(pairs, MAX_NAMED)]
        more = len(pairs) - len(shown)
        return " | ".join(shown) + (f" | and {more} more case(s)" if more else "")

    items, cases = sum(len(x) for _, x in reasoned), len(reasoned)
    lookups, lcases = sum(len(x) for _, x in missed), len(missed)
    parts = [f"{items} answer item(s) in {cases} case(s) reasoned, not looked up"
             + (f" ({named(reasoned)})" if items else ""),
             f"{lookups} required lookup(s) missed in {lcases} case(s)" + (f" ({named(missed)})" if lookups else "")]
    return "grounding: " + "; ".join(parts)
