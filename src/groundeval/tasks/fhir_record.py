"""What a task says about its record served over FHIR REST (``--groundeval-fhir``): the prompt notes and helpers.

Each built-in task serves over FHIR through three small methods (``tasks.fhir_mode``):
``fhir_record(case)`` (the Bundle served), ``fhir_prompt(case)`` (its instructions with one of the
notes below where the record was) and ``fhir_used(case, truth)`` (``Type/id`` of the resources its
truth was derived from, for the retrieval figures). Standard library only.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

__all__ = ["FHIR_READ_NOTE", "FHIR_WRITE_NOTE", "patient_of_record", "resources_of"]

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
    """``Type/id`` of every resource of ``types`` in the record's patient's compartment, in Bundle order.

    A resource is the patient's when its ``subject`` or ``patient`` reference names the Bundle's
    Patient (``Patient/<id>``, ``urn:uuid:<id>`` or the entry's ``fullUrl``): one whose subject is a
    patient on another server is no part of this patient's record, and no search for the patient
    returns it (compartmentdefinition-patient.html).
    """
    wanted = set(types)
    entries = [e for e in bundle.get("entry") or []
               if isinstance(e, Mapping) and isinstance(e.get("resource"), Mapping)]
    me = next((e for e in entries if e["resource"].get("resourceType") == "Patient"), None)
    pid = str(me["resource"].get("id")) if me is not None else ""
    mine = {f"Patient/{pid}", f"urn:uuid:{pid}", str((me or {}).get("fullUrl") or f"Patient/{pid}")}
    out = []
    for entry in entries:
        res = entry["resource"]
        if res.get("resourceType") not in wanted or not res.get("id"):
            continue
        refs = {(res.get(k) or {}).get("reference") for k in ("subject", "patient") if isinstance(res.get(k), Mapping)}
        if refs & mine:
            out.append(f"{res['resourceType']}/{res['id']}")
    return out


def patient_of_record(bundle: Mapping[str, Any]) -> list[str]:
    """``["Patient/<id>"]`` of the record's Patient (every truth reads it: whose record, the birth date), or []."""
    for entry in bundle.get("entry") or []:
        res = entry.get("resource") if isinstance(entry, Mapping) else None
        if isinstance(res, Mapping) and res.get("resourceType") == "Patient" and res.get("id"):
            return [f"Patient/{res['id']}"]
    return []
