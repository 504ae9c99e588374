"""Edge cases of the extraction scorer and its run-level aggregation."""

from __future__ import annotations

import random
from typing import Any

import pytest

from groundeval.scoring import Metric, Score
from groundeval.tasks.extraction.scorer import aggregate_medications, normalize_display, score_medications
from tests._paths import REPO


def med(code: str, display: str) -> dict[str, Any]:
    return {"codes": [code], "displays": {code: [display]}, "text": None, "kind": "coded", "requests": ["r"]}


def ans(code: str | None, display: str) -> dict[str, Any]:
    return {"rxnorm_code": code, "display": display}


TRUTH = [med("316049", "Hydrochlorothiazide 25 MG"), med("243670", "Aspirin 81 MG Oral Tablet"),
         med("314076", "lisinopril 10 MG Oral Tablet")]
PERFECT = [ans("316049", "Hydrochlorothiazide 25 MG"), ans("243670", "Aspirin 81 MG Oral Tablet"),
           ans("314076", "lisinopril 10 MG Oral Tablet")]


def _prf(score: Score) -> tuple[Metric, Metric, Metric]:
    return score.metrics["precision"], score.metrics["recall"], score.metrics["f1"]


def test_empty_truth_and_empty_answer_found_pass_with_f1_one_and_no_precision_or_recall() -> None:
    score = score_medications([], [])
    assert score.outcome == "passed"
    assert _prf(score) == (None, None, 1.0)  # nothing claimed, nothing to find; F1 still decides
    assert score.metrics["display_accuracy"] is None  # nothing to compare


def test_empty_truth_and_no_answer_found_fails_with_f1_zero() -> None:
    # What the runner scores for an agent error, a truncation or a reply without a JSON array.
    score = score_medications([], [], found=False)
    assert score.outcome == "failed" and _prf(score) == (None, None, 0.0)


def test_no_answer_found_fails_even_when_the_threshold_is_zero() -> None:
    assert score_medications(TRUTH, [], found=False, min_f1=0.0).outcome == "failed"


def test_hallucination_on_a_zero_medication_patient_has_precision_zero_and_fails() -> None:
    score = score_medications([], [ans("316049", "Hydrochlorothiazide 25 MG")])
    assert _prf(score) == (0.0, None, 0.0)
    assert score.outcome == "failed"
    assert "316049" in score.message and "not in the record" in score.message
    assert "recall n/a" in score.message


def test_empty_answer_against_non_empty_truth_fails_with_every_miss_listed() -> None:
    score = score_medications(TRUTH, [])
    assert score.outcome == "failed" and _prf(score) == (None, 0.0, 0.0) and score.metrics["fn"] == 3
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
    assert "in the record, but not an active order: stopped" in score.message


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


def test_aggregate_macro_skips_not_applicable_values_per_metric() -> None:
    a = score_medications(TRUTH, PERFECT).metrics  # p 1, r 1, f1 1
    b = score_medications([], [ans("1", "x")]).metrics  # p 0, r n/a, f1 0
    c = score_medications(TRUTH, []).metrics  # p n/a, r 0, f1 0
    agg = aggregate_medications([a, b, c])
    assert agg["macro_precision"] == pytest.approx(0.5)  # a and b
    assert agg["macro_recall"] == pytest.approx(0.5)  # a and c
    assert agg["macro_f1"] == pytest.approx(1 / 3)  # every case
    assert agg["micro_precision"] == pytest.approx(3 / 4) and agg["micro_recall"] == pytest.approx(3 / 6)


def test_aggregate_with_a_failed_empty_truth_case_keeps_micro_f1_at_one() -> None:
    """Micro pools cannot see an empty answer on an empty truth: pass rate and answer rate lead."""
    good = {**score_medications(TRUTH, PERFECT).metrics, "format_ok": True}
    empty_ok = {**score_medications([], []).metrics, "format_ok": True}
    failed = {**score_medications([], [], found=False).metrics, "format_ok": False}
    agg = aggregate_medications([good, empty_ok, failed])
    assert agg["micro_f1"] == 1.0 and agg["micro_precision"] == 1.0 and agg["micro_recall"] == 1.0
    assert agg["macro_f1"] == pytest.approx(2 / 3)  # macro F1 does see the failure
    assert agg["macro_recall"] == 1.0  # only the case with something to find
    assert agg["format_not_ok"] == 1


def test_a_wrong_drug_listed_twice_is_one_false_positive_and_one_duplicate() -> None:
    score = score_medications(TRUTH, [*PERFECT, ans("999", "Made-up 1 MG"), ans("999", "Made-up 1 MG"),
                                      ans(None, "vitamin d"), ans(None, " Vitamin  D ")])
    assert (score.metrics["fp"], score.metrics["duplicates"], score.metrics["contradictions"]) == (2, 2, 0)


def test_one_drug_with_a_right_and_a_wrong_display_is_a_contradiction_and_cannot_pass() -> None:
    hedged = [*PERFECT, ans("316049", "hydrochlorothiazide 25 mg")]
    score = score_medications(TRUTH, hedged, min_display_accuracy=0.5)
    m = score.metrics
    assert (m["tp"], m["fp"], m["duplicates"], m["contradictions"], m["display_correct"]) == (3, 0, 1, 1, 2)
    assert score.outcome == "partial" and "contradiction" in score.message
    assert "'Hydrochlorothiazide 25 MG' + 'hydrochlorothiazide 25 mg'" in score.message
    # the wrong display first and the right one after: the same contradiction, whatever the order
    assert score_medications(TRUTH, [*PERFECT[1:], ans("316049", "x"), PERFECT[0]]).metrics["contradictions"] == 1


def test_two_accepted_spellings_of_one_drug_contradict_nothing() -> None:
    truth = [{"codes": ["243670"], "displays": {"243670": ["Aspirin 81 MG Oral Tablet", "aspirin 81 MG Oral Tablet"]},
              "text": None, "kind": "coded", "requests": ["r1", "r2"]}]
    score = score_medications(truth, [ans("243670", "Aspirin 81 MG Oral Tablet"), ans("243670", "aspirin 81 MG Oral Tablet")])
    assert score.outcome == "passed" and score.metrics["contradictions"] == 0 and score.metrics["duplicates"] == 1


def test_aggregate_counts_duplicates_and_cases_with_duplicates() -> None:
    dup = score_medications(TRUTH, [*PERFECT, PERFECT[0], PERFECT[1]]).metrics
    once = score_medications(TRUTH, [*PERFECT, PERFECT[2]]).metrics
    clean = score_medications(TRUTH, PERFECT).metrics
    agg = aggregate_medications([dup, once, clean])
    assert (agg["duplicates"], agg["cases_with_duplicates"], agg["format_not_ok"]) == (3, 2, 0)


def test_aggregate_of_nothing_has_no_averages_and_zero_counts() -> None:
    agg = aggregate_medications([])
    assert {k: v for k, v in agg.items() if k.startswith(("micro_", "macro_"))} == dict.fromkeys(
        ["micro_precision", "micro_recall", "micro_f1", "micro_display_accuracy",
         "macro_precision", "macro_recall", "macro_f1", "macro_display_accuracy"])
    assert (agg["format_not_ok"], agg["duplicates"], agg["cases_with_duplicates"]) == (0, 0, 0)


def test_task_scores_a_missing_answer_on_an_empty_truth_as_a_failure() -> None:
    """The runner scores no_answer/truncated cases as ``task.parse(case, "")``: that must cost F1 and pass."""

    from groundeval.tasks.extraction.task import ExtractionTask

    task = ExtractionTask()
    fixtures = REPO / "fixtures" / "extraction"
    (path,) = fixtures.glob("Clemente_Kreiger_*.json")  # no active medication
    case = task.load_case(path)
    truth = task.truth(case)
    assert truth["medications"] == []
    missing = task.score(case, truth, task.parse(case, ""))
    assert missing.outcome == "failed" and _prf(missing) == (None, None, 0.0)
    assert missing.metrics["format_ok"] is False and "cannot pass" in missing.message
    none = task.score(case, truth, task.parse(case, "[]"))
    assert none.outcome == "passed" and _prf(none) == (None, None, 1.0) and none.metrics["format_ok"] is True
