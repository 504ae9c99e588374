"""The case-file schema of the reconcile task (pydantic: the data crosses a file boundary).

One JSON file per case, named ``<id>.json`` (written by ``scripts/make_reconcile.py``)::

    {
      "id": "dose-unit-equivalent--Trey_Berge_99153850",
      "summary": "What the case tests, one sentence.",
      "fixture": {"file": "Trey_Berge_99153850-....json", "sha256": "<hex SHA-256 of that file>"},
      "report": {
        "text": "I take warfarin 5 mg once a day, digoxin 125 micrograms ...",
        "items": [
          {"name": "warfarin", "rxnorm_code": "855332",
           "dose": {"value": 5, "unit": "mg"},
           "frequency": {"frequency": 1, "period": 1, "period_unit": "d"},
           "as_needed": false}
        ]
      },
      "transformations": [{"kind": "unit_equivalent", "rxnorm_code": "197604", "note": "0.125 mg as 125 ug"}],
      "generator": "scripts/make_reconcile.py"
    }

The patient's Bundle is *referenced*, not copied: ``fixture.file`` names an extraction fixture
(looked up next to the case, in a sibling ``extraction/`` directory, then in the packaged
extraction fixtures) and ``fixture.sha256`` pins its bytes, so the extraction fixture stays the one
source of truth and a changed Bundle is a load error, never a silently different truth. A case may
instead carry the Bundle inline as ``"bundle": {...}`` (for hand-made or test cases).

``report.items`` is the structured content of what the patient says (the agent sees only
``report.text``): ``rxnorm_code`` is the product the patient means (any RxCUI of it: the record's,
a brand's, another strength's, or for a drug the record lacks the site catalog's; the truth pairs
it with the record by clinical concept, ``tasks.reconcile.truth``), ``dose`` an amount per
administration in UCUM, case-sensitive (``mg``, ``ug``, ``g``; a rate such as ``ug/h`` for a
patch; a count such as ``{tablet}``; on a combination product an amount adds the ``ingredient``
it is of), ``frequency`` the ``Timing.repeat`` triple (``period_unit`` a UnitsOfTime code,
https://hl7.org/fhir/R4B/valueset-units-of-time.html), ``as_needed`` true/false; null where the
patient does not say. The units are checked when the truth is derived (``tasks.reconcile.doses``:
``mcg`` or ``MG``, a mass for a patch's rate, an amount on a combination without its ingredient
are an ``invalid_case`` naming the file, the item, the unit and the fix). ``transformations`` is
provenance only: the discrepancy truth is computed from the record and ``report.items``
(``tasks.reconcile.truth``), never read from it.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

__all__ = [
    "TRANSFORMATIONS",
    "DoseSpec",
    "FixtureRef",
    "FrequencySpec",
    "ReconcileCase",
    "ReportItem",
    "ReportSpec",
    "Transformation",
]

TRANSFORMATIONS = (
    "exact", "omission", "commission", "dose_change", "frequency_change", "unit_equivalent",
    "stopped_reported", "brand_name", "as_needed_flip", "brand_rxcui", "other_strength", "combination_dose",
    "dose_as_written", "second_item", "excluded_reported", "bundle_edit",
)
"""Names of the transformations the generator applies (``exact``: the report is the record)."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class DoseSpec(_Strict):
    """An amount per administration in a UCUM unit (``mg``, ``ug``, ``g``, ``ug/h``, ``{tablet}``).

    ``ingredient`` names the ingredient an amount is of, on a combination product (``"oxycodone"``
    for 10 mg of oxycodone in an oxycodone/acetaminophen tablet); a count of units has none.
    """

    value: float = Field(gt=0)
    unit: str = Field(min_length=1)
    ingredient: str | None = Field(default=None, min_length=1)


class FrequencySpec(_Strict):
    """``frequency`` administrations per ``period`` ``period_unit`` (FHIR ``Timing.repeat``)."""

    frequency: int = Field(gt=0)
    period: float = Field(gt=0)
    period_unit: Literal["s", "min", "h", "d", "wk", "mo", "a"]


class ReportItem(_Strict):
    """One medication the patient reports."""

    name: str = Field(min_length=1)
    rxnorm_code: str = Field(pattern=r"^\d+$")
    dose: DoseSpec | None = None
    frequency: FrequencySpec | None = None
    as_needed: bool | None = None


class ReportSpec(_Strict):
    """The patient report: the text the agent reads and its structured content."""

    text: str
    items: list[ReportItem]

    @model_validator(mode="after")
    def _distinct(self) -> ReportSpec:
        codes = [i.rxnorm_code for i in self.items]
        if len(codes) != len(set(codes)):
            raise ValueError("report.items name the same rxnorm_code twice; one item per medication")
        return self


class Transformation(_Strict):
    """One named change from the record to the report (provenance only)."""

    kind: Literal[
        "exact", "omission", "commission", "dose_change", "frequency_change", "unit_equivalent",
        "stopped_reported", "brand_name", "as_needed_flip", "brand_rxcui", "other_strength", "combination_dose",
        "dose_as_written", "second_item", "excluded_reported", "bundle_edit",
    ]
    rxnorm_code: str | None = None
    note: str = ""


class FixtureRef(_Strict):
    """The extraction fixture holding the patient's Bundle, pinned by SHA-256."""

    file: str = Field(min_length=1)
    sha256: str = Field(pattern=r"^[0-9a-f]{64}$")


class ReconcileCase(_Strict):
    """One reconcile case file (see the module docstring)."""

    id: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.\-]*$")
    summary: str = ""
    fixture: FixtureRef | None = None
    bundle: dict[str, Any] | None = None
    report: ReportSpec
    transformations: list[Transformation] = Field(default_factory=list)
    generator: str | None = None

    @model_validator(mode="after")
    def _one_bundle(self) -> ReconcileCase:
        if (self.fixture is None) == (self.bundle is None):
            raise ValueError("give exactly one of 'fixture' (a reference to an extraction fixture) or 'bundle'")
        return self
