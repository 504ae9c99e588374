"""The extraction task's system prompt: instructions plus one worked example.

The example is a small synthetic Bundle (not taken from any fixture) that shows every rule the
instructions state: an NDC coding listed before the RxNorm one, a drug named through
``medicationReference`` to a bundle entry and to a contained Medication, a drug with no RxNorm
code, a stopped request for the same RxCUI as an active one, a completed request, an active
request with ``doNotPerform: true`` and an active request whose intent is ``plan``. Its answer
is derived by the same ground-truth code that scores the cases (``clinical.medication_list``), so the example
can never contradict the scorer.

The prompt is the same for every case, so it is the cacheable prefix of each request: with the
example it is long enough (well over 1,024 tokens) for Anthropic prompt caching to apply, and the
cases of one run pay for it once.
"""

from __future__ import annotations

import json
from functools import cache
from typing import Any

from groundeval.clinical.medication_list import active_medications
from groundeval.fhir.bundle import RXNORM_SYSTEM

__all__ = ["ANSWER_FORMAT", "EXAMPLE_BUNDLE", "example_answer", "system_prompt"]

ANSWER_FORMAT = (
    'A JSON array, one object per active medication: [{"rxnorm_code": "<RxCUI>", '
    '"display": "<display exactly as in the record>"}]. List each medication once. If a '
    "medication has no RxNorm code in the record, use null for rxnorm_code and the record's "
    "text as display. If there are none, answer []."
)

_PID = "6f1c2a9e-0000-4000-8000-00000000e001"
_SUBJECT = {"reference": f"urn:uuid:{_PID}"}
_NDC = "http://hl7.org/fhir/sid/ndc"


def _request(rid: str, status: str, intent: str = "order", **drug: Any) -> dict[str, Any]:
    resource = {
        "resourceType": "MedicationRequest", "id": rid, "status": status, "intent": intent,
        "subject": _SUBJECT, "authoredOn": "2024-03-0" + rid[-1], **drug,
    }
    return {"fullUrl": f"urn:uuid:{rid}", "resource": resource}


def _coding(system: str, code: str, display: str | None = None) -> dict[str, str]:
    return {"system": system, "code": code, **({"display": display} if display else {})}


EXAMPLE_BUNDLE: dict[str, Any] = {
    "resourceType": "Bundle",
    "type": "collection",
    "entry": [
        {"fullUrl": f"urn:uuid:{_PID}", "resource": {
            "resourceType": "Patient", "id": _PID,
            "name": [{"given": ["Example"], "family": "Patient"}], "birthDate": "1961-07-14"}},
        {"fullUrl": "urn:uuid:7d0e1b22-0000-4000-8000-00000000a001", "resource": {
            "resourceType": "Medication", "id": "7d0e1b22-0000-4000-8000-00000000a001",
            "code": {"coding": [_coding(RXNORM_SYSTEM, "314076", "lisinopril 10 MG Oral Tablet")]}}},
        _request("req-1", "active", medicationCodeableConcept={"coding": [
            _coding(_NDC, "00000-0000-01", "placeholder NDC"),
            _coding(RXNORM_SYSTEM, "860975", "24 HR metFORMIN hydrochloride 500 MG Extended Release Oral Tablet"),
        ], "text": "metformin ER 500 mg"}),
        _request("req-2", "active", medicationReference={
            "reference": "urn:uuid:7d0e1b22-0000-4000-8000-00000000a001"}),
        _request("req-3", "active", contained=[{
            "resourceType": "Medication", "id": "med3",
            "code": {"coding": [_coding(RXNORM_SYSTEM, "197361", "Amlodipine 5 MG Oral Tablet")]}}],
            medicationReference={"reference": "#med3"}),
        _request("req-4", "active", contained=[{
            "resourceType": "Medication", "id": "med4", "code": {"text": "compounded lidocaine cream 5%"}}],
            medicationReference={"reference": "#med4"}),
        _request("req-5", "stopped", medicationCodeableConcept={"coding": [
            _coding(RXNORM_SYSTEM, "197361", "Amlodipine 5 MG Oral Tablet")]}),
        _request("req-6", "completed", medicationCodeableConcept={"coding": [
            _coding(RXNORM_SYSTEM, "308182", "Amoxicillin 250 MG Oral Capsule")]}),
        _request("req-7", "active", medicationCodeableConcept={"coding": [
            _coding(RXNORM_SYSTEM, "860975", "24 HR metFORMIN hydrochloride 500 MG Extended Release Oral Tablet")]}),
        _request("req-8", "active", doNotPerform=True, medicationCodeableConcept={"coding": [
            _coding(RXNORM_SYSTEM, "310965", "Ibuprofen 200 MG Oral Tablet")]}),
        _request("req-9", "active", intent="plan", medicationCodeableConcept={"coding": [
            _coding(RXNORM_SYSTEM, "314231", "Simvastatin 10 MG Oral Tablet")]}),
    ],
}
"""A synthetic Bundle exercising every rule in the instructions."""


@cache
def example_answer() -> list[dict[str, str | None]]:
    """The correct answer for ``EXAMPLE_BUNDLE``, derived by the ground-truth rule."""
    answer: list[dict[str, str | None]] = []
    for med in active_medications(EXAMPLE_BUNDLE, "example"):
        if med["kind"] == "coded":
            code = med["codes"][0]
            shown = med["displays"][code]
            answer.append({"rxnorm_code": code, "display": shown[0] if shown else None})
        elif med["kind"] == "uncoded":
            answer.append({"rxnorm_code": None, "display": med["text"]})
    return answer


INSTRUCTIONS = """You read FHIR R4 Bundles and report a patient's medications.

Rules:
1. List every medication the patient is currently prescribed: the MedicationRequest resources \
whose status is "active" and whose subject is the patient. Ignore stopped, completed, cancelled, \
on-hold, draft, entered-in-error and unknown requests, even when the patient has died. Ignore \
requests with "doNotPerform": true (they forbid the drug) and requests whose intent is not an \
order (proposal, plan and option are not prescriptions; order, original-order, reflex-order, \
filler-order and instance-order are). The subject is the patient when it equals the Patient \
entry's fullUrl or is "Patient/<id>"; any other absolute URL names someone else.
2. A MedicationRequest names its drug either in medicationCodeableConcept or through \
medicationReference to a Medication resource: a Bundle entry (match the reference against the \
entry's fullUrl, or against ResourceType/id) or a resource in the request's "contained" list \
(a reference starting with "#").
3. Use the RxNorm coding, found by its system http://www.nlm.nih.gov/research/umls/rxnorm, \
never by its position: an NDC or SNOMED CT coding may come first. Copy the RxNorm display \
character for character, including its capitalisation.
4. List each drug once, even when several active requests name it.
5. A drug with no RxNorm coding at all is reported with rxnorm_code null and the record's text.
6. Answer with only the JSON, no prose and no markdown fence."""


@cache
def system_prompt() -> str:
    """The system prompt shared by every extraction case (instructions, example, format)."""
    bundle = json.dumps(EXAMPLE_BUNDLE, ensure_ascii=False, indent=1)
    answer = json.dumps(example_answer(), ensure_ascii=False, indent=1)
    return (
        f"{INSTRUCTIONS}\n\nFormat: {ANSWER_FORMAT}\n\n"
        f"Worked example (synthetic data).\nBundle:\n{bundle}\n\nCorrect answer:\n{answer}\n\n"
        "Why: req-1 and req-7 are the same metformin (listed once, RxNorm not NDC); req-2 resolves "
        "to the lisinopril entry by fullUrl; req-3 resolves to its contained Medication; req-4's "
        "drug has no RxNorm code; req-5 (stopped) and req-6 (completed) are not active, although "
        "amlodipine is also active through req-3; req-8 forbids ibuprofen (doNotPerform) and req-9 "
        "is only a plan, so neither is a prescription."
    )
