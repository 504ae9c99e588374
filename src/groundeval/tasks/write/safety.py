"""The safety dimension of the write task: dose, schedule, daily total, ceiling.

Rules (the summary is in ``groundeval.tasks.write.scorer``):

* **Dose per administration** (``Dosage.doseAndRate``, https://hl7.org/fhir/R4B/dosage.html):
  ``doseQuantity`` for a single documented dose, ``doseRange`` (``low``/``high``) for a
  documented range ("1-2 tablets"). A range written as one value, or one value written as a
  range, fails. Amounts are compared in mg after conversion: a UCUM mass (0.075 mg == 75 ug), or
  a count of tablets/capsules (UCUM annotation ``{tablet}``, or ``TAB``/``CAP`` under
  ``http://terminology.hl7.org/CodeSystem/v3-orderableDrugForm``) times the strength of the drug
  the answer codes, from the site catalog (``CatalogEntry.unit_strength_mg``). A code under a
  non-UCUM system is never read as UCUM; a unit that is neither fails as unverifiable.
* **Schedule** (``timing.repeat``, https://hl7.org/fhir/R4B/datatypes.html#Timing):
  administrations per day run from the lower of ``frequency``/``frequencyMax`` per the longer of
  ``period``/``periodMax`` up to the higher per the shorter (so a ``frequencyMax`` below
  ``frequency``, which the validator flags, is never read as the top). "Two to four times a day"
  is frequency 2, frequencyMax 4, period 1 d; "every 6 to 8 hours" is period 6, periodMax 8 h:
  dropping the upper bound fails, and so does a range the note never gave.
* **Daily total**: the most the schedule allows within any 24 hours equals the documented one:
  the top of the dose range times the most whole administrations that fit into 24 hours
  (``terminology.ucum.most_administrations_in_24h``: every 6 hours is 4, every other day is 1,
  since the dose is taken whole on the day it is taken).
* **Ceiling**: that daily total does not exceed the ingredient's maximum daily dose
  (``terminology.load_max_daily_doses``, FDA labels, "in 24 hours"); without a schedule, one
  whole dose must not.
* **Read through type and binding errors.** A dose and a schedule are read as ``fhir.resources``
  reads them: a number written as a JSON string of a FHIR decimal (``"400"``) is that number,
  and a UnitsOfTime display written where its code belongs (``"day"``, ``"hours"``) is that code
  (``terminology.ucum.unit_of_time``). Those are errors of the raw JSON and of a required
  binding, which the validator reports and the ``schema`` dimension scores; they never hide a
  daily total that can be computed (400 mg x 3 per 1 day is 1,200 mg/day, whatever the types).
  Every computed daily total is stated with how it was computed and the rules it was checked
  against (``Check.basis``), pass or fail.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from typing import Any, TypeGuard

from groundeval.fhir.bundle import is_rxnorm
from groundeval.scoring import Metric
from groundeval.tasks.write.dimensions import JSON, Check, dosages
from groundeval.terminology.ucum import (
    ORDERABLE_DRUG_FORM_SYSTEM,
    UCUM_SYSTEM,
    UNITS_OF_TIME_DAYS,
    count_form,
    describe_unit,
    most_administrations_in_24h,
    to_mg,
    ucum_problem,
    unit_of_time,
)

__all__ = ["StrengthLookup", "check_safety", "quantity_mg"]

StrengthLookup = Any
"""Anything with ``get(rxcui) -> CatalogEntry | None`` (a ``terminology.Catalog``)."""


_DECIMAL = re.compile(r"-?(0|[1-9][0-9]{0,17})(\.[0-9]{1,17})?([eE][+-]?[0-9]{1,9})?")
"""A FHIR ``decimal`` as written (https://hl7.org/fhir/R4B/datatypes.html#primitive)."""


def _is_number(value: object) -> TypeGuard[float]:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _number(value: object) -> float | None:
    """``value`` as a number: a JSON number, or a string holding a FHIR decimal (``"400"``); else None."""
    if _is_number(value):
        return float(value)
    if isinstance(value, str) and _DECIMAL.fullmatch(value.strip()):
        return float(value)
    return None


def _fmt(value: float | None, unit: str = "mg") -> str:
    return "unknown" if value is None else f"{value:g} {unit}"


def _span(low: float, high: float, unit: str = "mg") -> str:
    return f"{low:g} {unit}" if math.isclose(low, high) else f"{low:g}-{high:g} {unit}"


def _product(answer: JSON, catalog: StrengthLookup | None) -> Any:
    """The one catalog product the answer codes (any RxNorm system), or None."""
    if catalog is None:
        return None
    concept = answer.get("medicationCodeableConcept")
    codings = concept.get("coding") if isinstance(concept, Mapping) else None
    codes = {
        str(c.get("code")).strip() for c in codings or []
        if isinstance(c, Mapping) and is_rxnorm(c.get("system")) and c.get("code")
    }
    entries = {e.rxcui: e for e in (catalog.get(code) for code in codes) if e is not None}
    return next(iter(entries.values())) if len(entries) == 1 else None


def quantity_mg(quantity: Any, product: Any = None) -> tuple[float | None, str | None]:
    """Read a SimpleQuantity as mg.

    Args:
        quantity: ``{"value", "unit", "system", "code"}``.
        product: The coded catalog entry (``CatalogEntry``), needed for a tablet count.

    Returns:
        ``(mg, None)``, or ``(None, why it cannot be verified)``.
    """
    if not isinstance(quantity, Mapping):
        return None, "the quantity is not an object"
    raw, system = quantity.get("value"), quantity.get("system")
    code = quantity.get("code") if quantity.get("code") is not None else quantity.get("unit")
    value = _number(raw)  # "400" is 400, as fhir.resources reads it; the validator flags the type
    if value is None:
        return None, f"dose value must be a number, got {raw!r}"
    if system not in (UCUM_SYSTEM, ORDERABLE_DRUG_FORM_SYSTEM):
        return None, f"dose system: expected {UCUM_SYSTEM}, got {system!r}"
    form = count_form(code if isinstance(code, str) else None, system)
    if form is not None:
        strength = None if product is None else product.unit_strength_mg
        if strength is None or product.unit_form != form:
            what = ("the answer codes no single catalog drug" if product is None
                    else f"{product.display!r} has no single {form} strength in mg")
            return None, f"{value:g} {code} is a count of {form}s, but {what}"
        return value * strength, None
    if system == ORDERABLE_DRUG_FORM_SYSTEM:
        return None, f"{code!r} is not a tablet or capsule code of {ORDERABLE_DRUG_FORM_SYSTEM}"
    problem = ucum_problem(code if isinstance(code, str) else None)
    if problem is not None:
        return None, f"dose unit: {problem[0]}; {problem[1]}"
    mg = to_mg(float(value), code)
    if mg is None:
        meaning = describe_unit(code) if isinstance(code, str) else None
        what = f"is {meaning}" if meaning else "is not a mass"
        return None, (f"dose unit {code!r} {what}, not a mass per administration; cannot compare it with the "
                      "documented dose (give the amount per dose in 'mg', 'ug' or 'g')")
    return mg, None


def _read_dose(rate: JSON, product: Any) -> tuple[tuple[float, float] | None, bool, str | None]:
    """``((low mg, high mg) or None, is a range, why not readable)``."""
    if "doseQuantity" in rate:
        mg, problem = quantity_mg(rate["doseQuantity"], product)
        return (None if mg is None else (mg, mg)), False, problem
    rng = rate.get("doseRange")
    if not isinstance(rng, Mapping):
        return None, False, f"expected doseQuantity or doseRange, got {sorted(rate)}"
    low, why_low = quantity_mg(rng.get("low"), product)
    high, why_high = quantity_mg(rng.get("high"), product)
    if low is None or high is None:
        return None, True, f"doseRange {'low' if low is None else 'high'}: {why_low or why_high}"
    return (low, high), True, None


def _schedule(dosage: JSON) -> tuple[tuple[float, float] | None, str]:
    """Administrations per day ``(least, most)`` from ``timing.repeat``, and how it reads."""
    timing = dosage.get("timing")
    repeat = timing.get("repeat") if isinstance(timing, Mapping) else None
    if not isinstance(repeat, Mapping):
        return None, "no timing.repeat"
    # "3" is 3 and "day" is d, as they are meant; the validator reports the type and binding errors
    frequency, period = _number(repeat.get("frequency", 1)), _number(repeat.get("period"))
    frequency_max = _number(repeat.get("frequencyMax", frequency))
    period_max = _number(repeat.get("periodMax", period))
    unit = unit_of_time(repeat.get("periodUnit"))
    if frequency is None or frequency_max is None or period is None or period_max is None or not (
            period > 0 and period_max > 0):
        return None, (f"timing.repeat frequency {repeat.get('frequency')!r} / period {repeat.get('period')!r} "
                      "are not numbers")
    if unit is None:
        return None, f"periodUnit {repeat.get('periodUnit')!r} is not a UnitsOfTime code or display"
    days = UNITS_OF_TIME_DAYS[unit]
    # the bounds in order whatever the answer wrote: a maximum below its minimum is never the top
    rarest, most_often = sorted((frequency, frequency_max))
    shortest, longest = sorted((period, period_max))
    least, most = rarest / (longest * days), most_often / (shortest * days)
    times = f"{rarest:g}" if most_often == rarest else f"{rarest:g}-{most_often:g}"
    every = f"{shortest:g}" if longest == shortest else f"{shortest:g}-{longest:g}"
    return (least, most), f"{times} per {every} {unit}"


def _expected_schedule(expected: JSON) -> tuple[tuple[float, float] | None, str]:
    frequency, period, unit = expected.get("frequency"), expected.get("period"), expected.get("period_unit")
    if frequency is None or period is None or unit is None:
        return None, "none"
    most_often = expected.get("frequency_max") or frequency
    longest = expected.get("period_max") or period
    days = UNITS_OF_TIME_DAYS[unit]
    times = f"{frequency:g}" if most_often == frequency else f"{frequency:g}-{most_often:g}"
    every = f"{period:g}" if longest == period else f"{period:g}-{longest:g}"
    return (frequency / (longest * days), most_often / (period * days)), f"{times} per {every} {unit}"


def _want_dose(expected: JSON) -> tuple[tuple[float, float], str, bool]:
    """The documented ``(low mg, high mg)``, how to say it, and whether it is a range."""
    rng = expected.get("dose_range_mg")
    if rng is not None:
        spec = expected["dose_range"]
        low, high = spec["low"], spec["high"]
        text = f"{low['value']:g} {low['unit']}-{high['value']:g} {high['unit']}"
        if low["unit"] != "mg" or high["unit"] != "mg":
            text += f" (= {_span(rng[0], rng[1])})"
        return (float(rng[0]), float(rng[1])), text, True
    dose = expected["dose"]
    text = f"{dose['value']:g} {dose['unit']}"
    if dose["unit"] != "mg":
        text += f" (= {expected['dose_mg']:g} mg)"
    return (float(expected["dose_mg"]), float(expected["dose_mg"])), text, False


def _dose_reasons(got: tuple[float, float] | None, ranged: bool, expected: JSON) -> list[str]:
    (low, high), want, want_range = _want_dose(expected)
    if got is None:
        return []
    if want_range and not ranged:
        return [f"dose: expected a range of {want} per administration (doseRange), got a single value "
                f"{_fmt(got[0])} (doseQuantity): a range cannot be encoded as one value"]
    if ranged and not want_range:
        return [f"dose: expected a single dose of {want} (doseQuantity), got a range {_span(*got)} (doseRange)"]
    if not (math.isclose(got[0], low, rel_tol=1e-6) and math.isclose(got[1], high, rel_tol=1e-6)):
        kind = "dose range" if want_range else "dose"
        return [f"{kind}: expected {want} per administration, got {_span(*got)}"]
    return []


def _timing_reasons(got: tuple[float, float] | None, how: str, expected: JSON) -> list[str]:
    want, want_how = _expected_schedule(expected)
    if want is None:
        return [] if got is None else [f"timing: expected none (the note gives no interval), got invented {how}"]
    if got is None:
        return []  # reported with the daily total
    want_range, got_range = not math.isclose(*want), not math.isclose(*got)
    if want_range and not got_range:
        if expected.get("frequency_max"):
            bound, lost = f"frequencyMax {expected['frequency_max']}", "the upper bound (frequencyMax)"
        else:
            bound, lost = f"periodMax {expected.get('period_max'):g}", "the longer period (periodMax)"
        return [f"timing: expected {want_how} ({bound}), got a fixed {how}: {lost} was dropped"]
    if got_range and not want_range:
        return [f"timing: expected a fixed {want_how}, got a range {how} (frequencyMax/periodMax the note "
                "does not give)"]
    if want_range and not all(math.isclose(g, w, rel_tol=1e-6) for g, w in zip(got, want, strict=True)):
        return [f"timing: expected {want_how}, got {how}"]
    return []


def check_safety(
    answer: JSON, truth: JSON, catalog: StrengthLookup | None = None
) -> tuple[Check, dict[str, Metric]]:
    """Check the encoded dose, schedule, daily total and ceiling (rules: module docstring).

    Args:
        answer: The parsed MedicationStatement.
        truth: The task's truth (``dosage`` with ``dose_mg`` or ``dose_range_mg``,
            ``frequency``/``frequency_max``/``period``/``period_unit``, ``daily_total_mg``; and
            ``ceiling``).
        catalog: Strength lookup for tablet counts (``terminology.Catalog``); without it a count
            cannot be verified.

    Returns:
        The check, and the answer's ``dose_mg`` (mg per administration, the top of a range) and
        ``daily_total_mg`` (the most within 24 hours, mg), each None when it cannot be computed.
    """
    expected = truth.get("dosage")
    items = dosages(answer)
    doses = [r for d in items for r in d.get("doseAndRate") or [] if isinstance(r, Mapping)]
    numbers: dict[str, Metric] = {"dose_mg": None, "daily_total_mg": None}
    if expected is None:
        if doses:
            why = "dose: expected none (the note documents no dose), got an invented dose"
            return Check("safety", False, [why]), numbers
        return Check("safety", True), numbers
    _, want, _ = _want_dose(expected)
    early = None
    if not doses:
        early = f"dose: expected {want} per administration, got none"
    elif len(doses) > 1 or len(items) > 1:
        early = f"dose: expected one dose of {want}, got {len(doses)} doses"
    if early is not None:
        return Check("safety", False, [early]), numbers
    got, ranged, problem = _read_dose(doses[0], _product(answer, catalog))
    reasons = [f"dose: cannot verify ({problem})"] if got is None else _dose_reasons(got, ranged, expected)
    per_day, how = _schedule(items[0])
    reasons += _timing_reasons(per_day, how, expected)
    high = None if got is None else got[1]
    numbers["dose_mg"] = None if high is None else round(high, 6)
    times = None if per_day is None else most_administrations_in_24h(per_day[1])
    total = None if high is None or times is None else high * times
    numbers["daily_total_mg"] = None if total is None else round(total, 6)
    want_total = expected.get("daily_total_mg")
    if want_total is not None:
        head = f"daily total (the most in 24 hours): expected {_fmt(want_total)}, got"
        if total is None:
            reasons.append(f"{head} none ({how if per_day is None else 'no verifiable dose'})")
        elif not math.isclose(total, want_total, rel_tol=1e-6):
            assert high is not None
            reasons.append(f"{head} {_fmt(total)} ({high:g} mg x {times} doses, {how})")
    ceiling = truth.get("ceiling") or {}
    limit = ceiling.get("mg_per_day")
    # The ceiling bounds what is taken within any 24 hours: the daily total, and without a schedule
    # one whole dose.
    peak = total if total is not None else high
    if peak is not None and _is_number(limit) and peak > limit + 1e-9:
        reasons.append(
            f"dose in 24 h: {_fmt(peak)} exceeds the ceiling of {_fmt(limit)}/day for "
            f"{ceiling.get('ingredient')} ({ceiling.get('route')}; {ceiling.get('source')})"
        )
    basis = None
    if total is not None:
        assert high is not None
        basis = (f"daily total {_fmt(total, 'mg/day')} = {high:g} mg x {times} administrations, the most "
                 f"whole ones within 24 hours at {how}; checked against "
                 + _against(want_total, ceiling))
    return Check("safety", not reasons, reasons, basis=basis), numbers


def _against(want_total: float | None, ceiling: JSON) -> str:
    """The rules a daily total is checked against: the note's documented total and the label's ceiling."""
    rules = [] if want_total is None else [f"the documented daily total {_fmt(want_total)}"]
    limit = ceiling.get("mg_per_day")
    if _is_number(limit):
        rules.append(f"the maximum daily dose {_fmt(limit)}/day for {ceiling.get('ingredient')} "
                     f"({ceiling.get('route')}; {ceiling.get('source')})")
    elif ceiling:
        rules.append(f"no ceiling for {ceiling.get('ingredient')} ({ceiling.get('reason') or 'none in its label'})")
    else:
        rules.append("no ceiling (no maximum daily dose row for this drug)")
    return " and ".join(rules)
