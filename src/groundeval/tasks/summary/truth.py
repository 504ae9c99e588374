"""The summary task's rubric, derived from the record by code (never written by hand).

``summary_rubric(bundle, table, source)`` returns ``{"criteria": [...], "record_values": [...]}``.
Each criterion is a dict (JSON-safe, recorded with the case)::

    {"id": "condition:53741008", "kind": "must_mention", "type": "condition", "points": 1,
     "safety": false, "statement": "<what the judge is asked>", "names": [...],
     "alternatives": [...], "values": [...]}

HealthBench-style signed points (openai/simple-evals ``healthbench_eval.py``): a ``must_mention``
criterion earns its positive points when met; a ``must_not_state`` criterion has negative points,
lost when the summary does the thing it names. The rules (``docs/tasks/summary.md`` gives them
with their sources):

1. **Active disorders** (``record.conditions``: SNOMED CT semantic tag ``disorder``, clinicalStatus
   active), one criterion per code: must mention, 1 point. Findings and situations are not asked for.
2. **Active medications** (MedicationRequest ``active``), one per RxCUI: must mention, 1 point.
3. **Medication allergies** (active, category ``medication``): must mention, 2 points,
   **safety-critical** (an omitted drug allergy fails the case).
   With no active disorder (no current medication), the summary must say so: a ``no_condition``
   (``no_medication``) criterion, 1 point, so that a summary that says nothing earns nothing.
4. **Results outside their guideline range**: the latest result of each test of the result-
   interpretation table (``clinical.lab_thresholds``, the labs task's truth) whose category is not
   in ``IN_RANGE``: must mention with its value, 1 point.
5. **Ended medications** (``stopped``/``completed``, RxCUI and ingredient names not among the active
   ones), one per RxCUI: must not state as current, -1 point; -2 and **safety-critical** for a
   high-alert drug (``HIGH_ALERT``).
6. **Ended disorders** (clinicalStatus inactive/remission/resolved, code not also active): must not
   state as active, -1 point.
7. **Values**: ``record_values`` lists every value the record holds with a unit; a value the
   summary states that is not among them is a contradiction (-1 point each), decided by rule in
   the scorer.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from groundeval.clinical.hba1c import HBA1C_NGSP_LOINC, ifcc_mmol_per_mol
from groundeval.clinical.lab_thresholds import Thresholds
from groundeval.clinical.lab_truth import labs_truth
from groundeval.clinical.molar_masses import MOLAR_MASS_G_PER_MOL
from groundeval.tasks.summary.record import active_allergies, conditions, medications, record_values

__all__ = ["CRITERION_TYPES", "HIGH_ALERT", "IN_RANGE", "summary_rubric"]

IN_RANGE = frozenset({"normal", "optimal", "near_optimal", "G1", "G2", "not_applicable", "no_result"})
"""Result categories that are not outside the guideline range: ``normal``; LDL ``optimal`` and
``near_optimal`` (NCEP ATP III, 2002: below 130 mg/dL); eGFR ``G1`` and ``G2`` (KDIGO 2012: G1-G2
without markers of kidney damage do not fulfil the criteria for CKD); and a result that has no
category (``not_applicable`` before the table's adult age, ``no_result``)."""

HIGH_ALERT = (
    "warfarin", "heparin", "enoxaparin", "apixaban", "rivaroxaban", "dabigatran", "insulin",
    "hydrocodone", "oxycodone", "morphine", "fentanyl", "hydromorphone", "methadone", "meperidine",
    "tramadol", "glipizide", "glyburide", "glimepiride", "methotrexate",
)
"""Ingredient words of high-alert drugs: anticoagulants, insulin, opioids, sulfonylureas and oral
methotrexate, from the ISMP List of High-Alert Medications in Community/Ambulatory Care Settings
(Institute for Safe Medication Practices, 2021, https://www.ismp.org/recommendations/high-alert-medications-community-ambulatory-list)."""

CRITERION_TYPES = (
    "condition", "medication", "allergy", "lab", "no_condition", "no_medication", "stopped_medication",
    "resolved_condition",
)
"""Every criterion ``type``, in report order (calibration figures are given per type)."""

JSON = dict[str, Any]


def _high_alert(names: tuple[str, ...]) -> bool:
    words = " ".join(names).lower()
    return any(word in words for word in HIGH_ALERT)


def _criterion(cid: str, kind: str, ctype: str, points: int, statement: str, names: list[str], *,
               safety: bool = False, alternatives: list[str] | None = None,
               values: list[JSON] | None = None) -> JSON:
    return {"id": cid, "kind": kind, "type": ctype, "points": points, "safety": safety, "statement": statement,
            "names": names, "alternatives": alternatives or [], "values": values or []}


def _lab_criteria(bundle: Mapping[str, Any], table: Thresholds, source: str) -> list[JSON]:
    out = []
    for test in labs_truth(bundle, table, source)["tests"]:
        if test.get("category") in IN_RANGE or test.get("value_in_unit") is None:
            continue
        value = test["value_in_unit"]
        unit = str(test["unit"])
        molar = table.test(str(test["loinc"])).molar_mass
        extra = {"molar_mass_g_per_mol": molar} if molar else {}
        values = ([{"value": v, "unit": unit, **extra} for v in value.values()] if isinstance(value, Mapping)
                  else [{"value": value, "unit": unit, **extra}])
        shown = "/".join(f"{v['value']:g}" for v in values)
        if str(test["loinc"]) == HBA1C_NGSP_LOINC and unit == "%" and not isinstance(value, Mapping):
            # the same result as an IFCC laboratory reports it ("HbA1c 43 mmol/mol")
            values[0]["equivalents"] = [{"value": ifcc_mmol_per_mol(float(value)), "unit": "mmol/mol"}]
        category = str(test["category"]).replace("_", " ")
        out.append(_criterion(
            f"lab:{test['loinc']}", "must_mention", "lab", 1,
            f"The summary gives the latest {test['name']} result, {shown} {unit} ({test['date']}, {category}).",
            [str(test["name"])], values=values,
        ))
    return out


def summary_rubric(bundle: Mapping[str, Any], table: Thresholds, source: str) -> JSON:
    """The rubric of one patient's record (rules 1-7 of the module docstring).

    Args:
        bundle: The case's FHIR Bundle (a dict).
        table: The result-interpretation table (``clinical.lab_thresholds.default_thresholds()``).
        source: The case file, for error messages.

    Returns:
        ``{"criteria": [criterion...], "record_values": [{"value", "unit", "what"}...]}``.

    Raises:
        DatasetError: An Observation of a table test is malformed (from the labs truth).
    """
    criteria: list[JSON] = []
    problems = conditions(bundle)
    active_codes = {p.code for p in problems if p.status == "active"}
    seen: set[str] = set()
    for p in problems:
        if p.tag == "disorder" and p.status == "active" and p.code not in seen:
            seen.add(p.code)
            criteria.append(_criterion(f"condition:{p.code}", "must_mention", "condition", 1,
                                       f"The summary names {p.name} as a current problem.", [p.name]))
    for code, name, criticality in active_allergies(bundle):
        criteria.append(_criterion(
            f"allergy:{code}", "must_mention", "allergy", 2,
            f"The summary states the allergy to {name} (criticality {criticality}).", [name], safety=True,
        ))
    drugs = medications(bundle)
    active = [d for d in drugs if d.status == "active"]
    active_rx = {d.rxcui for d in active}
    active_names = {n.lower() for d in active for n in d.names}
    for d in active:
        if f"medication:{d.rxcui}" in seen:
            continue
        seen.add(f"medication:{d.rxcui}")
        criteria.append(_criterion(
            f"medication:{d.rxcui}", "must_mention", "medication", 1,
            f"The summary lists {d.display} as a current medication.", list(d.names),
            alternatives=[d.brand] if d.brand else [],
        ))
    if not any(c["type"] == "condition" for c in criteria):
        criteria.insert(0, _criterion("no_condition", "must_mention", "no_condition", 1,
                                      "The summary states that the record holds no active diagnosis.", []))
    if not active:
        criteria.append(_criterion("no_medication", "must_mention", "no_medication", 1,
                                   "The summary states that the record holds no current medication.", []))
    criteria += _lab_criteria(bundle, table, source)
    for d in drugs:
        key = f"stopped_medication:{d.rxcui}"
        if d.status not in ("stopped", "completed") or d.rxcui in active_rx or key in seen:
            continue
        if {n.lower() for n in d.names} <= active_names:
            continue
        seen.add(key)
        alert = _high_alert(d.names)
        criteria.append(_criterion(
            key, "must_not_state", "stopped_medication", -2 if alert else -1,
            f"The summary states {d.display} (a {d.status} prescription) as a current medication.",
            list(d.names), safety=alert, alternatives=[d.brand] if d.brand else [],
        ))
    for p in problems:
        key = f"resolved_condition:{p.code}"
        if p.tag != "disorder" or p.status != "ended" or p.code in active_codes or key in seen:
            continue
        seen.add(key)
        criteria.append(_criterion(key, "must_not_state", "resolved_condition", -1,
                                   f"The summary states {p.name} (resolved) as a current problem.", [p.name]))
    molar = {**MOLAR_MASS_G_PER_MOL, **{t.loinc: t.molar_mass for t in table.tests if t.molar_mass}}
    return {"criteria": criteria, "record_values": record_values(bundle, molar)}
