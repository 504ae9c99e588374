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

Nothing an agent can observe tells a twin from its original but the changed record: the request
carries the original's case id (``execution.call.request_for``), the items of a case and its twins run in
an order shuffled by the run's twin seed (``interleave``), every twin of a case file is derived
when the file is read, whichever of its items runs first (``execution.base.CaseFiles``), and while
an item of a twin runs, ``PYTEST_CURRENT_TEST`` names its original (``plugin.items``). Because an
agent can still tell that it saw a patient before, record sensitivity is also reported by the
order in which a twin's call came (``records.sensitivity``): each twin records its case's
``subject`` (``subject_of``), and the headline is the lower of the figure over twins called before
any other call about their patient and the figure over the rest.
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any, Literal, TypeVar

from groundeval.datasets import Case
from groundeval.errors import DatasetError, GroundevalError
from groundeval.records.trial_ids import split_twin, twin_name

__all__ = [
    "EFFECTS",
    "SUBJECT",
    "CounterfactualError",
    "Effect",
    "interleave",
    "make_twin",
    "perturbations",
    "seeded",
    "subject_of",
    "twin_of",
    "twins",
    "with_subject",
]

SUBJECT = "subject"
"""The key of ``Case.meta`` (and so of each case record's ``meta``) holding ``subject_of(case)`` in a run with twins."""

T = TypeVar("T")

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


def _patient_ids(data: Any) -> list[str]:
    """The ids of the Patient resources in a Bundle dict (``data`` itself, or ``data["bundle"]``)."""
    bundle = data.get("bundle", data) if isinstance(data, Mapping) else None
    entries = bundle.get("entry") if isinstance(bundle, Mapping) else None
    out = []
    for entry in entries if isinstance(entries, list) else []:
        resource = entry.get("resource") if isinstance(entry, Mapping) else None
        if isinstance(resource, Mapping) and resource.get("resourceType") == "Patient" and resource.get("id"):
            out.append(str(resource["id"]))
    return out


def subject_of(case: Case) -> str:
    """Who a case is about, as an agent could tell from its record: a short SHA-256 of the patient.

    The patient is the Bundle's Patient resource id (the case data, or its ``bundle``), else the
    ``patient.reference`` the case gives (the write task), else the case id. The cases of one
    patient (a record and its packaged variants) share it, and so do a case's twins. It is hashed
    so that the run record names no patient id.

    Returns:
        16 hex digits.
    """
    data = case.data
    ids = _patient_ids(data)
    if not ids and isinstance(data, Mapping) and isinstance(data.get("patient"), Mapping):
        ids = [str(data["patient"].get("reference") or "")]
    key = "|".join(sorted(i for i in ids if i)) or f"case:{split_twin(case.case_id)[0]}"
    return hashlib.sha256(key.encode()).hexdigest()[:16]


def with_subject(case: Case) -> Case:
    """``case`` with ``meta["subject"]`` set (``subject_of``); twins made from it inherit it."""
    return replace(case, meta={**case.meta, SUBJECT: subject_of(case)})


def interleave(items: Sequence[T], seed: int, key: str) -> list[T]:
    """``items`` (a case's items and its twins') in an order shuffled by ``seed`` and ``key`` (the case id).

    Every permutation is equally likely, so a twin comes before its original as often as after
    it, and an original is its case's first call no more often than any of its twins. The same
    seed and key give the same order on every process (collection on each pytest-xdist worker).
    """
    digest = hashlib.sha256(f"{seed}:{key}".encode()).digest()
    out = list(items)
    random.Random(int.from_bytes(digest[:8], "big")).shuffle(out)
    return out


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
    if SUBJECT in ref.meta and SUBJECT not in case.meta:
        case = with_subject(case)
    facts = ref.meta.get("counterfactual")
    if not isinstance(facts, Mapping):
        return case
    kind = str(facts.get("kind") or split_twin(ref.case_id)[1])
    make = getattr(task, "counterfactual")  # noqa: B009  # the task declared it at collection
    twin: Case | None = make(case, kind)
    if twin is None:
        raise DatasetError(str(case.source), f"the {kind} twin can no longer be made from this file; run again")
    return twin
