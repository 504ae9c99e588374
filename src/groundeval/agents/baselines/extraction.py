"""Rule-based extraction agents that read the Bundle out of the prompt text.

``baseline`` is an honest, model-free reader built on HealthChain's FHIR helpers (both agents
need the ``healthchain`` extra)
(``fhir.resources`` R4B models, ``healthchain.fhir.get_medications`` and ``get_resources``),
independent of the ground-truth code (it never imports ``groundeval.tasks`` or ``groundeval.fhir.bundle``). It reads the
same FHIR R4 rules the truth states, implemented separately: ``status == "active"``, not
``doNotPerform``, an order intent, a subject that is the Patient entry's fullUrl or
``Patient/<id>``, the drug from ``medicationCodeableConcept`` or a resolved
``medicationReference``, RxNorm picked by system. It should score perfectly on the packaged
fixtures and variants; where it does not, either it or the truth has a bug worth a look.

``naive`` is a negative control: it lists every MedicationRequest whatever its status, intent or
``doNotPerform``, so it loses precision on any patient with a stopped or completed prescription
and on the status, intent and doNotPerform variants. If it ever passes the
eval, the eval does not bite.
"""

from __future__ import annotations

import json
from typing import Any

from groundeval import _healthchain
from groundeval.agent_io import AgentRequest, AgentResult
from groundeval.agents.base import AgentConfig
from groundeval.agents.baselines import no_model_calls
from groundeval.errors import AgentError
from groundeval.extras import NeedsExtra

__all__ = ["BaselineExtractionAgent", "NaiveExtractionAgent"]

_RXNORM = frozenset({"http://www.nlm.nih.gov/research/umls/rxnorm", "urn:oid:2.16.840.1.113883.6.88"})
"""RxNorm's system URI and OID (https://terminology.hl7.org/CodeSystem-v3-rxNorm.html); kept here, not
imported from groundeval.fhir.bundle, so the baseline stays an independent reader of the truth's rules."""

_ORDERS = frozenset({"order", "original-order", "reflex-order", "filler-order", "instance-order"})
"""Intents that authorise a prescription (https://hl7.org/fhir/R4/valueset-medicationrequest-intent.html)."""


def _bundle_from_prompt(request: AgentRequest) -> Any:
    """Decode the first JSON object in the user prompt and validate it as an R4B Bundle."""
    from fhir.resources.R4B.bundle import Bundle

    text = request.prompt.user
    start = text.find("{")
    if start == -1:
        raise AgentError(f"{request.case_id}: the prompt holds no JSON Bundle")
    try:
        data, _ = json.JSONDecoder().raw_decode(text, start)
        return Bundle.model_validate(data)
    except ValueError as exc:  # JSONDecodeError and pydantic ValidationError
        raise AgentError(f"{request.case_id}: cannot read the Bundle in the prompt: {exc}") from exc


def _patient_refs(bundle: Any) -> set[str]:
    get_resources = _healthchain.fhir().get_resources

    # An absolute reference resolves only to the entry with that exact fullUrl
    # (https://hl7.org/fhir/R4/bundle.html#references); the relative form is Patient/<id>.
    refs: set[str] = set()
    for entry in bundle.entry or []:
        if entry.resource is not None and type(entry.resource).__name__ == "Patient":
            refs.add(f"Patient/{entry.resource.id}")
            if entry.fullUrl:
                refs.add(entry.fullUrl)
    if not refs:  # fall back to the helper's view (no fullUrl known)
        refs = {f"Patient/{p.id}" for p in get_resources(bundle, "Patient")}
    return refs


def _not_orders(bundle: Any) -> set[str]:
    """Ids of MedicationRequests that prohibit (doNotPerform) or do not order (proposal, plan, option)."""
    get_resources = _healthchain.fhir().get_resources
    return {
        str(r.id)
        for r in get_resources(bundle, "MedicationRequest")
        if r.doNotPerform is True or r.intent not in _ORDERS
    }


def _medication_list(request: AgentRequest, status: str | None) -> str:
    return medication_list(_bundle_from_prompt(request), status)


def medication_list(bundle: Any, status: str | None) -> str:
    """The JSON answer for an R4B ``Bundle`` model: its patient's medications, ``status`` ones only.

    Args:
        bundle: The record (``fhir.resources.R4B.bundle.Bundle``), from a prompt or a FHIR server.
        status: ``"active"`` for the baseline (orders only), None for every request (``naive``).
    """
    get_medications = _healthchain.fhir().get_medications
    patient = _patient_refs(bundle)
    skip = _not_orders(bundle) if status is not None else set()
    answer: list[dict[str, Any]] = []
    seen: set[str] = set()
    for entry in get_medications(bundle, status=status):
        if entry.resource_type != "MedicationRequest" or entry.subject not in patient or entry.resource_id in skip:
            continue
        rxnorm = [c for c in entry.codings if c.code and (c.system or "").strip() in _RXNORM]
        if rxnorm:
            if any(c.code in seen for c in rxnorm):
                continue
            seen.update(c.code for c in rxnorm if c.code)
            first = rxnorm[0]
            answer.append({"rxnorm_code": first.code, "display": first.display or ""})
        elif entry.display and entry.display not in seen:
            seen.add(entry.display)
            answer.append({"rxnorm_code": None, "display": entry.display})
    return json.dumps(answer, ensure_ascii=False)


class BaselineExtractionAgent(NeedsExtra):
    """Lists the active MedicationRequests of the Bundle in the prompt (no model)."""

    name = "baseline"
    needs_extra = ("healthchain", "healthchain")
    tasks: frozenset[str] = frozenset({"extraction"})
    model: str | None = None
    thread_safe = True
    """Safe to call from several threads at once (``--groundeval-concurrency`` defaults to 4)."""

    network_calls = False
    """Never makes a network call: the first call of a process need not go alone."""

    def __init__(self, config: AgentConfig | None = None) -> None:
        """Check that HealthChain is installed (nothing to configure).

        Raises:
            ConfigError: HealthChain is not installed (the ``healthchain`` extra).
        """
        self.check_config(config or AgentConfig())

    def warmup(self) -> None:
        """Import fhir.resources and HealthChain before the first case is timed."""
        import fhir.resources.R4B.bundle  # noqa: F401

        _healthchain.fhir()

    def run(self, request: AgentRequest) -> AgentResult:
        """Return the JSON answer; raises ``AgentError`` if the prompt holds no Bundle."""
        return AgentResult(usage=no_model_calls(), text=_medication_list(request, status="active"))


class NaiveExtractionAgent(BaselineExtractionAgent):
    """Negative control: lists every MedicationRequest regardless of status, intent or doNotPerform."""

    name = "naive"

    def run(self, request: AgentRequest) -> AgentResult:
        """Return every medication ever requested for the patient."""
        return AgentResult(usage=no_model_calls(), text=_medication_list(request, status=None))
