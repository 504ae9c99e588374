"""Reading a labs case's results: which Observations count, as what values, in which order.

The first four truth rules (``clinical.lab_truth`` states them all, ``docs/tasks/labs.md`` with their
sources): the Observations of a test and their status, blood pressure in either shape (a panel,
or separate component Observations paired by instant) with a reading missing a component counted
only when the components it has decide the category and the critical flag, the order of results
as instants (FHIR dateTime with its UTC offset; a date alone as the start of its UTC day), and the
checks every Quantity read passes (a JSON number, not negative, a UCUM code, no comparator).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from groundeval.clinical.lab_thresholds import TestRow, Thresholds
from groundeval.errors import DatasetError

__all__ = ["LOINC_SYSTEM", "UCUM_SYSTEM", "Result", "in_table_unit", "instant", "quantity", "results_by_test"]

LOINC_SYSTEM = "http://loinc.org"
UCUM_SYSTEM = "http://unitsofmeasure.org"

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


_PARTIAL_DATE = re.compile(r"^(\d{4})(?:-(\d{2}))?$")


def instant(text: object) -> tuple[float, int] | None:
    """A FHIR dateTime as ``(POSIX seconds, precision)``; None when absent or unreadable.

    Precision 0 is a date without a time (``YYYY``, ``YYYY-MM``, ``YYYY-MM-DD``), taken as the start
    of that year, month or day in UTC; 1 is a time, with its UTC offset (a time without an offset,
    which FHIR R4 does not allow, is taken as UTC). https://hl7.org/fhir/R4/datatypes.html#dateTime
    """
    if not isinstance(text, str) or not text.strip():
        return None
    text = text.strip()
    partial = _PARTIAL_DATE.match(text)
    try:
        if partial:
            moment = datetime(int(partial[1]), int(partial[2] or 1), 1, tzinfo=UTC)
        else:
            moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
    timed = "T" in text
    return (moment if moment.tzinfo else moment.replace(tzinfo=UTC)).timestamp(), int(timed)


def _moment(text: object) -> float:
    """``issued`` as POSIX seconds for ordering; -inf when absent or unreadable."""
    found = instant(text)
    return float("-inf") if found is None else found[0]


def quantity(quantity: object, where: str, source: str) -> tuple[float, str] | None:
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
    comparator = quantity.get("comparator")
    if comparator is not None:
        raise DatasetError(source, f"{where} is {json.dumps(comparator)} {value:g}: with a comparator the value is "
                           f"a bound, not {value:g} (Quantity.comparator is a modifier element, "
                           "https://hl7.org/fhir/R4/datatypes.html#Quantity), and the task scores a number; give the "
                           "measured value without \"comparator\", or leave this Observation out of the case")
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
    """Measure LOINC -> (value, unit): the components that have one; None when none has (errors: ``_quantity``)."""
    if not row.is_panel:
        found = quantity(resource.get("valueQuantity"), f"{where} valueQuantity", source)
        return None if found is None else {row.loinc: found}
    out: dict[str, tuple[float, str]] = {}
    for measure in row.measures:
        comp = next((c for c in resource.get("component") or []
                     if isinstance(c, Mapping) and measure.loinc in _codes(c.get("code"))), None)
        found = quantity((comp or {}).get("valueQuantity"), f"{where} component {measure.loinc} valueQuantity",
                          source)
        if found is not None:
            out[measure.loinc] = found
    return out or None


def _decided(row: TestRow, in_unit: Mapping[str, float]) -> bool:
    """True when the components present decide the category and the critical flag whatever the others say.

    Every component present: always. Some missing: the category is the higher of the components'
    (``TestRow.combine``), so it is decided when the present ones already reach the highest
    category any missing one could take; the critical flag is decided when a present component is
    beyond its limit, or no missing component has one.
    """
    missing = [m for m in row.measures if m.loinc not in in_unit]
    if not missing:
        return True
    present = max(row.order.index(m.category(in_unit[m.loinc])) for m in row.measures if m.loinc in in_unit)
    category = present >= max(row.order.index(b.name) for m in missing for b in m.bands)
    critical = any(m.critical is not None and m.critical.hit(in_unit[m.loinc]) for m in row.measures
                   if m.loinc in in_unit) or all(m.critical is None for m in missing)
    return category and critical


def in_table_unit(row: TestRow, value: float, unit: str, where: str, source: str) -> float:
    """``value`` in ``unit`` converted to the row's unit through UCUM.

    Raises:
        DatasetError: ``unit`` is not one the table accepts for the test (named with ``where``).
    """
    converted = row.to_unit(value, unit)
    if converted is None:
        raise DatasetError(source, f"{where}: unit {unit!r} is not one the table accepts for {row.loinc} "
                           f"{row.name} ({', '.join(row.accepted_units)}); give the value in one of them (UCUM)")
    return converted


def _counted(row: TestRow, readings: Sequence[tuple[int, Mapping[str, Any]]], values: dict[str, tuple[float, str]],
             effective: str, when: tuple[float, int], source: str,
             counted: list[Result], skipped: list[JSON]) -> None:
    """Add one reading (one Observation, or a panel's component Observations) to ``counted`` or ``skipped``."""
    where = " + ".join(f"Observation/{r.get('id')}" for _, r in readings)
    units = {u for _, u in values.values()}
    unit = next(iter(units)) if len(units) == 1 else ""
    in_unit = {code: in_table_unit(row, v, u, where, source) for code, (v, u) in values.items()}
    day = effective[:10]
    if not _decided(row, in_unit):
        missing = ", ".join(f"{m.loinc} {m.name}" for m in row.measures if m.loinc not in in_unit)
        skipped.append({"observation": where, "status": str(readings[0][1].get("status")), "day": day,
                        "why": f"no {missing}, which the category or the critical flag needs"})
        return
    issued = max(_moment(r.get("issued")) for _, r in readings)
    order = (when[0], when[1], issued, min(i for i, _ in readings))
    counted.append(Result(where, day, order, {c: v for c, (v, _) in values.items()}, unit, in_unit,
                          readings[0][1]))


def _pair_components(row: TestRow, parts: Sequence[tuple[int, Mapping[str, Any], str, tuple[float, str], str,
                                                           tuple[float, int]]],
                     source: str, counted: list[Result], skipped: list[JSON]) -> None:
    """Separate component Observations of a panel (8480-6, 8462-4) taken at one instant make one reading."""
    groups: dict[tuple[float, int], list[Any]] = {}
    for part in parts:
        groups.setdefault(part[5], []).append(part)
    for when, group in groups.items():
        values: dict[str, tuple[float, str]] = {}
        for _, resource, code, found, _, _ in group:
            if code in values:
                first = next(r for _, r, c, *_ in group if c == code)
                raise DatasetError(source, f"Observation/{first.get('id')} and Observation/{resource.get('id')} are "
                                   f"both {code} taken at {group[0][4]}: one {row.name} reading has one value per "
                                   "component; remove one, or mark it entered-in-error")
            values[code] = found
        readings = sorted(((index, resource) for index, resource, *_ in group), key=lambda p: p[0])
        _counted(row, readings, values, group[0][4], when, source, counted, skipped)


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
        A panel's results come from its own Observations and from separate component Observations
        paired by the instant they were taken.

    Raises:
        DatasetError: An Observation of a table test has a status outside the R4 value set, no
            effective[x] or one that is not a FHIR dateTime, a unit the table does not accept, a
            Quantity ``_quantity`` refuses (a value that is not a JSON number, is negative or has a
            comparator, a unit without a UCUM code and system), or two separate Observations of
            one component taken at the same instant.
    """
    out: dict[str, tuple[list[Result], list[JSON]]] = {t.loinc: ([], []) for t in table.tests}
    parts: dict[str, list[Any]] = {}  # panel LOINC -> its separate component Observations
    for index, entry in enumerate(bundle.get("entry") or []):
        resource = entry.get("resource") if isinstance(entry, Mapping) else None
        if not isinstance(resource, Mapping) or resource.get("resourceType") != "Observation":
            continue
        codes = _codes(resource.get("code"))
        for row in table.tests:
            component = None
            if row.loinc not in codes:
                component = next((m.loinc for m in row.measures if row.is_panel and m.loinc in codes), None)
                if component is None:
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
            when = instant(effective)
            if when is None:
                raise DatasetError(source, f"{where} effective time {effective!r} is not a FHIR dateTime; write it as "
                                   "YYYY-MM-DD or YYYY-MM-DDThh:mm:ss+zz:zz (https://hl7.org/fhir/R4/datatypes.html"
                                   "#dateTime)")
            day = effective[:10]
            counted, skipped = out[row.loinc]
            if status not in table.counted_statuses:
                skipped.append({"observation": where, "status": status, "day": day})
                continue
            if component is not None:
                found = quantity(resource.get("valueQuantity"), f"{where} valueQuantity", source)
                if found is None:
                    skipped.append({"observation": where, "status": status, "day": day, "why": "no value"})
                else:
                    parts.setdefault(row.loinc, []).append((index, resource, component, found, effective, when))
                continue
            values = _values(row, resource, where, source)
            if values is None:
                skipped.append({"observation": where, "status": status, "day": day, "why": "no value"})
                continue
            _counted(row, [(index, resource)], values, effective, when, source, counted, skipped)
    for loinc, separate in parts.items():
        _pair_components(table.test(loinc), separate, source, *out[loinc])
    for counted, _ in out.values():
        counted.sort(key=lambda r: r.order)
    return out
