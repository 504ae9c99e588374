"""Rule-based agents: the honest floor and the negative control of each built-in task."""

from __future__ import annotations

from groundeval.scoring import Metric

__all__ = ["no_model_calls"]


def no_model_calls() -> dict[str, Metric]:
    """The usage of a rule-based answer: no model call, nothing spent (``model_calls`` 0, ``cost_usd`` 0.0 USD).

    A run of these agents then reports a cost of 0 rather than "unknown" (an empty usage reads as
    an unpriced model in the viewer and reports).
    """
    return {"model_calls": 0, "cost_usd": 0.0}
