"""The labs task's ground truth: each test's latest counted result, its category, direction and criticality.

Derived from the case's Bundle and the threshold table (``clinical.lab_thresholds``), by these rules
(the docs page ``docs/tasks/labs.md`` states them with their sources):

1. **Which Observations.** A test's results are the Observations whose ``code`` has a
   ``http://loinc.org`` coding with the test's LOINC code. Every Observation in the Bundle is
   taken as the patient's (a case Bundle holds one patient).
2. **Status.** Only ``final``, ``amended`` and ``corrected`` results count (FHIR R4
   ObservationStatus, https://hl7.org/fhir/R4/valueset-observation-status.html); ``registered``,
   ``preliminary``, ``cancelled``, ``entered-in-error`` and ``unknown`` do not. A counted status
   without a value (``dataAbsentReason``) is not a result. A panel (blood pressure) is read in
   both shapes systems store it in: one 85354-9 Observation with 8480-6/8462-4 components, or
   separate 8480-6 and 8462-4 Observations, paired when taken at the same instant. A reading
   missing a component is a result only when the components it has decide both the category and
   the critical flag whatever the missing one says (``clinical.lab_results``): for blood pressure, a systolic
   above 180 or a diastolic above 120 alone (stage 2 and a hypertensive crisis, the guideline's
   "and/or"); any other one-component reading is not a result.
3. **Latest.** Results are ordered by the instant they were taken (``effectiveDateTime``,
   ``effectiveInstant`` or ``effectivePeriod.start``; FHIR dateTime with its UTC offset,
   https://hl7.org/fhir/R4/datatypes.html#dateTime), then by precision (a date without a time
   before a time at that instant), then by ``issued`` (as an instant), then by order in the
   Bundle. A date without a time (``2024-03-01``, or ``2024-03``, ``2024``) is taken as the start
   of that day (month, year) in UTC; a time without an offset, which FHIR does not allow, as UTC.
   So 23:30-05:00 on 1 March (04:30 UTC on 2 March) is later than 01:00 UTC on 2 March, and two
   results on one date without a time are told apart by ``issued``. The last is the latest, the
   one before it the previous; a result's ``date`` is its effective date as written
   (``YYYY-MM-DD``, the patient's local date).
4. **Units.** A value in another accepted unit is converted to the test's unit through UCUM
   (``terminology.ucum.convert``; mmol/L glucose through its molar mass); a unit the table does
   not accept for the test is a ``DatasetError``. So is a Quantity of a table test (value, component
   or referenceRange bound) whose ``value`` is not a JSON number (a FHIR decimal; ``"83.46"`` is a
   string) or is below zero, or whose unit is not a ``code`` with ``system``
   ``http://unitsofmeasure.org`` (the display text ``unit`` is never read as the unit). So is a
   value with a ``comparator`` (``{"value": 60, "comparator": ">"}``, eGFR reported as ">60"):
   ``Quantity.comparator`` is a modifier element (https://hl7.org/fhir/R4/datatypes.html#Quantity),
   so the value is a bound, not the number; the bound does not decide the category (">60" is G2 or
   G1 in KDIGO's Table 5), and the value and direction the task scores are numbers, so the case is
   refused with the fix (the measured value, or the Observation left out).
5. **Category.** The latest Observation's own ``referenceRange`` takes precedence (``low``,
   ``normal``, ``high``; bounds inclusive, FHIR R4); otherwise a result taken before the patient's
   18th birthday is ``not_applicable``; otherwise the table's band for the value (``[low, high)``),
   for a panel the higher of its components' categories. A test without a counted result is
   ``no_result``.
6. **Direction.** Latest minus previous in the test's unit: ``up`` at or above the tolerance,
   ``down`` at or below minus it, else ``stable``; None without a previous result. A panel gets one
   direction per component.
7. **Critical.** True when the latest value (a component's, for a panel) is beyond the table's
   critical limit; None for ``not_applicable`` results (the limits are adult ones); False otherwise.
   For a panel, each component missing from the latest or the previous reading has direction None.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import date
from typing import Any

from groundeval.clinical.lab_results import (
    LOINC_SYSTEM,
    UCUM_SYSTEM,
    Result,
    in_table_unit,
    instant,
    quantity,
    results_by_test,
)
from groundeval.clinical.lab_thresholds import TestRow, Thresholds

__all__ = [
    "LOINC_SYSTEM",
    "NOT_APPLICABLE",
    "NO_RESULT",
    "RANGE_CATEGORIES",
    "UCUM_SYSTEM",
    "Result",
    "direction",
    "instant",
    "labs_truth",
    "results_by_test",
]

NO_RESULT = "no_result"
NOT_APPLICABLE = "not_applicable"
RANGE_CATEGORIES = ("low", "normal", "high")
"""Categories against the laboratory's own referenceRange (FHIR v3 ObservationInterpretation L, N, H)."""
_RANGE_MEANING = "http://terminology.hl7.org/CodeSystem/referencerange-meaning"

JSON = dict[str, Any]


def direction(latest: float, previous: float, tolerance: float) -> str:
    """``up``, ``down`` or ``stable`` for a change from ``previous`` to ``latest`` (rule 6).

    The change is rounded to 9 decimals first, so that 6.1 - 6.0 (0.0999999... in binary floating
    point) is a change of one 0.1 step, not less.
    """
    change = round(latest - previous, 9)
    if change >= tolerance:
        return "up"
    if change <= -tolerance:
        return "down"
    return "stable"


def _age_years(birth: object, day: str) -> int | None:
    try:
        born = date.fromisoformat(str(birth)[:10])
        on = date.fromisoformat(day[:10])
    except ValueError:
        return None
    return on.year - born.year - ((on.month, on.day) < (born.month, born.day))


def _range(row: TestRow, resource: Mapping[str, Any], source: str) -> tuple[float | None, float | None] | None:
    """The laboratory's range in the table's unit (low, high), or None when the result carries none."""
    where = f"Observation/{resource.get('id')} referenceRange"
    for item in resource.get("referenceRange") or []:
        if not isinstance(item, Mapping):
            continue
        kind = item.get("type")
        if kind is not None and not any(
            isinstance(c, Mapping) and c.get("system") == _RANGE_MEANING and c.get("code") == "normal"
            for c in (kind.get("coding") or [] if isinstance(kind, Mapping) else [])
        ):
            continue
        bounds = [quantity(item.get(key), f"{where}.{key}", source) for key in ("low", "high")]
        if all(b is None for b in bounds):
            continue
        low, high = (None if b is None else in_table_unit(row, b[0], b[1], where, source) for b in bounds)
        return low, high
    return None


def _entry(row: TestRow, results: Sequence[Result], skipped: list[JSON], birth: object, adult_age: int,
           source: str) -> JSON:
    base: JSON = {"loinc": row.loinc, "name": row.name, "unit": row.unit, "excluded": skipped}
    if not results:
        return {**base, "result": False, "value": None, "recorded_unit": None, "value_in_unit": None, "date": None,
                "observation": None, "category": NO_RESULT, "category_basis": None, "previous": None,
                "direction": None, "critical": False}
    latest = results[-1]
    previous = results[-2] if len(results) > 1 else None

    def shown(values: Mapping[str, float]) -> float | dict[str, float]:
        rounded = {code: round(v, 6) for code, v in values.items()}
        return rounded if row.is_panel else rounded[row.loinc]

    value = latest.in_unit[row.loinc] if not row.is_panel else None
    lab_range = None if row.is_panel else _range(row, latest.resource, source)
    age = _age_years(birth, latest.day)
    critical: bool | None
    if lab_range is not None and value is not None:
        low, high = lab_range
        category = ("low" if low is not None and value < low
                    else "high" if high is not None and value > high else "normal")
        basis = "reference_range"
    elif age is not None and age < adult_age:
        category, basis = NOT_APPLICABLE, "age"
    else:
        category = row.combine([m.category(latest.in_unit[m.loinc]) for m in row.measures if m.loinc in latest.in_unit])
        basis = "table"
    if age is not None and age < adult_age:
        critical = None
    else:
        critical = any(m.critical is not None and m.critical.hit(latest.in_unit[m.loinc]) for m in row.measures
                       if m.loinc in latest.in_unit)
    if previous is None:
        trend: str | dict[str, str | None] | None = None
    else:
        trends = {m.loinc: direction(latest.in_unit[m.loinc], previous.in_unit[m.loinc], row.tolerance)
                  if m.loinc in latest.in_unit and m.loinc in previous.in_unit else None
                  for m in row.measures if m.loinc in latest.in_unit}
        trend = trends if row.is_panel else trends[row.loinc]
    return {
        **base, "result": True, "value": shown(latest.values), "recorded_unit": latest.unit,
        "value_in_unit": shown(latest.in_unit), "date": latest.day, "observation": latest.observation,
        "category": category, "category_basis": basis,
        "reference_range": None if lab_range is None else {"low": lab_range[0], "high": lab_range[1]},
        "previous": None if previous is None else {
            "value_in_unit": shown(previous.in_unit), "date": previous.day, "observation": previous.observation},
        "direction": trend, "critical": critical,
    }


def labs_truth(bundle: Mapping[str, Any], table: Thresholds, source: str) -> JSON:
    """The truth of one case: one entry per table test, in table order.

    Args:
        bundle: The case's Bundle (JSON), with exactly one Patient.
        table: The threshold table.
        source: The case file, for error messages.

    Returns:
        ``{"tests": [entry...]}``; an entry has ``loinc``, ``name``, ``unit`` (the table's),
        ``result`` (a counted result exists), ``value`` (as recorded; for a panel a mapping
        component LOINC -> value), ``recorded_unit``, ``value_in_unit`` (in ``unit``), ``date``
        (``YYYY-MM-DD``), ``observation``, ``category``, ``category_basis`` (``table``,
        ``reference_range``, ``age``), ``reference_range``, ``previous``, ``direction`` (a string,
        None, or per component) and ``critical`` (True, False, or None when not assessed), plus
        ``excluded``: the Observations not counted, with their status.

    Raises:
        DatasetError: See ``results_by_test``.
    """
    patient: Mapping[str, Any] = next((e["resource"] for e in bundle.get("entry") or []
                    if isinstance(e, Mapping) and isinstance(e.get("resource"), Mapping)
                    and e["resource"].get("resourceType") == "Patient"), {})
    found = results_by_test(bundle, table, source)
    return {"tests": [_entry(row, *found[row.loinc], patient.get("birthDate"), table.min_age_years, source)
                      for row in table.tests]}
