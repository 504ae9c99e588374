"""Ground truth of the reconcile task: each medication's status, from the record and the report.

The record side is the extraction task's truth (``tasks.medlist.medication_truth``: the active
MedicationRequests, RxNorm by system, branded and generic codes of one concept as one drug), so
"active in the record" means exactly what it means there. The report side is the case file's
structured ``report.items`` (``tasks.reconcile_cases.ReportItem``). Statuses:

* ``matched``: active in the record and reported, with no dose, frequency or as-needed difference
  that both sides state;
* ``dose_mismatch``: active and reported, but the dose per administration, the number of
  administrations per day, or as-needed versus scheduled use differ, where both sides state it.
  Doses compare unit-aware (UCUM, ``terminology.ucum.to_mg``: 0.1 mg equals 100 ug; a rate such as
  0.025 mg/h equals 25 ug/h), frequencies per day (``administrations_per_day``: every 72 h equals
  every 3 d). What only one side states is not a discrepancy;
* ``omission``: active in the record, not reported;
* ``stopped_but_taken``: reported, not active, but the record holds a ``stopped``, ``completed`` or
  ``on-hold`` request for it;
* ``commission``: reported, and nowhere in the record (a drug held only by a cancelled, draft,
  entered-in-error or non-order request counts as not in the record).

A brand name is not a discrepancy: the report item carries the concept the patient means.

**The record's dose.** Synthea often writes no ``dosageInstruction``, and where it does,
``doseQuantity`` is ``{"value": 1.0}`` with no unit: one unit (tablet, capsule, patch) of the
product per administration. The dose is therefore *count x strength*, the strength read from the
RxNorm display by ``terminology.rxnorm.parse_display`` ("Lisinopril 10 MG Oral Tablet" -> 10 mg;
"72 HR Fentanyl 0.025 MG/HR Transdermal System" -> 0.025 mg/h); no ``dosageInstruction`` means one
unit. A ``doseQuantity`` in a UCUM mass unit is used as it is. A product without one strength in a
mass or mass-per-time unit (combinations, mg/mL solutions, insulin in units/mL) has no comparable
dose. Frequency is ``timing.repeat`` (``frequency`` per ``period`` ``periodUnit``), as-needed is
``asNeededBoolean``; either is unknown when absent. When one drug has several active requests, the
latest ``authoredOn`` (then the last in bundle order) gives its dosage.

Uncoded and unresolved record medications have no RxCUI to pair on and are left out (listed under
``not_scored``).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any, TypedDict

from groundeval.fhir.bundle import BundleIndex, entry_resources, rxnorm_codings
from groundeval.tasks.medlist import medication_truth
from groundeval.terminology.high_alert import high_alert_class
from groundeval.terminology.rxnorm import format_strength, parse_display
from groundeval.terminology.ucum import UNITS_OF_TIME_DAYS, administrations_per_day, rxnorm_unit_to_ucum, to_mg

__all__ = [
    "DISCREPANCIES",
    "STATUSES",
    "Dosage",
    "TruthEntry",
    "describe_dosage",
    "reconcile_truth",
    "record_dosage",
    "request_displays",
    "same_amount",
]

STATUSES = ("matched", "omission", "commission", "dose_mismatch", "stopped_but_taken")
"""Every status an entry can have, in report order."""

DISCREPANCIES = STATUSES[1:]
"""The statuses that are discrepancies (scored by precision/recall/F1)."""

_STOPPED = frozenset({"stopped", "completed", "on-hold"})
_MASS_UNITS = frozenset({"MG", "MCG", "G", "MG/HR", "MCG/HR"})


class Dosage(TypedDict):
    """A dosage as compared; each key None when unknown.

    Keys:
        dose: ``{"value", "unit"}`` (UCUM code).
        frequency: ``{"frequency", "period", "period_unit"}`` (``Timing.repeat``).
        as_needed: True for as-needed use, False for scheduled.
    """

    dose: dict[str, Any] | None
    frequency: dict[str, Any] | None
    as_needed: bool | None


class TruthEntry(TypedDict):
    """One medication of the case, on either side.

    Keys:
        rxnorm_code: The RxCUI to report (the record's first code; the report's for report-only).
        codes: Every RxCUI accepted for it (branded and generic codes of one record concept).
        display: The record's display, else the catalog's or the patient's name for it.
        status: One of ``STATUSES``.
        record: The record's ``Dosage`` (None when not active in the record).
        reported: The report's ``Dosage`` (None when not reported).
        why: Why a ``dose_mismatch`` (``"dose 5 mg vs 7.5 mg"``), else ``""``.
        high_alert: The ISMP class (``terminology.high_alert``), or None.
    """

    rxnorm_code: str
    codes: list[str]
    display: str
    status: str
    record: Dosage | None
    reported: Dosage | None
    why: str
    high_alert: str | None


def _strength(display: str) -> tuple[float, str] | None:
    """``(value, UCUM unit)`` of a single-ingredient product's strength, or None."""
    entry = parse_display(display)
    if len(entry.ingredients) != 1:
        return None
    ing = entry.ingredients[0]
    if ing.strength is None or ing.unit not in _MASS_UNITS:
        return None
    unit = rxnorm_unit_to_ucum(ing.unit)
    return (ing.strength, unit) if unit else None


def record_dosage(request: Mapping[str, Any], display: str) -> Dosage:
    """The dosage of one MedicationRequest, by the rule in the module docstring.

    Args:
        request: A MedicationRequest dict.
        display: The drug's RxNorm display (for its strength).
    """
    instructions = request.get("dosageInstruction") or []
    first = instructions[0] if isinstance(instructions, list) and instructions else {}
    first = first if isinstance(first, Mapping) else {}
    strength = _strength(display)
    count, dose = 1.0, None
    for dose_rate in first.get("doseAndRate") or []:
        quantity = dose_rate.get("doseQuantity") if isinstance(dose_rate, Mapping) else None
        if isinstance(quantity, Mapping) and isinstance(quantity.get("value"), int | float):
            unit = quantity.get("code") or quantity.get("unit")
            if isinstance(unit, str) and to_mg(1.0, unit) is not None:
                dose = {"value": float(quantity["value"]), "unit": unit}
            else:
                count = float(quantity["value"])
            break
    if dose is None and strength is not None:
        dose = {"value": float(format_strength(count * strength[0])), "unit": strength[1]}
    repeat = ((first.get("timing") or {}).get("repeat") or {}) if isinstance(first.get("timing"), Mapping) else {}
    frequency = None
    if repeat.get("frequency") and repeat.get("period") and repeat.get("periodUnit") in UNITS_OF_TIME_DAYS:
        frequency = {"frequency": int(repeat["frequency"]), "period": float(repeat["period"]),
                     "period_unit": repeat["periodUnit"]}
    as_needed = first.get("asNeededBoolean")
    return Dosage(dose=dose, frequency=frequency, as_needed=as_needed if isinstance(as_needed, bool) else None)


def same_amount(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    """True when two UCUM amounts are equal: mass via mg, ``mass/X`` rates with the same ``X``.

    Args:
        a: ``{"value": float, "unit": UCUM code}``.
        b: The same shape.

    Returns:
        Equal within a relative 1e-9 after conversion; different units that cannot be converted
        are equal only when value and unit are identical.
    """
    def close(x: float, y: float) -> bool:
        return math.isclose(x, y, rel_tol=1e-9, abs_tol=1e-12)

    va, ua, vb, ub = float(a["value"]), str(a["unit"]), float(b["value"]), str(b["unit"])
    ma, mb = to_mg(va, ua), to_mg(vb, ub)
    if ma is not None and mb is not None:
        return close(ma, mb)
    (na, _, da), (nb, _, db) = ua.partition("/"), ub.partition("/")
    if da and da == db:
        ra, rb = to_mg(va, na), to_mg(vb, nb)
        if ra is not None and rb is not None:
            return close(ra, rb)
    return ua == ub and close(va, vb)


def _per_day(freq: Mapping[str, Any]) -> float:
    return administrations_per_day(float(freq["frequency"]), float(freq["period"]), str(freq["period_unit"]))


def compare(record: Dosage, reported: Dosage) -> str:
    """``""`` when nothing both sides state differs, else why (``"dose 5 mg vs 7.5 mg"``)."""
    problems = []
    if record["dose"] and reported["dose"] and not same_amount(record["dose"], reported["dose"]):
        problems.append(f"dose {_amount(record['dose'])} vs {_amount(reported['dose'])}")
    if record["frequency"] and reported["frequency"] and not math.isclose(
        _per_day(record["frequency"]), _per_day(reported["frequency"]), rel_tol=1e-9
    ):
        problems.append(f"frequency {_timing(record['frequency'])} vs {_timing(reported['frequency'])}")
    prn, said = record["as_needed"], reported["as_needed"]
    if prn is not None and said is not None and prn != said:
        problems.append(f"{_prn(prn)} vs {_prn(said)}")
    return "; ".join(problems)


def _amount(dose: Mapping[str, Any]) -> str:
    return f"{format_strength(float(dose['value']))} {dose['unit']}"


def _timing(freq: Mapping[str, Any]) -> str:
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
    if dosage["frequency"]:
        parts.append(_timing(dosage["frequency"]))
    if dosage["as_needed"] is not None:
        parts.append(_prn(dosage["as_needed"]))
    return ", ".join(parts)


def request_displays(bundle: Mapping[str, Any]) -> dict[str, str]:
    """RxCUI -> the first display any MedicationRequest (or its Medication) gives it."""
    index = BundleIndex.of(bundle)
    out: dict[str, str] = {}
    for request in entry_resources(bundle, "MedicationRequest"):
        concept = request.get("medicationCodeableConcept")
        if not isinstance(concept, Mapping):
            ref = (request.get("medicationReference") or {}).get("reference")
            target = index.resolve(ref, parent=request) if isinstance(ref, str) else None
            concept = (target or {}).get("code") if target else None
        for coding in rxnorm_codings(concept if isinstance(concept, Mapping) else None):
            if coding.display:
                out.setdefault(coding.code, coding.display)
    return out


def _latest(requests: Sequence[Mapping[str, Any]]) -> Mapping[str, Any]:
    order = {id(r): i for i, r in enumerate(requests)}
    return max(requests, key=lambda r: (str(r.get("authoredOn") or ""), order[id(r)]))


def _reported(item: Mapping[str, Any]) -> Dosage:
    return Dosage(dose=item.get("dose"), frequency=item.get("frequency"), as_needed=item.get("as_needed"))


def reconcile_truth(
    bundle: Mapping[str, Any],
    items: Sequence[Mapping[str, Any]],
    catalog_displays: Mapping[str, str] | None = None,
    source: str = "bundle",
) -> dict[str, Any]:
    """Derive every medication's status (see the module docstring for the rule).

    Args:
        bundle: The patient's Bundle (one Patient).
        items: ``report.items`` as dicts (``name``, ``rxnorm_code``, ``dose``, ``frequency``, ``as_needed``).
        catalog_displays: RxCUI -> site catalog display, for drugs only the report names.
        source: File name for error messages.

    Returns:
        ``{"entries": [TruthEntry...], "not_scored": [{"text", "kind"}...]}``: record medications
        in the extraction truth's order, then report-only ones in report order.

    Raises:
        DatasetError: The bundle does not hold exactly one Patient.
    """
    active, inactive = medication_truth(bundle, source)
    requests = {str(r.get("id") or ""): r for r in entry_resources(bundle, "MedicationRequest")}
    by_code = {str(i["rxnorm_code"]): i for i in items}
    used: set[str] = set()
    entries: list[TruthEntry] = []
    not_scored = []
    for med in active:
        if med["kind"] != "coded":
            not_scored.append({"text": med["text"], "kind": med["kind"]})
            continue
        code = med["codes"][0]
        display = next((d for c in med["codes"] for d in med["displays"].get(c, [])), code)
        mine = [requests[r] for r in med["requests"] if r in requests]
        record = record_dosage(_latest(mine), display) if mine else Dosage(dose=None, frequency=None, as_needed=None)
        item_code = next((c for c in med["codes"] if c in by_code), None)
        if item_code is None:
            status, reported, why = "omission", None, ""
        else:
            used.add(item_code)
            reported = _reported(by_code[item_code])
            why = compare(record, reported)
            status = "dose_mismatch" if why else "matched"
        entries.append(TruthEntry(
            rxnorm_code=code, codes=list(med["codes"]), display=display, status=status, record=record,
            reported=reported, why=why, high_alert=high_alert_class(display),
        ))
    displays = request_displays(bundle)
    for item in items:
        code = str(item["rxnorm_code"])
        if code in used:
            continue
        stopped = bool(set(inactive.get(code, ())) & _STOPPED)
        display = (displays.get(code) if stopped else None) or (catalog_displays or {}).get(code) or str(item["name"])
        entries.append(TruthEntry(
            rxnorm_code=code, codes=[code], display=display,
            status="stopped_but_taken" if stopped else "commission", record=None, reported=_reported(item),
            why="", high_alert=high_alert_class(display),
        ))
    return {"entries": entries, "not_scored": not_scored}
