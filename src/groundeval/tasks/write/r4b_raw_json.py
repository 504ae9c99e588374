"""Checks on raw R4B MedicationStatement JSON that pydantic models do not make.

``fhir.resources`` R4B models coerce ``"400"`` to 400 and ``"no"`` to false, and skip FHIRPath
invariants; HealthChain's ``validate_resource`` checks required bindings only once the structure
validates. These checks read the JSON as the agent wrote it, before any coercion, so they report
every problem in one pass. Pure functions over dicts; no HealthChain, no I/O.

Rules and their sources:

* ``status`` in the R4B value set medication-statement-status
  (https://hl7.org/fhir/R4B/valueset-medication-statement-status.html).
* ``Timing.repeat.periodUnit``/``durationUnit`` in UnitsOfTime
  (https://hl7.org/fhir/R4B/valueset-units-of-time.html); invariants tim-1 (duration needs
  durationUnit), tim-2 (period needs periodUnit) and tim-6 (periodMax needs period)
  (https://hl7.org/fhir/R4B/datatypes.html#Timing); and the ranges the element definitions
  describe: ``frequencyMax`` is the top of "between frequency and frequencyMax times" and
  ``periodMax`` "the upper limit of period", so neither may be below its lower bound.
* JSON primitive types: boolean, positiveInt, decimal must be JSON booleans/integers/numbers, not
  strings (https://hl7.org/fhir/R4B/json.html#primitive).
* ``doseQuantity`` and ``doseRange.low``/``high``: a legal UCUM code (by the UCUM grammar) when
  ``system`` is UCUM; a code with no system breaks invariant qty-3; a count under the orderable
  drug form system (``TAB``) is never read as UCUM; rng-2 (low <= high, compared as quantities:
  200 mg is below 0.4 g; ends whose units cannot be converted into each other are flagged)
  (https://hl7.org/fhir/R4B/datatypes.html#Quantity, #Range).
* RxNorm codings use the URI ``http://www.nlm.nih.gov/research/umls/rxnorm``, not the OID
  ``urn:oid:2.16.840.1.113883.6.88``: "For URIs specified here ... they SHALL be used in
  preference to any other identifying mechanisms" (https://hl7.org/fhir/R4B/terminologies-systems.html).
* Literal references: ``Type/id`` with a FHIR id, ``urn:uuid:``, or an absolute URL
  (https://hl7.org/fhir/R4B/references.html#literal).
"""

from __future__ import annotations

import re
from typing import Any, TypedDict, TypeGuard

from groundeval.fhir.bundle import RXNORM_SYSTEM, is_rxnorm, is_valid_id
from groundeval.terminology.systems import is_rxcui
from groundeval.terminology.ucum import (
    DOSE_FORM_CODES,
    ORDERABLE_DRUG_FORM_SYSTEM,
    UCUM_SYSTEM,
    dose_amount,
    ucum_problem,
)

__all__ = [
    "R5_ONLY_STATUS",
    "STATUS_CODES",
    "UNITS_OF_TIME",
    "Issue",
    "check_medication_statement",
]

#: R4B MedicationStatement.status codes (required binding).
STATUS_CODES = (
    "active", "completed", "entered-in-error", "intended", "stopped", "on-hold", "unknown",
    "not-taken",
)
#: Codes that exist only in R5 (https://hl7.org/fhir/R5/codesystem-medication-statement-status.html).
R5_ONLY_STATUS = ("recorded", "draft")
#: UnitsOfTime codes (required binding for Timing.repeat.periodUnit and durationUnit).
UNITS_OF_TIME = ("s", "min", "h", "d", "wk", "mo", "a")

_TIME_WORDS = {
    "sec": "s", "second": "s", "seconds": "s", "minute": "min", "minutes": "min", "hr": "h",
    "hour": "h", "hours": "h", "day": "d", "days": "d", "daily": "d", "week": "wk",
    "weeks": "wk", "w": "wk", "month": "mo", "months": "mo", "year": "a", "years": "a",
    "yr": "a", "y": "a",
}
_POSITIVE_INT = ("frequency", "frequencyMax", "count", "countMax")
_DECIMAL = ("period", "periodMax", "duration", "durationMax")
_URN_UUID_RE = re.compile(r"^urn:uuid:[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-"
                          r"[0-9a-fA-F]{12}$")
_TYPE_RE = re.compile(r"^[A-Z][A-Za-z]+$")


class Issue(TypedDict):
    """One problem an agent can read and fix.

    Keys:
        path: FHIRPath-style location, e.g. ``MedicationStatement.dosage[0].asNeededBoolean``.
        problem: What is wrong, quoting the offending value.
        fix: What to write instead.
        severity: ``"error"`` (the resource is not valid R4B) or ``"warning"``.
        kind: ``"structure"``, ``"binding"``, ``"type"``, ``"invariant"``, ``"unit"``,
            ``"reference"`` or ``"coding"``.
    """

    path: str
    problem: str
    fix: str
    severity: str
    kind: str


def _issue(path: str, problem: str, fix: str, kind: str, severity: str = "error") -> Issue:
    return Issue(path=path, problem=problem, fix=fix, severity=severity, kind=kind)


def _list(value: object) -> list[Any]:
    return value if isinstance(value, list) else []


def _is_number(value: object) -> TypeGuard[int | float]:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _status(resource: dict[str, Any], out: list[Issue]) -> None:
    path = "MedicationStatement.status"
    status = resource.get("status")
    if status is None or status in STATUS_CODES:
        return  # a missing status is a structural error, reported by the model validation
    allowed = ", ".join(STATUS_CODES)
    if status in R5_ONLY_STATUS:
        problem = f"status {status!r} is an R5 code, not in the R4B value set"
    else:
        problem = f"status {status!r} is not in the R4B value set ({allowed})"
    out.append(_issue(path, problem, f"use one of {allowed}; a drug taken now is 'active'",
                      "binding"))


def _medication(resource: dict[str, Any], out: list[Issue]) -> None:
    if "medication" in resource:
        out.append(_issue(
            "MedicationStatement.medication",
            "'medication' is the R5 CodeableReference element; R4B has no such element",
            "use 'medicationCodeableConcept' (the CodeableConcept inside medication.concept)",
            "structure",
        ))
    concept = resource.get("medicationCodeableConcept")
    if not isinstance(concept, dict):
        return
    codings = _list(concept.get("coding"))
    rxnorm = [c for c in codings if isinstance(c, dict) and is_rxnorm(c.get("system"))]
    base = "MedicationStatement.medicationCodeableConcept"
    if not rxnorm:
        out.append(_issue(f"{base}.coding", "no RxNorm coding",
                          "add a coding with system 'http://www.nlm.nih.gov/research/umls/rxnorm'",
                          "coding", "warning"))
    for n, coding in enumerate(codings):
        code = coding.get("code") if isinstance(coding, dict) else None
        if coding in rxnorm and coding.get("system") != RXNORM_SYSTEM:
            # "For URIs specified here ... they SHALL be used in preference to any other
            # identifying mechanisms" (terminologies-systems): the OID is not conformant.
            out.append(_issue(f"{base}.coding[{n}].system",
                              f"RxNorm given by its OID {coding.get('system')!r}; FHIR requires the URI",
                              f"use the canonical system URI '{RXNORM_SYSTEM}'", "coding"))
        if coding in rxnorm and not is_rxcui(code):
            # A number where the code string belongs is a JSON type error; letters are a bad code.
            out.append(_issue(f"{base}.coding[{n}].code",
                              f"RxCUI {code!r} is not an RxCUI (a string of 1 to 8 digits, no leading zero)",
                              "give the RxCUI as a JSON string of digits, e.g. \"310965\"",
                              "coding" if isinstance(code, str) else "type"))


def _subject(resource: dict[str, Any], out: list[Issue]) -> None:
    subject = resource.get("subject")
    if not isinstance(subject, dict):
        return
    path = "MedicationStatement.subject.reference"
    ref = subject.get("reference")
    fix = "use 'Patient/<id>' or the bundle's 'urn:uuid:<uuid>'"
    if ref is None:
        out.append(_issue(path, "subject has no reference (display only)", fix, "reference",
                          "warning"))
        return
    if not isinstance(ref, str) or not _literal_reference_ok(ref):
        out.append(_issue(path, f"reference {ref!r} is not a valid literal reference", fix,
                          "reference"))


def _literal_reference_ok(ref: str) -> bool:
    if ref.startswith("urn:uuid:"):
        return bool(_URN_UUID_RE.match(ref))
    if ref.startswith("#"):
        return is_valid_id(ref[1:])
    if ref.startswith(("http://", "https://")):
        parts = ref.rstrip("/").split("/")
        return len(parts) >= 5 and bool(_TYPE_RE.match(parts[-2])) and is_valid_id(parts[-1])
    rtype, sep, rid = ref.partition("/")
    return bool(sep) and bool(_TYPE_RE.match(rtype)) and is_valid_id(rid)


def _repeat(repeat: dict[str, Any], base: str, out: list[Issue]) -> None:
    for name in _POSITIVE_INT:
        value = repeat.get(name)
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            fix = f"give a whole number >= 1 (e.g. {int(value)})" if (
                isinstance(value, float) and value.is_integer() and value >= 1
            ) else "give a whole number >= 1 as a JSON integer"
            out.append(_issue(f"{base}.{name}", f"{name} {value!r} is not a positiveInt", fix,
                              "type"))
    for name in _DECIMAL:
        value = repeat.get(name)
        if value is not None and not _is_number(value):
            out.append(_issue(f"{base}.{name}", f"{name} {value!r} is not a JSON number",
                              "write the number without quotes", "type"))
    for value_key, unit_key, invariant in (("period", "periodUnit", "tim-2"),
                                           ("duration", "durationUnit", "tim-1")):
        unit = repeat.get(unit_key)
        if unit is not None and unit not in UNITS_OF_TIME:
            hint = _TIME_WORDS.get(str(unit).strip().lower())
            fix = f"use '{hint}'" if hint else f"use one of {', '.join(UNITS_OF_TIME)}"
            out.append(_issue(f"{base}.{unit_key}", f"{unit_key} {unit!r} is not in UnitsOfTime",
                              f"{fix} (UnitsOfTime codes: {', '.join(UNITS_OF_TIME)})", "binding"))
        if repeat.get(value_key) is not None and unit is None:
            out.append(_issue(f"{base}.{unit_key}", f"{value_key} given without {unit_key} "
                              f"(invariant {invariant})", f"add {unit_key}, e.g. 'd'", "invariant"))
    if repeat.get("frequency") is not None and repeat.get("period") is None:
        out.append(_issue(f"{base}.period", "frequency given without period",
                          "add period and periodUnit (3 times a day: frequency 3, period 1, "
                          "periodUnit 'd')", "invariant", "warning"))
    if repeat.get("periodMax") is not None and repeat.get("period") is None:
        out.append(_issue(f"{base}.period", "periodMax given without period (invariant tim-6)",
                          "add period, the shorter end of the range (every 6 to 8 hours: period 6, periodMax 8)",
                          "invariant"))
    for low_key, high_key, example in (("frequency", "frequencyMax", "two to four times a day: frequency 2, "
                                        "frequencyMax 4"),
                                       ("period", "periodMax", "every 6 to 8 hours: period 6, periodMax 8")):
        low, high = repeat.get(low_key), repeat.get(high_key)
        if _is_number(low) and _is_number(high) and high < low:
            out.append(_issue(f"{base}.{high_key}", f"{high_key} {high!r} is below {low_key} {low!r}: the top of a "
                              "range cannot be under its bottom", f"swap them ({example})", "invariant"))


def _dose_quantity(qty: dict[str, Any], base: str, out: list[Issue]) -> None:
    value = qty.get("value")
    if value is not None and not _is_number(value):
        out.append(_issue(f"{base}.value", f"dose value {value!r} is not a JSON number",
                          "write the number without quotes, e.g. 400", "type"))
    system = qty.get("system")
    code = qty.get("code")
    unverifiable = "groundeval cannot compare this dose with the note"
    if system == ORDERABLE_DRUG_FORM_SYSTEM:
        # A count of tablets or capsules: the code is an orderable drug form, never UCUM.
        if code not in DOSE_FORM_CODES:
            out.append(_issue(f"{base}.code", f"{code!r} is not a tablet or capsule code of "
                              f"{ORDERABLE_DRUG_FORM_SYSTEM} ({unverifiable})",
                              f"use one of {', '.join(DOSE_FORM_CODES)}, or a UCUM mass such as 'mg'",
                              "unit", "warning"))
        return
    if system is not None and system != UCUM_SYSTEM:
        out.append(_issue(f"{base}.system", f"system {system!r} is not UCUM ({unverifiable})",
                          f"use '{UCUM_SYSTEM}' with a UCUM code", "unit", "warning"))
        return
    if system is None:
        if code is not None:
            out.append(_issue(f"{base}.system", "code given without system (invariant qty-3)",
                              f"add system '{UCUM_SYSTEM}'", "invariant"))
        else:
            out.append(_issue(f"{base}.system", f"dose quantity has no system ({unverifiable})",
                              f"add system '{UCUM_SYSTEM}' and a UCUM code", "unit", "warning"))
            return
    checked = code if code is not None else qty.get("unit")
    problem = ucum_problem(checked if isinstance(checked, str) else None)
    if problem is not None:
        field = "code" if code is not None else "unit"
        out.append(_issue(f"{base}.{field}", problem[0], problem[1], "unit"))


def _dose_range(rng: dict[str, Any], base: str, out: list[Issue]) -> None:
    low, high = rng.get("low"), rng.get("high")
    for name, qty in (("low", low), ("high", high)):
        if isinstance(qty, dict):
            _dose_quantity(qty, f"{base}.{name}", out)
    if isinstance(low, dict) and isinstance(high, dict):
        lo, hi = _amount(low), _amount(high)
        if lo is None or hi is None:
            return  # a bad value or unit is reported on that end
        if lo[1] != hi[1]:
            out.append(_issue(base, f"low ({_shown(low)}) and high ({_shown(high)}) are in units that cannot be "
                              "compared (invariant rng-2 needs low <= high)", "give both ends in the same unit",
                              "invariant"))
        elif lo[0] > hi[0] * (1 + 1e-9):
            out.append(_issue(base, f"low {_shown(low)} is above high {_shown(high)} (invariant rng-2)",
                              "swap low and high", "invariant"))


def _shown(qty: dict[str, Any]) -> str:
    value = qty.get("value")
    number = f"{value:g}" if _is_number(value) else repr(value)
    return f"{number} {qty.get('code') or qty.get('unit') or ''}".strip()


def _amount(qty: dict[str, Any]) -> tuple[float, str] | None:
    """A range end as ``(value in a base unit, that unit)`` for comparing; None when it has no number.

    UCUM masses and rates are converted (``dose_amount``); counts and other codes stay as written.
    """
    value = qty.get("value")
    if not _is_number(value):
        return None
    code = qty.get("code") if qty.get("code") is not None else qty.get("unit")
    code = code if isinstance(code, str) else ""
    if qty.get("system") in (None, UCUM_SYSTEM) and (read := dose_amount(float(value), code)) is not None:
        return read
    return float(value), f"{qty.get('system')}|{code}"


def _dosage(dosage: dict[str, Any], base: str, out: list[Issue]) -> None:
    as_needed = dosage.get("asNeededBoolean")
    if as_needed is not None and not isinstance(as_needed, bool):
        out.append(_issue(f"{base}.asNeededBoolean",
                          f"asNeededBoolean {as_needed!r} is not a JSON boolean",
                          "write true or false without quotes", "type"))
    timing = dosage.get("timing")
    repeat = timing.get("repeat") if isinstance(timing, dict) else None
    if isinstance(repeat, dict):
        _repeat(repeat, f"{base}.timing.repeat", out)
    for n, rate in enumerate(_list(dosage.get("doseAndRate"))):
        if not isinstance(rate, dict):
            continue
        if isinstance(rate.get("doseQuantity"), dict):
            _dose_quantity(rate["doseQuantity"], f"{base}.doseAndRate[{n}].doseQuantity", out)
        if isinstance(rate.get("doseRange"), dict):
            _dose_range(rate["doseRange"], f"{base}.doseAndRate[{n}].doseRange", out)


def check_medication_statement(resource: dict[str, Any]) -> list[Issue]:
    """Run the raw-JSON checks on one MedicationStatement.

    Args:
        resource: The resource as parsed from the agent's JSON (not coerced by pydantic).

    Returns:
        Issues in document order (status, medication, subject, dosage); empty when clean.
        Never raises on odd shapes: elements of the wrong JSON type are skipped here and
        reported by model validation.
    """
    out: list[Issue] = []
    if resource.get("resourceType") != "MedicationStatement":
        out.append(_issue("MedicationStatement.resourceType",
                          f"resourceType is {resource.get('resourceType')!r}",
                          "set resourceType to 'MedicationStatement'", "structure"))
    _status(resource, out)
    _medication(resource, out)
    _subject(resource, out)
    for n, dosage in enumerate(_list(resource.get("dosage"))):
        if isinstance(dosage, dict):
            _dosage(dosage, f"MedicationStatement.dosage[{n}]", out)
    return out
