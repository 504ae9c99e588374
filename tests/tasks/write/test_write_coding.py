"""Why a coding failed (``coding_reason``), the catalog's facts, and validator/scorer agreement."""

from __future__ import annotations

import json
from typing import Any

import pytest

from groundeval.datasets import Case, default_data_dir
from groundeval.scoring import Score
from groundeval.tasks.write.scorer import CODING_REASONS, aggregate_write
from groundeval.tasks.write.task import WriteTask
from groundeval.tasks.write.tools import build_medication_statement, validate_medication_statement

RXNORM = "http://www.nlm.nih.gov/research/umls/rxnorm"
RXNORM_OID = "urn:oid:2.16.840.1.113883.6.88"
TASK = WriteTask()


def case(case_id: str) -> Case:
    return TASK.load_case(default_data_dir("write") / f"{case_id}.json")


@pytest.fixture(scope="module")
def ibuprofen() -> Case:
    return case("ibuprofen-two-tablets")


def answer_for(c: Case) -> dict[str, Any]:
    truth = TASK.truth(c)
    med = truth["medication"]
    return build_medication_statement(
        status=truth["status"], rxcui=med["rxcui"], display=med["display"], medication_text=med["text"],
        patient_reference=truth["patient"]["reference"],
    ) if truth["dosage"] is None else build_medication_statement(
        status=truth["status"], rxcui=med["rxcui"], display=med["display"], medication_text=med["text"],
        patient_reference=truth["patient"]["reference"], dose_value=truth["dosage"]["dose"]["value"],
        dose_unit="mg", frequency=truth["dosage"]["frequency"], period=truth["dosage"]["period"],
        period_unit=truth["dosage"]["period_unit"], as_needed=truth["dosage"]["as_needed"],
    )


def score(c: Case, answer: dict[str, Any]) -> Score:
    return TASK.score(c, TASK.truth(c), TASK.parse(c, json.dumps(answer)))


def coding(answer: dict[str, Any]) -> dict[str, Any]:
    first: dict[str, Any] = answer["medicationCodeableConcept"]["coding"][0]
    return first


# -- coding_reason labels ------------------------------------------------------------------------

def test_codings_are_a_set_a_repeat_is_neutral_and_a_second_display_is_a_contradiction(ibuprofen: Case) -> None:
    answer = answer_for(ibuprofen)
    right = coding(answer)
    answer["medicationCodeableConcept"]["coding"] = [right, dict(right)]
    assert score(ibuprofen, answer).metrics["coding"] is True
    for hedge in ([right, {**right, "display": "Ibuprofen 200 MG"}], [{**right, "display": "Ibuprofen 200 MG"}, right]):
        answer["medicationCodeableConcept"]["coding"] = hedge
        result = score(ibuprofen, answer)
        assert result.metrics["coding"] is False and result.metrics["coding_reason"] == "display_mismatch"
        assert "a contradiction: the same RxCUI with two displays" in result.message


def test_a_right_code_has_no_reason(ibuprofen: Case) -> None:
    result = score(ibuprofen, answer_for(ibuprofen))
    assert result.metrics["coding"] is True and result.metrics["coding_reason"] is None
    assert result.details["coding_reason"] is None


@pytest.mark.parametrize(("change", "label", "reason"), [
    (lambda a: coding(a).update(display="ibuprofen 200 mg tablet"), "display_mismatch", "display: expected"),
    (lambda a: coding(a).update(code="198405", display="Ibuprofen 100 MG Oral Tablet"), "wrong_drug",
     "RxCUI: expected 310965 (Ibuprofen 200 MG Oral Tablet), got 198405"),
    (lambda a: coding(a).update(code="9999999", display="Ibuprofen 800 MG Oral Tablet"), "not_in_catalog",
     "got 9999999"),
    (lambda a: coding(a).update(system=RXNORM_OID), "wrong_system", f"system: expected {RXNORM}"),
    (lambda a: coding(a).update(system="http://hl7.org/fhir/sid/ndc", code="0904-5853-61"), "wrong_system",
     "got no RxNorm code (http://hl7.org/fhir/sid/ndc|0904-5853-61)"),
    (lambda a: a["medicationCodeableConcept"].pop("coding"), "missing", "got no RxNorm code"),
    (lambda a: a.pop("medicationCodeableConcept"), "missing", "got no medicationCodeableConcept"),
    (lambda a: a["medicationCodeableConcept"]["coding"].append(
        {"system": RXNORM, "code": "198405", "display": "Ibuprofen 100 MG Oral Tablet"}), "wrong_drug",
     "expected only 310965, got also 198405"),
], ids=["display", "other-catalog-drug", "invented-code", "oid", "ndc", "no-coding", "no-concept", "two-codes"])
def test_each_coding_failure_has_its_label(ibuprofen: Case, change: Any, label: str, reason: str) -> None:
    answer = answer_for(ibuprofen)
    change(answer)
    result = score(ibuprofen, answer)
    assert result.metrics["coding"] is False
    assert result.metrics["coding_reason"] == label and result.details["coding_reason"] == label
    assert reason in result.message
    assert label in CODING_REASONS


def test_labels_for_a_drug_absent_from_the_catalog() -> None:
    gabapentin = case("gabapentin-not-in-catalog")
    good = answer_for(gabapentin)
    assert score(gabapentin, good).metrics["coding_reason"] is None
    invented = json.loads(json.dumps(good))
    invented["medicationCodeableConcept"]["coding"] = [{"system": RXNORM, "code": "310965"}]
    assert score(gabapentin, invented).metrics["coding_reason"] == "wrong_drug"  # a catalog drug's code
    invented["medicationCodeableConcept"]["coding"][0]["code"] = "9999999"
    assert score(gabapentin, invented).metrics["coding_reason"] == "not_in_catalog"
    nameless = json.loads(json.dumps(good))
    nameless["medicationCodeableConcept"]["text"] = "a seizure medicine"
    assert score(gabapentin, nameless).metrics["coding_reason"] == "missing"


@pytest.mark.parametrize(("code", "label"), [
    ("RX-IBU-800", "fabricated"),  # not an RxCUI at all
    ("0310965", "fabricated"),  # a leading zero: no RxCUI is written so
    ("310965.0", "fabricated"),
    ("123456789", "fabricated"),  # 9 digits: longer than RxNorm's RXCUI column
    ("198405", "wrong_drug"),  # a real RxCUI the packaged RxNorm data holds, of another drug (Ibuprofen 100 MG)
    ("9999999", "not_in_catalog"),  # of an RxCUI's form, outside the site catalog
])
def test_three_kinds_of_wrong_rxnorm_code_get_three_labels(ibuprofen: Case, code: str, label: str) -> None:
    answer = answer_for(ibuprofen)
    coding(answer).update(code=code)
    result = score(ibuprofen, answer)
    assert result.metrics["coding"] is False and result.metrics["coding_reason"] == label
    assert f"got {code}" in result.message
    gabapentin = case("gabapentin-not-in-catalog")  # a drug the catalog lacks: any code is wrong, labelled alike
    invented = answer_for(gabapentin)
    invented["medicationCodeableConcept"]["coding"] = [{"system": RXNORM, "code": code}]
    assert score(gabapentin, invented).metrics["coding_reason"] == label


def test_the_validator_and_the_label_share_one_rxcui_form(ibuprofen: Case) -> None:
    answer = answer_for(ibuprofen)
    coding(answer).update(code="0310965")
    issues = [i for i in validate_medication_statement(answer)["issues"] if i["severity"] == "error"]
    assert [i["kind"] for i in issues] == ["coding"] and "is not an RxCUI" in issues[0]["problem"]
    result = score(ibuprofen, answer)
    assert result.metrics["schema"] is True and result.metrics["coding_reason"] == "fabricated"  # scored once


def test_the_aggregate_counts_each_label(ibuprofen: Case) -> None:
    good = score(ibuprofen, answer_for(ibuprofen)).metrics
    oid = answer_for(ibuprofen)
    coding(oid).update(system=RXNORM_OID)
    other = answer_for(ibuprofen)
    coding(other).update(code="198405")
    metrics = [good, score(ibuprofen, oid).metrics, score(ibuprofen, other).metrics, score(ibuprofen, {}).metrics]
    out = aggregate_write(metrics)
    assert {k: v for k, v in out.items() if k.startswith("coding_reason_")} == {
        "coding_reason_display_mismatch": 0, "coding_reason_wrong_drug": 1, "coding_reason_not_in_catalog": 0,
        "coding_reason_fabricated": 0, "coding_reason_wrong_system": 1, "coding_reason_missing": 1,
    }
    assert out["coding_pass_rate"] == 0.25


# -- the catalog's facts -------------------------------------------------------------------------

def test_each_case_and_the_task_name_the_catalog_source_and_snapshot(ibuprofen: Case) -> None:
    facts = score(ibuprofen, answer_for(ibuprofen)).details["catalog"]
    assert facts["file"] == "rxnorm_catalog.json" and len(facts["sha256"]) == 64
    assert facts["snapshot_date"] == "2025-08-18" and "Synthea" in facts["source"]
    assert facts["entries"] > 40
    run = TASK.run_facts()
    assert run["catalog"] == facts
    assert run["max_daily_doses"]["file"] == "max_daily_doses.json" and run["max_daily_doses"]["rows"] > 20
    json.dumps(run)  # JSON-safe for the run record


# -- the agent's validator and the scorer agree --------------------------------------------------

def test_an_rxnorm_oid_is_an_error_to_the_agent_and_a_coding_failure_to_the_scorer(ibuprofen: Case) -> None:
    """FHIR: a code system URI listed in terminologies-systems SHALL be used instead of its OID."""
    answer = answer_for(ibuprofen)
    coding(answer)["system"] = RXNORM_OID
    report = validate_medication_statement(answer)
    assert report["ok"] is False
    [issue] = [i for i in report["issues"] if i["severity"] == "error"]
    assert issue["kind"] == "coding" and issue["path"].endswith("coding[0].system") and RXNORM in issue["fix"]
    result = score(ibuprofen, answer)
    assert result.metrics["coding"] is False and result.metrics["coding_reason"] == "wrong_system"
    assert result.metrics["schema"] is True  # counted once, by coding
    coding(answer)["system"] = RXNORM
    assert validate_medication_statement(answer)["ok"] is True
    assert score(ibuprofen, answer).outcome == "passed"


@pytest.mark.parametrize("change", [
    lambda q: q.update(code="mg/h", unit="mg/h"),
    lambda q: q.update(code="TAB", unit="tablet", value=2, system="http://terminology.hl7.org/CodeSystem/v3-orderableDrugForm"),
    lambda q: q.update(code="{tablet}", unit="tablet", value=2),
    lambda q: q.update(code="mcg", unit="mcg"),
    lambda q: q.update(code="MG"),
], ids=["rate", "TAB", "annotation", "mcg", "megagauss"])
def test_schema_passes_exactly_when_the_validator_has_no_non_coding_error(ibuprofen: Case, change: Any) -> None:
    answer = answer_for(ibuprofen)
    change(answer["dosage"][0]["doseAndRate"][0]["doseQuantity"])
    report = validate_medication_statement(answer)
    result = score(ibuprofen, answer)
    assert result.metrics["schema"] is report["ok"]


def test_a_number_for_the_rxcui_is_a_schema_error_not_only_a_coding_one(ibuprofen: Case) -> None:
    answer = answer_for(ibuprofen)
    coding(answer)["code"] = 310965
    [issue] = [i for i in validate_medication_statement(answer)["issues"] if i["severity"] == "error"]
    assert issue["kind"] == "type"
    result = score(ibuprofen, answer)
    assert result.metrics["schema"] is False and "is not an RxCUI" in result.message
