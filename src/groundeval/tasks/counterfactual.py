"""Counterfactual twins: a case's record changed by code in a way whose effect on the truth is known.

With ``--groundeval-counterfactual`` each case also runs as *twins*: copies of its record with one
small change (an active prescription stopped, a drug swapped for another), each its own pytest
item ``<case_id>[cf-<perturbation>]``, scored by the task as usual against the truth the task's
own truth code derives from the changed record. An agent that reads the record follows the
change; one that answers from priors (the drugs such a patient usually takes) gives the original's
answer to the changed record. ``groundeval.records.sensitivity`` pairs each twin with its original
and computes ``tracks_record`` and ``record_sensitivity``.

A task supports twins by declaring (all three, or none):

* ``perturbations``: the perturbation names it can make (``("stop-active", ...)``);
* ``counterfactual(case, kind) -> Case | None``: the twin of a loaded case made by ``kind``, or
  None when the record has nothing that perturbation can change (no stopped request to restart).
  It must be deterministic (seeded from the case file's SHA-256 and ``kind``): collection and
  every pytest-xdist worker derive the same twin. Build the result with ``make_twin``, after
  checking that the truth moved as declared (raise ``CounterfactualError`` when it did not);
* ``observe(probe, parsed) -> dict``: the part of an answer (a parsed answer as the case record
  keeps it, or None when there was none) that a twin's ``probe`` looks at, as JSON (for
  extraction, ``{rxcui: listed?}``), comparable with the twin's declared expectations.
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Mapping
from dataclasses import replace
from typing import Any, Literal

from groundeval.datasets import Case
from groundeval.errors import DatasetError, GroundevalError
from groundeval.records.trial_ids import split_twin, twin_name

__all__ = [
    "EFFECTS",
    "CounterfactualError",
    "Effect",
    "make_twin",
    "perturbations",
    "seeded",
    "twin_of",
    "twins",
]

Effect = Literal["drops", "adds", "replaces", "same"]
"""How a perturbation moves the truth: an item leaves it, joins it, is replaced, or nothing changes."""

EFFECTS: tuple[Effect, ...] = ("drops", "adds", "replaces", "same")
"""Every declared effect; ``same`` twins check robustness, the others whether the agent read the record."""


class CounterfactualError(GroundevalError):
    """A perturbation did not move the truth as it declares (a bug in the perturbation, not in the case)."""


def perturbations(task: object) -> tuple[str, ...]:
    """The perturbation names ``task`` declares (empty: the task makes no twins)."""
    kinds = getattr(task, "perturbations", ())
    return tuple(kinds) if callable(getattr(task, "counterfactual", None)) else ()


def seeded(case: Case, kind: str) -> random.Random:
    """A generator seeded from the case file's SHA-256 and the perturbation: same twin on every process."""
    digest = hashlib.sha256(f"{case.sha256}:{kind}".encode()).digest()
    return random.Random(int.from_bytes(digest[:8], "big"))


def make_twin(
    case: Case, kind: str, data: dict[str, Any], *, effect: Effect, change: str,
    probe: Mapping[str, Any], original: Mapping[str, Any], twin: Mapping[str, Any],
) -> Case:
    """The twin ``Case`` of ``case``: id ``<case_id>[cf-<kind>]``, the changed ``data``, what changed in ``meta``.

    Args:
        case: The original case.
        kind: The perturbation's name.
        data: The changed record (a copy: the original's data is never touched).
        effect: How the truth moved (``EFFECTS``).
        change: One line saying what was changed, for the run record and reports.
        probe: What ``observe`` looks at in an answer (JSON).
        original: ``observe(probe, <the original's truth as an answer>)``: what an answer to the
            original should show.
        twin: The same for the twin's truth.

    Returns:
        The twin: same ``source`` and ``sha256`` (its file), ``meta["counterfactual"]`` holding
        ``of``, ``kind``, ``effect``, ``change``, ``probe`` and ``expected`` (``original``, ``twin``).
    """
    facts = {
        "of": case.case_id, "kind": kind, "effect": effect, "change": change, "probe": dict(probe),
        "expected": {"original": dict(original), "twin": dict(twin)},
    }
    return replace(case, case_id=twin_name(case.case_id, kind), data=data, meta={**case.meta, "counterfactual": facts})


def twins(task: object, case: Case) -> list[Case]:
    """Every twin ``task`` makes of ``case``, in the task's perturbation order (kinds with no target left out).

    Raises:
        CounterfactualError: A perturbation did not move the truth as declared.
    """
    make = getattr(task, "counterfactual", None)
    out = []
    for kind in perturbations(task):
        assert callable(make)
        twin = make(case, kind)
        if twin is not None:
            out.append(twin)
    return out


def twin_of(task: object, case: Case, ref: Case) -> Case:
    """The case an item runs: ``case`` itself, or when ``ref`` is a twin, the same twin derived again from ``case``.

    Args:
        task: The run's task.
        case: The original case, read from its file.
        ref: The collected item's case (a twin carries ``meta["counterfactual"]``).

    Raises:
        DatasetError: The twin can no longer be derived from the file (it changed since collection).
    """
    facts = ref.meta.get("counterfactual")
    if not isinstance(facts, Mapping):
        return case
    kind = str(facts.get("kind") or split_twin(ref.case_id)[1])
    make = getattr(task, "counterfactual")  # noqa: B009  # the task declared it at collection
    twin: Case | None = make(case, kind)
    if twin is None:
        raise DatasetError(str(case.source), f"the {kind} twin can no longer be made from this file; run again")
    return twin
