"""Rule-based extraction agents that read the Bundle out of the prompt text.

``baseline`` is an honest, model-free reader built on HealthChain's FHIR helpers
(``fhir.resources`` R4B models, ``healthchain.fhir.get_medications`` and ``get_resources``),
independent of the ground-truth code. It should score perfectly on Synthea data; where it does
not, either it or the truth has a bug worth a look.

``naive`` is a negative control: it lists every MedicationRequest whatever its status, so it
loses precision on any patient with a stopped or completed prescription. If it ever passes the
eval, the eval does not bite.
"""

from __future__ import annotations

import json
from typing import Any

from groundeval import _healthchain
from groundeval.agents.base import AgentConfig
from groundeval.errors import AgentError
from groundeval.fhir import is_rxnorm
from groundeval.records import AgentRequest, AgentResult

__all__ = ["BaselineExtractionAgent", "NaiveExtractionAgent"]


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

    refs: set[str] = set()
    for entry in bundle.entry or []:
        if entry.resource is not None and type(entry.resource).__name__ == "Patient":
            refs |= {f"Patient/{entry.resource.id}", f"urn:uuid:{entry.resource.id}"}
            if entry.fullUrl:
                refs.add(entry.fullUrl)
    if not refs:  # fall back to the helper's view (no fullUrl known)
        refs = {f"Patient/{p.id}" for p in get_resources(bundle, "Patient")}
    return refs


def _medication_list(request: AgentRequest, status: str | None) -> str:
    get_medications = _healthchain.fhir().get_medications

    bundle = _bundle_from_prompt(request)
    patient = _patient_refs(bundle)
    answer: list[dict[str, Any]] = []
    seen: set[str] = set()
    for entry in get_medications(bundle, status=status):
        if entry.resource_type != "MedicationRequest" or entry.subject not in patient:
            continue
        rxnorm = [c for c in entry.codings if c.code and is_rxnorm(c.system)]
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


class BaselineExtractionAgent:
    """Lists the active MedicationRequests of the Bundle in the prompt (no model)."""

    name = "baseline"
    tasks: frozenset[str] = frozenset({"extraction"})
    model: str | None = None

    def __init__(self, config: AgentConfig | None = None) -> None:
        del config  # nothing to configure

    def warmup(self) -> None:
        """Import fhir.resources and HealthChain before the first case is timed."""
        import fhir.resources.R4B.bundle  # noqa: F401
        _healthchain.fhir()

    def run(self, request: AgentRequest) -> AgentResult:
        """Return the JSON answer; raises ``AgentError`` if the prompt holds no Bundle."""
        return AgentResult(text=_medication_list(request, status="active"))


class NaiveExtractionAgent(BaselineExtractionAgent):
    """Negative control: lists every MedicationRequest regardless of status."""

    name = "naive"

    def run(self, request: AgentRequest) -> AgentResult:
        """Return every medication ever requested for the patient."""
        return AgentResult(text=_medication_list(request, status=None))
