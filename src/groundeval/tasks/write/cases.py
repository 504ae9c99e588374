"""The case-file schema of the write task (pydantic: the data crosses a file boundary).

One JSON file per case, named ``<id>.json``::

    {
      "id": "tylenol-brand-lookup",
      "summary": "What the case tests, one sentence.",
      "covers": ["brand-name", "as-needed"],
      "patient": {"fixture": "Liz_Conn_....json", "reference": "urn:uuid:<Patient.id>"},
      "note": "Clinical note excerpt the agent reads.",
      "expected": {
        "medication": {"rxcui": "209387", "display": "Acetaminophen 325 MG Oral Tablet [Tylenol]"},
        "status": "active",
        "dosage": {
          "dose": {"value": 650, "unit": "mg"},
          "frequency": 1, "period": 6, "period_unit": "h",
          "as_needed": true,
          "daily_total": {"value": 2600, "unit": "mg"}
        }
      }
    }

``medication`` is ``{"rxcui": null, "text": "<drug name>"}`` for a drug absent from the catalog
(the agent must not invent a code). A documented range uses
``"dose_range": {"low": {...}, "high": {...}}`` instead of ``dose``, and "two to four times a
day" adds ``"frequency_max": 4`` to ``"frequency": 2``, and "every 6 to 8 hours" adds
``"period_max": 8`` to ``"period": 6``; ``daily_total`` is the most the schedule allows within any
24 hours (see ``DosageSpec``). ``dosage`` is ``null`` when the note documents no dose
(the answer must then carry no dosage). ``status`` uses the FHIR R4B MedicationStatement status
codes (https://hl7.org/fhir/R4B/valueset-medication-statement-status.html); ``period_unit`` the
UnitsOfTime codes (https://hl7.org/fhir/R4B/valueset-units-of-time.html); dose units are UCUM
mass codes, case-sensitive (``mg``, ``ug``, ``g``; another code is parsed by the UCUM grammar and
must be a mass, see ``QuantitySpec``).

Catalog- and patient-dependent checks (the RxCUI exists, the reference resolves) are made by
``WriteTask.load_case``; this module checks what a single file can show on its own, including
that the daily total equals dose x administrations per day.
"""

from __future__ import annotations

import math
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from groundeval.terminology.ucum import administrations_per_day, most_administrations_in_24h

__all__ = [
    "DosageSpec",
    "ExpectedSpec",
    "MedicationSpec",
    "PatientSpec",
    "QuantitySpec",
    "RangeSpec",
    "WriteCase",
    "describe_validation_error",
]

Status = Literal[
    "active", "completed", "entered-in-error", "intended", "stopped", "on-hold", "unknown",
    "not-taken",
]
PeriodUnit = Literal["s", "min", "h", "d", "wk", "mo", "a"]
_KNOWN_MASS = {"mg": 1.0, "ug": 1e-3, "g": 1e3}
"""The UCUM mass codes cases use, with their mg factors (legal UCUM: no grammar run needed for them)."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)


class QuantitySpec(_Strict):
    """An amount in a UCUM mass unit (``mg``, ``ug``, ``g``; any UCUM mass code, case-sensitive).

    ``mg``, ``ug`` and ``g`` are read directly; any other code is parsed by the UCUM grammar
    (``terminology.ucum``, so collection pays for ucumvert only when a case uses one), and must be a
    mass: ``mcg`` is refused with "use 'ug'", ``MG`` (a megagauss in UCUM) with "use 'mg'", ``mg/h``
    (a mass per time) as not a mass.
    """

    value: float = Field(gt=0)
    unit: str = Field(min_length=1)

    @field_validator("unit")
    @classmethod
    def _ucum_mass(cls, unit: str) -> str:
        if unit in _KNOWN_MASS:
            return unit
        from groundeval.terminology.ucum import describe_unit, to_mg, ucum_problem

        problem = ucum_problem(unit)
        if problem is not None:
            raise ValueError(f"{problem[0]}; {problem[1]}")
        if to_mg(1.0, unit) is None:
            raise ValueError(f"'{unit}' is {describe_unit(unit) or 'not a mass'}, not a mass; give the dose in 'mg', "
                             "'ug' or 'g'")
        return unit

    @property
    def mg(self) -> float:
        """The amount in milligrams."""
        if self.unit in _KNOWN_MASS:
            return self.value * _KNOWN_MASS[self.unit]
        from groundeval.terminology.ucum import to_mg

        mg = to_mg(self.value, self.unit)
        assert mg is not None  # checked by the validator
        return mg


class RangeSpec(_Strict):
    """A dose range per administration ("1-2 tablets" of 50 mg: low 50 mg, high 100 mg)."""

    low: QuantitySpec
    high: QuantitySpec

    @model_validator(mode="after")
    def _ordered(self) -> RangeSpec:
        if self.low.mg >= self.high.mg:
            raise ValueError("dose_range.low must be below dose_range.high")
        return self


class DosageSpec(_Strict):
    """The documented dosage: dose per administration, timing, as-needed flag, daily total.

    Exactly one of ``dose`` and ``dose_range`` (FHIR ``doseQuantity`` / ``doseRange``).
    ``frequency``/``period``/``period_unit`` are given together or not at all (an as-needed dose
    with no stated interval); ``frequency_max`` ("two to four times a day": frequency 2,
    frequency_max 4; FHIR ``Timing.repeat.frequencyMax``) needs them and exceeds ``frequency``;
    ``period_max`` ("every 6 to 8 hours": period 6, period_max 8; ``Timing.repeat.periodMax``)
    needs them and exceeds ``period``. ``daily_total`` is given exactly when the timing is: the
    most the schedule allows within any 24 hours, the top of the dose range times the most whole
    administrations that fit into 24 hours at the shortest period and the highest frequency
    (``terminology.ucum.most_administrations_in_24h``: every other day is one dose, every 6 hours
    four). It is the same figure the ceiling check bounds.
    """

    dose: QuantitySpec | None = None
    dose_range: RangeSpec | None = None
    frequency: int | None = Field(default=None, gt=0)
    frequency_max: int | None = Field(default=None, gt=0)
    period: float | None = Field(default=None, gt=0)
    period_max: float | None = Field(default=None, gt=0)
    period_unit: PeriodUnit | None = None
    as_needed: bool
    daily_total: QuantitySpec | None = None

    @property
    def most_mg(self) -> float:
        """The most per administration, mg (the dose, or the top of the range)."""
        if self.dose_range is not None:
            return self.dose_range.high.mg
        assert self.dose is not None
        return self.dose.mg

    def most_per_day(self) -> float | None:
        """The most administrations per day (highest frequency, shortest period), or None without a schedule."""
        if self.frequency is None or self.period is None or self.period_unit is None:
            return None
        return administrations_per_day(self.frequency_max or self.frequency, self.period, self.period_unit)

    def most_in_24h(self) -> float | None:
        """The most mg within any 24 hours (``most_mg`` x whole administrations), or None without a schedule."""
        per_day = self.most_per_day()
        return None if per_day is None else self.most_mg * most_administrations_in_24h(per_day)

    @model_validator(mode="after")
    def _consistent(self) -> DosageSpec:
        if (self.dose is None) == (self.dose_range is None):
            raise ValueError("give exactly one of dose and dose_range")
        timing = (self.frequency, self.period, self.period_unit)
        if any(v is None for v in timing) and any(v is not None for v in timing):
            raise ValueError("give frequency, period and period_unit together, or none of them")
        if self.frequency_max is not None and (self.frequency is None or self.frequency_max <= self.frequency):
            raise ValueError("frequency_max needs frequency, period and period_unit, and must exceed frequency")
        if self.period_max is not None and (self.period is None or self.period_max <= self.period):
            raise ValueError("period_max needs frequency, period and period_unit, and must exceed period")
        implied = self.most_in_24h()
        if implied is None:
            if self.daily_total is not None:
                raise ValueError("daily_total needs frequency, period and period_unit")
            return self
        if self.daily_total is None:
            raise ValueError("daily_total is required when the timing is given")
        if not math.isclose(implied, self.daily_total.mg, rel_tol=1e-6):
            per_day = self.most_per_day()
            assert per_day is not None
            raise ValueError(
                f"daily_total {self.daily_total.value:g} {self.daily_total.unit} does not equal the most per "
                f"administration x the most administrations within 24 hours = {self.most_mg:g} mg x "
                f"{most_administrations_in_24h(per_day)} = {implied:g} mg"
            )
        return self


class MedicationSpec(_Strict):
    """The expected drug: an RxCUI and its catalog display, or the name of an uncatalogued drug."""

    rxcui: str | None = Field(pattern=r"^[0-9]{1,10}$")
    display: str | None = None
    text: str | None = None

    @model_validator(mode="after")
    def _one_kind(self) -> MedicationSpec:
        if self.rxcui is not None and (not self.display or self.text is not None):
            raise ValueError("a coded medication needs 'display' and no 'text'")
        if self.rxcui is None and (not self.text or self.display is not None):
            raise ValueError("a drug not in the catalog (rxcui null) needs 'text' and no 'display'")
        return self


class PatientSpec(_Strict):
    """The patient: an extraction fixture file and the reference the agent is given."""

    fixture: str = Field(pattern=r"^[^/\\]+\.json$")
    reference: str = Field(min_length=1)


class ExpectedSpec(_Strict):
    """What a correct MedicationStatement encodes."""

    medication: MedicationSpec
    status: Status
    dosage: DosageSpec | None


class WriteCase(_Strict):
    """One write-task case file."""

    id: str = Field(pattern=r"^[a-z0-9]+(?:-[a-z0-9]+)*$", max_length=80)
    summary: str = Field(min_length=1)
    covers: list[str] = Field(min_length=1)
    patient: PatientSpec
    note: str = Field(min_length=1)
    expected: ExpectedSpec


def describe_validation_error(exc: ValidationError) -> str:
    """Render a pydantic error as ``field.path: message`` parts joined by ``; `` (the shared renderer)."""
    from groundeval.tasks.common import describe_validation_error as describe

    return describe(exc)
