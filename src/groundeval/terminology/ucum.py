"""UCUM units for dose quantities: normalising RxNorm units, converting masses to mg.

FHIR R4B ``Dosage.doseAndRate.doseQuantity`` is a ``SimpleQuantity`` whose ``code`` should be a
UCUM code when ``system`` is ``http://unitsofmeasure.org``
(https://hl7.org/fhir/R4B/datatypes.html#Quantity). UCUM codes are case-sensitive
(https://ucum.org/ucum#section-Character-Set-and-Lexical-Rules): milligram is ``mg``, microgram is
``ug`` (``mcg`` is not UCUM), millilitre is ``mL``.
"""

from __future__ import annotations

__all__ = [
    "UCUM_SYSTEM",
    "rxnorm_unit_to_ucum",
    "to_mg",
    "ucum_problem",
]

UCUM_SYSTEM = "http://unitsofmeasure.org"

#: Mass units (UCUM, case-sensitive) and their factor to milligrams.
_MG_FACTOR: dict[str, float] = {"kg": 1e6, "g": 1e3, "mg": 1.0, "ug": 1e-3, "ng": 1e-6}

#: Unit spellings seen in clinical text or model output that are not UCUM, with the UCUM code.
_NOT_UCUM: dict[str, str] = {
    "mcg": "ug",
    "MCG": "ug",
    "µg": "ug",
    "μg": "ug",
    "MG": "mg",
    "Mg": "mg",
    "mgs": "mg",
    "G": "g",
    "gm": "g",
    "gram": "g",
    "grams": "g",
    "milligram": "mg",
    "milligrams": "mg",
    "microgram": "ug",
    "micrograms": "ug",
    "ML": "mL",
    "ml": "mL",
    "cc": "mL",
    "IU": "[iU]",
    "units": "U",
    "unit": "U",
    "UNT": "U",
}

#: Count units ("2 tablets"): UCUM has no tablet unit; an annotation is the UCUM spelling.
_COUNT_WORDS = frozenset(
    {"tab", "tabs", "tablet", "tablets", "cap", "caps", "capsule", "capsules", "puff", "puffs"}
)

#: UCUM codes accepted as dose units without comment.
_KNOWN_UCUM = frozenset(
    {*_MG_FACTOR, "mL", "L", "U", "[iU]", "[IU]", "meq", "mmol", "mg/mL", "ug/mL", "U/mL", "1"}
)

#: RxNorm strength units (as in RxNorm display names) to UCUM.
_RXNORM_TO_UCUM: dict[str, str] = {
    "MG": "mg",
    "MCG": "ug",
    "G": "g",
    "ML": "mL",
    "UNT": "U",
    "MEQ": "meq",
    "MG/ML": "mg/mL",
    "MCG/ML": "ug/mL",
    "UNT/ML": "U/mL",
    "MEQ/ML": "meq/mL",
    "MG/HR": "mg/h",
    "MCG/HR": "ug/h",
    "MG/MG": "mg/mg",
    "MG/ACTUAT": "mg/{actuat}",
    "MCG/ACTUAT": "ug/{actuat}",
    "MG/24HR": "mg/(24.h)",
}


def to_mg(value: float, ucum_unit: str | None) -> float | None:
    """Convert a mass to milligrams.

    Args:
        value: The amount.
        ucum_unit: A UCUM mass code, case-sensitive: ``kg``, ``g``, ``mg``, ``ug`` or ``ng``.

    Returns:
        The amount in mg, or ``None`` when the unit is not a UCUM mass unit (``mcg``, ``MG``,
        ``tablet``, ``mL``, ``None``): the caller decides what an unconvertible dose means.
    """
    factor = _MG_FACTOR.get(ucum_unit or "")
    return None if factor is None else value * factor


def ucum_problem(unit: str | None) -> tuple[str, str] | None:
    """Say what is wrong with a dose unit, if anything.

    Args:
        unit: ``doseQuantity.code`` (or ``unit`` when there is no code).

    Returns:
        ``None`` for a UCUM code (including ``{annotation}`` forms such as ``{tablet}``),
        otherwise ``(problem, fix)`` sentences, e.g. for ``"mcg"``:
        ``("'mcg' is not a UCUM code", "use 'ug' (UCUM for microgram)")``.
    """
    if unit is None or not unit.strip():
        return ("the dose has no unit", "give a UCUM unit such as 'mg'")
    if unit in _KNOWN_UCUM or (unit.startswith("{") and unit.endswith("}")):
        return None
    if unit in _NOT_UCUM:
        return (f"'{unit}' is not a UCUM code", f"use '{_NOT_UCUM[unit]}' (UCUM is case-sensitive)")
    if unit.lower() in _COUNT_WORDS:
        return (
            f"'{unit}' is not a UCUM code",
            "give the dose as a mass (tablets x strength, e.g. 2 x 200 mg = 400 'mg') "
            "or use a UCUM annotation such as '{tablet}'",
        )
    return (f"'{unit}' is not a UCUM code known to groundeval", "use a UCUM code such as 'mg'")


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


def administrations_per_day(frequency: float, period: float, period_unit: str) -> float:
    """Return administrations per day for ``frequency`` per ``period`` ``period_unit``.

    Example: 1 per 6 h gives 4.0; 1 per 2 d gives 0.5.

    Raises:
        KeyError: ``period_unit`` is not a UnitsOfTime code.
    """
    return frequency / (period * UNITS_OF_TIME_DAYS[period_unit])
