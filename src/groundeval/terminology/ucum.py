"""Units of dose quantities: UCUM validity by its grammar, conversion to mg, tablet counts.

FHIR R4B ``Dosage.doseAndRate.doseQuantity`` is a ``SimpleQuantity``; when ``system`` is
``http://unitsofmeasure.org`` its ``code`` is a UCUM expression
(https://hl7.org/fhir/R4B/datatypes.html#Quantity). UCUM codes are case-sensitive
(https://ucum.org/ucum#section-Character-Set-and-Lexical-Rules): milligram is ``mg``; ``MG`` is
legal UCUM for a megagauss (``M`` mega, ``G`` gauss) and ``Mg`` for a megagram; microgram is ``ug``
(``mcg`` is not UCUM). What a legal code means is read from the registry, never assumed, so a
message names what the grammar actually read (``describe_unit``). Validity is decided by the UCUM grammar
(``ucumvert``, a lark parser generated from the official ``ucum-essence.xml``), so any legal
expression (``mg/h``, ``ug/h``, ``mg/kg``, ``mg/{actuat}``) is accepted, never an allow-list.
Conversion to mg goes through pint's UCUM registry (``ucumvert.PintUcumRegistry``), except for
the five metric mass codes, whose factors are the UCUM prefix definitions; ``dose_amount`` reads
an amount per administration as a mass (mg) or a mass rate (mg/h, a patch's "25 ug/h").

A dose may also be a count of tablets or capsules: a UCUM annotation (``{tablet}``; UCUM
annotations carry no unit meaning, https://ucum.org/ucum#section-Curly-Braces) or a code of the
HL7 orderable drug form system (``TAB``, ``CAP``:
https://terminology.hl7.org/CodeSystem-v3-orderableDrugForm.html). A code under a non-UCUM
system is never read as UCUM. Converting a count to mg needs the product's strength
(``count_form`` here, the strength in ``terminology.rxnorm.CatalogEntry.unit_strength_mg``).

``convert`` turns any UCUM amount into another unit of the same dimension (and a substance
concentration into a mass concentration given the molar mass), for laboratory results.

``ucumvert`` (which imports pint, about 0.6 s) is imported on first use, never at import time.
"""

from __future__ import annotations

import math
import threading
from functools import lru_cache
from typing import Any

__all__ = [
    "DOSE_FORM_CODES",
    "ORDERABLE_DRUG_FORM_SYSTEM",
    "UCUM_SYSTEM",
    "UNITS_OF_TIME_DAYS",
    "UNITS_OF_TIME_DISPLAYS",
    "administrations_per_day",
    "convert",
    "count_form",
    "describe_unit",
    "dose_amount",
    "most_administrations_in_24h",
    "rxnorm_unit_to_ucum",
    "to_mg",
    "ucum_grammar_error",
    "ucum_problem",
    "unit_of_time",
]

UCUM_SYSTEM = "http://unitsofmeasure.org"
ORDERABLE_DRUG_FORM_SYSTEM = "http://terminology.hl7.org/CodeSystem/v3-orderableDrugForm"

#: Orderable drug form codes that name one tablet or one capsule, with the form they count
#: (https://terminology.hl7.org/ValueSet-v3-TabletDrugForm.html and v3-CapsuleDrugForm).
DOSE_FORM_CODES: dict[str, str] = {
    "TAB": "tablet", "ORTAB": "tablet", "CHEWTAB": "tablet", "FILMTAB": "tablet",
    "ERTAB": "tablet", "DRTAB": "tablet", "SLTAB": "tablet",
    "CAP": "capsule", "ORCAP": "capsule", "ERCAP": "capsule", "ENTCAP": "capsule",
}

#: UCUM annotations read as a count of one dose form (case-insensitive inside the braces).
_COUNT_ANNOTATIONS: dict[str, str] = {
    "tablet": "tablet", "tablets": "tablet", "tab": "tablet", "tabs": "tablet", "tbl": "tablet",
    "capsule": "capsule", "capsules": "capsule", "cap": "capsule", "caps": "capsule",
}

#: Exact mg factors of the metric mass codes (UCUM prefixes k, m, u, n on the gram).
_MG_FACTOR: dict[str, float] = {"kg": 1e6, "g": 1e3, "mg": 1.0, "ug": 1e-3, "ng": 1e-6}

#: Spellings seen in clinical text or model output that are not what the writer meant, with the
#: UCUM code. Some are legal UCUM with another meaning (``MG`` megagauss, ``Mg`` megagram, ``ML``
#: megalitre, ``G`` gauss): the grammar accepts them, so they are checked first, and the message
#: says what the registry reads them as (``describe_unit``).
_NOT_UCUM: dict[str, str] = {
    "mcg": "ug", "MCG": "ug", "µg": "ug", "μg": "ug", "MG": "mg", "Mg": "mg", "mgs": "mg",
    "G": "g", "gm": "g", "gram": "g", "grams": "g", "milligram": "mg", "milligrams": "mg",
    "microgram": "ug", "micrograms": "ug", "ML": "mL", "cc": "mL", "IU": "[iU]", "units": "U",
    "unit": "U", "UNT": "U",
}

#: Names of the dimensions a dose unit may have (pint's dimensionality, as text), for messages.
_DIMENSIONS: dict[str, str] = {
    "[mass]": "a mass",
    "[mass] / [time]": "a mass per time (a rate)",
    "[length] ** 3": "a volume",
    "[mass] / [length] ** 3": "a mass per volume (a concentration)",
    "[time]": "a time",
    "[substance]": "an amount of substance",
    "dimensionless": "a pure number or ratio (dimensionless)",
    "[mass] ** 0.5 / [length] ** 0.5 / [time]": "a magnetic flux density",
}

#: Count words ("2 tablets"): UCUM has no tablet unit; an annotation is the UCUM spelling.
_COUNT_WORDS = frozenset(
    {"tab", "tabs", "tablet", "tablets", "cap", "caps", "capsule", "capsules", "puff", "puffs"}
)

#: RxNorm strength units (as in RxNorm display names) to UCUM.
_RXNORM_TO_UCUM: dict[str, str] = {
    "MG": "mg", "MCG": "ug", "G": "g", "ML": "mL", "UNT": "U", "MEQ": "meq", "MG/ML": "mg/mL",
    "MCG/ML": "ug/mL", "UNT/ML": "U/mL", "MEQ/ML": "meq/mL", "MG/HR": "mg/h", "MCG/HR": "ug/h",
    "MG/MG": "mg/mg", "MG/ACTUAT": "mg/{actuat}", "MCG/ACTUAT": "ug/{actuat}", "MG/24HR": "mg/(24.h)",
}

_LOCK = threading.Lock()  # builds the parser and the registry once
_USE = threading.Lock()  # lark and pint objects are shared: one call at a time (calls are cached)
_STATE: dict[str, Any] = {}


def _parser() -> Any:
    """The UCUM lark parser (built once, about 0.1 s after a 0.6 s import)."""
    with _LOCK:
        if "parser" not in _STATE:
            from ucumvert import get_ucum_parser  # type: ignore[import-untyped]

            _STATE["parser"] = get_ucum_parser()
        return _STATE["parser"]


def _registry() -> Any:
    """Pint's UnitRegistry with the UCUM definitions (built once, about 1 s)."""
    with _LOCK:
        if "registry" not in _STATE:
            from ucumvert import PintUcumRegistry

            _STATE["registry"] = PintUcumRegistry()
        return _STATE["registry"]


@lru_cache(maxsize=512)
def ucum_grammar_error(code: str) -> str | None:
    """Parse ``code`` with the UCUM grammar.

    Returns:
        ``None`` when ``code`` is a legal UCUM expression, else the parser's one-line reason
        (``"'mcg' is not a valid UCUM unit: unexpected character 'c' at column 2."``).
    """
    from ucumvert import InvalidUcumError, parse_ucum

    parser = _parser()
    try:
        with _USE:
            parse_ucum(code, parser)
    except InvalidUcumError as exc:
        return str(exc).splitlines()[0]
    return None


def describe_unit(code: str) -> str | None:
    """What a legal UCUM code means, as the registry reads it, for messages.

    Examples: ``"MG"`` gives ``"megagauss (a magnetic flux density)"``, ``"mg/(24.h)"`` gives
    ``"milligram / hour (a mass per time (a rate))"``, ``"mL"`` gives ``"milliliter (a volume)"``.

    Returns:
        The unit's name and dimension, or None when the code is not legal UCUM or the registry
        cannot map it (a bare annotation such as ``{tablet}`` is a count, described by the caller).
    """
    if ucum_grammar_error(code) is not None:
        return None
    return _meaning(code)


@lru_cache(maxsize=256)
def _meaning(code: str) -> str | None:
    registry = _registry()
    try:
        with _USE:
            quantity = registry.from_ucum(code)
            name, dims = str(quantity.units), str(quantity.dimensionality)
    except Exception:  # ucumvert/pint cannot map every legal code
        return None
    return f"{name} ({_DIMENSIONS.get(dims, f'dimension {dims}')})"


def ucum_problem(unit: str | None) -> tuple[str, str] | None:
    """Say what is wrong with a UCUM dose unit, if anything.

    Known mistakes come first (``mcg``, and legal codes that surely mean something else, such as
    ``MG``, which the registry reads as a megagauss), then count words (``tablets``), then the UCUM
    grammar.

    Args:
        unit: ``doseQuantity.code`` under the UCUM system (or ``unit`` when there is no code).

    Returns:
        ``None`` for a legal UCUM code (``mg``, ``mg/h``, ``{tablet}``), otherwise
        ``(problem, fix)`` sentences, e.g. for ``"mcg"``:
        ``("'mcg' is not a UCUM code", "use 'ug' (UCUM is case-sensitive)")``, for ``"MG"``:
        ``("'MG' is legal UCUM, but for megagauss (a magnetic flux density): surely not what was
        meant", "use 'mg' (UCUM is case-sensitive)")``.
    """
    if unit is None or not unit.strip():
        return ("the dose has no unit", "give a UCUM unit such as 'mg'")
    if unit in _NOT_UCUM:
        meaning = describe_unit(unit)
        problem = (f"'{unit}' is legal UCUM, but for {meaning}: surely not what was meant" if meaning
                   else f"'{unit}' is not a UCUM code")
        return (problem, f"use '{_NOT_UCUM[unit]}' (UCUM is case-sensitive)")
    if unit.lower() in _COUNT_WORDS:
        return (
            f"'{unit}' is not a UCUM code",
            "give the dose as a mass (tablets x strength, e.g. 2 x 200 mg = 400 'mg') "
            "or use a UCUM annotation such as '{tablet}'",
        )
    error = ucum_grammar_error(unit)
    if error is not None:
        return (error, "use a UCUM code such as 'mg', 'ug', 'mL' or '{tablet}'")
    return None


def count_form(code: str | None, system: str | None) -> str | None:
    """The dose form a quantity counts, if it is a count of tablets or capsules.

    Args:
        code: ``Quantity.code``.
        system: ``Quantity.system``: UCUM (annotation ``{tablet}``) or the orderable drug form
            system (``TAB``, ``CAP``...).

    Returns:
        ``"tablet"``, ``"capsule"`` or ``None``.
    """
    if not isinstance(code, str):
        return None
    if system == ORDERABLE_DRUG_FORM_SYSTEM:
        return DOSE_FORM_CODES.get(code)
    if system == UCUM_SYSTEM and code.startswith("{") and code.endswith("}"):
        return _COUNT_ANNOTATIONS.get(code[1:-1].strip().lower())
    return None


@lru_cache(maxsize=512)
def _mg_factor(code: str) -> float | None:
    if code in _MG_FACTOR:
        return _MG_FACTOR[code]
    if ucum_problem(code) is not None or (code.startswith("{") and code.endswith("}")):
        return None
    registry = _registry()
    try:
        with _USE:
            quantity = registry.from_ucum(code)
            if not quantity.check("[mass]"):
                return None
            return float(quantity.to("milligram").magnitude)
    except Exception:  # ucumvert/pint cannot map every legal code; unmapped means unconvertible
        return None


def to_mg(value: float, ucum_unit: str | None) -> float | None:
    """Convert an amount in a UCUM mass unit to milligrams.

    Args:
        value: The amount.
        ucum_unit: A UCUM code, case-sensitive (``mg``, ``ug``, ``g``, ``[gr]``...).

    Returns:
        The amount in mg, or ``None`` when the code is not legal UCUM or not a mass (``mcg``,
        ``MG``, ``mL``, ``mg/h``, ``mg/kg``, ``{tablet}``, ``None``): the caller decides what an
        unconvertible dose means. UCUM annotations are unity, so ``mg/{actuat}`` is mg.
    """
    if not ucum_unit:
        return None
    factor = _mg_factor(ucum_unit)
    return None if factor is None else value * factor


@lru_cache(maxsize=512)
def _linear(source: str, target: str, molar_mass: float | None) -> tuple[float, float] | None:
    """``(scale, offset)`` with ``target = scale * source + offset``, or None when not convertible."""
    if ucum_grammar_error(source) is not None or ucum_grammar_error(target) is not None:
        return None
    registry = _registry()

    def at(value: float) -> float | None:
        quantity = registry.Quantity(value, registry.from_ucum(source).units)
        goal = registry.from_ucum(target).units
        if quantity.dimensionality == goal.dimensionality:
            return float(quantity.to(goal).magnitude)
        if molar_mass is None:
            return None
        substance, mass = registry.parse_units("mol/L"), registry.parse_units("g/L")
        if quantity.dimensionality == substance.dimensionality and goal.dimensionality == mass.dimensionality:
            grams = registry.Quantity(quantity.to(substance).magnitude * molar_mass, mass)
            return float(grams.to(goal).magnitude)
        if quantity.dimensionality == mass.dimensionality and goal.dimensionality == substance.dimensionality:
            moles = registry.Quantity(quantity.to(mass).magnitude / molar_mass, substance)
            return float(moles.to(goal).magnitude)
        return None

    try:
        with _USE:
            zero, one = at(0.0), at(1.0)
    except Exception:  # ucumvert/pint cannot map every legal code; unmapped means unconvertible
        return None
    return None if zero is None or one is None else (one - zero, zero)


def convert(value: float, source: str, target: str, *, molar_mass_g_per_mol: float | None = None) -> float | None:
    """Convert an amount from one UCUM unit to another (``mmol/L`` -> ``mg/dL``, ``mL/min`` -> ``mL/min/{1.73_m2}``).

    Units of the same dimension convert by UCUM's definitions (through ``ucumvert``'s pint registry;
    annotations such as ``{1.73_m2}`` are unity, https://ucum.org/ucum#section-Curly-Braces). An
    amount-of-substance concentration and a mass concentration (``mmol/L`` and ``mg/dL``) convert
    only through the substance's molar mass, which UCUM cannot know: pass it.

    Args:
        value: The amount in ``source``.
        source: A UCUM code, case-sensitive.
        target: A UCUM code, case-sensitive.
        molar_mass_g_per_mol: The substance's molar mass in g/mol (glucose 180.156), for
            substance <-> mass concentrations; None otherwise.

    Returns:
        The amount in ``target``, or None when either code is not legal UCUM or the dimensions
        differ (and no molar mass bridges them). A conversion UCUM allows can still be wrong for an
        analyte (UCUM turns 48 mmol/mol into 4.8 %, but IFCC HbA1c 48 mmol/mol is NGSP 6.5 %, by a
        master equation): callers decide which units they accept.
    """
    factors = _linear(source, target, molar_mass_g_per_mol)
    return None if factors is None else factors[0] * value + factors[1]


def _rate_factor(code: str) -> float | None:
    """mg/h per unit of a UCUM mass rate (``mg/h``, ``ug/h``, ``mg/(24.h)``), else None."""
    if ucum_problem(code) is not None:
        return None
    registry = _registry()
    try:
        with _USE:
            quantity = registry.from_ucum(code)
            if not quantity.check("[mass] / [time]"):
                return None
            return float(quantity.to("milligram / hour").magnitude)
    except Exception:  # unmapped means unconvertible
        return None


def dose_amount(value: float, ucum_unit: str | None) -> tuple[float, str] | None:
    """Read an amount per administration as a mass or a mass rate.

    Args:
        value: The amount.
        ucum_unit: A UCUM code, case-sensitive (``mg``, ``ug``, ``g``, ``ug/h``, ``mg/(24.h)``).

    Returns:
        ``(value in mg, "mg")`` for a mass, ``(value in mg/h, "mg/h")`` for a mass per time (a
        transdermal patch's "25 ug/h" is 0.025 mg/h; "0.12 mg/(24.h)" is 0.005 mg/h), or None for
        anything else (not UCUM, a volume, a count, a concentration).
    """
    mg = to_mg(value, ucum_unit)
    if mg is not None:
        return mg, "mg"
    if not ucum_unit:
        return None
    factor = _rate_factor(ucum_unit)
    return None if factor is None else (value * factor, "mg/h")


def rxnorm_unit_to_ucum(unit: str | None) -> str | None:
    """Map an RxNorm strength unit (``MG``, ``MCG``, ``MG/ML``, ``UNT/ML``) to UCUM.

    Returns:
        The UCUM code (``mg``, ``ug``, ``mg/mL``, ``U/mL``), or ``None`` when unknown.
    """
    if unit is None:
        return None
    return _RXNORM_TO_UCUM.get(unit.upper())


UNITS_OF_TIME_DAYS: dict[str, float] = {
    "s": 1 / 86400, "min": 1 / 1440, "h": 1 / 24, "d": 1.0, "wk": 7.0, "mo": 30.4375, "a": 365.25,
}
"""UnitsOfTime code (https://hl7.org/fhir/R4B/valueset-units-of-time.html) -> length in days, as
UCUM defines them: ``mo`` is the mean Julian month (30.4375 d), ``a`` the Julian year (365.25 d)."""


UNITS_OF_TIME_DISPLAYS: dict[str, str] = {
    "second": "s", "minute": "min", "hour": "h", "day": "d", "week": "wk", "month": "mo", "year": "a",
}
"""UnitsOfTime display -> code (https://hl7.org/fhir/R4B/valueset-units-of-time.html: "s" is
"second", ..., "a" is "year")."""


def unit_of_time(value: object) -> str | None:
    """The UnitsOfTime code ``value`` is, or names by its display in any case, singular or plural.

    ``"d"`` and ``"day"``, ``"Days"`` give ``"d"``; ``"daily"``, ``"D"`` and anything else give
    None. A display where the code belongs is an error of the required binding (the validator
    flags it); what it means is still plain, so a dose can be read through it.
    """
    if not isinstance(value, str):
        return None
    if value in UNITS_OF_TIME_DAYS:
        return value
    word = value.strip().lower()
    return UNITS_OF_TIME_DISPLAYS.get(word.removesuffix("s") if word.endswith("s") and word != "s" else word)


def administrations_per_day(frequency: float, period: float, period_unit: str) -> float:
    """Return administrations per day for ``frequency`` per ``period`` ``period_unit``.

    Example: 1 per 6 h gives 4.0; 1 per 2 d gives 0.5.

    Raises:
        KeyError: ``period_unit`` is not a UnitsOfTime code.
    """
    return frequency / (period * UNITS_OF_TIME_DAYS[period_unit])


def most_administrations_in_24h(per_day: float) -> int:
    """The most whole administrations a schedule allows within any 24 hours.

    A schedule of ``per_day`` administrations a day, evenly spaced (every 24/``per_day`` hours),
    fits ``ceil(per_day)`` of them into some 24-hour window, and never fewer than one: a dose every
    other day (0.5 a day) is still taken whole on the day it is taken, and every 16 hours (1.5 a
    day) puts two doses into some 24 hours. This is the count a maximum daily dose ("not more than
    X mg in 24 hours", FDA labels) bounds, and the write task's daily total.

    Args:
        per_day: Administrations per day (``administrations_per_day``), > 0.

    Returns:
        ``max(1, ceil(per_day))``, with a 1e-9 tolerance so 3.0000000000000004 counts as 3.
    """
    return max(1, math.ceil(per_day - 1e-9))
