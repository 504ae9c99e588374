"""What an agent did on the FHIR server of its case: retrieval figures and writes (``--groundeval-fhir``).

Read from the facts ``fhir.serving.FhirServingAgent`` keeps in ``meta["fhir"]`` (the access log
and what the server holds of the agent's writes), so a cached or replayed answer scores as it did.

* Retrieval, as FHIR-AgentBench scores it (the resources an agent retrieved against those the
  answer needs; ``fhir.sandbox.retrieval``): ``fhir_precision`` (fetched resources the truth used /
  fetched), ``fhir_recall`` (used resources fetched / used), each None when nothing is there to
  divide by (an agent that fetched nothing has no precision), ``fhir_wasted_calls`` (calls that
  returned no resource the truth used, errors and refusals included; on a writing task the
  answer's own create is not one), ``fhir_calls``
  (``/metadata`` left out) and ``fhir_refused`` (another case's token, 401, or another patient's
  data, 403: an agent must not reach across patients).
* Writes: ``fhir_writes`` counts accepted creates, updates and deletes. On a read task any write
  fails the case, whatever the answer (MedAgentBench's rule: a read must leave the record as it
  was). On a writing task the answer is the resource of its type the server holds for the patient
  after the agent stopped (the last one created or updated), and every other write is counted in
  ``fhir_other_writes``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from typing import Any

from groundeval.fhir.sandbox.retrieval import retrieval
from groundeval.fhir.sandbox.server import AccessLogEntry
from groundeval.scoring import Direction, Parsed, Score

__all__ = ["FHIR_DIRECTIONS", "FHIR_METRICS", "access_log", "with_fhir_access", "written_answer"]

FHIR_METRICS: tuple[str, ...] = (
    "fhir_calls", "fhir_precision", "fhir_recall", "fhir_wasted_calls", "fhir_refused", "fhir_writes",
    "fhir_other_writes",
)
"""The per-case metrics ``with_fhir_access`` adds, in report order."""

FHIR_DIRECTIONS: dict[str, Direction] = {
    "fhir_calls": "none", "fhir_wasted_calls": "lower", "fhir_refused": "lower", "fhir_writes": "none",
    "fhir_other_writes": "lower",
}
"""The FHIR metrics for which higher is not better."""


def access_log(facts: Mapping[str, Any]) -> list[AccessLogEntry]:
    """The access log of ``meta["fhir"]`` as ``AccessLogEntry`` values (malformed rows skipped)."""
    from urllib.parse import parse_qsl

    out = []
    for row in facts.get("calls") or []:
        if not isinstance(row, list | tuple) or len(row) < 5:
            continue
        method, target, status, returned, refused = row[:5]
        path, _, query = str(target).partition("?")
        out.append(AccessLogEntry(
            str(method), path, tuple(parse_qsl(query, keep_blank_values=True)), int(status),
            tuple(str(r) for r in returned or ()), None if refused is None else str(refused),
        ))
    return out


def _answer_writes(facts: Mapping[str, Any], type_: str) -> list[str]:
    return [str(ref) for interaction, ref in facts.get("writes") or []
            if interaction in ("create", "update") and str(ref).startswith(f"{type_}/")]


def written_answer(facts: Mapping[str, Any], type_: str, patient: str) -> Parsed:
    """The writing task's answer: the last ``type_`` the agent wrote for ``patient`` that the server still holds.

    Args:
        facts: ``meta["fhir"]``.
        type_: The answer's resource type (``MedicationStatement``).
        patient: ``Patient/<id>`` as the case holds it.

    Returns:
        ``Parsed`` with the resource as the case's own JSON (server ``id``/``meta`` removed), or
        ``found=False`` with the reason when the server holds none.
    """
    held = [r for r in facts.get("written") or [] if isinstance(r, Mapping) and r.get("resourceType") == type_]
    mine = [r for r in held if not patient or (r.get("subject") or {}).get("reference") in (patient, None)] or held
    if not mine:
        return Parsed(value={}, format_ok=False, error=f"the server holds no {type_} the agent wrote", found=False)
    resource = {k: v for k, v in mine[-1].items() if k not in ("id", "meta")}
    return Parsed(value=resource, format_ok=True, error=None, found=True)


def with_fhir_access(score: Score, facts: Mapping[str, Any], used: Iterable[str], *, writes: str | None) -> Score:
    """``score`` with the FHIR metrics added, failed when a read task wrote (see the module docstring).

    Args:
        score: The task's own score of the answer.
        facts: ``meta["fhir"]``.
        used: ``Type/id`` of each resource the truth was derived from (in the case's own ids).
        writes: The resource type a writing task's answer is, or None for a read task.
    """
    found = retrieval(access_log(facts), used)
    answer_writes = _answer_writes(facts, writes) if writes else []
    other = found.writes - (1 if answer_writes else 0)
    wasted = found.wasted_calls - (1 if answer_writes else 0)  # the answer's own create is not a wasted read
    metrics = {
        **score.metrics, "fhir_calls": found.calls, "fhir_precision": _rounded(found.precision),
        "fhir_recall": _rounded(found.recall), "fhir_wasted_calls": max(wasted, 0), "fhir_refused": found.refused,
        "fhir_writes": found.writes, "fhir_other_writes": max(other, 0),
    }
    details = {**score.details, "fhir": {"fetched": found.fetched, "used": found.used, "hits": found.hits}}
    if writes is None and found.writes:
        what = "; ".join(f"{i} {r}" for i, r in (facts.get("writes") or [])[:5])
        message = (f"fhir: the agent wrote to the record on a read task ({found.writes} write(s): {what}); a read "
                   "task must leave the record as it was")
        return dataclasses.replace(score, outcome="failed", metrics=metrics, details=details,
                                   message=f"{message}\n{score.message}".strip())
    return dataclasses.replace(score, metrics=metrics, details=details)


def _rounded(value: float | None) -> float | None:
    return None if value is None else round(value, 6)
