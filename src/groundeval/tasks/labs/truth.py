"""The labs task's ground truth: each test's latest counted result, its category, direction and criticality.

Derived from the case's Bundle and the threshold table (``tasks.labs.thresholds``), by these rules
(the docs page ``docs/tasks/labs.md`` states them with their sources):

1. **Which Observations.** A test's results are the Observations whose ``code`` has a
   ``http://loinc.org`` coding with the test's LOINC code. Every Observation in the Bundle is
   taken as the patient's (a case Bundle holds one patient).
2. **Status.** Only ``final``, ``amended`` and ``corrected`` results count (FHIR R4
   ObservationStatus, https://hl7.org/fhir/R4/valueset-observation-status.html); ``registered``,
   ``preliminary``, ``cancelled``, ``entered-in-error`` and ``unknown`` do not. A counted status
   without a value (``dataAbsentReason``; a panel missing a component's value) is not a result.
3. **Latest.** Results are ordered by the effective date as written (``effectiveDateTime``,
   ``effectiveInstant`` or ``effectivePeriod.start``, its ``YYYY-MM-DD`` part), then by time of day
   (a date without a time first), then by ``issued``, then by order in the Bundle: two results on
   the same date are told apart by their time, and without one by ``issued``. The last is the
   latest, the one before it the previous.
4. **Units.** A value in another accepted unit is converted to the test's unit through UCUM
   (``terminology.ucum.convert``; mmol/L glucose through its molar mass); a unit the table does
   not accept for the test is a ``DatasetError``. So is a Quantity of a table test (value, component
   or referenceRange bound) whose ``value`` is not a JSON number (a FHIR decimal; ``"83.46"`` is a
   string) or is below zero, or whose unit is not a ``code`` with ``system``
   ``http://unitsofmeasure.org`` (the display text ``unit`` is never read as the unit).
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
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime
from typing import Any

from groundeval.errors import DatasetError
from groundeval.tasks.labs.thresholds import TestRow, Thresholds

__all__ = [
    "LOINC_SYSTEM",
    "NOT_APPLICABLE",
    "NO_RESULT",
    "RANGE_CATEGORIES",
    "UCUM_SYSTEM",
    "Result",
    "direction",
    "labs_truth",
    "results_by_test",
]

LOINC_SYSTEM = "http://loinc.org"
UCUM_SYSTEM = "http://unitsofmeasure.org"
NO_RESULT = "no_result"
NOT_APPLICABLE = "not_applicable"
RANGE_CATEGORIES = ("low", "normal", "high")
"""Categories against the laboratory's own referenceRange (FHIR v3 ObservationInterpretation L, N, H)."""
_RANGE_MEANING = "http://terminology.hl7.org/CodeSystem/referencerange-meaning"

JSON = dict[str, Any]


@dataclass(frozen=True, slots=True)
class Result:
    """One counted result of one test.

    Attributes:
        observation: ``Observation/<id>``.
        day: The effective date as written (``YYYY-MM-DD``, or shorter for a partial date).
        order: Sort key (day, time of day, issued, position in the Bundle).
        values: Measure LOINC -> value as recorded (one entry for a single test).
        unit: The recorded UCUM unit.
        in_unit: Measure LOINC -> value in the table's unit.
        resource: The Observation (JSON).
    """

    observation: str
    day: str
    order: tuple[Any, ...]
    values: dict[str, float]
    unit: str
    in_unit: dict[str, float]
    resource: Mapping[str, Any]


def _codes(concept: object) -> set[str]:
    if not isinstance(concept, Mapping):
        return set()
    return {str(c.get("code")) for c in concept.get("coding") or []
            if isinstance(c, Mapping) and c.get("system") == LOINC_SYSTEM and c.get("code")}


def _effective(resource: Mapping[str, Any]) -> str | None:
    value = resource.get("effectiveDateTime") or resource.get("effectiveInstant")
    if not value and isinstance(resource.get("effectivePeriod"), Mapping):
        value = resource["effectivePeriod"].get("start")
    return value if isinstance(value, str) and value.strip() else None


def _moment(text: object) -> float:
    """A dateTime's instant as a POSIX timestamp; -inf without a time (a date only) or unreadable."""
    if not isinstance(text, str) or "T" not in text:
        return float("-inf")
    try:
        moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return float("-inf")
    return (moment if moment.tzinfo else moment.replace(tzinfo=UTC)).timestamp()


def _quantity(quantity: object, where: str, source: str) -> tuple[float, str] | None:
    """``(value, UCUM code)`` of a Quantity, or None when it has no value (``value`` absent or null).

    Raises:
        DatasetError: The value is not a JSON number (a FHIR decimal is one; ``"83.46"`` is a
            string), is negative (every measure in the table is an amount, a fraction, a rate or a
            pressure that cannot be below zero), or the unit is not a UCUM ``code`` with
            ``system`` ``http://unitsofmeasure.org`` (the display text ``unit`` is never read).
    """
    if not isinstance(quantity, Mapping) or quantity.get("value") is None:
        return None
    value = quantity["value"]
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise DatasetError(source, f"{where}.value is {json.dumps(value)}, not a number; a FHIR decimal is a JSON "
                           "number: write it without quotes (e.g. 83.46, not \"83.46\")")
    if value < 0:
        raise DatasetError(source, f"{where}.value is {value:g}, below zero, which no test in the table can be "
                           "(they measure amounts, fractions, rates and pressures); correct the value")
    code, system = quantity.get("code"), quantity.get("system")
    if not isinstance(code, str) or not code.strip():
        raise DatasetError(source, f"{where} ({value:g} {quantity.get('unit')!r}) has no unit code; the "
                           "truth does not read the display text 'unit': add \"code\" with the UCUM code and "
                           f"\"system\": \"{UCUM_SYSTEM}\"")
    if system != UCUM_SYSTEM:
        raise DatasetError(source, f"{where} ({value:g} {code!r}) has unit system {system!r}, not UCUM; give the unit "
                           f"as a UCUM code with \"system\": \"{UCUM_SYSTEM}\"")
    return float(value), code


def _values(row: TestRow, resource: Mapping[str, Any], where: str,
            source: str) -> dict[str, tuple[float, str]] | None:
    """Measure LOINC -> (value, unit), or None when a value is missing (errors: ``_quantity``)."""
    if not row.is_panel:
        found = _quantity(resource.get("valueQuantity"), f"{where} valueQuantity", source)
        return None if found is None else {row.loinc: found}
    out: dict[str, tuple[float, str]] = {}
    for measure in row.measures:
        comp = next((c for c in resource.get("component") or []
                     if isinstance(c, Mapping) and measure.loinc in _codes(c.get("code"))), None)
        found = _quantity((comp or {}).get("valueQuantity"), f"{where} component {measure.loinc} valueQuantity",
                          source)
        if found is None:
            return None
        out[measure.loinc] = found
    return out


def _convert(row: TestRow, value: float, unit: str, where: str, source: str) -> float:
    converted = row.to_unit(value, unit)
    if converted is None:
        raise DatasetError(source, f"{where}: unit {unit!r} is not one the table accepts for {row.loinc} "
                           f"{row.name} ({', '.join(row.accepted_units)}); give the value in one of them (UCUM)")
    return converted


def results_by_test(
    bundle: Mapping[str, Any], table: Thresholds, source: str
) -> dict[str, tuple[list[Result], list[JSON]]]:
    """Every test's counted results, oldest first, and the results not counted (by status).

    Args:
        bundle: The case's Bundle (JSON).
        table: The threshold table.
        source: The case file, for error messages.

    Returns:
        Test LOINC -> ``(counted results oldest first, [{"observation", "status", "day"}...])``.

    Raises:
        DatasetError: An Observation of a table test has a status outside the R4 value set, no
            effective[x], a unit the table does not accept, or a Quantity ``_quantity`` refuses (a
            value that is not a JSON number or is negative, a unit without a UCUM code and system).
    """
    out: dict[str, tuple[list[Result], list[JSON]]] = {t.loinc: ([], []) for t in table.tests}
    for index, entry in enumerate(bundle.get("entry") or []):
        resource = entry.get("resource") if isinstance(entry, Mapping) else None
        if not isinstance(resource, Mapping) or resource.get("resourceType") != "Observation":
            continue
        codes = _codes(resource.get("code"))
        for row in table.tests:
            if row.loinc not in codes:
                continue
            where = f"Observation/{resource.get('id')}"
            status = resource.get("status")
            if status not in table.all_statuses:
                raise DatasetError(source, f"{where} status {status!r} is not an R4 ObservationStatus code "
                                   f"({', '.join(sorted(table.all_statuses))})")
            effective = _effective(resource)
            if effective is None:
                raise DatasetError(source, f"{where} ({row.loinc} {row.name}) has no effectiveDateTime, "
                                   "effectiveInstant or effectivePeriod.start; give the time the sample was taken")
            day = effective[:10]
            counted, skipped = out[row.loinc]
            if status not in table.counted_statuses:
                skipped.append({"observation": where, "status": status, "day": day})
                continue
            values = _values(row, resource, where, source)
            if values is None:
                skipped.append({"observation": where, "status": status, "day": day, "why": "no value"})
                continue
            units = {u for _, u in values.values()}
            unit = next(iter(units)) if len(units) == 1 else ""
            in_unit = {code: _convert(row, v, u, where, source) for code, (v, u) in values.items()}
            order = (day, _moment(effective), _moment(resource.get("issued")), index)
            counted.append(Result(where, day, order, {c: v for c, (v, _) in values.items()}, unit, in_unit, resource))
    for counted, _ in out.values():
        counted.sort(key=lambda r: r.order)
    return out


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
        bounds = [_quantity(item.get(key), f"{where}.{key}", source) for key in ("low", "high")]
        if all(b is None for b in bounds):
            continue
        low, high = (None if b is None else _convert(row, b[0], b[1], where, source) for b in bounds)
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
        category = row.combine([m.category(latest.in_unit[m.loinc]) for m in row.measures])
        basis = "table"
    if age is not None and age < adult_age:
        critical = None
    else:
        critical = any(m.critical is not None and m.critical.hit(latest.in_unit[m.loinc]) for m in row.measures)
    if previous is None:
        trend: str | dict[str, str] | None = None
    else:
        trends = {m.loinc: direction(latest.in_unit[m.loinc], previous.in_unit[m.loinc], row.tolerance)
                  for m in row.measures}
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
