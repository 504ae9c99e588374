"""The per-case dimensions of a case record, and the rule tying a run's headline figures to them.

Read by the trial statistics (``groundeval.records.trial_stats``, computed once into the aggregate) and by
the reports that compare runs (``groundeval.reporting``), so both see the same dimensions.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence

from groundeval.records.run_record import CaseRecord

__all__ = ["dimension_values", "figure_dimension"]


def dimension_values(record: CaseRecord, names: Sequence[str] | None = None) -> dict[str, float]:
    """One trial's dimension -> value (``passed``/``answered`` as 0 or 1); empty when it is not counted.

    Args:
        record: One case record (one trial).
        names: The per-case metrics to take, in order; None takes every numeric or boolean metric
            the record carries (booleans as 0 or 1; None and text are no value).
    """
    if not record.counted:
        return {}
    out = {"passed": 1.0 if record.outcome == "passed" else 0.0, "answered": 1.0 if record.answered else 0.0}
    for name in record.metrics if names is None else names:
        value = record.metrics.get(name)
        if name not in out and isinstance(value, bool | int | float):
            out[name] = float(value)
    return out


def figure_dimension(name: str, dims: Collection[str] | None = None) -> str | None:
    """The per-case dimension whose mean a headline figure is, or None (micro means, counts, usage).

    The naming rule any task's aggregate can follow: ``pass_rate`` is the mean of ``passed``,
    ``answer_rate`` of ``answered``, ``macro_<m>`` and ``<m>_pass_rate`` of the per-case metric
    ``<m>``. With ``dims``, a dimension the run does not have gives None.
    """
    if name == "pass_rate":
        dim: str | None = "passed"
    elif name == "answer_rate":
        dim = "answered"
    elif name.startswith("macro_"):
        dim = name[len("macro_"):]
    elif name.endswith("_pass_rate"):
        dim = name[: -len("_pass_rate")]
    else:
        dim = None
    return None if dim is None or (dims is not None and dim not in dims) else dim
