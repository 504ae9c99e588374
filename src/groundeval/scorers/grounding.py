"""Grounding and lookups: did a tool-using agent look up what it answers? Task-independent.

A task that offers tools declares, per case, what a trace is checked for (``LookupPlan``, from its
optional ``lookups(case, truth, parsed)``): the codes and values of its answer, and the tool calls
the case requires. ``score_trace`` reads the agent's tool-call trace (``AgentResult.trace``: each
call ``{"tool", "args", "result", "ok"}``, in order) and gives, per case:

* ``grounded_answer_rate``: the share of the answer's codes and values that appeared in some tool
  result of the same case (as a value anywhere in a result's JSON). An item whose value no tool
  ever returned was *reasoned, not looked up*; it is listed by name (``details["reasoned_not_looked_up"]``);
  None when the answer holds nothing to check;
* ``lookup_recall``: the share of the required calls that were made (a call of that tool that
  did not fail, whose arguments hold the required values, and whose result holds the required
  value when one is named); the missed ones listed by name (``details["missed_lookups"]``); None
  when the case requires none;
* ``tool_errors``: calls that failed (``ok`` false: the tool raised or returned ``"ok": false``);
* ``repeated_calls``: calls made again with the same tool and identical arguments.

FHIR-AgentBench scores the precision and recall of the resources an agent fetched; these figures
ask the narrower question the answer depends on: was each answered code read from a tool, and did
the agent make the reads the case needs.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from groundeval.scoring import Direction, Metric, Score

__all__ = ["GROUNDING_DIRECTIONS", "GROUNDING_METRICS", "Lookup", "LookupPlan", "score_trace", "with_grounding"]

GROUNDING_METRICS: tuple[str, ...] = ("grounded_answer_rate", "lookup_recall", "tool_errors", "repeated_calls")
"""The per-case metrics ``score_trace`` adds, in report order."""

GROUNDING_DIRECTIONS: dict[str, Direction] = {"tool_errors": "lower", "repeated_calls": "lower"}
"""The grounding metrics for which fewer is better (recorded in ``RunRecord.metric_directions``)."""


@dataclass(frozen=True, slots=True)
class Lookup:
    """A tool call the case requires.

    Attributes:
        label: What it is, for the failure text (``"list the MedicationRequests"``).
        tool: The tool's name.
        args: Argument name -> the value it must have (a JSON string argument is decoded first).
        result_has: A value the call's result must hold somewhere, or None.
        args_contain: Argument name -> text it must contain, case-insensitive (a search query
            that names a brand).
        result_equals: Result key -> the value it must have (``{"resource": <the answer>}``).
        alternatives: Other calls that satisfy the requirement as well (a build tool that
            validates what it builds, for a validation); their labels are not used.
    """

    label: str
    tool: str
    args: Mapping[str, Any] = field(default_factory=dict)
    result_has: str | None = None
    args_contain: Mapping[str, str] = field(default_factory=dict)
    result_equals: Mapping[str, Any] = field(default_factory=dict)
    alternatives: tuple[Lookup, ...] = ()


@dataclass(frozen=True, slots=True)
class LookupPlan:
    """What a case's trace is checked for.

    Attributes:
        answered: ``(label, value)`` per code or value of the answer (``("316049 Hydrochlorothiazide
            25 MG", "316049")``); the value is compared as text with the values of tool results.
        required: The calls the case requires.
    """

    answered: Sequence[tuple[str, str]] = ()
    required: Sequence[Lookup] = ()


def _leaves(value: Any) -> Iterator[str]:
    """Every scalar inside a JSON value, as text (a JSON string that holds JSON is opened too)."""
    if isinstance(value, Mapping):
        for item in value.values():
            yield from _leaves(item)
    elif isinstance(value, list):
        for item in value:
            yield from _leaves(item)
    elif isinstance(value, str):
        yield value
        if value[:1] in ("{", "["):
            with contextlib.suppress(ValueError):
                yield from _leaves(json.loads(value))
    elif value is not None and not isinstance(value, bool):
        yield str(value)


def _decoded(value: Any) -> Any:
    if isinstance(value, str) and value[:1] in ("{", "["):
        try:
            return json.loads(value)
        except ValueError:
            return value
    return value


def _made(lookup: Lookup, call: Mapping[str, Any]) -> bool:
    """True when ``call`` satisfies ``lookup`` (or one of its alternatives)."""
    if any(_made(other, call) for other in lookup.alternatives):
        return True
    raw, result = call.get("args"), call.get("result")
    args: Mapping[str, Any] = raw if isinstance(raw, Mapping) else {}
    if call.get("tool") != lookup.tool or not call.get("ok"):
        return False
    if any(_decoded(args.get(k)) != v for k, v in lookup.args.items()):
        return False
    if any(v.casefold() not in str(args.get(k) or "").casefold() for k, v in lookup.args_contain.items()):
        return False
    if lookup.result_equals and not (isinstance(result, Mapping)
                                     and all(result.get(k) == v for k, v in lookup.result_equals.items())):
        return False
    return lookup.result_has is None or lookup.result_has in set(_leaves(result))


def score_trace(plan: LookupPlan, trace: Sequence[Mapping[str, Any]]) -> tuple[dict[str, Metric], dict[str, Any]]:
    """The grounding metrics of one case and the names behind them (see the module docstring).

    Args:
        plan: The task's ``LookupPlan`` for the case.
        trace: The agent's tool calls, in order.

    Returns:
        ``(metrics, details)``: ``GROUNDING_METRICS`` and ``{"reasoned_not_looked_up": [label...],
        "missed_lookups": [label...]}``.
    """
    seen = {leaf for call in trace for leaf in _leaves(call.get("result"))}
    reasoned = [label for label, value in plan.answered if value not in seen]
    missed = [lookup.label for lookup in plan.required if not any(_made(lookup, call) for call in trace)]
    keys = [json.dumps([c.get("tool"), c.get("args")], sort_keys=True, default=str) for c in trace]
    n_answered, n_required = len(plan.answered), len(plan.required)
    metrics: dict[str, Metric] = {
        "grounded_answer_rate": round((n_answered - len(reasoned)) / n_answered, 6) if n_answered else None,
        "lookup_recall": round((n_required - len(missed)) / n_required, 6) if n_required else None,
        "tool_errors": sum(not c.get("ok") for c in trace),
        "repeated_calls": len(keys) - len(set(keys)),
    }
    return metrics, {"reasoned_not_looked_up": reasoned, "missed_lookups": missed}


def with_grounding(score: Score, plan: LookupPlan, trace: Sequence[Mapping[str, Any]]) -> Score:
    """``score`` with the grounding metrics and names added; a failure's text names what was not looked up.

    The verdict is the task's: grounding is reported beside it, never folded into it.
    """
    metrics, details = score_trace(plan, trace)
    lines = []
    if details["reasoned_not_looked_up"]:
        lines.append("reasoned, not looked up (no tool returned it): " + "; ".join(details["reasoned_not_looked_up"]))
    if details["missed_lookups"]:
        lines.append("missed lookups: " + "; ".join(details["missed_lookups"]))
    message = score.message
    if lines and score.outcome != "passed":
        message = "\n".join([message, *lines]).strip()
    return replace(score, metrics={**score.metrics, **metrics}, details={**score.details, **details}, message=message)
