"""Doses of the reconcile task: the record's and the report's, per ingredient, through UCUM.

**Products.** A product's strengths come from its RxNorm display (``terminology.rxnorm.parse_display``;
RxNorm normalized names state every ingredient with its strength, https://www.nlm.nih.gov/research/umls/rxnorm/docs/techdoc.html):
each ingredient's strength per unit (tablet, capsule, patch, ring, actuation) as a mass
("Lisinopril 10 MG Oral Tablet": 10 mg) or a mass rate ("72 HR Fentanyl 0.025 MG/HR Transdermal
System": 0.025 mg/h), converted through UCUM (``terminology.ucum.dose_amount``). A product with an
ingredient whose strength is neither (a solution in mg/mL, insulin in units/mL, a display with no
strength) has no comparable dose.

**The record's dose.** Synthea often writes no ``dosageInstruction``, and where it does,
``doseQuantity`` is ``{"value": 1.0}`` with no unit: one unit of the product per administration.
So the dose is *count x strength*, per ingredient ("Acetaminophen 325 MG / oxyCODONE Hydrochloride
5 MG Oral Tablet" x 2 is 650 mg acetaminophen and 10 mg oxycodone); no ``dosageInstruction`` means
one unit. A ``doseQuantity`` in a UCUM mass or mass-rate unit is used as it is (for a
single-ingredient product; on a combination product it names no ingredient and is not compared).
Frequency is ``timing.repeat`` (``frequency`` per ``period`` ``periodUnit``), as-needed is
``asNeededBoolean``; either is unknown when absent.

**The report's dose** (``ReportItem.dose``, checked when the truth is derived; a case file that
breaks a rule is an ``invalid_case`` naming the file, the item, the unit and the fix):

* the unit is parsed by the UCUM grammar, case-sensitive (``mcg`` is not UCUM: ``ug``; ``MG`` is a
  megagauss: ``mg``);
* a count of tablets or capsules (``{tablet}``, ``{capsule}``) is converted through the strengths
  of the product the item names (its RxCUI), as the record side is; a product with no comparable
  strength cannot be counted, and a count must be of the product's own unit: ``{capsule}`` for a
  tablet (or ``{tablet}`` for a capsule, or either for a patch or a solution) is refused, because
  the item then names one product and counts another, and which one the patient means is unknown;
* a mass or mass rate must have the dimension of the product's strength: a patch dosed in mg/h is
  reported as a rate ("25 ug" for a 0.025 mg/h patch is refused: say the rate, ``ug/h``), a
  tablet as a mass;
* on a combination product an amount names its ingredient (``"ingredient": "oxycodone"``, matched
  against the RxNorm ingredient names, salt optional); an amount without one is refused.

**Comparing.** Amounts compare per ingredient, in mg or mg/h, within a relative 1e-9; frequencies
per day (``administrations_per_day``: every 72 h equals every 3 d); what only one side states is
not a discrepancy. So 75 ug equals 0.075 mg, one ``{tablet}`` of a 10 mg tablet equals 10 mg,
25 ug/h equals 0.025 mg/h, and 10 mg of oxycodone against the record's one oxycodone 5 mg /
acetaminophen 325 mg tablet is a ``dose_mismatch`` on oxycodone.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, TypedDict

from groundeval.errors import DatasetError
from groundeval.terminology.rxnorm import format_strength, parse_display
from groundeval.terminology.ucum import (
    UCUM_SYSTEM,
    UNITS_OF_TIME_DAYS,
    administrations_per_day,
    count_form,
    describe_unit,
    dose_amount,
    rxnorm_unit_to_ucum,
    ucum_problem,
)

__all__ = [
    "Amounts",
    "Dosage",
    "Product",
    "compare",
    "describe_dosage",
    "product",
    "record_dosage",
    "reported_dosage",
    "same_amount",
    "unit_amounts",
]

Amounts = dict[str, dict[str, Any]]
"""Ingredient (lower case, as RxNorm names it) -> ``{"value": float, "unit": "mg" | "mg/h"}``."""

_KIND_WORD = {"mg": "a mass (mg)", "mg/h": "a mass per time (mg/h)"}


class Dosage(TypedDict):
    """A dosage as compared; each key None when unknown.

    Keys:
        dose: ``{"value", "unit"}`` as stated (UCUM code; for the record, count x the strength of a
            single-ingredient product, in its display's unit; None for a combination).
        amounts: Per ingredient, in mg or mg/h (``Amounts``): what is compared.
        frequency: ``{"frequency", "period", "period_unit"}`` (``Timing.repeat``).
        as_needed: True for as-needed use, False for scheduled.
    """

    dose: dict[str, Any] | None
    amounts: Amounts | None
    frequency: dict[str, Any] | None
    as_needed: bool | None


@dataclass(frozen=True, slots=True)
class Product:
    """A product as its RxNorm display states it.

    Attributes:
        display: The display.
        ingredients: Ingredient names, lower case, salt included (``"oxycodone hydrochloride"``).
        strengths: Per ingredient ``(name, value, "mg" | "mg/h")`` per unit of the product, or None
            when some ingredient has no mass or mass-rate strength (no comparable dose).
        unit_form: ``"tablet"``/``"capsule"`` from the dose form, else None.
        dose_form: The RxNorm dose form (``"Oral Tablet"``), else None.
    """

    display: str
    ingredients: tuple[str, ...]
    strengths: tuple[tuple[str, float, str], ...] | None
    unit_form: str | None
    dose_form: str | None

    @property
    def kind(self) -> str | None:
        """``"mg"`` or ``"mg/h"`` when every strength has that dimension, else None."""
        kinds = {k for _, _, k in self.strengths or ()}
        return next(iter(kinds)) if len(kinds) == 1 else None

    def ingredient(self, name: str) -> str | None:
        """The ingredient ``name`` means: equal, or the RxNorm name with a salt after it (``oxycodone``)."""
        want = " ".join(name.split()).casefold()
        hits = [i for i in self.ingredients if i == want or i.startswith(f"{want} ")]
        return hits[0] if len(hits) == 1 else None


@lru_cache(maxsize=1024)
def product(display: str) -> Product:
    """Parse a display into a ``Product`` (rules in the module docstring)."""
    entry = parse_display(display)
    strengths: list[tuple[str, float, str]] | None = []
    for ing in entry.ingredients:
        unit = rxnorm_unit_to_ucum(ing.unit)
        amount = None if ing.strength is None or unit is None else dose_amount(ing.strength, unit)
        if amount is None:
            strengths = None
            break
        assert strengths is not None
        strengths.append((ing.name, amount[0], amount[1]))
    return Product(display, tuple(i.name for i in entry.ingredients), tuple(strengths) if strengths else None,
                   entry.unit_form, entry.dose_form)


def _round(value: float) -> float:
    return float(format_strength(value)) if value >= 1e-6 else value


def unit_amounts(count: float, prod: Product) -> Amounts | None:
    """``count`` units of ``prod``, per ingredient (count x strength); None without comparable strengths."""
    if prod.strengths is None:
        return None
    return {name: {"value": _round(count * value), "unit": kind} for name, value, kind in prod.strengths}


def _display_dose(count: float, display: str) -> dict[str, Any] | None:
    """Count x the strength of a single-ingredient product in its display's own unit (``0.125 mg``)."""
    entry = parse_display(display)
    if len(entry.ingredients) != 1:
        return None
    ing = entry.ingredients[0]
    unit = rxnorm_unit_to_ucum(ing.unit)
    if ing.strength is None or unit is None or dose_amount(1.0, unit) is None or "{" in unit:
        return None
    return {"value": float(format_strength(count * ing.strength)), "unit": unit}


def _timing(first: Mapping[str, Any]) -> dict[str, Any] | None:
    timing = first.get("timing")
    repeat = (timing.get("repeat") or {}) if isinstance(timing, Mapping) else {}
    if repeat.get("frequency") and repeat.get("period") and repeat.get("periodUnit") in UNITS_OF_TIME_DAYS:
        return {"frequency": int(repeat["frequency"]), "period": float(repeat["period"]),
                "period_unit": repeat["periodUnit"]}
    return None


def record_dosage(request: Mapping[str, Any], display: str) -> Dosage:
    """The dosage of one MedicationRequest, by the rule in the module docstring.

    Args:
        request: A MedicationRequest dict.
        display: The drug's RxNorm display (for its strengths).
    """
    instructions = request.get("dosageInstruction") or []
    first = instructions[0] if isinstance(instructions, list) and instructions else {}
    first = first if isinstance(first, Mapping) else {}
    prod = product(display)
    count, dose, amounts = 1.0, None, None
    stated = False
    for dose_rate in first.get("doseAndRate") or []:
        quantity = dose_rate.get("doseQuantity") if isinstance(dose_rate, Mapping) else None
        if isinstance(quantity, Mapping) and isinstance(quantity.get("value"), int | float):
            unit = quantity.get("code") or quantity.get("unit")
            read = dose_amount(float(quantity["value"]), unit) if isinstance(unit, str) else None
            if read is not None:
                stated = True
                dose = {"value": float(quantity["value"]), "unit": unit}
                if len(prod.ingredients) == 1:
                    amounts = {prod.ingredients[0]: {"value": _round(read[0]), "unit": read[1]}}
            else:
                count = float(quantity["value"])
            break
    if not stated:
        dose, amounts = _display_dose(count, display), unit_amounts(count, prod)
    as_needed = first.get("asNeededBoolean")
    return Dosage(dose=dose, amounts=amounts, frequency=_timing(first),
                  as_needed=as_needed if isinstance(as_needed, bool) else None)


def reported_dosage(item: Mapping[str, Any], prod: Product | None, source: str, where: str) -> Dosage:
    """The report item's dosage, its dose checked and read per ingredient (rules: module docstring).

    Args:
        item: A ``ReportItem`` as a dict (``dose``: ``{"value", "unit", "ingredient"?}`` or None).
        prod: The product the dose is of: the item's own RxCUI's, else the record drug it pairs
            with; None when neither is known (a drug only the report names, not in the catalog).
        source: The case file, for errors.
        where: The item, for errors (``"report.items[2] (oxycodone)"``).

    Raises:
        DatasetError: The unit is not UCUM, a count cannot be converted, the dimension differs
            from the product's strength, or an amount on a combination names no ingredient.
    """
    dose = item.get("dose")
    frequency, as_needed = item.get("frequency"), item.get("as_needed")
    if not dose:
        return Dosage(dose=None, amounts=None, frequency=frequency, as_needed=as_needed)
    return Dosage(dose=dict(dose), amounts=_reported_amounts(dose, prod, source, where), frequency=frequency,
                  as_needed=as_needed)


def _refuse(source: str, where: str, problem: str, fix: str) -> DatasetError:
    return DatasetError(source, f"{where}: {problem}; {fix}")


def _reported_amounts(dose: Mapping[str, Any], prod: Product | None, source: str, where: str) -> Amounts | None:
    value, unit, named = float(dose["value"]), str(dose["unit"]), dose.get("ingredient")
    said = f"dose {format_strength(value)} {unit!r}"
    of = f"{prod.display!r}" if prod is not None else "the product"
    form = count_form(unit, UCUM_SYSTEM)
    if form is not None:
        if prod is None or prod.strengths is None:
            raise _refuse(source, where, f"{said} counts {form}s, but {of} has no strength in mg or mg/h to "
                          "multiply", "give the dose as an amount in a UCUM mass unit such as 'mg'")
        if prod.unit_form != form:
            fix = (f"count {prod.unit_form}s ('{{{prod.unit_form}}}') or give the amount in 'mg'" if prod.unit_form
                   else "give the amount in a UCUM mass or mass-rate unit such as 'mg' or 'ug/h'")
            raise _refuse(source, where, f"{said} counts {form}s, but {of} is "
                          f"{'a ' + prod.unit_form if prod.unit_form else 'neither a tablet nor a capsule'}", fix)
        if named is not None:
            raise _refuse(source, where, f"{said} counts whole units and names an ingredient ({named!r})",
                          "drop 'ingredient', or give that ingredient's amount in 'mg'")
        return unit_amounts(value, prod)
    problem = ucum_problem(unit)
    if problem is not None:
        raise _refuse(source, where, f"{said}: {problem[0]}", problem[1])
    amount = dose_amount(value, unit)
    want = None if prod is None else prod.kind
    if amount is None:
        meaning = describe_unit(unit) or "not a mass or a mass rate"
        if want is None:  # the record has no comparable dose either (insulin in units, a solution)
            return None
        raise _refuse(source, where, f"{said} is {meaning}; {of} is dosed as {_KIND_WORD[want]}",
                      f"give the amount in {'mg or ug' if want == 'mg' else 'mg/h or ug/h'}")
    if want is not None and amount[1] != want:
        fix = ("say the rate: 'ug/h' or 'mg/h' (a patch's strength is an amount per hour)" if want == "mg/h"
               else "say the amount per dose in 'mg' or 'ug'")
        given = "a mass" if amount[1] == "mg" else "a mass per time"
        raise _refuse(source, where, f"{said} is {given} ({unit!r}), but {of} is dosed as {_KIND_WORD[want]}", fix)
    reading = {"value": _round(amount[0]), "unit": amount[1]}
    if prod is None:
        return {str(named or "").casefold(): reading}
    if named is not None:
        ingredient = prod.ingredient(str(named))
        if ingredient is None:
            raise _refuse(source, where, f"{said} names ingredient {named!r}, which {of} does not hold",
                          f"name one of {', '.join(prod.ingredients)}")
        return {ingredient: reading}
    if len(prod.ingredients) != 1:
        raise _refuse(source, where, f"{said} on the combination {of} does not say which ingredient it is of",
                      f"add \"ingredient\" (one of {', '.join(prod.ingredients)}), or give a count such as "
                      "'{tablet}'")
    return {prod.ingredients[0]: reading}


def same_amount(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    """True when two UCUM amounts are equal after conversion (mass via mg, mass rate via mg/h).

    Args:
        a: ``{"value": float, "unit": UCUM code}``.
        b: The same shape.

    Returns:
        Equal within a relative 1e-9 after conversion; amounts that cannot be converted are equal
        only when value and unit are identical.
    """
    va, vb = float(a["value"]), float(b["value"])
    ra, rb = dose_amount(va, str(a["unit"])), dose_amount(vb, str(b["unit"]))
    if ra is not None and rb is not None:
        return ra[1] == rb[1] and _close(ra[0], rb[0])
    return str(a["unit"]) == str(b["unit"]) and _close(va, vb)


def _close(x: float, y: float) -> bool:
    return math.isclose(x, y, rel_tol=1e-9, abs_tol=1e-12)


def _per_day(freq: Mapping[str, Any]) -> float:
    return administrations_per_day(float(freq["frequency"]), float(freq["period"]), str(freq["period_unit"]))


def compare(record: Dosage, reported: Dosage) -> str:
    """``""`` when nothing both sides state differs, else why (``"dose 5 mg vs 7.5 mg"``)."""
    problems = []
    mine, said = record.get("amounts") or {}, reported.get("amounts") or {}
    shared = [name for name in mine if name in said]
    for name in shared:
        a, b = mine[name], said[name]
        if a["unit"] != b["unit"] or not _close(float(a["value"]), float(b["value"])):
            what = "dose" if len(mine) == 1 else f"dose of {name}"
            problems.append(f"{what} {_amount(a)} vs {_amount(b)}")
    if record["frequency"] and reported["frequency"] and not math.isclose(
        _per_day(record["frequency"]), _per_day(reported["frequency"]), rel_tol=1e-9
    ):
        problems.append(f"frequency {_timing_text(record['frequency'])} vs {_timing_text(reported['frequency'])}")
    prn, told = record["as_needed"], reported["as_needed"]
    if prn is not None and told is not None and prn != told:
        problems.append(f"{_prn(prn)} vs {_prn(told)}")
    return "; ".join(problems)


def _amount(dose: Mapping[str, Any]) -> str:
    return f"{format_strength(float(dose['value']))} {dose['unit']}"


def _timing_text(freq: Mapping[str, Any]) -> str:
    return f"{freq['frequency']} per {format_strength(float(freq['period']))} {freq['period_unit']}"


def _prn(as_needed: bool) -> str:
    return "as needed" if as_needed else "scheduled"


def describe_dosage(dosage: Dosage | None) -> str:
    """A short text (``"5 mg, 1 per 1 d, scheduled"``); ``""`` when nothing is known."""
    if dosage is None:
        return ""
    parts = []
    if dosage["dose"]:
        parts.append(_amount(dosage["dose"]))
    elif dosage.get("amounts"):
        parts.append(" / ".join(f"{name} {_amount(a)}" for name, a in (dosage["amounts"] or {}).items()))
    if dosage["frequency"]:
        parts.append(_timing_text(dosage["frequency"]))
    if dosage["as_needed"] is not None:
        parts.append(_prn(dosage["as_needed"]))
    return ", ".join(parts)
