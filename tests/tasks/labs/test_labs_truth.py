"""The labs truth rules, one by one, on small hand-made Bundles."""

from __future__ import annotations

from typing import Any

import pytest

from groundeval.clinical.lab_thresholds import default_thresholds
from groundeval.clinical.lab_truth import direction, labs_truth
from groundeval.errors import DatasetError

TABLE = default_thresholds()
LOINC, UCUM = "http://loinc.org", "http://unitsofmeasure.org"
JSON = dict[str, Any]


def obs(oid: str, code: str, when: str | None, value: float | None = None, unit: str = "mmol/L",
        status: str = "final", **extra: Any) -> JSON:
    resource: JSON = {"resourceType": "Observation", "id": oid, "status": status,
                      "code": {"coding": [{"system": LOINC, "code": code}]}, **extra}
    if when is not None:
        resource["effectiveDateTime"] = when
    if value is not None:
        resource["valueQuantity"] = {"value": value, "unit": unit, "system": UCUM, "code": unit}
    return {"fullUrl": f"urn:uuid:{oid}", "resource": resource}


def bp(oid: str, when: str, systolic: float, diastolic: float, **extra: Any) -> JSON:
    comps = [{"code": {"coding": [{"system": LOINC, "code": c}]},
              "valueQuantity": {"value": v, "unit": "mm[Hg]", "system": UCUM, "code": "mm[Hg]"}}
             for c, v in (("8462-4", diastolic), ("8480-6", systolic))]
    return obs(oid, "85354-9", when, component=comps, **extra)


def truth(*entries: JSON, birth: str = "1960-01-01") -> dict[str, JSON]:
    patient = {"fullUrl": "urn:uuid:p", "resource": {"resourceType": "Patient", "id": "p", "birthDate": birth}}
    found = labs_truth({"resourceType": "Bundle", "type": "collection", "entry": [patient, *entries]}, TABLE, "t.json")
    return {e["loinc"]: e for e in found["tests"]}


K = "6298-4"


@pytest.mark.parametrize("status", ["preliminary", "registered", "cancelled", "entered-in-error", "unknown"])
def test_only_final_amended_and_corrected_results_count(status: str) -> None:
    got = truth(obs("a", K, "2024-01-01", 4.0), obs("b", K, "2024-02-01", 6.9, status=status))[K]
    assert (got["value"], got["date"], got["critical"]) == (4.0, "2024-01-01", False)
    assert got["excluded"] == [{"observation": "Observation/b", "status": status, "day": "2024-02-01"}]
    for counted in ("amended", "corrected"):
        assert truth(obs("a", K, "2024-01-01", 4.0), obs("b", K, "2024-02-01", 4.6, status=counted))[K]["value"] == 4.6


def test_a_test_with_no_counted_result_is_no_result_and_a_result_without_a_value_does_not_count() -> None:
    got = truth(obs("a", K, "2024-01-01", status="final", dataAbsentReason={"text": "haemolysed"}))
    assert got[K]["category"] == "no_result" and got[K]["value"] is None and got[K]["critical"] is False
    assert got["4548-4"] == {"loinc": "4548-4", "name": "Hemoglobin A1c", "unit": "%", "excluded": [], "result": False,
                             "value": None, "recorded_unit": None, "value_in_unit": None, "date": None,
                             "observation": None, "category": "no_result", "category_basis": None, "previous": None,
                             "direction": None, "critical": False}


def test_latest_is_by_date_then_time_then_issued_then_bundle_order() -> None:
    later_time = truth(obs("a", K, "2024-03-01T18:00:00+00:00", 5.0), obs("b", K, "2024-03-01T07:00:00+00:00", 4.0))
    assert later_time[K]["value"] == 5.0 and later_time[K]["previous"]["value_in_unit"] == 4.0
    by_issued = truth(obs("a", K, "2024-03-01", 5.0, issued="2024-03-01T12:00:00Z"),
                      obs("b", K, "2024-03-01", 4.0, issued="2024-03-01T09:00:00Z"))
    assert by_issued[K]["value"] == 5.0 and by_issued[K]["observation"] == "Observation/a"
    tie = truth(obs("a", K, "2024-03-01", 5.0), obs("b", K, "2024-03-01", 4.0))
    assert tie[K]["value"] == 4.0  # nothing tells them apart: the later entry
    dated_only_first = truth(obs("a", K, "2024-03-01T00:30:00Z", 5.0), obs("b", K, "2024-03-01", 4.0))
    assert dated_only_first[K]["value"] == 5.0


def test_a_value_in_another_unit_is_converted_before_it_is_classified() -> None:
    got = truth(obs("a", "2339-0", "2024-01-01", 99, "mg/dL"), obs("b", "2339-0", "2024-02-01", 7.0, "mmol/L"))
    entry = got["2339-0"]
    assert (entry["value"], entry["recorded_unit"], entry["value_in_unit"]) == (7.0, "mmol/L", 126.1092)
    assert entry["category"] == "diabetes" and entry["direction"] == "up"
    with pytest.raises(DatasetError, match="Observation/a: unit 'mmol/mol' is not one the table accepts for 4548-4"):
        truth(obs("a", "4548-4", "2024-01-01", 48, "mmol/mol"))


def test_the_laboratorys_own_range_takes_precedence_with_inclusive_bounds() -> None:
    def ranged(value: float, **bounds: float) -> str:
        rng = {k: {"value": v, "unit": "mmol/L", "system": UCUM, "code": "mmol/L"} for k, v in bounds.items()}
        found: str = truth(obs("a", K, "2024-01-01", value, referenceRange=[rng]))[K]["category"]
        return found

    assert ranged(5.3, low=3.5, high=5.1) == "high" and ranged(5.1, low=3.5, high=5.1) == "normal"
    assert ranged(3.5, low=3.5, high=5.1) == "normal" and ranged(3.4, low=3.5) == "low"
    assert ranged(9.0, low=3.5) == "normal"  # no high: unbounded above
    other = {"type": {"coding": [{"system": "http://terminology.hl7.org/CodeSystem/referencerange-meaning",
                                  "code": "therapeutic"}]}, "low": {"value": 1, "code": "mmol/L"}}
    assert truth(obs("a", K, "2024-01-01", 5.3, referenceRange=[other]))[K]["category"] == "normal"  # the table's


def test_adult_categories_do_not_apply_before_the_18th_birthday() -> None:
    child = truth(obs("a", K, "2024-06-30", 7.0), birth="2006-07-01")[K]
    adult = truth(obs("a", K, "2024-07-01", 7.0), birth="2006-07-01")[K]
    assert (child["category"], child["critical"], child["category_basis"]) == ("not_applicable", None, "age")
    assert (adult["category"], adult["critical"]) == ("severe_hyperkalemia", True)


def test_blood_pressure_components_decide_category_direction_and_crisis() -> None:
    got = truth(bp("a", "2024-01-01", 121, 70), bp("b", "2024-02-01", 118, 92))["85354-9"]
    assert got["value"] == {"8480-6": 118.0, "8462-4": 92.0} and got["category"] == "stage_2"
    assert got["direction"] == {"8480-6": "down", "8462-4": "up"} and got["critical"] is False
    assert truth(bp("a", "2024-01-01", 181, 70))["85354-9"]["critical"] is True
    assert truth(bp("a", "2024-01-01", 180, 120))["85354-9"]["critical"] is False


def test_direction_uses_the_tolerance_and_sees_one_step_despite_binary_floats() -> None:
    assert direction(6.1, 6.0, 0.1) == "up" and direction(6.0, 6.1, 0.1) == "down"
    assert direction(6.09, 6.0, 0.1) == "stable" and direction(100.4, 100.0, 1) == "stable"
    got = truth(obs("a", "4548-4", "2024-01-01", 6.0, "%"), obs("b", "4548-4", "2024-06-01", 6.1, "%"))
    assert got["4548-4"]["direction"] == "up" and truth(obs("a", K, "2024-01-01", 4.0))[K]["direction"] is None


@pytest.mark.parametrize(("entry", "match"), [
    (obs("a", K, None, 4.0), "Observation/a .6298-4 Potassium. has no effectiveDateTime"),
    (obs("a", K, "2024-01-01", 4.0, status="Final"), "Observation/a status 'Final' is not an R4 ObservationStatus"),
])
def test_malformed_observations_are_dataset_errors_naming_the_resource(entry: JSON, match: str) -> None:
    with pytest.raises(DatasetError, match=match):
        truth(entry)


@pytest.mark.parametrize(("quantity", "match"), [
    ({"value": "83.46", "unit": "mmol/L", "system": UCUM, "code": "mmol/L"}, r'value is "83\.46", not a number'),
    ({"value": 4.6, "unit": "mmol/L", "system": "http://example.org/units", "code": "mmol/L"},
     "unit system 'http://example.org/units', not UCUM"),
    ({"value": 4.6, "unit": "mmol/L"}, "has no unit code; the truth does not read the display text"),
    ({"value": -4.6, "unit": "mmol/L", "system": UCUM, "code": "mmol/L"}, "value is -4.6, below zero"),
])
def test_a_hand_edited_quantity_is_a_data_error_naming_the_observation(quantity: JSON, match: str) -> None:
    older = obs("a", K, "2024-01-01", 4.0)
    edited = obs("b", K, "2024-02-01")
    edited["resource"]["valueQuantity"] = quantity
    with pytest.raises(DatasetError, match=match) as err:
        truth(older, edited)
    assert "t.json" in str(err.value) and "Observation/b valueQuantity" in str(err.value)


def test_a_bad_component_or_range_bound_is_a_data_error_too() -> None:
    reading = bp("a", "2024-01-01", 120, 80)
    reading["resource"]["component"][0]["valueQuantity"]["value"] = "80"
    with pytest.raises(DatasetError, match=r"Observation/a component 8462-4 valueQuantity\.value"):
        truth(reading)
    ranged = obs("c", K, "2024-01-01", 4.0, referenceRange=[{"low": {"value": -1, "system": UCUM, "code": "mmol/L"}}])
    with pytest.raises(DatasetError, match=r"Observation/c referenceRange\.low\.value is -1"):
        truth(ranged)


@pytest.mark.parametrize(("code", "value", "unit"), [("33914-3", 60, "mL/min/{1.73_m2}"), ("33914-3", 90, "mL/min"),
                                                     (K, 2.5, "mmol/L")])
def test_a_value_with_a_comparator_is_a_bound_and_the_case_is_refused_naming_the_fix(
        code: str, value: float, unit: str) -> None:
    bounded = obs("b", code, "2024-02-01", value, unit)
    bounded["resource"]["valueQuantity"]["comparator"] = ">" if value > 10 else "<"
    with pytest.raises(DatasetError, match=r"Observation/b valueQuantity is \"[<>]\" [\d.]+: with a comparator the "
                                           r"value is a bound, not [\d.]+ .*Quantity\.comparator is a modifier element.*"
                                           r"give the measured value without \"comparator\""):
        truth(obs("a", code, "2024-01-01", 45, unit) if code != K else obs("a", K, "2024-01-01", 4.0), bounded)


def component(oid: str, code: str, when: str, value: float, **extra: Any) -> JSON:
    return obs(oid, code, when, value, "mm[Hg]", **extra)


BP = "85354-9"


def test_blood_pressure_as_separate_systolic_and_diastolic_observations_is_read_and_paired_by_instant() -> None:
    panel = bp("a", "2024-01-01T09:00:00+00:00", 124, 78)
    later = [component("s", "8480-6", "2024-03-01T10:00:00+01:00", 186), component("d", "8462-4",
                                                                                  "2024-03-01T09:00:00Z", 96)]
    got = truth(panel, *later)[BP]
    assert (got["value"], got["date"], got["category"], got["critical"]) == (
        {"8480-6": 186.0, "8462-4": 96.0}, "2024-03-01", "stage_2", True)
    assert got["observation"] == "Observation/s + Observation/d" and got["direction"] == {"8480-6": "up",
                                                                                          "8462-4": "up"}
    assert got["previous"]["observation"] == "Observation/a"
    twice = [*later, component("s2", "8480-6", "2024-03-01T09:00:00Z", 150)]
    with pytest.raises(DatasetError, match=r"Observation/s and Observation/s2 are both 8480-6 taken at"):
        truth(panel, *twice)


def test_a_reading_missing_a_component_counts_only_when_what_it_has_decides_category_and_crisis() -> None:
    older = bp("a", "2024-01-01", 124, 78)
    crisis = bp("b", "2024-02-01", 186, 70)
    crisis["resource"]["component"] = [c for c in crisis["resource"]["component"]
                                       if c["code"]["coding"][0]["code"] == "8480-6"]
    got = truth(older, crisis)[BP]
    assert (got["value"], got["category"], got["critical"], got["direction"]) == (
        {"8480-6": 186.0}, "stage_2", True, {"8480-6": "up"})
    alone = truth(older, component("c", "8462-4", "2024-02-01", 124))[BP]
    assert (alone["value"], alone["critical"], alone["direction"]) == ({"8462-4": 124.0}, True, {"8462-4": "up"})
    for systolic in (150, 125, 180):  # stage 2 but the crisis open, the stage open, nothing decided
        undecided = truth(older, component("c", "8480-6", "2024-02-01", systolic))[BP]
        assert undecided["value"] == {"8480-6": 124.0, "8462-4": 78.0}, systolic
        assert "no 8462-4 Diastolic blood pressure" in undecided["excluded"][0]["why"]


def test_latest_orders_instants_with_their_offsets_and_a_date_alone_as_the_start_of_its_utc_day() -> None:
    evening = obs("a", K, "2024-03-01T23:30:00-05:00", 5.8)  # 04:30 UTC on 2 March
    night = obs("b", K, "2024-03-02T01:00:00Z", 4.0)
    got = truth(evening, night)[K]
    assert (got["value"], got["date"], got["previous"]["date"], got["direction"]) == (5.8, "2024-03-01",
                                                                                      "2024-03-02", "up")
    assert truth(obs("a", K, "2024-03-02", 5.0), night)[K]["value"] == 4.0  # 00:00 UTC, before 01:00 UTC
    assert truth(obs("a", K, "2024-03-02", 5.0), evening)[K]["value"] == 5.8
    assert truth(obs("a", K, "2024-03-02T00:00:00Z", 5.0), obs("b", K, "2024-03-02", 4.0))[K]["value"] == 5.0
    assert truth(obs("a", K, "2024-03", 5.0), obs("b", K, "2024-02-29T23:00:00-02:00", 4.0))[K]["value"] == 4.0
    with pytest.raises(DatasetError, match=r"Observation/a effective time '2024-13-01' is not a FHIR dateTime"):
        truth(obs("a", K, "2024-13-01", 5.0))
