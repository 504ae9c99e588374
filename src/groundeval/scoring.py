"""What a task's parser and scorer produce: ``Parsed``, ``Score`` and the primitive ``Metric``.

Frozen dataclasses; metric values are primitives (str, int, float, bool, None) so they can go into
junit properties and cross pytest-xdist's execnet channel unchanged.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

__all__ = ["Direction", "Metric", "Parsed", "Score"]

Metric = str | int | float | bool | None
"""A primitive metric value, safe for junit XML and execnet."""

Direction = Literal["higher", "lower", "none"]
"""Which way a per-case metric is better: ``higher`` (a score, the default), ``lower`` (false
positives, a missed high-alert drug) or ``none`` (a value such as a dose: a change is neither).
A task declares the non-default ones in ``metric_directions``; comparisons label changes by it."""


@dataclass(frozen=True, slots=True)
class Parsed:
    """An agent answer after parsing.

    Attributes:
        value: The parsed answer (JSON-safe), or the task's empty value when nothing parsed.
        format_ok: True only when the answer was exactly in the requested format.
        error: Why parsing failed or needed repair, or None.
        found: False when no answer of the requested shape was found at all (``value`` is then
            the task's empty value and must not earn credit).
    """

    value: Any
    format_ok: bool
    error: str | None = None
    found: bool = True


@dataclass(frozen=True, slots=True)
class Score:
    """The scorer's verdict on one case.

    Attributes:
        outcome: ``passed``, ``partial`` (some credit, below threshold) or ``failed``.
        metrics: Primitive per-case metrics (become junit properties).
        details: JSON-safe evidence for the run record (matches, misses, extras).
        message: Human-readable failure text; empty when passed.
        usage: What the scorer's own model calls cost, by role (``judge_calls``,
            ``judge_input_tokens``, ``judge_cost_usd``...: ``scorers.model_graded.role_usage``); the
            runner adds it to the case's ``usage`` beside the agent's. Empty for a scorer that
            calls no model.
    """

    outcome: Literal["passed", "partial", "failed"]
    metrics: dict[str, Metric]
    details: dict[str, Any] = field(default_factory=dict)
    message: str = ""
    usage: dict[str, Metric] = field(default_factory=dict)
