"""The search parameters the sandbox supports: one table, read by search and the CapabilityStatement.

Each parameter is one of the R4 SearchParameter resources (names, types and FHIRPath expressions
as published in the R4 spec's search parameter registry, searchparameter-registry.html, and each
resource page's "Search Parameters" table), restricted to the elements Synthea records carry. The
CapabilityStatement lists exactly these, so an agent that reads ``/metadata`` sees what works.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["COMMON", "INCLUDES", "PARAMS", "RESOURCE_TYPES", "SearchParam"]


@dataclass(frozen=True, slots=True)
class SearchParam:
    """One supported search parameter.

    Attributes:
        name: The parameter's code (``clinical-status``).
        type: ``token | reference | date`` (search.html "Search parameter types").
        paths: Element paths into the resource (dotted; a choice element lists each choice).
        target: For a reference parameter, the resource type it points to.
        definition: The canonical SearchParameter URL (searchparameter-registry.html).
    """

    name: str
    type: str
    paths: tuple[str, ...]
    target: str | None = None
    definition: str = ""


def _p(
    resource: str, name: str, type_: str, *paths: str, target: str | None = None, sp_id: str | None = None
) -> SearchParam:
    url = f"http://hl7.org/fhir/SearchParameter/{sp_id or f'{resource}-{name}'}"
    return SearchParam(name, type_, tuple(paths), target, url)


_PATIENT = ("patient", "subject")

PARAMS: dict[str, dict[str, SearchParam]] = {
    "Patient": {},
    "Medication": {
        "code": _p("Medication", "code", "token", "code", sp_id="clinical-code"),
        "status": _p("Medication", "status", "token", "status"),
    },
    "MedicationRequest": {
        "patient": _p(
            "MedicationRequest", "patient", "reference", "subject", target="Patient", sp_id="clinical-patient"
        ),
        "subject": _p("MedicationRequest", "subject", "reference", "subject", target="Patient"),
        "status": _p("MedicationRequest", "status", "token", "status", sp_id="medications-status"),
        "intent": _p("MedicationRequest", "intent", "token", "intent"),
        "code": _p("MedicationRequest", "code", "token", "medicationCodeableConcept", sp_id="medications-code"),
        "category": _p("MedicationRequest", "category", "token", "category"),
        "authoredon": _p("MedicationRequest", "authoredon", "date", "authoredOn"),
    },
    "MedicationStatement": {
        "patient": _p(
            "MedicationStatement", "patient", "reference", "subject", target="Patient", sp_id="clinical-patient"
        ),
        "subject": _p("MedicationStatement", "subject", "reference", "subject", target="Patient"),
        "status": _p("MedicationStatement", "status", "token", "status", sp_id="medications-status"),
        "code": _p("MedicationStatement", "code", "token", "medicationCodeableConcept", sp_id="medications-code"),
        "category": _p("MedicationStatement", "category", "token", "category"),
        "effective": _p("MedicationStatement", "effective", "date", "effectiveDateTime", "effectivePeriod"),
    },
    "Condition": {
        "patient": _p("Condition", "patient", "reference", "subject", target="Patient", sp_id="clinical-patient"),
        "subject": _p("Condition", "subject", "reference", "subject", target="Patient"),
        "clinical-status": _p("Condition", "clinical-status", "token", "clinicalStatus"),
        "verification-status": _p("Condition", "verification-status", "token", "verificationStatus"),
        "code": _p("Condition", "code", "token", "code", sp_id="clinical-code"),
        "category": _p("Condition", "category", "token", "category"),
        "onset-date": _p("Condition", "onset-date", "date", "onsetDateTime", "onsetPeriod"),
        "recorded-date": _p("Condition", "recorded-date", "date", "recordedDate"),
    },
    "AllergyIntolerance": {
        "patient": _p(
            "AllergyIntolerance", "patient", "reference", "patient", target="Patient", sp_id="clinical-patient"
        ),
        "clinical-status": _p("AllergyIntolerance", "clinical-status", "token", "clinicalStatus"),
        "code": _p("AllergyIntolerance", "code", "token", "code", sp_id="clinical-code"),
        "category": _p("AllergyIntolerance", "category", "token", "category"),
        "type": _p("AllergyIntolerance", "type", "token", "type", sp_id="clinical-type"),
        "criticality": _p("AllergyIntolerance", "criticality", "token", "criticality"),
        "date": _p("AllergyIntolerance", "date", "date", "recordedDate", sp_id="clinical-date"),
    },
    "Observation": {
        "patient": _p("Observation", "patient", "reference", "subject", target="Patient", sp_id="clinical-patient"),
        "subject": _p("Observation", "subject", "reference", "subject", target="Patient"),
        "status": _p("Observation", "status", "token", "status"),
        "code": _p("Observation", "code", "token", "code", sp_id="clinical-code"),
        "category": _p("Observation", "category", "token", "category"),
        "date": _p(
            "Observation",
            "date",
            "date",
            "effectiveDateTime",
            "effectivePeriod",
            "effectiveInstant",
            sp_id="clinical-date",
        ),
    },
    "Immunization": {
        "patient": _p("Immunization", "patient", "reference", "patient", target="Patient", sp_id="clinical-patient"),
        "status": _p("Immunization", "status", "token", "status", sp_id="medications-status"),
        "vaccine-code": _p("Immunization", "vaccine-code", "token", "vaccineCode"),
        "date": _p("Immunization", "date", "date", "occurrenceDateTime", sp_id="clinical-date"),
    },
}
"""Resource type -> parameter name -> parameter (``_id`` and the result parameters are in ``COMMON``)."""

COMMON: dict[str, SearchParam] = {
    "_id": SearchParam("_id", "token", ("id",), None, "http://hl7.org/fhir/SearchParameter/Resource-id"),
}
"""Parameters every resource type supports (search.html "Parameters for all resources")."""

RESULT_PARAMS: frozenset[str] = frozenset({"_count", "_sort", "_include", "_total", "_getpagesoffset", "_format"})
"""The result parameters the sandbox reads (search.html "Modifying search results"; ``Bundle.total`` is
always exact, so every ``_total`` value is honoured); ``_getpagesoffset``
is the sandbox's own paging cursor, only ever found in the ``next``/``previous`` links it writes."""

INCLUDES: dict[str, tuple[str, str, str]] = {
    "MedicationRequest:medication": ("MedicationRequest", "medicationReference", "Medication"),
}
"""``_include`` values supported: value -> (source type, reference element, target type)."""

RESOURCE_TYPES: tuple[str, ...] = tuple(PARAMS)
"""The resource types the sandbox serves."""

PATIENT_PARAMS: tuple[str, ...] = _PATIENT
"""The parameter names that restrict a search to one patient (the Patient compartment)."""
