"""Rule-based extraction agents that read the Bundle out of the prompt text.

``baseline`` is an honest, model-free reader built on HealthChain's FHIR helpers (the
``healthchain`` extra)
(``fhir.resources`` R4B models, ``healthchain.fhir.get_medications`` and ``get_resources``),
independent of the ground-truth code (it never imports ``groundeval.tasks`` or ``groundeval.fhir``). It reads the
same FHIR R4 rules the truth states, implemented separately: ``status == "active"``, not
``doNotPerform``, an order intent, a subject that is the Patient entry's fullUrl or
``Patient/<id>``, the drug from ``medicationCodeableConcept`` or a resolved
``medicationReference``, RxNorm picked by system. It should score perfectly on the packaged
fixtures and variants; where it does not, either it or the truth has a bug worth a look.

``naive`` is a negative control: it lists every MedicationRequest whatever its status, intent or
``doNotPerform``, so it loses precision on any patient with a stopped or completed prescription
and on the status, intent and doNotPerform variants. If it ever passes the
eval, the eval does not bite. It needs no HealthChain (it resolves ``medicationReference`` itself,
as ``get_medications`` does), so a plain install can run it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from groundeval import _healthchain
from groundeval.agent_io import AgentRequest, AgentResult
from groundeval.agents.base import AgentConfig
from groundeval.errors import AgentError
from groundeval.extras import require_extra

__all__ = ["BaselineExtractionAgent", "NaiveExtractionAgent"]

_RXNORM = frozenset({"http://www.nlm.nih.gov/research/umls/rxnorm", "urn:oid:2.16.840.1.113883.6.88"})
"""RxNorm's system URI and OID (https://terminology.hl7.org/CodeSystem-v3-rxNorm.html); kept here, not
imported from groundeval.fhir, so the baseline stays an independent reader of the truth's rules."""

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


@dataclass(frozen=True, slots=True)
class _Med:
    """One medication entry, HealthChain's ``CodedEntry`` reduced to what the agents read.

    ``codings`` are ``(code, display, system)``; ``display`` is the first coding's (or the
    concept's text).
    """

    resource_type: str
    resource_id: str | None
    subject: str | None
    codings: tuple[tuple[str | None, str | None, str | None], ...]
    display: str | None


def _patient_refs(bundle: Any) -> set[str]:
    # An absolute reference resolves only to the entry with that exact fullUrl
    # (https://hl7.org/fhir/R4/bundle.html#references); the relative form is Patient/<id>.
    refs: set[str] = set()
    for entry in bundle.entry or []:
        if entry.resource is not None and type(entry.resource).__name__ == "Patient":
            refs.add(f"Patient/{entry.resource.id}")
            if entry.fullUrl:
                refs.add(entry.fullUrl)
    return refs


def _not_orders(bundle: Any) -> set[str]:
    """Ids of MedicationRequests that prohibit (doNotPerform) or do not order (proposal, plan, option)."""
    get_resources = _healthchain.fhir().get_resources
    return {
        str(r.id) for r in get_resources(bundle, "MedicationRequest")
        if r.doNotPerform is True or r.intent not in _ORDERS
    }


def _healthchain_meds(bundle: Any, status: str | None) -> list[_Med]:
    """The baseline's reading: HealthChain's ``get_medications`` (medicationReference resolved)."""
    return [
        _Med(
            entry.resource_type, entry.resource_id, entry.subject,
            tuple((c.code, c.display, c.system) for c in entry.codings), entry.display,
        )
        for entry in _healthchain.fhir().get_medications(bundle, status=status)
    ]


def _concept(concept: Any) -> tuple[tuple[str | None, str | None, str | None], ...]:
    """A CodeableConcept's codings, each display falling back to the concept's text.

    A concept with text and no coding gives one display-only coding (as HealthChain reads it).
    """
    if concept is None:
        return ()
    text = concept.text
    codings = tuple((c.code, c.display or text, c.system) for c in concept.coding or [])
    return codings or (((None, text, None),) if text else ())


def _resolve(bundle: Any, resource: Any, ref: str | None) -> Any:
    """The target of a reference inside the Bundle, or None when it is not there.

    Tried in turn (https://hl7.org/fhir/R4/bundle.html#references, and HealthChain's
    ``resolve_reference`` order): ``#id`` in ``contained``, an exact ``fullUrl``, ``Type/id``
    (also at the end of an absolute URL), then ``urn:uuid:<id>`` against the resource id.
    """
    if not ref:
        return None
    if ref.startswith("#"):
        return next((c for c in resource.contained or [] if c.id == ref[1:]), None)
    resources = [(e.fullUrl, e.resource) for e in bundle.entry or [] if e.resource is not None]
    exact = next((r for url, r in resources if url == ref), None)
    if exact is not None:
        return exact
    if ref.startswith("urn:uuid:"):
        return next((r for _, r in resources if r.id == ref.removeprefix("urn:uuid:")), None)
    kind, _, rid = ref.rpartition("/")
    return next((r for _, r in resources if type(r).__name__ == kind.rpartition("/")[2] and r.id == rid), None)


def _every_request(bundle: Any) -> list[_Med]:
    """The naive reading, with no HealthChain: every coded MedicationRequest, whatever its status."""
    found: list[_Med] = []
    for entry in bundle.entry or []:
        resource = entry.resource
        if resource is None or type(resource).__name__ != "MedicationRequest":
            continue
        codings = _concept(resource.medicationCodeableConcept)
        if not codings and resource.medicationReference is not None:
            target = _resolve(bundle, resource, resource.medicationReference.reference)
            codings = _concept(getattr(target, "code", None))
        if codings:
            subject = resource.subject.reference if resource.subject is not None else None
            found.append(_Med("MedicationRequest", resource.id, subject, codings, codings[0][1]))
    return found


def _medication_list(request: AgentRequest, status: str | None) -> str:
    bundle = _bundle_from_prompt(request)
    patient = _patient_refs(bundle)
    skip = _not_orders(bundle) if status is not None else set()
    meds = _healthchain_meds(bundle, status) if status is not None else _every_request(bundle)
    answer: list[dict[str, Any]] = []
    seen: set[str] = set()
    for entry in meds:
        if entry.resource_type != "MedicationRequest" or entry.subject not in patient or entry.resource_id in skip:
            continue
        rxnorm = [(code, text) for code, text, system in entry.codings if code and (system or "").strip() in _RXNORM]
        if rxnorm:
            if any(code in seen for code, _ in rxnorm):
                continue
            seen.update(code for code, _ in rxnorm)
            code, text = rxnorm[0]
            answer.append({"rxnorm_code": code, "display": text or ""})
        elif entry.display and entry.display not in seen:
            seen.add(entry.display)
            answer.append({"rxnorm_code": None, "display": entry.display})
    return json.dumps(answer, ensure_ascii=False)


class BaselineExtractionAgent:
    """Lists the active MedicationRequests of the Bundle in the prompt (no model)."""

    name = "baseline"
    tasks: frozenset[str] = frozenset({"extraction"})
    model: str | None = None
    thread_safe = True
    """Safe to call from several threads at once (``--groundeval-concurrency`` defaults to 4)."""

    def __init__(self, config: AgentConfig | None = None) -> None:
        """Check that HealthChain is installed (nothing to configure).

        Raises:
            ConfigError: HealthChain is not installed (the ``healthchain`` extra).
        """
        self.check_config(config or AgentConfig())

    @classmethod
    def check_config(cls, config: AgentConfig) -> None:
        """What the constructor checks, without building the agent (the pytest-xdist controller calls it).

        Raises:
            ConfigError: HealthChain is not installed (the ``healthchain`` extra).
        """
        del config  # nothing to configure
        require_extra("healthchain", "healthchain", f"the agent {cls.name!r}")

    def warmup(self) -> None:
        """Import fhir.resources and HealthChain before the first case is timed."""
        import fhir.resources.R4B.bundle  # noqa: F401
        _healthchain.fhir()

    def run(self, request: AgentRequest) -> AgentResult:
        """Return the JSON answer; raises ``AgentError`` if the prompt holds no Bundle."""
        return AgentResult(text=_medication_list(request, status="active"))


class NaiveExtractionAgent(BaselineExtractionAgent):
    """Negative control: lists every MedicationRequest regardless of status, intent or doNotPerform.

    It reads the Bundle with ``fhir.resources`` alone, so it runs on a plain install (no
    HealthChain).
    """

    name = "naive"

    def __init__(self, config: AgentConfig | None = None) -> None:
        del config  # nothing to configure, nothing optional needed

    @classmethod
    def check_config(cls, config: AgentConfig) -> None:
        """Nothing to check: the naive reader needs no extra."""
        del config

    def warmup(self) -> None:
        """Import fhir.resources before the first case is timed."""
        import fhir.resources.R4B.bundle  # noqa: F401

    def run(self, request: AgentRequest) -> AgentResult:
        """Return every medication ever requested for the patient."""
        return AgentResult(text=_medication_list(request, status=None))
