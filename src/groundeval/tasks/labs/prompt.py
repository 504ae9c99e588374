"""The labs task's prompt: the rules, the tests, the answer format and a worked example.

The system prompt is the same for every case of a run (the cacheable prefix); it names every test
of the threshold table with its LOINC code, UCUM unit, category names (low to high), source and
direction tolerance. With ``thresholds_in_prompt`` it also gives each category's bounds and the
critical limits, so the task measures whether a model applies a given table; without them, whether
it knows the guidelines. The worked example is a small synthetic Bundle (not from any fixture)
whose answer is derived by the truth code that scores the cases (``answer_from_truth``), so the
example cannot contradict the scorer.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from groundeval.clinical.lab_thresholds import Band, TestRow, Thresholds
from groundeval.clinical.lab_truth import NO_RESULT, NOT_APPLICABLE, labs_truth

__all__ = ["ANSWER_FORMAT", "EXAMPLE_BUNDLE", "answer_from_truth", "system_prompt", "user_prompt"]

ANSWER_FORMAT = (
    'A JSON array with one object per listed test, in the order listed: {"loinc": "<test LOINC code>", '
    '"value": <number>, "unit": "<UCUM unit of that value>", "date": "YYYY-MM-DD", "category": "<category>", '
    '"direction": "up" | "down" | "stable" | null, "critical": true | false}. For blood pressure (85354-9) '
    'value and direction are objects keyed by component code: {"8480-6": <systolic>, "8462-4": <diastolic>}, '
    'with the components the latest reading has. '
    'A test without a counted result: {"loinc": "<code>", "value": null, "unit": null, "date": null, '
    '"category": "no_result", "direction": null, "critical": false}.'
)

_PID = "6f1c2a9e-0000-4000-8000-00000000b001"
_LOINC = "http://loinc.org"
_UCUM = "http://unitsofmeasure.org"


def _obs(oid: str, code: str, when: str, status: str = "final", **value: Any) -> dict[str, Any]:
    resource = {"resourceType": "Observation", "id": oid, "status": status,
                "code": {"coding": [{"system": _LOINC, "code": code}]},
                "subject": {"reference": f"urn:uuid:{_PID}"}, "effectiveDateTime": when, **value}
    return {"fullUrl": f"urn:uuid:{oid}", "resource": resource}


def _qty(value: float, unit: str) -> dict[str, Any]:
    return {"value": value, "unit": unit, "system": _UCUM, "code": unit}


EXAMPLE_BUNDLE: dict[str, Any] = {
    "resourceType": "Bundle",
    "type": "collection",
    "entry": [
        {"fullUrl": f"urn:uuid:{_PID}", "resource": {
            "resourceType": "Patient", "id": _PID, "name": [{"given": ["Example"], "family": "Patient"}],
            "birthDate": "1961-07-14"}},
        _obs("obs-1", "4548-4", "2023-03-01T09:10:00+00:00", valueQuantity=_qty(6.1, "%")),
        _obs("obs-2", "4548-4", "2024-03-02T08:40:00+00:00", valueQuantity=_qty(6.8, "%")),
        _obs("obs-3", "4548-4", "2024-03-09T08:15:00+00:00", status="preliminary", valueQuantity=_qty(7.9, "%")),
        _obs("obs-4", "2339-0", "2024-03-02T08:40:00+00:00", valueQuantity=_qty(7.4, "mmol/L")),
        _obs("obs-5", "85354-9", "2024-03-02T08:35:00+00:00", component=[
            {"code": {"coding": [{"system": _LOINC, "code": "8480-6"}]}, "valueQuantity": _qty(128, "mm[Hg]")},
            {"code": {"coding": [{"system": _LOINC, "code": "8462-4"}]}, "valueQuantity": _qty(84, "mm[Hg]")}]),
        _obs("obs-6", "6298-4", "2023-03-01T09:10:00+00:00", valueQuantity=_qty(4.1, "mmol/L")),
        _obs("obs-7", "6298-4", "2024-03-02T08:40:00+00:00", valueQuantity=_qty(5.2, "mmol/L"), referenceRange=[{
            "low": _qty(3.5, "mmol/L"), "high": _qty(5.0, "mmol/L"),
            "type": {"coding": [{"system": "http://terminology.hl7.org/CodeSystem/referencerange-meaning",
                                 "code": "normal"}]}}]),
        _obs("obs-8", "39156-5", "2024-03-02T08:35:00+00:00", status="entered-in-error",
             valueQuantity=_qty(31.2, "kg/m2")),
    ],
}
"""A synthetic Bundle showing the rules: a later preliminary HbA1c, glucose in mmol/L, a blood pressure
panel, a potassium with its laboratory's referenceRange, a BMI entered in error, tests without results."""


def answer_from_truth(truth: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The correct answer (``ANSWER_FORMAT``) for a truth from ``labs_truth``: values as recorded."""
    answer = []
    for entry in truth["tests"]:
        if not entry["result"]:
            answer.append({"loinc": entry["loinc"], "value": None, "unit": None, "date": None, "category": NO_RESULT,
                           "direction": None, "critical": False})
            continue
        answer.append({"loinc": entry["loinc"], "value": entry["value"], "unit": entry["recorded_unit"],
                       "date": entry["date"], "category": entry["category"], "direction": entry["direction"],
                       "critical": entry["critical"] is True})
    return answer


def _bounds(bands: tuple[Band, ...]) -> str:
    """``normal < 5.7 <= prediabetes < 6.5 <= diabetes``."""
    parts = [bands[0].name]
    for band in bands[1:]:
        parts.append(f"< {band.low:g} <= {band.name}")
    return " ".join(parts)


def _test_lines(row: TestRow, thresholds: bool) -> list[str]:
    lines = [f"- {row.loinc} {row.name}, unit {row.unit}: categories {', '.join(row.order)} (low to high); "
             f"source: {row.source['cite_as']}; direction tolerance {row.tolerance:g} {row.unit}."]
    if row.is_panel:
        lines.append("  Components: " + ", ".join(f"{m.loinc} {m.name}" for m in row.measures)
                     + "; the category is the higher of the two components' categories.")
    if thresholds:
        for m in row.measures:
            label = f"{m.name} " if row.is_panel else ""
            lines.append(f"  Thresholds ({label}{row.unit}): {_bounds(m.bands)}.")
    if row.critical_label:
        if thresholds:
            limits = "; ".join(f"{m.name + ' ' if row.is_panel else ''}{m.critical.describe(row.unit)}"
                               for m in row.measures if m.critical)
            lines.append(f"  Critical ({row.critical_label}): {limits}.")
        else:
            lines.append(f"  Critical: a latest value in the range of {row.critical_label}.")
    return lines


def _factors(table: Thresholds) -> str:
    """``glucose 1 mmol/L = 18.0156 mg/dL; ...`` for the tests converted through a molar mass."""
    parts = []
    for row in table.tests:
        for unit in row.accepted_units:
            factor = row.to_unit(1.0, unit) if row.molar_mass and unit != row.unit else None
            if factor is not None:
                parts.append(f"{row.name} 1 {unit} = {factor:.6g} {row.unit}")
    return "; ".join(parts) or "units as UCUM defines them"


def _rules(table: Thresholds, thresholds: bool) -> str:
    counted = ", ".join(sorted(table.counted_statuses))
    ignored = ", ".join(sorted(table.all_statuses - table.counted_statuses))
    bands = ("A category holds the values v with lower bound <= v < upper bound: a value exactly on a threshold "
             "belongs to the higher category." if thresholds else
             "Categories are the named guideline's; give the category names exactly as listed.")
    return f"""You read FHIR R4 Bundles and interpret a patient's laboratory results and vital signs.

For every test listed below, report the patient's latest result, its category, its direction since the \
previous result, and whether it is critical.

Rules:
1. A test's results are the Observations whose code has a coding with system http://loinc.org and the \
test's code. Count only Observations with status {counted}; ignore {ignored} (FHIR R4 ObservationStatus), \
and Observations without a numeric value. Blood pressure is a 85354-9 panel with systolic (8480-6) and \
diastolic (8462-4) components, or separate 8480-6 and 8462-4 Observations taken at the same instant (one \
reading). A reading with only one component counts only when that component alone is in the critical range \
(it then decides the category and the crisis); otherwise it is not a result.
2. Order a test's counted results by the instant they were taken (effectiveDateTime, effectiveInstant or \
effectivePeriod.start, with its UTC offset: 2024-03-01T23:30:00-05:00 is later than 2024-03-02T01:00:00Z; a \
date without a time is the start of that day in UTC and comes before a time at that instant), then by issued. \
The last is the latest result; the one before it is the previous result.
3. value and unit: the latest value as recorded with its UCUM unit, or converted to the test's unit. date: \
the effective date as written, YYYY-MM-DD.
4. category: if the latest Observation has a referenceRange (the first one with no type or type normal, \
with a low or a high), the reporting laboratory's range takes precedence: low (below low), normal (low <= \
value <= high, both inclusive) or high (above high). Otherwise, if the result was taken before the patient's \
{table.min_age_years}th birthday (Patient.birthDate), {NOT_APPLICABLE}: the categories are for adults. \
Otherwise the test's category for the value in the test's unit (convert first: {_factors(table)}). {bands}
5. direction: the latest value minus the previous one, in the test's unit: up when the change is at least \
the test's tolerance, down when it is at most minus the tolerance, otherwise stable; null when there is no \
previous counted result (for blood pressure, per component; null for a component the latest or the previous \
reading lacks).
6. critical: true when the latest value is in the test's critical range (only tests listing one have it), \
otherwise false; false for a {NOT_APPLICABLE} result.
7. A test with no counted result: value, unit, date and direction null, category {NO_RESULT}, critical false.
8. Answer with only the JSON, no prose and no markdown fence."""


def system_prompt(table: Thresholds, thresholds_in_prompt: bool) -> str:
    """The system prompt shared by every case (rules, tests, format, worked example).

    Args:
        table: The threshold table whose tests the prompt names.
        thresholds_in_prompt: Also give the categories' bounds and the critical limits.
    """
    tests = "\n".join(line for row in table.tests for line in _test_lines(row, thresholds_in_prompt))
    bundle = json.dumps(EXAMPLE_BUNDLE, ensure_ascii=False, indent=1)
    answer = json.dumps(answer_from_truth(labs_truth(EXAMPLE_BUNDLE, table, "example")), ensure_ascii=False)
    return (
        f"{_rules(table, thresholds_in_prompt)}\n\nTests:\n{tests}\n\nFormat: {ANSWER_FORMAT}\n\n"
        f"Worked example (synthetic data).\nBundle:\n{bundle}\n\nCorrect answer:\n{answer}\n\n"
        "Why: obs-3 is preliminary, so obs-2 is the latest HbA1c and obs-1 the previous one; the glucose "
        "7.4 mmol/L is 133.3 mg/dL; the blood pressure's diastolic decides its category; obs-7 carries its "
        "laboratory's range, which takes precedence; the only BMI was entered in error, so BMI has no result, "
        "like the tests the Bundle does not mention."
    )


def user_prompt(bundle: str) -> str:
    """The case's turn: the Bundle JSON and the answer format."""
    return f"Bundle:\n{bundle}\n\nAnswer format: {ANSWER_FORMAT}"
