"""What a task says about its record served over FHIR REST (``--groundeval-fhir``): the prompt notes and helpers.

Each built-in task serves over FHIR through three small methods (``tasks.fhir_mode``):
``fhir_record(case)`` (the Bundle served), ``fhir_prompt(case)`` (its instructions with one of the
notes below where the record was) and ``fhir_used(case, truth)`` (``Type/id`` of the resources its
truth was derived from, for the retrieval figures). Standard library only.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

__all__ = ["FHIR_READ_NOTE", "FHIR_WRITE_NOTE", "resources_of"]

FHIR_READ_NOTE = (
    "The patient's record is not pasted here: it is on a FHIR R4 server.\n"
    "FHIR base URL: {fhir_base_url}\nPatient: {fhir_patient}\n"
    "Read it through the FHIR REST API (search: GET [base]/[type]?patient=[id]&..., read: GET "
    "[base]/[type]/[id]; the server's CapabilityStatement is at [base]/metadata). Read only this patient's "
    "data, and do not create, update or delete anything: this task only reads."
)
"""The record part of a read task's user prompt; ``{fhir_base_url}``/``{fhir_patient}`` are filled in per case."""

FHIR_WRITE_NOTE = (
    "The patient's record is on a FHIR R4 server.\nFHIR base URL: {fhir_base_url}\nPatient: {fhir_patient}\n"
    "Create the MedicationStatement on that server (POST [base]/MedicationStatement, subject.reference the "
    "patient above); create nothing else and change nothing that is there. What the server holds after you "
    "stop is what is scored."
)
"""The record part of the write task's user prompt under ``--groundeval-fhir``."""


def resources_of(bundle: Mapping[str, Any], types: Iterable[str]) -> list[str]:
    """``Type/id`` of every entry of ``bundle`` whose resource is one of ``types``, in Bundle order."""
    wanted = set(types)
    out = []
    for entry in bundle.get("entry") or []:
        res = entry.get("resource") if isinstance(entry, Mapping) else None
        if isinstance(res, Mapping) and res.get("resourceType") in wanted and res.get("id"):
            out.append(f"{res['resourceType']}/{res['id']}")
    return out
