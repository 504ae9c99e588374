"""What a tool-using agent's trace is checked for on a write case (``scorers.grounding``).

* Answered: each RxNorm code the written MedicationStatement carries must have come back from a
  tool call (the catalog search, ``lookup_rxnorm``). The dose, timing and status come from the note
  in the prompt, not from a tool, and are not checked here.
* Required: each written RxCUI was returned by ``lookup_rxnorm`` (never a code from memory), and
  the final resource was validated: ``validate_medication_statement`` on exactly the resource
  answered, or ``build_medication_statement`` returning exactly it (the builder validates what it
  builds).
"""

from __future__ import annotations

from typing import Any

from groundeval.fhir.bundle import rxnorm_codings
from groundeval.scorers.grounding import Lookup, LookupPlan

__all__ = ["lookup_plan"]


def lookup_plan(answer: Any) -> LookupPlan:
    """The ``LookupPlan`` of a write case for a parsed answer (the MedicationStatement dict, ``{}`` when none)."""
    if not isinstance(answer, dict) or not answer:
        return LookupPlan()
    concept = answer.get("medicationCodeableConcept")
    codings = rxnorm_codings(concept if isinstance(concept, dict) else None)
    answered = [(f"{c.code} {c.display or ''}".strip(), c.code) for c in codings]
    required = [Lookup(f"look up {label} with lookup_rxnorm", "lookup_rxnorm", result_has=code)
                for label, code in answered]
    required.append(Lookup(
        "validate the final resource (validate_medication_statement)", "validate_medication_statement",
        args={"resource": answer},
        alternatives=(Lookup("", "build_medication_statement", result_equals={"resource": answer}),),
    ))
    return LookupPlan(answered=answered, required=required)
