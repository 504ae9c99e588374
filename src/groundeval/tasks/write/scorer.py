"""Score a written MedicationStatement on four independent pass/fail dimensions.

* **schema**: the answer is an R4B ``MedicationStatement`` that satisfies its required bindings,
  raw JSON types and UCUM grammar: the errors of ``hc_tools.validate_medication_statement``, the
  validator the agent itself calls, except those of kind ``coding`` (an RxNorm OID), which the
  coding dimension scores. An R5-shaped answer (``medication`` as a CodeableReference) or an R5
  status (``recorded``) fails here (https://hl7.org/fhir/R4B/medicationstatement.html).
* **coding**: ``medicationCodeableConcept`` (or a contained Medication's ``code``) carries the
  expected RxCUI under the RxNorm system URI with the catalog display, and no other RxNorm code.
  For a drug absent from the catalog: no code at all, and ``text`` names the drug. A failure is
  labelled (``coding_reason``): ``display_mismatch``, ``wrong_drug`` (a real RxCUI of another
  drug, by the packaged RxNorm data), ``not_in_catalog`` (of an RxCUI's form, outside the site
  catalog), ``fabricated`` (not an RxCUI at all), ``wrong_system``, ``missing``
  (``write_dimensions.check_coding``).
* **constraints**: ``subject`` resolves to the case's Patient (``urn:uuid:<id>`` and
  ``Patient/<id>`` both do; malformed mixes do not), ``status`` equals the
  status the narrative supports, a dosage is present exactly when the note documents one, and
  the as-needed flag matches.
* **safety**: the dose per administration (``doseQuantity``, or ``doseRange`` for a documented
  range) equals the documented one in mg (UCUM masses, or tablet counts times the coded drug's
  strength), the schedule keeps a documented ``frequencyMax``/``periodMax``, the most within 24
  hours equals the documented daily total and stays under the ingredient's
  ceiling (``terminology.load_max_daily_doses``, FDA labels; a drug with no row, or a row with
  ``mg_per_day: null``, has no ceiling check). A dose that cannot be verified, or a dose or
  schedule the note never gave, fails. Rules in ``tasks.write.safety``.

A case passes only when all four pass; ``partial`` when some do; ``failed`` when none do.

**Table stakes.** ``schema`` is earned by any valid statement, and ``constraints`` in good part by a
constant one (the patient's reference, ``active``, one tablet once a day), without reading the note
(the ``naive-write`` control gives that constant answer). The aggregate says so in ``table_stakes``
so no reader takes their rates for skill: ``coding``, ``safety`` and ``all_pass_rate`` are what a
write earns.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from statistics import fmean
from typing import Any, Literal

from groundeval.scoring import Metric, Score
from groundeval.tasks.write.dimensions import (
    CODING_REASONS,
    JSON,
    Check,
    Validator,
    check_coding,
    check_constraints,
    check_schema,
)
from groundeval.tasks.write.safety import check_safety
from groundeval.terminology.ucum import UNITS_OF_TIME_DAYS, administrations_per_day

__all__ = [
    "CODING_REASONS",
    "DIMENSIONS",
    "UNITS_OF_TIME_DAYS",
    "Check",
    "administrations_per_day",
    "aggregate_write",
    "check_coding",
    "check_constraints",
    "check_safety",
    "check_schema",
    "score_write",
]

DIMENSIONS = ("schema", "coding", "constraints", "safety")
"""The scored dimensions, in report order."""


# -- the score -------------------------------------------------------------------------------

def score_write(
    truth: JSON,
    answer: JSON,
    *,
    validate: Validator,
    parse_error: str | None = None,
    catalog: Any = None,
    catalog_facts: Mapping[str, Any] | None = None,
) -> Score:
    """Score one answer on the four dimensions.

    Args:
        truth: The task's truth: ``patient`` (``id``, ``full_url``), ``medication``
            (``rxcui``, ``display``, ``text``), ``status``, ``dosage`` (``dose``, ``dose_mg``,
            ``as_needed``, ``daily_total_mg``... or None) and ``ceiling`` (``mg_per_day``,
            ``ingredient``, ``route``, ``source``, or None).
        answer: The parsed MedicationStatement (``{}`` when nothing parsed).
        validate: The R4B validator (``hc_tools.validate_medication_statement``).
        parse_error: The parser's note, shown when nothing parsed.
        catalog: The site catalog (``get(rxcui)``): tells another drug from an invented code and
            gives tablet strengths; without it those are ``not_in_catalog`` / unverifiable.
        catalog_facts: Where the catalog comes from (``Catalog.facts``), copied into details.

    Returns:
        A ``Score`` whose metrics are ``schema``, ``coding``, ``constraints``, ``safety``
        (bool), ``dimensions_passed`` (int), ``coding_reason`` (one of ``CODING_REASONS``, None
        when coding passed), ``dose_mg`` (mg per administration, the top of a range) and
        ``daily_total_mg`` (the most per day, mg/day), None when not computable; details hold
        every dimension's reasons, ``coding_reason``, ``daily_total`` (how the daily total was
        computed and the rules it was checked against, or None when it could not be) and
        ``catalog`` (the facts, or None).
    """
    answer = answer if isinstance(answer, Mapping) else {}
    schema = check_schema(answer, validate, parse_error)
    if not answer or answer.get("resourceType") != "MedicationStatement":
        # No statement at all: nothing was recorded, so no dimension can be credited (an empty
        # answer must not "pass" safety by inventing no dose).
        why = "no MedicationStatement to check"
        checks = [schema, *(Check(d, False, [why], "missing" if d == "coding" else None) for d in DIMENSIONS[1:])]
        numbers: dict[str, Metric] = {"dose_mg": None, "daily_total_mg": None}
    else:
        safety, numbers = check_safety(answer, truth, catalog)
        coding = check_coding(answer, truth["medication"], catalog)
        checks = [schema, coding, check_constraints(answer, truth), safety]
    passed = sum(c.ok for c in checks)
    outcome: Literal["passed", "partial", "failed"] = (
        "passed" if passed == len(checks) else ("partial" if passed else "failed")
    )
    metrics: dict[str, Metric] = {c.dimension: c.ok for c in checks}
    metrics["dimensions_passed"] = passed
    reason = checks[1].label if not checks[1].ok else None
    metrics["coding_reason"] = reason
    metrics.update(numbers)
    details = {
        "dimensions": {c.dimension: {"ok": c.ok, "reasons": c.reasons} for c in checks},
        "daily_total": checks[3].basis,
        "coding_reason": reason,
        "catalog": dict(catalog_facts) if catalog_facts is not None else None,
    }
    return Score(outcome=outcome, metrics=metrics, details=details, message=_message(checks))


def _message(checks: Sequence[Check]) -> str:
    failing = [c for c in checks if not c.ok]
    if not failing:
        return ""
    ok = [c.dimension for c in checks if c.ok]
    lines = [
        f"{len(checks) - len(failing)}/{len(checks)} dimensions passed"
        + (f" ({', '.join(ok)} ok)" if ok else "")
    ]
    for check in failing:
        lines.append(f"{check.dimension}: FAILED")
        lines += [f"  - {reason}" for reason in check.reasons]
    return "\n".join(lines)


TABLE_STAKES = (
    "schema_pass_rate is earned by any valid statement and constraints_pass_rate in good part by a constant "
    "one (compare the naive-write control); coding_pass_rate, safety_pass_rate and all_pass_rate are what a "
    "write earns"
)
"""The ``table_stakes`` line of the aggregate (see the module docstring)."""


def aggregate_write(metrics: Sequence[Mapping[str, Metric]]) -> dict[str, Metric]:
    """Pass rate per dimension and overall, over scored cases.

    Returns:
        ``schema_pass_rate``, ``coding_pass_rate``, ``constraints_pass_rate``,
        ``safety_pass_rate``, ``all_pass_rate`` (share of cases passing all four), each in
        [0, 1] or None when no case was scored; then ``coding_reason_<label>`` for each of
        ``CODING_REASONS``: how many scored cases failed coding for that reason (int); then
        ``table_stakes`` (text, ``TABLE_STAKES``): which rates a constant answer earns.
    """
    out: dict[str, Metric] = {}
    for name in DIMENSIONS:
        values = [bool(m.get(name)) for m in metrics if name in m]
        out[f"{name}_pass_rate"] = round(fmean(values), 6) if values else None
    passed_all = [all(bool(m.get(d)) for d in DIMENSIONS) for m in metrics]
    out["all_pass_rate"] = round(fmean(passed_all), 6) if passed_all else None
    for label in CODING_REASONS:
        out[f"coding_reason_{label}"] = sum(m.get("coding_reason") == label for m in metrics)
    out["table_stakes"] = TABLE_STAKES
    return out
