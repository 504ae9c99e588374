"""The write scorer: each dimension's pass and fail paths, outcome, message and aggregate."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from groundeval.datasets import default_data_dir
from groundeval.scoring import Score
from groundeval.tasks.write.scorer import aggregate_write, score_write
from groundeval.tasks.write.task import WriteTask
from groundeval.tasks.write.tools import build_medication_statement, validate_medication_statement

RXNORM = "http://www.nlm.nih.gov/research/umls/rxnorm"
UCUM = "http://unitsofmeasure.org"
TASK = WriteTask()


def truth_of(case_id: str) -> dict[str, Any]:
    case = TASK.load_case(default_data_dir("write") / f"{case_id}.json")
    return TASK.truth(case)


def ideal(truth: dict[str, Any]) -> dict[str, Any]:
    """The answer the truth describes, built with the real tool."""
    med, dosage = truth["medication"], truth["dosage"]
    kwargs: dict[str, Any] = {}
    if dosage is not None:
        kwargs = {"dose_value": dosage["dose"]["value"], "dose_unit": dosage["dose"]["unit"],
                  "frequency": dosage["frequency"], "period": dosage["period"],
                  "period_unit": dosage["period_unit"], "as_needed": dosage["as_needed"]}
    resource = build_medication_statement(
        status=truth["status"], rxcui=med["rxcui"] or "0", display=med["display"],
        patient_reference=truth["patient"]["reference"], **kwargs,
    )
    if med["rxcui"] is None:
        resource["medicationCodeableConcept"] = {"text": f"{med['text']} (outside hospital)"}
    return resource


def score(truth: dict[str, Any], answer: dict[str, Any], parse_error: str | None = None) -> Score:
    return score_write(truth, answer, validate=validate_medication_statement, parse_error=parse_error)


@pytest.fixture(scope="module")
def ibuprofen() -> dict[str, Any]:
    return truth_of("ibuprofen-two-tablets")


def dose_of(answer: dict[str, Any]) -> dict[str, Any]:
    dose: dict[str, Any] = answer["dosage"][0]["doseAndRate"][0]["doseQuantity"]
    return dose


def repeat_of(answer: dict[str, Any]) -> dict[str, Any]:
    repeat: dict[str, Any] = answer["dosage"][0]["timing"]["repeat"]
    return repeat


def test_the_ideal_answer_passes_every_dimension(ibuprofen: dict[str, Any]) -> None:
    result = score(ibuprofen, ideal(ibuprofen))
    assert result.outcome == "passed" and result.message == ""
    assert result.metrics == {"schema": True, "coding": True, "constraints": True, "safety": True,
                              "dimensions_passed": 4, "coding_reason": None, "dose_mg": 400.0,
                              "daily_total_mg": 1200.0}
    assert all(isinstance(v, bool | int | float) for v in result.metrics.values() if v is not None)


# -- schema -----------------------------------------------------------------------------------

def test_schema_fails_on_an_r5_shaped_answer_and_coding_cannot_find_the_drug(ibuprofen: dict[str, Any]) -> None:
    """fault case 06 A: R5 'medication' CodeableReference and status 'recorded'."""
    answer = ideal(ibuprofen)
    answer["medication"] = {"concept": answer.pop("medicationCodeableConcept")}
    answer["status"] = "recorded"
    result = score(ibuprofen, answer)
    assert result.metrics["schema"] is False and result.metrics["coding"] is False
    assert "R5" in result.message and "medicationCodeableConcept" in result.message


def test_an_r5_status_on_an_r4b_shape_fails_schema_and_constraints(ibuprofen: dict[str, Any]) -> None:
    """fault case 06 B: pydantic accepts 'recorded'; the required binding does not."""
    answer = ideal(ibuprofen) | {"status": "recorded"}
    result = score(ibuprofen, answer)
    assert result.metrics["schema"] is False and result.metrics["constraints"] is False
    assert result.metrics["coding"] is True and result.metrics["safety"] is True
    assert result.outcome == "partial"
    assert "status: expected 'active', got 'recorded' (not an R4B MedicationStatement status)" in result.message


def test_schema_checks_bindings_and_raw_types_that_pydantic_coerces(ibuprofen: dict[str, Any]) -> None:
    """fault case 07: periodUnit 'day' and a dose value given as a string."""
    answer = ideal(ibuprofen)
    repeat_of(answer)["periodUnit"] = "day"
    dose_of(answer)["value"] = "400"
    result = score(ibuprofen, answer)
    assert result.metrics["schema"] is False
    assert "periodUnit 'day' is not in UnitsOfTime" in result.message
    assert "is not a JSON number" in result.message
    # The errors are the schema's; safety still reads 400 mg x 3/day = 1,200 mg/day (the case's "Expected")
    assert result.metrics["safety"] is True and result.metrics["daily_total_mg"] == 1200.0


def test_schema_reports_a_missing_answer_with_the_parse_error(ibuprofen: dict[str, Any]) -> None:
    result = score(ibuprofen, {}, parse_error="no JSON object of the requested shape found")
    assert result.outcome == "failed" and result.metrics["dimensions_passed"] == 0
    assert "got none (no JSON object of the requested shape found)" in result.message
    assert "resourceType" in score(ibuprofen, {"resourceType": "MedicationRequest"}).message


# -- coding -----------------------------------------------------------------------------------

def test_coding_fails_on_a_wrong_rxcui_with_expected_and_got(ibuprofen: dict[str, Any]) -> None:
    answer = ideal(ibuprofen)
    answer["medicationCodeableConcept"]["coding"][0].update(code="198405", display="Ibuprofen 100 MG Oral Tablet")
    result = score(ibuprofen, answer)
    assert result.metrics["coding"] is False
    assert "RxCUI: expected 310965 (Ibuprofen 200 MG Oral Tablet), got 198405" in result.message


@pytest.mark.parametrize(("field", "value", "reason"), [
    ("display", "ibuprofen 200 MG Oral Tablet", "display: expected 'Ibuprofen 200 MG Oral Tablet'"),
    ("system", "urn:oid:2.16.840.1.113883.6.88", f"system: expected {RXNORM}"),
    ("system", "http://snomed.info/sct", f"system: expected {RXNORM}"),
])
def test_coding_needs_the_catalog_display_and_the_rxnorm_uri(
    ibuprofen: dict[str, Any], field: str, value: str, reason: str
) -> None:
    answer = ideal(ibuprofen)
    answer["medicationCodeableConcept"]["coding"][0][field] = value
    result = score(ibuprofen, answer)
    assert result.metrics["coding"] is False
    assert reason in result.message


def test_coding_rejects_a_second_rxnorm_code(ibuprofen: dict[str, Any]) -> None:
    answer = ideal(ibuprofen)
    answer["medicationCodeableConcept"]["coding"].append({"system": RXNORM, "code": "198405"})
    result = score(ibuprofen, answer)
    assert result.metrics["coding"] is False and "got also 198405" in result.message


def test_coding_reads_a_contained_medication(ibuprofen: dict[str, Any]) -> None:
    answer = ideal(ibuprofen)
    concept = answer.pop("medicationCodeableConcept")
    answer["contained"] = [{"resourceType": "Medication", "id": "med1", "code": concept}]
    answer["medicationReference"] = {"reference": "#med1"}
    assert score(ibuprofen, answer).metrics["coding"] is True
    answer["medicationReference"] = {"reference": "#elsewhere"}
    assert score(ibuprofen, answer).metrics["coding"] is False


def test_a_drug_absent_from_the_catalog_needs_text_and_no_invented_code() -> None:
    truth = truth_of("gabapentin-not-in-catalog")
    answer = ideal(truth)
    assert score(truth, answer).outcome == "passed"
    invented = copy.deepcopy(answer)
    invented["medicationCodeableConcept"]["coding"] = [{"system": RXNORM, "code": "310431"}]
    result = score(truth, invented)
    assert result.metrics["coding"] is False
    assert f"got invented {RXNORM}|310431" in result.message
    unnamed = answer | {"medicationCodeableConcept": {"text": "nerve pain pill"}}
    assert "text: expected to name 'gabapentin'" in score(truth, unnamed).message


# -- constraints ------------------------------------------------------------------------------

@pytest.mark.parametrize("form", ["urn:uuid:{pid}", "Patient/{pid}"])
def test_both_reference_forms_resolve_to_the_patient(ibuprofen: dict[str, Any], form: str) -> None:
    """fault case 05 a and b: the case gives Patient/<id>; urn:uuid:<id> is as good."""
    answer = ideal(ibuprofen)
    answer["subject"] = {"reference": form.format(pid=ibuprofen["patient"]["id"])}
    assert score(ibuprofen, answer).metrics["constraints"] is True


@pytest.mark.parametrize(("subject", "reason"), [
    ({"reference": "Patient/urn:uuid:{pid}"}, "(malformed: an id cannot contain ':')"),
    ({"reference": "Patient/pt-999"}, "got 'Patient/pt-999'"),
    ({"display": "the patient"}, "got None"),
    # An absolute URL resolves only to the entry with that fullUrl (https://hl7.org/fhir/R4/bundle.html#references).
    ({"reference": "https://fhir.example.org/Patient/{pid}"}, "got 'https://fhir.example.org/Patient/"),
])
def test_malformed_wrong_or_missing_subjects_fail_constraints(ibuprofen: dict[str, Any], subject: dict[str, str], reason: str) -> None:
    """fault case 05 c, d and e."""
    pid = ibuprofen["patient"]["id"]
    answer = ideal(ibuprofen)
    answer["subject"] = {k: v.format(pid=pid) for k, v in subject.items()}
    result = score(ibuprofen, answer)
    assert result.metrics["constraints"] is False
    assert f"subject: expected urn:uuid:{pid} or Patient/{pid}" in result.message and reason in result.message


def test_status_must_match_the_narrative(ibuprofen: dict[str, Any]) -> None:
    result = score(ibuprofen, ideal(ibuprofen) | {"status": "completed"})
    assert result.metrics["constraints"] is False
    assert "status: expected 'active', got 'completed'" in result.message
    assert result.metrics["schema"] is True


def test_dosage_must_be_absent_when_the_note_gives_none() -> None:
    truth = truth_of("hydrochlorothiazide-dose-unknown")
    assert score(truth, ideal(truth)).outcome == "passed"
    guessed = build_medication_statement(
        status="active", rxcui="310798", display="Hydrochlorothiazide 25 MG Oral Tablet",
        patient_reference=truth["patient"]["reference"], dose_value=25, dose_unit="mg",
    )
    result = score(truth, guessed)
    assert result.metrics["constraints"] is False and result.metrics["safety"] is False
    assert "dosage: expected none (the note documents no dose), got a dosage" in result.message
    assert "got an invented dose" in result.message


def test_dosage_and_as_needed_must_be_present_when_documented() -> None:
    truth = truth_of("tylenol-brand-lookup")
    answer = ideal(truth)
    answer["dosage"][0]["asNeededBoolean"] = False
    assert "as-needed: expected True, got False" in score(truth, answer).message
    answer.pop("dosage")
    result = score(truth, answer)
    assert result.metrics["constraints"] is False and "expected exactly 1 dosage, got 0" in result.message
    assert "dose: expected 650 mg per administration, got none" in result.message


# -- safety -----------------------------------------------------------------------------------

@pytest.mark.parametrize(("value", "code"), [(0.075, "mg"), (75, "ug"), (75000, "ng")])
def test_equal_amounts_in_other_units_are_the_same_dose(value: float, code: str) -> None:
    truth = truth_of("levothyroxine-micrograms")
    answer = ideal(truth)
    dose_of(answer).update(value=value, unit=code, code=code)
    result = score(truth, answer)
    assert result.metrics["safety"] is True, result.message
    assert result.metrics["dose_mg"] == pytest.approx(0.075)


def test_mcg_is_not_ucum_and_cannot_be_verified() -> None:
    truth = truth_of("levothyroxine-micrograms")
    answer = ideal(truth)
    dose_of(answer).update(value=75, unit="mcg", code="mcg")
    result = score(truth, answer)
    assert result.metrics["safety"] is False
    assert "dose: cannot verify (dose unit: 'mcg' is not a UCUM code; use 'ug'" in result.message


def test_a_per_tablet_dose_is_not_the_documented_dose(ibuprofen: dict[str, Any]) -> None:
    answer = ideal(ibuprofen)
    dose_of(answer)["value"] = 200
    result = score(ibuprofen, answer)
    assert result.metrics["safety"] is False
    assert "dose: expected 400 mg per administration, got 200 mg" in result.message
    assert "daily total (the most in 24 hours): expected 1200 mg, got 600 mg (200 mg x 3 doses, 3 per 1 d)" in result.message


def test_an_equivalent_schedule_gives_the_same_daily_total(ibuprofen: dict[str, Any]) -> None:
    answer = ideal(ibuprofen)
    repeat_of(answer).update(frequency=1, period=8, periodUnit="h")
    assert score(ibuprofen, answer).metrics["safety"] is True


def test_a_daily_total_above_the_ceiling_fails_with_its_source() -> None:
    truth = truth_of("tylenol-brand-lookup")
    answer = ideal(truth)
    repeat_of(answer).update(frequency=1, period=2, periodUnit="h")
    result = score(truth, answer)
    assert result.metrics["safety"] is False and result.metrics["daily_total_mg"] == 7800.0
    assert "daily total (the most in 24 hours): expected 2600 mg, got 7800 mg" in result.message
    assert "dose in 24 h: 7800 mg exceeds the ceiling of 4000 mg/day for acetaminophen (oral;" in result.message


def test_a_spread_out_schedule_cannot_hide_a_dose_above_the_daily_ceiling() -> None:
    """5200 mg every other day averages 2600 mg/day but is 5200 mg on the day it is taken: one definition."""
    truth = truth_of("tylenol-brand-lookup")
    answer = ideal(truth)
    dose_of(answer)["value"] = 5200
    repeat_of(answer).update(frequency=1, period=2, periodUnit="d")
    result = score(truth, answer)
    assert result.metrics["daily_total_mg"] == 5200.0  # the daily total is the most within 24 hours, as the ceiling's
    assert result.metrics["safety"] is False
    assert "dose in 24 h: 5200 mg exceeds the ceiling of 4000 mg/day" in result.message
    repeat_of(answer).update(frequency=1, period=16, periodUnit="h")  # every 16 h puts two doses into some 24 h
    assert score(truth, answer).metrics["daily_total_mg"] == 10400.0


def test_a_dose_that_cannot_be_verified_fails(ibuprofen: dict[str, Any]) -> None:
    answer = ideal(ibuprofen)
    answer["dosage"][0]["doseAndRate"] = [{"doseRange": {"low": {"value": 200}, "high": {"value": 400}}}]
    assert "dose: cannot verify (doseRange low: dose system" in score(ibuprofen, answer).message
    answer["dosage"][0]["doseAndRate"] = [{"rateQuantity": {"value": 200, "system": UCUM, "code": "mg/h"}}]
    assert "expected doseQuantity or doseRange, got ['rateQuantity']" in score(ibuprofen, answer).message
    answer = ideal(ibuprofen)
    dose_of(answer).update(system="http://example.org/units")
    assert f"dose system: expected {UCUM}" in score(ibuprofen, answer).message
    answer = ideal(ibuprofen)
    dose_of(answer).update(unit="tablet", code="tablet", value=2)
    result = score(ibuprofen, answer)
    assert result.metrics["safety"] is False and "'tablet' is not a UCUM code" in result.message


def test_a_schedule_the_note_never_gave_is_invented() -> None:
    truth = truth_of("ibuprofen-prn-no-interval")
    answer = ideal(truth)
    assert score(truth, answer).outcome == "passed"
    answer["dosage"][0]["timing"] = {"repeat": {"frequency": 1, "period": 4, "periodUnit": "h"}}
    result = score(truth, answer)
    assert result.metrics["safety"] is False
    assert "timing: expected none (the note gives no interval), got invented 1 per 4 h" in result.message


# -- outcome, message, aggregate ---------------------------------------------------------------

def test_message_lists_each_failing_dimension_with_expected_and_got(ibuprofen: dict[str, Any]) -> None:
    answer = ideal(ibuprofen) | {"status": "stopped"}
    answer["medicationCodeableConcept"] = {"coding": [{"system": RXNORM, "code": "999999"}]}
    result = score(ibuprofen, answer)
    lines = result.message.splitlines()
    assert lines[0] == "2/4 dimensions passed (schema, safety ok)"
    assert "coding: FAILED" in lines and "constraints: FAILED" in lines
    assert "schema: FAILED" not in lines and "safety: FAILED" not in lines
    assert result.details["dimensions"]["schema"] == {"ok": True, "reasons": []}


def test_aggregate_gives_a_pass_rate_per_dimension_and_overall(ibuprofen: dict[str, Any]) -> None:
    good = score(ibuprofen, ideal(ibuprofen)).metrics
    bad_status = score(ibuprofen, ideal(ibuprofen) | {"status": "recorded"}).metrics
    out = aggregate_write([good, bad_status])
    rates = {k: v for k, v in out.items() if k.endswith("_pass_rate")}
    assert rates == {"schema_pass_rate": 0.5, "coding_pass_rate": 1.0, "constraints_pass_rate": 0.5,
                     "safety_pass_rate": 1.0, "all_pass_rate": 0.5}
    empty = aggregate_write([])
    assert all(v is None for k, v in empty.items() if k.endswith("_pass_rate"))
    assert all(v == 0 for k, v in empty.items() if k.startswith("coding_reason_"))


def test_an_empty_answer_fails_every_dimension() -> None:
    truth = truth_of("hydrochlorothiazide-dose-unknown")  # no documented dose: safety must not pass
    result = score(truth, {})
    assert [result.metrics[d] for d in ("schema", "coding", "constraints", "safety")] == [False] * 4
    assert result.outcome == "failed"


def test_a_frequency_range_counts_at_its_maximum_against_the_ceiling() -> None:
    """500 mg 1-3 times every 4 h allows 9,000 mg in a day: above acetaminophen's 4,000 mg."""
    truth = truth_of("tylenol-brand-lookup")
    answer = ideal(truth)
    repeat_of(answer).update(frequencyMax=30)
    result = score(truth, answer)
    assert result.metrics["safety"] is False
    assert "dose in 24 h:" in result.message and "exceeds the ceiling of 4000 mg/day" in result.message
