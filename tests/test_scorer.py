"""Edge cases of the extraction scorer and its run-level aggregation."""

from __future__ import annotations

import random

import pytest

from groundeval.scorers.extraction import aggregate_medications, normalize_display, score_medications


def med(code: str, display: str) -> dict:
    return {"codes": [code], "displays": {code: display}, "text": None, "kind": "coded", "requests": ["r"]}


def ans(code: str | None, display: str) -> dict:
    return {"rxnorm_code": code, "display": display}


TRUTH = [med("316049", "Hydrochlorothiazide 25 MG"), med("243670", "Aspirin 81 MG Oral Tablet"),
         med("314076", "lisinopril 10 MG Oral Tablet")]
PERFECT = [ans("316049", "Hydrochlorothiazide 25 MG"), ans("243670", "Aspirin 81 MG Oral Tablet"),
           ans("314076", "lisinopril 10 MG Oral Tablet")]


def test_empty_truth_and_empty_prediction_score_one() -> None:
    score = score_medications([], [])
    assert score.outcome == "passed"
    assert (score.metrics["precision"], score.metrics["recall"], score.metrics["f1"]) == (1.0, 1.0, 1.0)
    assert score.metrics["display_accuracy"] is None  # nothing to compare


def test_hallucination_on_a_zero_medication_patient_has_precision_zero_and_fails() -> None:
    score = score_medications([], [ans("316049", "Hydrochlorothiazide 25 MG")])
    assert score.metrics["precision"] == 0.0 and score.metrics["f1"] == 0.0
    assert score.outcome == "failed"
    assert "316049" in score.message and "not in the record" in score.message


def test_empty_answer_against_non_empty_truth_fails_with_every_miss_listed() -> None:
    score = score_medications(TRUTH, [])
    assert score.outcome == "failed" and score.metrics["recall"] == 0.0 and score.metrics["fn"] == 3
    for m in TRUTH:
        assert m["codes"][0] in score.message


def test_perfect_answer_passes_in_any_order() -> None:
    rng = random.Random(7)
    for _ in range(5):
        shuffled = PERFECT[:]
        rng.shuffle(shuffled)
        score = score_medications(TRUTH, shuffled)
        assert score.outcome == "passed" and score.metrics["f1"] == 1.0 and score.message == ""


def test_duplicate_predictions_are_neither_hits_nor_false_positives() -> None:
    score = score_medications(TRUTH, [*PERFECT, PERFECT[0], PERFECT[1]])
    assert score.metrics["duplicates"] == 2 and score.metrics["fp"] == 0 and score.metrics["f1"] == 1.0


def test_extra_and_missing_give_partial_with_both_listed() -> None:
    answer = [PERFECT[0], PERFECT[1], ans("310965", "Ibuprofen 200 MG Oral Tablet")]
    score = score_medications(TRUTH, answer, inactive={"310965": ["stopped"]})
    assert score.outcome == "partial"
    assert score.metrics["precision"] == pytest.approx(2 / 3) and score.metrics["recall"] == pytest.approx(2 / 3)
    assert "missing" in score.message and "314076" in score.message
    assert "in the record as stopped, not active" in score.message


def test_display_whitespace_is_normalised_but_case_is_significant() -> None:
    assert normalize_display("  Aspirin   81 MG\tOral Tablet ") == "Aspirin 81 MG Oral Tablet"
    answer = [ans("316049", " Hydrochlorothiazide  25 MG "), ans("243670", "aspirin 81 MG Oral Tablet"),
              PERFECT[2]]
    score = score_medications(TRUTH, answer)
    assert score.metrics["f1"] == 1.0
    assert score.metrics["display_accuracy"] == pytest.approx(2 / 3)
    assert score.outcome == "partial"
    assert "'Aspirin 81 MG Oral Tablet' | 'aspirin 81 MG Oral Tablet'" in score.message


def test_thresholds_decide_pass() -> None:
    answer = PERFECT[:2]
    assert score_medications(TRUTH, answer).outcome == "partial"
    assert score_medications(TRUTH, answer, min_f1=0.8).outcome == "passed"


def test_numeric_codes_and_missing_display_do_not_crash() -> None:
    score = score_medications(TRUTH, [{"rxnorm_code": 316049, "display": None}])
    assert score.metrics["tp"] == 1 and score.metrics["display_correct"] == 0


def test_display_accuracy_not_applicable_when_nothing_matched() -> None:
    score = score_medications(TRUTH, [ans("1", "x")])
    assert score.metrics["display_accuracy"] is None


def test_aggregate_micro_pools_counts_and_macro_averages_cases() -> None:
    a = score_medications(TRUTH, PERFECT).metrics  # 3 tp
    b = score_medications([med("1", "one")], [ans("2", "two")]).metrics  # 1 fp, 1 fn
    agg = aggregate_medications([a, b])
    assert agg["micro_precision"] == pytest.approx(3 / 4)
    assert agg["micro_recall"] == pytest.approx(3 / 4)
    assert agg["macro_f1"] == pytest.approx(0.5)
    assert agg["micro_display_accuracy"] == 1.0  # only matched medications are checked
    assert agg["macro_display_accuracy"] == 1.0  # b has no applicable display accuracy


def test_aggregate_of_nothing_is_all_none() -> None:
    assert set(aggregate_medications([]).values()) == {None}
