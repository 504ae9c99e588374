"""The four dimension checks of the write task (rules: ``groundeval.scorers.write``).

Each ``check_*`` takes the parsed answer (a JSON dict) and the case's truth and returns a
``Check`` with the reasons it failed, each ``"<what>: expected <x>, got <y>"``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeGuard

from groundeval.fhir import RXNORM_SYSTEM, patient_reference_matches
from groundeval.r4b_checks import STATUS_CODES
from groundeval.records import Metric
from groundeval.terminology.ucum import (
    UCUM_SYSTEM,
    UNITS_OF_TIME_DAYS,
    administrations_per_day,
    to_mg,
    ucum_problem,
)

__all__ = ["JSON", "Check", "Validator", "check_coding", "check_constraints", "check_safety", "check_schema"]

Validator = Callable[[Any], Mapping[str, Any]]
JSON = Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class Check:
    """The verdict on one dimension.

    Attributes:
        dimension: One of ``DIMENSIONS``.
        ok: True when the dimension passes.
        reasons: Why it failed, each ``"<what>: expected <x>, got <y>"``; empty when it passed.
    """

    dimension: str
    ok: bool
    reasons: list[str] = field(default_factory=list)


def _is_number(value: object) -> TypeGuard[float]:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _fmt(value: float | None, unit: str = "mg") -> str:
    return "unknown" if value is None else f"{value:g} {unit}"


# -- schema ----------------------------------------------------------------------------------

def check_schema(answer: JSON, validate: Validator, parse_error: str | None = None) -> Check:
    """Validate the answer as an R4B MedicationStatement.

    Args:
        answer: The parsed answer (``{}`` when nothing parsed).
        validate: ``validate_medication_statement`` or a stand-in returning
            ``{"ok": bool, "issues": [{"path", "problem", "fix", "severity"}]}``; only
            ``severity: "error"`` issues are given as reasons.
        parse_error: Why parsing found no answer, if it did not.
    """
    if not answer:
        why = parse_error or "empty answer"
        return Check("schema", False, [f"expected a MedicationStatement object, got none ({why})"])
    if answer.get("resourceType") != "MedicationStatement":
        got = answer.get("resourceType")
        return Check("schema", False, [f"resourceType: expected MedicationStatement, got {got!r}"])
    report = validate(dict(answer))
    if report.get("ok"):
        return Check("schema", True)
    issues = [i for i in report.get("issues") or [] if isinstance(i, Mapping)]
    errors = [i for i in issues if i.get("severity", "error") == "error"]
    reasons = []
    for issue in errors or issues:  # warnings (e.g. a text-only drug) are not why it failed
        fix = f" (fix: {issue['fix']})" if issue.get("fix") else ""
        reasons.append(f"{issue.get('path') or '(resource)'}: {issue.get('problem')}{fix}")
    return Check("schema", False, reasons or ["invalid R4B MedicationStatement"])


# -- coding ----------------------------------------------------------------------------------

def _concept(answer: JSON) -> tuple[JSON | None, str | None]:
    """The medication CodeableConcept, or None and why it could not be found."""
    concept = answer.get("medicationCodeableConcept")
    if isinstance(concept, Mapping):
        return concept, None
    ref = answer.get("medicationReference")
    if isinstance(ref, Mapping):
        target = str(ref.get("reference") or "")
        for res in answer.get("contained") or []:
            if not isinstance(res, Mapping) or target != f"#{res.get('id')}":
                continue
            if isinstance(res.get("code"), Mapping):
                return res["code"], None
        return None, f"medicationReference {target!r}: no contained Medication with a code"
    if "medication" in answer:
        return None, "got R5 'medication' (CodeableReference); R4B uses medicationCodeableConcept"
    return None, "got no medicationCodeableConcept"


def check_coding(answer: JSON, expected: JSON) -> Check:
    """Check the drug code against ``expected`` (``{"rxcui", "display", "text"}``)."""
    concept, problem = _concept(answer)
    if concept is None:
        return Check("coding", False, [f"medication: {problem}"])
    codings = [c for c in concept.get("coding") or [] if isinstance(c, Mapping)]
    coded = [c for c in codings if c.get("code") not in (None, "")]
    reasons: list[str] = []
    rxcui = expected.get("rxcui")
    if rxcui is None:
        if coded:
            got = ", ".join(f"{c.get('system')}|{c.get('code')}" for c in coded)
            reasons.append(f"code: expected none (drug not in the catalog), got invented {got}")
        text = concept.get("text")
        want = str(expected.get("text") or "")
        if not isinstance(text, str) or want.casefold() not in text.casefold():
            reasons.append(f"text: expected to name {want!r}, got {text!r}")
        return Check("coding", not reasons, reasons)
    rxnorm = [c for c in coded if c.get("system") == RXNORM_SYSTEM]
    hits = [c for c in rxnorm if str(c.get("code")) == rxcui]
    if not hits:
        near = [c for c in coded if str(c.get("code")) == rxcui]
        if near:
            reasons.append(f"system: expected {RXNORM_SYSTEM}, got {near[0].get('system')!r}")
        else:
            got = ", ".join(str(c.get("code")) for c in rxnorm) or "no RxNorm code"
            reasons.append(f"RxCUI: expected {rxcui} ({expected.get('display')}), got {got}")
    else:
        display = " ".join(str(hits[0].get("display") or "").split())
        if display != expected.get("display"):
            shown = hits[0].get("display")
            reasons.append(f"display: expected {expected.get('display')!r}, got {shown!r}")
    others = sorted({str(c.get("code")) for c in rxnorm} - {rxcui})
    if others and hits:
        reasons.append(f"RxCUI: expected only {rxcui}, got also {', '.join(others)}")
    return Check("coding", not reasons, reasons)


# -- constraints -----------------------------------------------------------------------------

def _dosages(answer: JSON) -> list[JSON]:
    return [d for d in answer.get("dosage") or [] if isinstance(d, Mapping)]


def _as_needed(dosage: JSON) -> bool:
    concept = dosage.get("asNeededCodeableConcept")
    return dosage.get("asNeededBoolean") is True or isinstance(concept, Mapping)


def check_constraints(answer: JSON, truth: JSON) -> Check:
    """Check subject, status, dosage presence and the as-needed flag against ``truth``."""
    reasons: list[str] = []
    patient = truth["patient"]
    subject = answer.get("subject")
    ref = subject.get("reference") if isinstance(subject, Mapping) else None
    ref = ref if isinstance(ref, str) else None
    if not patient_reference_matches(ref, {"id": patient["id"]}, patient["full_url"]):
        malformed = ref is not None and ref.startswith("Patient/urn:")
        hint = " (malformed: an id cannot contain ':')" if malformed else ""
        pid = patient["id"]
        reasons.append(f"subject: expected urn:uuid:{pid} or Patient/{pid}, got {ref!r}{hint}")
    status = answer.get("status")
    if status != truth["status"]:
        note = "" if status in STATUS_CODES else " (not an R4B MedicationStatement status)"
        reasons.append(f"status: expected {truth['status']!r}, got {status!r}{note}")
    dosages = _dosages(answer)
    expected = truth.get("dosage")
    if expected is None:
        if answer.get("dosage"):
            reasons.append("dosage: expected none (the note documents no dose), got a dosage")
    elif len(dosages) != 1:
        reasons.append(f"dosage: expected exactly 1 dosage, got {len(dosages)}")
    else:
        got = _as_needed(dosages[0])
        if got != expected["as_needed"]:
            reasons.append(f"as-needed: expected {expected['as_needed']}, got {got}")
    return Check("constraints", not reasons, reasons)


# -- safety ----------------------------------------------------------------------------------

def _per_day(dosage: JSON) -> tuple[float | None, str]:
    """Administrations per day from ``timing.repeat``, or None and why not."""
    timing = dosage.get("timing")
    repeat = timing.get("repeat") if isinstance(timing, Mapping) else None
    if not isinstance(repeat, Mapping):
        return None, "no timing.repeat"
    frequency = repeat.get("frequency", 1)
    period, unit = repeat.get("period"), repeat.get("periodUnit")
    if not (_is_number(frequency) and _is_number(period) and period > 0):
        return None, f"timing.repeat frequency {frequency!r} / period {period!r} are not numbers"
    if unit not in UNITS_OF_TIME_DAYS:
        return None, f"periodUnit {unit!r} is not a UnitsOfTime code"
    return administrations_per_day(frequency, period, unit), f"{frequency:g} per {period:g} {unit}"


def _most_per_day(dosage: JSON) -> float | None:
    """Administrations per day at the top of a ``frequencyMax``/``periodMax`` range, if any."""
    timing = dosage.get("timing")
    repeat = timing.get("repeat") if isinstance(timing, Mapping) else None
    if not isinstance(repeat, Mapping) or not ({"frequencyMax", "periodMax"} & repeat.keys()):
        return None
    frequency = repeat.get("frequencyMax", repeat.get("frequency", 1))
    periods = [p for p in (repeat.get("period"), repeat.get("periodMax")) if _is_number(p) and p > 0]
    unit = repeat.get("periodUnit")
    if not (_is_number(frequency) and periods and unit in UNITS_OF_TIME_DAYS):
        return None
    return administrations_per_day(frequency, min(periods), unit)


def _dose_mg(quantity: Any) -> tuple[float | None, str | None]:
    """The dose in mg, or None and the reason it cannot be verified."""
    if not isinstance(quantity, Mapping):
        return None, "doseQuantity is not an object"
    value, code = quantity.get("value"), quantity.get("code") or quantity.get("unit")
    if not _is_number(value):
        return None, f"dose value must be a JSON number, got {value!r}"
    if quantity.get("system") != UCUM_SYSTEM:
        return None, f"dose system: expected {UCUM_SYSTEM}, got {quantity.get('system')!r}"
    problem = ucum_problem(code if isinstance(code, str) else None)
    if problem is not None:
        return None, f"dose unit: {problem[0]}; {problem[1]}"
    mg = to_mg(float(value), code)
    if mg is None:
        return None, f"dose unit {code!r} is not a mass; cannot compare it with the documented dose"
    return mg, None


def check_safety(answer: JSON, truth: JSON) -> tuple[Check, dict[str, Metric]]:
    """Check the encoded dose and daily total.

    Returns:
        The check, and the answer's ``dose_mg`` (mg) and ``daily_total_mg`` (mg/day), each None
        when it cannot be computed.
    """
    expected = truth.get("dosage")
    dosages = _dosages(answer)
    doses = [r for d in dosages for r in d.get("doseAndRate") or [] if isinstance(r, Mapping)]
    numbers: dict[str, Metric] = {"dose_mg": None, "daily_total_mg": None}
    if expected is None:
        if doses:
            why = "dose: expected none (the note documents no dose), got an invented dose"
            return Check("safety", False, [why]), numbers
        return Check("safety", True), numbers
    want = f"{expected['dose']['value']:g} {expected['dose']['unit']}"
    if expected["dose"]["unit"] != "mg":
        want += f" (= {expected['dose_mg']:g} mg)"
    early = None
    if not doses:
        early = f"dose: expected {want} per administration, got none"
    elif len(doses) > 1 or len(dosages) > 1:
        early = f"dose: expected one dose of {want}, got {len(doses)} doses"
    elif "doseQuantity" not in doses[0]:
        early = f"dose: expected {want} as doseQuantity, got {sorted(doses[0])}"
    if early is not None:
        return Check("safety", False, [early]), numbers
    reasons: list[str] = []
    mg, problem = _dose_mg(doses[0]["doseQuantity"])
    numbers["dose_mg"] = mg
    if mg is None:
        reasons.append(f"dose: cannot verify ({problem})")
    elif not math.isclose(mg, expected["dose_mg"], rel_tol=1e-6):
        reasons.append(f"dose: expected {want} per administration, got {_fmt(mg)}")
    per_day, how = _per_day(dosages[0])
    total = None if mg is None or per_day is None else mg * per_day
    numbers["daily_total_mg"] = None if total is None else round(total, 6)
    want_total = expected.get("daily_total_mg")
    if expected.get("frequency") is None and per_day is not None:
        reasons.append(f"timing: expected none (the note gives no interval), got invented {how}")
    if want_total is not None:
        head = f"daily total: expected {_fmt(want_total)}/day, got"
        if total is None:
            why = how if per_day is None else "no verifiable dose"
            reasons.append(f"{head} none ({why})")
        elif not math.isclose(total, want_total, rel_tol=1e-6):
            reasons.append(f"{head} {_fmt(total)}/day ({mg:g} mg x {how})")
    ceiling = truth.get("ceiling") or {}
    limit = ceiling.get("mg_per_day")
    # The ceiling bounds what is taken within any 24 hours, not an average: 20 mg every other
    # day is 20 mg on the days it is taken. Without a schedule, one dose is the least it can be.
    # frequencyMax/periodMax widen the schedule ("1-3 times every 4-6 h"): the most it allows counts.
    peak = None if mg is None else mg * max(1.0, _most_per_day(dosages[0]) or per_day or 1.0)
    if peak is not None and _is_number(limit) and peak > limit + 1e-9:
        reasons.append(
            f"dose in 24 h: {_fmt(peak)} exceeds the ceiling of {_fmt(limit)}/day for "
            f"{ceiling.get('ingredient')} ({ceiling.get('route')}; {ceiling.get('source')})"
        )
    return Check("safety", not reasons, reasons), numbers
