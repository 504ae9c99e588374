"""The write answer a truth describes, built with the agents' own builder (shared by the write tests)."""

from __future__ import annotations

from typing import Any


def statement_from_truth(truth: Any) -> dict[str, Any]:
    """The R4B MedicationStatement that the write task's truth describes (a drug absent from the catalog: text only)."""
    from groundeval.tasks.write.tools import build_medication_statement

    med, dosage = truth["medication"], truth["dosage"]
    kwargs: dict[str, Any] = {}
    if dosage is not None:
        rng = dosage["dose_range"]
        dose = dosage["dose"] or rng["low"]
        kwargs = {"dose_value": dose["value"], "dose_unit": dose["unit"],
                  "dose_max": None if rng is None else rng["high"]["value"],
                  "frequency": dosage["frequency"], "frequency_max": dosage["frequency_max"],
                  "period": dosage["period"], "period_max": dosage["period_max"],
                  "period_unit": dosage["period_unit"], "as_needed": dosage["as_needed"]}
    resource: dict[str, Any] = build_medication_statement(
        status=truth["status"], rxcui=med["rxcui"] or "0", display=med["display"],
        patient_reference=truth["patient"]["reference"], **kwargs)
    if med["rxcui"] is None:
        resource["medicationCodeableConcept"] = {"text": med["text"]}
    return resource
