"""A run's FHIR figures, from the per-case FHIR metrics (``groundeval.scorers.fhir_access``), computed once.

Added to ``Aggregate.metrics`` when some counted case carries them (a run under
``--groundeval-fhir``), so every output and ``groundeval compare`` shows them like the task's own
figures:

* ``macro_fhir_precision`` and ``macro_fhir_recall``: means over the counted cases that have the
  value (a case that fetched nothing has no precision and is left out of that mean; its recall is 0
  when its truth used anything); their intervals come from ``trial_stats`` by the ``macro_<m>`` rule;
* ``fhir_calls``, ``fhir_wasted_calls``, ``fhir_refused``, ``fhir_writes``, ``fhir_other_writes``:
  totals over the counted cases.

``statements["fhir"]`` says it in one line, naming the cases refused for reaching across patients
and the read cases failed for writing.
"""

from __future__ import annotations

from collections.abc import Sequence

from groundeval.records.run_record import CaseRecord
from groundeval.scoring import Metric

__all__ = ["FHIR_STATEMENT", "fhir_figures", "fhir_text"]

FHIR_STATEMENT = "fhir"
"""The key of ``Aggregate.statements`` holding ``fhir_text``."""

_TOTALS = ("fhir_calls", "fhir_wasted_calls", "fhir_refused", "fhir_writes", "fhir_other_writes")
_MAX_NAMED = 5


def _carried(counted: Sequence[CaseRecord]) -> list[CaseRecord]:
    return [r for r in counted if "fhir_calls" in r.metrics]


def fhir_figures(counted: Sequence[CaseRecord]) -> dict[str, Metric]:
    """The run's FHIR figures over its counted case records; empty when none carries them."""
    carried = _carried(counted)
    if not carried:
        return {}
    figures: dict[str, Metric] = {}
    for name in ("fhir_precision", "fhir_recall"):
        values = [float(v) for r in carried if isinstance(v := r.metrics.get(name), int | float)]
        figures[f"macro_{name}"] = round(sum(values) / len(values), 6) if values else None
    for name in _TOTALS:
        figures[name] = sum(int(v) for r in carried if isinstance(v := r.metrics.get(name), int | float))
    return figures


def _pct(value: Metric) -> str:
    return "n/a" if not isinstance(value, int | float) else f"{value:.0%}"


def fhir_text(counted: Sequence[CaseRecord]) -> str:
    """``fhir: retrieval precision 83%, recall 100% (macro over 12 cases); 40 calls, 3 wasted; ...``.

    Empty when no counted case carries FHIR metrics.
    """
    carried = _carried(counted)
    if not carried:
        return ""
    fig = fhir_figures(counted)
    parts = [
        f"retrieval precision {_pct(fig['macro_fhir_precision'])}, recall {_pct(fig['macro_fhir_recall'])} "
        f"(macro over {len(carried)} case(s))",
        f"{fig['fhir_calls']} call(s), {fig['fhir_wasted_calls']} wasted",
    ]
    refused = [r.case_id for r in carried if (r.metrics.get("fhir_refused") or 0)]
    parts.append(f"{fig['fhir_refused']} refused (another patient or token)"
                 + (f" in {', '.join(refused[:_MAX_NAMED])}" if refused else ""))
    wrote = [r.case_id for r in carried if (r.metrics.get("fhir_writes") or 0) and "fhir: the agent wrote" in r.message]
    if wrote:
        parts.append(f"{len(wrote)} read case(s) failed for writing ({', '.join(wrote[:_MAX_NAMED])})")
    if fig["fhir_other_writes"]:
        parts.append(f"{fig['fhir_other_writes']} write(s) beside the answer")
    return "fhir: " + "; ".join(parts)
