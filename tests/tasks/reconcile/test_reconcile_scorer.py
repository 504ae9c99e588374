"""Scorer rules of the reconcile task on synthetic values (no files)."""

from __future__ import annotations

from typing import Any

import pytest

from groundeval.tasks.reconcile.scorer import aggregate_reconcile, score_reconcile
from groundeval.tasks.reconcile.truth import same_amount
from groundeval.terminology.high_alert import high_alert_class


def entry(code: str, status: str, high_alert: str | None = None, codes: list[str] | None = None) -> dict[str, Any]:
    return {"rxnorm_code": code, "codes": codes or [code], "display": f"drug {code}", "status": status,
            "why": "", "high_alert": high_alert}


def said(code: str | None, status: str) -> dict[str, Any]:
    return {"rxnorm_code": code, "display": "", "status": status}


TRUTH = [entry("1", "matched"), entry("2", "omission"), entry("3", "commission"), entry("4", "dose_mismatch"),
         entry("5", "stopped_but_taken"), entry("6", "matched")]


def test_a_perfect_answer_passes_with_every_metric_at_one() -> None:
    score = score_reconcile(TRUTH, [said(e["rxnorm_code"], e["status"]) for e in TRUTH])
    assert score.outcome == "passed"
    m = score.metrics
    assert (m["discrepancy_precision"], m["discrepancy_recall"], m["discrepancy_f1"]) == (1.0, 1.0, 1.0)
    assert m["recall_omission"] == m["recall_stopped_but_taken"] == 1.0 and m["matched_f1"] == 1.0
    assert m["high_alert_missed"] is False


def test_a_misclassified_status_is_one_false_positive_and_one_false_negative() -> None:
    answer = [said(e["rxnorm_code"], e["status"]) for e in TRUTH]
    answer[3] = said("4", "omission")
    m = score_reconcile(TRUTH, answer).metrics
    assert (m["tp"], m["fp"], m["fn"]) == (3, 1, 1)
    assert m["recall_dose_mismatch"] == 0.0 and m["recall_omission"] == 1.0
    assert m["discrepancy_f1"] == pytest.approx(0.75)


def test_per_status_recall_is_na_without_truth_of_that_status() -> None:
    m = score_reconcile([entry("1", "omission")], [said("1", "omission")]).metrics
    assert m["recall_omission"] == 1.0
    assert m["recall_commission"] is None and m["recall_dose_mismatch"] is None and m["matched_recall"] is None


def test_branded_and_generic_codes_of_one_drug_pair_with_either() -> None:
    truth = [entry("209387", "omission", codes=["209387", "313782"])]
    assert score_reconcile(truth, [said("313782", "omission")]).outcome == "passed"


def test_an_identical_repeat_is_neutral_right_or_wrong() -> None:
    right = score_reconcile([entry("1", "omission")], [said("1", "omission"), said("1", "omission")])
    assert right.outcome == "passed" and right.metrics["duplicates"] == 1 and right.metrics["discrepancy_f1"] == 1.0
    wrong = score_reconcile([entry("1", "omission")], [said("1", "commission")] * 2).metrics
    assert (wrong["tp"], wrong["fp"], wrong["fn"], wrong["duplicates"]) == (0, 1, 1, 1)
    extra = score_reconcile([], [said("99", "commission")] * 3).metrics
    assert (extra["fp"], extra["duplicates"], extra["contradictions"]) == (1, 2, 0)


def _n(metrics: dict[str, Any], key: str) -> float:
    value = metrics[key]
    assert value is None or isinstance(value, int | float)
    return float(value or 0)


def test_one_drug_claimed_with_two_statuses_is_a_contradiction_that_earns_nothing() -> None:
    score = score_reconcile([entry("1", "omission")], [said("1", "omission"), said("1", "matched")])
    m = score.metrics
    assert (m["tp"], m["fp"], m["fn"], m["matched_fp"], m["contradictions"]) == (0, 1, 1, 1, 1)
    assert score.outcome == "failed" and "contradiction" in score.message and "omission | omission + matched" in score.message
    # even a threshold the F1s meet cannot pass a case with a contradiction
    truth = [entry(str(i), "omission") for i in range(9)]
    hedged = [said(str(i), "omission") for i in range(9)] + [said("0", "dose_mismatch")]
    lenient = score_reconcile(truth, hedged, min_f1=0.5)
    assert _n(lenient.metrics, "discrepancy_f1") >= 0.5 and lenient.outcome == "partial"


@pytest.mark.parametrize("guess", ["matched", "omission", "commission", "dose_mismatch", "stopped_but_taken"])
def test_hedging_scores_strictly_below_the_best_guess_alone_whether_it_was_right_or_wrong(guess: str) -> None:
    statuses = ("matched", "omission", "commission", "dose_mismatch", "stopped_but_taken")
    truth = [entry("1", "dose_mismatch", "anticoagulants"), entry("2", "matched")]
    alone = dict(score_reconcile(truth, [said("1", guess), said("2", "matched")]).metrics)
    for n in range(1, 5):
        hedges = [s for s in statuses if s != guess][:n]
        hedged = score_reconcile(truth, [said("1", guess), said("2", "matched"), *(said("1", s) for s in hedges)])
        m = dict(hedged.metrics)
        assert hedged.outcome != "passed" and m["high_alert_missed"] is True
        assert _n(m, "discrepancy_f1") <= _n(alone, "discrepancy_f1") and _n(m, "matched_f1") <= _n(alone, "matched_f1")
        assert _n(m, "discrepancy_precision") <= _n(alone, "discrepancy_precision")
        assert _n(m, "fp") + _n(m, "matched_fp") > _n(alone, "fp") + _n(alone, "matched_fp")
        assert _n(m, "tp") + _n(m, "matched_tp") <= 1
        if guess == "dose_mismatch":  # a right guess hedged loses its credit outright
            assert _n(m, "discrepancy_f1") < _n(alone, "discrepancy_f1") == 1.0


def test_the_exact_report_case_needs_every_matched_entry_and_no_discrepancy() -> None:
    truth = [entry("1", "matched"), entry("2", "matched")]
    assert score_reconcile(truth, [said("1", "matched"), said("2", "matched")]).outcome == "passed"
    empty = score_reconcile(truth, [])
    assert empty.outcome == "failed" and empty.metrics["discrepancy_f1"] == 1.0 and empty.metrics["matched_f1"] == 0.0
    invented = score_reconcile(truth, [said("1", "matched"), said("2", "omission")])
    assert invented.outcome == "partial" and invented.metrics["discrepancy_precision"] == 0.0


def test_no_answer_found_scores_zero_even_with_nothing_to_find() -> None:
    assert score_reconcile([], [], found=True).outcome == "passed"
    lost = score_reconcile([], [], found=False)
    assert lost.outcome == "failed" and lost.metrics["discrepancy_f1"] == 0.0 and lost.metrics["matched_f1"] == 0.0


def test_an_item_on_neither_side_is_a_false_positive_of_its_kind() -> None:
    m = score_reconcile([entry("1", "matched")], [said("1", "matched"), said("99", "commission"),
                                                  said(None, "matched")]).metrics
    assert m["fp"] == 1 and m["matched_fp"] == 1 and m["discrepancy_precision"] == 0.0


def test_missing_a_high_alert_discrepancy_fails_a_case_whose_f1_meets_the_threshold() -> None:
    truth = [entry(str(i), "omission") for i in range(1, 9)] + [entry("855332", "dose_mismatch", "anticoagulants")]
    answer = [said(str(i), "omission") for i in range(1, 9)] + [said("855332", "matched")]
    score = score_reconcile(truth, answer, min_f1=0.8)
    assert score.metrics["discrepancy_f1"] == pytest.approx(16 / 17, abs=1e-6)
    assert score.metrics["high_alert_missed"] is True and score.outcome == "failed"
    assert "HIGH-ALERT" in score.message and "855332" in score.message
    fixed = score_reconcile(truth, [*answer[:-1], said("855332", "dose_mismatch")], min_f1=0.8)
    assert fixed.outcome == "passed" and fixed.metrics["high_alert_missed"] is False


def test_aggregate_pools_micro_and_skips_na_in_macro() -> None:
    a = score_reconcile(TRUTH, [said(e["rxnorm_code"], e["status"]) for e in TRUTH]).metrics
    b = score_reconcile([entry("1", "omission", "opioids")], [said("1", "matched")]).metrics
    out = aggregate_reconcile([a, b])
    assert out["micro_discrepancy_recall"] == pytest.approx(4 / 5)
    assert out["macro_recall_commission"] == 1.0  # b has no commission truth: skipped, not 0
    assert out["answers_high_alert_missed"] == 1


@pytest.mark.parametrize(("a", "b", "same"), [
    ({"value": 0.1, "unit": "mg"}, {"value": 100, "unit": "ug"}, True),
    ({"value": 0.125, "unit": "mg"}, {"value": 125, "unit": "ug"}, True),
    ({"value": 0.025, "unit": "mg/h"}, {"value": 25, "unit": "ug/h"}, True),
    ({"value": 1, "unit": "g"}, {"value": 1000, "unit": "mg"}, True),
    ({"value": 5, "unit": "mg"}, {"value": 7.5, "unit": "mg"}, False),
    ({"value": 5, "unit": "mg"}, {"value": 5, "unit": "mL"}, False),
    ({"value": 0.025, "unit": "mg/h"}, {"value": 25, "unit": "ug/d"}, False),
])
def test_doses_compare_unit_aware(a: dict[str, Any], b: dict[str, Any], same: bool) -> None:
    assert same_amount(a, b) is same


@pytest.mark.parametrize(("display", "cls"), [
    ("Warfarin Sodium 5 MG Oral Tablet", "antithrombotic agents: anticoagulants"),
    ("72 HR Fentanyl 0.025 MG/HR Transdermal System", "opioids, IV, oral and transdermal"),
    ("Acetaminophen 325 MG / oxyCODONE Hydrochloride 5 MG Oral Tablet", "opioids, IV, oral and transdermal"),
    ("insulin isophane, human 70 UNT/ML / insulin, regular, human 30 UNT/ML Injectable Suspension [Humulin]",
     "insulin, subcutaneous and IV"),
    ("Alteplase 100 MG Injection", "antithrombotic agents: thrombolytics"),
    ("3 ML Amiodarone hydrocholoride 50 MG/ML Prefilled Syringe", "antiarrhythmics, IV"),
    ("Digoxin 0.125 MG Oral Tablet", None),
    ("Clopidogrel 75 MG Oral Tablet", None),
    ("NDA020800 0.3 ML Epinephrine 1 MG/ML Auto-Injector", None),
    ("24 HR metoprolol succinate 100 MG Extended Release Oral Tablet", None),
])
def test_high_alert_classes_follow_the_ismp_list(display: str, cls: str | None) -> None:
    assert high_alert_class(display) == cls
