"""Rule-based summary agents (no model): the honest floor and the controls that must not score.

All read only what any agent gets: the Bundle JSON in the user prompt, and the packaged threshold
table (``lab_thresholds.json``, reference data every reader of the guidelines shares), with their
own code, never the task's truth, record readers or scorer (``groundeval.tasks``; a test keeps
that wall):

* ``baseline-summary``: a template summary of what the prompt asks for: active Conditions whose
  SNOMED CT display is tagged ``(disorder)``, or has no tag at all (older records write a
  disorder's preferred term, ``"Hypertension"``, without it: the agent's own guess, right on every
  packaged record, where the task's truth looks the tag up); active MedicationRequests by their RxNorm display;
  active medication allergies; for each test of the table, the latest ``final`` result when its
  value falls outside the table's normal band (``normal``, ``optimal``, ``near_optimal``, ``G1``,
  ``G2``). Ended drugs and problems are left out.
* ``naive-summary``: every Condition and every MedicationRequest of the record, whatever its status,
  listed as current (findings and social situations included): the control that must fail on
  contradictions.
* ``hedge-summary``: a summary that commits to nothing ("please review the record"): the control
  that must not score by saying nothing wrong.
* ``hedge-all-summary``: every Condition and every MedicationRequest, whatever its status, each
  labelled ``(past/current)``, every medication allergy, the latest result of every test of the
  table, and "No other diagnosis and no other medication": the control that must not score by
  labelling each item both ways (``scorer``'s hedge rule).
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Iterator, Mapping
from typing import Any

from groundeval.agent_io import AgentRequest, AgentResult
from groundeval.agents.base import AgentConfig
from groundeval.agents.baselines import no_model_calls
from groundeval.datasets import default_data_dir
from groundeval.errors import AgentError

__all__ = [
    "BaselineSummaryAgent",
    "HedgeAllSummaryAgent",
    "HedgingSummaryAgent",
    "NaiveSummaryAgent",
    "hedge_all_text",
    "summary_text",
]

JSON = dict[str, Any]
_IN_RANGE = frozenset({"normal", "optimal", "near_optimal", "G1", "G2"})
_TAG = re.compile(r"\s*\(([a-z /-]+)\)\s*$")


@functools.cache
def _table() -> JSON:
    """The packaged threshold table, read with ``json`` (not with the task's loader)."""
    table: JSON = json.loads((default_data_dir("terminology") / "lab_thresholds.json").read_text(encoding="utf-8"))
    return table


def _bundle(request: AgentRequest) -> JSON:
    text = request.prompt.user
    start = text.find("{")
    if start == -1:
        raise AgentError(f"{request.case_id}: the prompt holds no JSON Bundle")
    try:
        bundle, _ = json.JSONDecoder().raw_decode(text, start)
    except ValueError as exc:
        raise AgentError(f"{request.case_id}: cannot read the Bundle in the prompt: {exc}") from exc
    if not isinstance(bundle, dict):
        raise AgentError(f"{request.case_id}: the prompt's JSON is not a Bundle")
    return bundle


def _of(bundle: Mapping[str, Any], kind: str) -> Iterator[JSON]:
    for entry in bundle.get("entry") or []:
        resource = entry.get("resource") if isinstance(entry, dict) else None
        if isinstance(resource, dict) and resource.get("resourceType") == kind:
            yield resource


def _display(concept: Any) -> str | None:
    if not isinstance(concept, dict):
        return None
    for coding in concept.get("coding") or []:
        if isinstance(coding, dict) and coding.get("display"):
            return str(coding["display"])
    return str(concept["text"]) if concept.get("text") else None


def _status(resource: Mapping[str, Any], key: str) -> str | None:
    codings = (resource.get(key) or {}).get("coding") or []
    return str(codings[0].get("code")) if codings else None


def _drug(request: Mapping[str, Any], bundle: Mapping[str, Any]) -> str | None:
    if request.get("medicationCodeableConcept"):
        return _display(request["medicationCodeableConcept"])
    ref = (request.get("medicationReference") or {}).get("reference")
    for entry in bundle.get("entry") or []:
        med = entry.get("resource") or {}
        if med.get("resourceType") == "Medication" and ref in (entry.get("fullUrl"), f"Medication/{med.get('id')}"):
            return _display(med.get("code"))
    return None


def _band(value: float, categories: list[JSON]) -> str | None:
    for cat in categories:
        low, high = cat.get("low"), cat.get("high")
        if (low is None or value >= low) and (high is None or value < high):
            return str(cat["name"])
    return None


def _abnormal(bundle: Mapping[str, Any], *, every: bool = False) -> list[str]:
    latest: dict[str, JSON] = {}
    for obs in _of(bundle, "Observation"):
        if obs.get("status") != "final":
            continue
        for coding in (obs.get("code") or {}).get("coding") or []:
            code = coding.get("code")
            when = str(obs.get("effectiveDateTime") or "")
            if code and when >= str(latest.get(code, {}).get("effectiveDateTime") or ""):
                latest[code] = obs
    lines = []
    for test in _table()["tests"]:
        found = latest.get(test["loinc"])
        if found is None:
            continue
        obs = found
        when = str(obs.get("effectiveDateTime") or "")[:10]
        if test.get("components"):
            values, outside = [], False
            for comp_rule in test["components"]:
                comp = next(
                    (
                        c
                        for c in obs.get("component") or []
                        if any(k.get("code") == comp_rule["loinc"] for k in (c.get("code") or {}).get("coding") or [])
                    ),
                    None,
                )
                value = ((comp or {}).get("valueQuantity") or {}).get("value")
                if not isinstance(value, int | float):
                    break
                values.append(f"{value:g}")
                outside |= _band(float(value), comp_rule["categories"]) not in _IN_RANGE
            else:
                if outside or every:
                    lines.append(f"{test['name']} {'/'.join(values)} {test['unit']} ({when})")
            continue
        quantity = obs.get("valueQuantity") or {}
        value = quantity.get("value")
        if isinstance(value, int | float) and (every or _band(float(value), test["categories"]) not in _IN_RANGE):
            lines.append(f"{test['name']} {value:g} {quantity.get('code') or quantity.get('unit')} ({when})")
    return lines


def summary_text(bundle: Mapping[str, Any], *, naive: bool = False) -> str:
    """The template summary of ``baseline-summary`` (every Condition and drug as current when ``naive``)."""
    problems, drugs = [], []
    for cond in _of(bundle, "Condition"):
        display = _display(cond.get("code")) or ""
        tag = _TAG.search(display)
        if naive or (_status(cond, "clinicalStatus") == "active" and (tag is None or tag[1] == "disorder")):
            name = _TAG.sub("", display).strip()
            if name and name not in problems:
                problems.append(name)
    for req in _of(bundle, "MedicationRequest"):
        drug = _drug(req, bundle)
        if drug and (naive or req.get("status") == "active") and drug not in drugs:
            drugs.append(drug)
    allergies = []
    for allergy in _of(bundle, "AllergyIntolerance"):
        if "medication" in (allergy.get("category") or []) and _status(allergy, "clinicalStatus") in (None, "active"):
            name = _TAG.sub("", _display(allergy.get("code")) or "").strip()
            if name:
                allergies.append(f"allergy to {name}")
    lines = ["Active problems: " + "; ".join(problems) + "." if problems else "No active diagnosis recorded."]
    lines.append("Allergies: " + ("; ".join(allergies) if allergies else "no medication allergy recorded") + ".")
    lines.append("Current medications: " + "; ".join(drugs) + "." if drugs else "No current medication recorded.")
    abnormal = _abnormal(bundle)
    if abnormal:
        lines.append("Results outside range: " + "; ".join(abnormal) + ".")
    return "\n".join(lines)


def hedge_all_text(bundle: Mapping[str, Any]) -> str:
    """The summary of ``hedge-all-summary``: every problem and drug labelled ``(past/current)``."""
    problems, drugs, allergies = [], [], []
    for cond in _of(bundle, "Condition"):
        name = _TAG.sub("", _display(cond.get("code")) or "").strip()
        if name and name not in problems:
            problems.append(name)
    for req in _of(bundle, "MedicationRequest"):
        drug = _drug(req, bundle)
        if drug and drug not in drugs:
            drugs.append(drug)
    for allergy in _of(bundle, "AllergyIntolerance"):
        name = _TAG.sub("", _display(allergy.get("code")) or "").strip()
        if name and "medication" in (allergy.get("category") or []):
            allergies.append(f"allergy to {name}")
    lines = ["Problems: " + "; ".join(f"{p} (past/current)" for p in problems) + "." if problems else ""]
    lines.append("Medications: " + "; ".join(f"{d} (past/current)" for d in drugs) + "." if drugs else "")
    if allergies:
        lines.append("Allergies: " + "; ".join(allergies) + ".")
    results = _abnormal(bundle, every=True)
    if results:
        lines.append("Latest results: " + "; ".join(results) + ".")
    lines.append("No other diagnosis and no other medication.")
    return "\n".join(line for line in lines if line)


class BaselineSummaryAgent:
    """A template summary from its own reading of the record (no model): the honest floor."""

    thread_safe = True
    """Safe to call from several threads at once."""

    network_calls = False
    """Never makes a network call: the first call of a process need not go alone."""

    name = "baseline-summary"
    tasks: frozenset[str] = frozenset({"summary"})
    model: str | None = None
    naive = False

    def __init__(self, config: AgentConfig | None = None) -> None:
        del config  # nothing to configure

    def run(self, request: AgentRequest) -> AgentResult:
        """Return the summary text; raises ``AgentError`` when the prompt holds no Bundle."""
        return AgentResult(usage=no_model_calls(), text=summary_text(_bundle(request), naive=self.naive))


class NaiveSummaryAgent(BaselineSummaryAgent):
    """Negative control: every Condition and drug of the record listed as current."""

    name = "naive-summary"
    naive = True


class HedgingSummaryAgent(BaselineSummaryAgent):
    """Negative control: a summary that names nothing and so contradicts nothing."""

    name = "hedge-summary"

    def run(self, request: AgentRequest) -> AgentResult:
        """A hedge that commits to no fact of the record."""
        _bundle(request)
        return AgentResult(
            usage=no_model_calls(),
            text="The record is complex; please review the full chart before the handoff. "
            "No summary can be given with confidence."
        )


class HedgeAllSummaryAgent(BaselineSummaryAgent):
    """Negative control: every problem and drug of the record labelled both past and current."""

    name = "hedge-all-summary"

    def run(self, request: AgentRequest) -> AgentResult:
        """The hedged summary (``hedge_all_text``)."""
        return AgentResult(usage=no_model_calls(), text=hedge_all_text(_bundle(request)))
