"""What a tool-using agent's trace is checked for on an extraction case (``scorers.grounding``).

* Answered: each RxCUI of the answer must have come back from some tool call of the case.
* Required: the MedicationRequests were listed (``get_resources("MedicationRequest")``), and every
  ``medicationReference`` of a counted request whose drug the answer names was resolved
  (``resolve_reference`` with that reference): the drug behind a reference is not in the request.
"""

from __future__ import annotations

from typing import Any

from groundeval.clinical.medication_list import exclusion, find_patient
from groundeval.datasets import Case
from groundeval.fhir.bundle import BundleIndex, entry_resources, patient_references, rxnorm_codings
from groundeval.scorers.grounding import Lookup, LookupPlan

__all__ = ["lookup_plan"]


def lookup_plan(case: Case, answer: Any) -> LookupPlan:
    """The ``LookupPlan`` of an extraction case for a parsed answer (a list of ``{"rxnorm_code", "display"}``)."""
    items = [i for i in answer if isinstance(i, dict) and i.get("rxnorm_code")] if isinstance(answer, list) else []
    answered = [(f"{i['rxnorm_code']} {i.get('display') or ''}".strip(), str(i["rxnorm_code"])) for i in items]
    codes = {value for _, value in answered}
    required = [Lookup("list the MedicationRequests", "get_resources", {"resource_type": "MedicationRequest"})]
    patient, full_url = find_patient(case.data, str(case.source))
    subjects = patient_references(patient, full_url)
    index = BundleIndex.of(case.data)
    for request in entry_resources(case.data, "MedicationRequest"):
        ref = (request.get("medicationReference") or {}).get("reference")
        if not isinstance(ref, str) or exclusion(request, subjects) is not None:
            continue
        target = index.resolve(ref, parent=request)
        drug = {c.code for c in rxnorm_codings((target or {}).get("code"))}
        if drug & codes:
            required.append(Lookup(f"resolve {ref} ({', '.join(sorted(drug & codes))})", "resolve_reference",
                                   {"reference": ref}))
    return LookupPlan(answered=answered, required=required)
