"""The labs scorer: value, category and direction accuracy, the critical rule, no-answer rules, macro F1."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from groundeval.clinical.lab_thresholds import default_thresholds
from groundeval.scoring import Parsed
from groundeval.tasks.labs import LabsTask
from groundeval.tasks.labs.prompt import answer_from_truth
from groundeval.tasks.labs.scorer import aggregate_labs, macro_f1, score_labs
from tests._paths import REPO

CASES = REPO / "fixtures" / "labs"
TASK = LabsTask()
TABLE = default_thresholds()


def _truth(prefix: str) -> list[dict[str, Any]]:
    (path,) = CASES.glob(f"{prefix}*.json")
    entries: list[dict[str, Any]] = TASK.truth(TASK.load_case(path))["tests"]
    return entries


def _answer(prefix: str) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    truth = _truth(prefix)
    return truth, answer_from_truth({"tests": truth})


def _entry(answer: list[dict[str, Any]], loinc: str) -> dict[str, Any]:
    return next(a for a in answer if a["loinc"] == loinc)


def test_the_answer_derived_from_the_truth_passes_with_every_count_right() -> None:
    truth, answer = _answer("Delores12")
    score = score_labs(TABLE, truth, answer)
    assert score.outcome == "passed" and score.message == ""
    m = score.metrics
    assert (m["tests_with_result"], m["tests_without_result"], m["values_correct"]) == (6, 1, 6)
    assert m["value_accuracy"] == m["category_accuracy"] == m["direction_accuracy"] == m["no_result_accuracy"] == 1.0
    assert str(m["category_pairs"]).startswith("4548-4=prediabetes>prediabetes;2339-0=normal>normal")


def test_a_value_in_another_accepted_unit_within_half_a_percent_is_the_same_value() -> None:
    truth, answer = _answer("variant-unit-glucose-mmol--")
    glucose = _entry(answer, "2339-0")
    assert (glucose["value"], glucose["unit"]) == (7.0, "mmol/L")
    glucose.update(value=126.1, unit="mg/dL")
    assert score_labs(TABLE, truth, answer).outcome == "passed"
    glucose.update(value=127.0)  # 0.7 % off
    assert score_labs(TABLE, truth, answer).metrics["values_correct"] == 5
    glucose.update(value=126.1, unit="mg/dl")  # not UCUM (case-sensitive)
    assert score_labs(TABLE, truth, answer).metrics["value_accuracy"] == pytest.approx(5 / 6, abs=1e-6)
    glucose.update(value=7.0, unit="mmol/L", date="2025-05-07T05:46:49+00:00")  # a dateTime is cut to its date
    assert score_labs(TABLE, truth, answer).outcome == "passed"


def test_the_previous_value_or_a_wrong_date_is_a_wrong_value() -> None:
    truth, answer = _answer("Delores12")
    a1c = next(t for t in truth if t["loinc"] == "4548-4")
    _entry(answer, "4548-4").update(value=a1c["previous"]["value_in_unit"], date=a1c["previous"]["date"])
    score = score_labs(TABLE, truth, answer)
    assert score.outcome == "partial" and score.metrics["values_correct"] == 5
    assert "4548-4 Hemoglobin A1c value: 5.98 % on 2025-05-07 |" in score.message


def test_a_missed_critical_result_fails_the_case_whatever_else_is_right() -> None:
    truth, answer = _answer("variant-critical-potassium--")
    _entry(answer, "6298-4")["critical"] = False
    score = score_labs(TABLE, truth, answer)
    assert score.outcome == "failed" and score.metrics["critical_missed"] is True
    assert score.metrics["category_accuracy"] == 1.0
    assert score.message.splitlines()[1].startswith("CRITICAL result not flagged")
    assert score.details["critical_missed"] == [{"code": "6298-4", "display": "Potassium", "note": "6.8 mmol/L"}]
    _entry(answer, "6298-4")["critical"] = "true"  # only JSON true flags it
    assert score_labs(TABLE, truth, answer).metrics["critical_missed"] is True


def test_flagging_everything_critical_cannot_pass() -> None:
    truth, answer = _answer("Delores12")
    for entry in answer:
        entry["critical"] = True
    score = score_labs(TABLE, truth, answer)
    assert score.outcome == "partial" and score.metrics["critical_false_alarms"] == 7
    assert score.metrics["critical_missed"] is False


def test_a_childs_result_is_neither_missed_nor_a_false_alarm_whatever_its_flag() -> None:
    truth, answer = _answer("Johnie961")
    assert {t["critical"] for t in truth if t["result"]} == {None}
    for flag in (True, False):
        for entry in answer:
            if entry["category"] == "not_applicable":
                entry["critical"] = flag
        assert score_labs(TABLE, truth, answer).outcome == "passed"


def test_a_direction_without_a_previous_result_is_invented_and_null_everywhere_earns_nothing() -> None:
    truth, answer = _answer("Beatrice_Aufderhar")
    single = [t["loinc"] for t in truth if t["result"] and t["previous"] is None]
    assert single == ["2339-0", "6298-4"]
    _entry(answer, "2339-0")["direction"] = "up"
    score = score_labs(TABLE, truth, answer)
    assert score.outcome == "partial" and score.metrics["directions_invented"] == 1
    assert score.metrics["direction_accuracy"] == 1.0 and score.metrics["tests_with_previous"] == 2
    for entry in answer:
        entry["direction"] = None
    hedged = score_labs(TABLE, truth, answer).metrics
    assert hedged["direction_accuracy"] == 0.0 and hedged["directions_invented"] == 0


@pytest.mark.parametrize("said", [["up", "down"], {"6298-4": "up"}, 0, False, "none"])
def test_any_direction_but_null_without_a_previous_result_is_invented(said: object) -> None:
    truth, answer = _answer("Beatrice_Aufderhar")
    _entry(answer, "6298-4")["direction"] = said
    score = score_labs(TABLE, truth, answer)
    assert score.outcome == "partial" and score.metrics["directions_invented"] == 1
    _entry(answer, "6298-4")["direction"] = ""
    assert score_labs(TABLE, truth, answer).outcome == "passed"


def test_a_direction_that_is_not_a_string_null_or_object_of_strings_is_a_malformed_entry() -> None:
    case = TASK.load_case(next(CASES.glob("Beatrice_Aufderhar*.json")))
    answer = answer_from_truth(TASK.truth(case))
    assert TASK.parse(case, json.dumps(answer)).format_ok is True
    _entry(answer, "6298-4")["direction"] = ["up", "down"]
    parsed = TASK.parse(case, json.dumps(answer))
    assert parsed.format_ok is False and parsed.found
    assert 'direction ["up", "down"]' in str(parsed.error)
    score = TASK.score(case, TASK.truth(case), parsed)
    assert score.outcome == "partial" and score.message.startswith("answer format: malformed entries")


def test_missing_duplicate_and_extra_entries() -> None:
    truth, answer = _answer("Delores12")
    same = {**answer[0], "category": " PREDIABETES "}  # the same words, spaced and cased differently
    shown = [*answer[1:], {**answer[0]}, same, {"loinc": "2160-0", "category": "high"}]
    score = score_labs(TABLE, truth, shown)
    assert score.outcome == "passed"  # an identical repeat is neutral
    assert (score.metrics["duplicates"], score.metrics["contradictions"], score.metrics["extra_entries"]) == (1, 0, 1)
    score = score_labs(TABLE, truth, answer[1:])
    assert score.metrics["missing_entries"] == 1 and score.details["missing"] == [
        {"code": "4548-4", "display": "Hemoglobin A1c"}]
    assert "4548-4=prediabetes>-" in str(score.metrics["category_pairs"])


def test_one_entry_per_other_category_is_a_contradiction_that_earns_nothing_and_cannot_pass() -> None:
    truth, answer = _answer("Delores12")
    hedged = list(answer)
    for want in truth:  # the right entry first, then one per other category of the test
        if want["result"]:
            for other in TABLE.test(want["loinc"]).order:
                if other != want["category"]:
                    hedged.append({**_entry(answer, want["loinc"]), "category": other})
    score = score_labs(TABLE, truth, hedged)
    m = score.metrics
    assert score.outcome == "partial" and m["contradictions"] == m["tests_with_result"] == 6  # no_result still right
    assert m["categories_correct"] == m["values_correct"] == 0 and m["duplicates"] == 0
    assert "entries that contradict each other" in score.message
    one = score_labs(TABLE, truth, [*answer, {**answer[0], "value": 1.0}])
    assert one.outcome == "partial" and one.metrics["contradictions"] == 1 and one.metrics["values_correct"] == 5
    agg = aggregate_labs([{**m, "format_ok": True}, {**one.metrics, "format_ok": True}])
    assert (agg["contradictions"], agg["answers_with_contradictions"], agg["duplicates"]) == (7, 2, 0)


def test_a_critical_result_claimed_both_ways_is_missed() -> None:
    truth, answer = _answer("variant-critical-potassium")
    flagged = _entry(answer, "6298-4")
    assert flagged["critical"] is True
    score = score_labs(TABLE, truth, [*answer, {**flagged, "critical": False}])
    assert score.outcome == "failed" and score.metrics["critical_missed"] is True


def test_no_result_must_be_said_and_an_empty_answer_earns_nothing() -> None:
    truth, answer = _answer("Garrett_Thompson")
    assert all(not t["result"] for t in truth)
    score = score_labs(TABLE, truth, answer)
    assert score.outcome == "passed" and score.metrics["value_accuracy"] is None
    assert score.metrics["no_result_accuracy"] == 1.0
    empty = score_labs(TABLE, truth, [])
    assert empty.outcome == "failed" and empty.metrics["no_result_accuracy"] == 0.0
    invented = copy.deepcopy(answer)
    invented[0].update(value=6.0, unit="%", category="prediabetes")
    assert score_labs(TABLE, truth, invented).metrics["no_results_correct"] == 6


def test_no_answer_found_scores_zero_not_na_and_says_why() -> None:
    case = TASK.load_case(next(CASES.glob("Delores12*.json")))
    parsed = TASK.parse(case, "I cannot tell.")
    score = TASK.score(case, TASK.truth(case), parsed)
    assert parsed.found is False and score.outcome == "failed"
    assert score.metrics["value_accuracy"] == 0.0 and score.metrics["format_ok"] is False
    assert score.message.startswith("answer format: no JSON array")
    right = json.dumps(answer_from_truth(TASK.truth(case)))
    fenced = TASK.parse(case, f"Here it is:\n```json\n{right}\n```")
    score = TASK.score(case, TASK.truth(case), fenced)
    assert fenced.found and score.outcome == "passed" and score.metrics["format_ok"] is False


def test_macro_f1_matches_the_textbook_definition() -> None:
    pairs: list[tuple[str, str | None]] = [("a", "a"), ("a", "b"), ("b", "b"), ("c", None), ("c", "c")]
    # a: tp1 fp0 fn1 -> 2/3; b: tp1 fp1 fn0 -> 2/3; c: tp1 fp0 fn1 -> 2/3
    assert macro_f1(pairs) == pytest.approx(2 / 3, abs=1e-6)
    assert macro_f1([("a", "z")]) == 0.0 and macro_f1([]) is None


def test_aggregate_pools_micro_means_macro_skips_na_and_reads_the_category_pairs() -> None:
    good = score_labs(TABLE, *_answer("Delores12")).metrics
    truth, answer = _answer("Delores12")
    _entry(answer, "4548-4")["category"] = "diabetes"
    bad = score_labs(TABLE, truth, answer).metrics
    none = score_labs(TABLE, *_answer("Garrett_Thompson")).metrics
    agg = aggregate_labs([{**good, "format_ok": True}, {**bad, "format_ok": False}, none])
    assert agg["micro_category_accuracy"] == pytest.approx(11 / 12, abs=1e-6)
    assert agg["macro_category_accuracy"] == pytest.approx((1 + 5 / 6) / 2, abs=1e-6)  # Garrett's n/a skipped
    assert agg["micro_no_result_accuracy"] == 1.0 and agg["format_not_ok"] == 1
    labels = {"4548-4:prediabetes": 2 / 3, "4548-4:diabetes": 0.0}
    others = 5  # the other five labels, always right
    assert agg["category_macro_f1"] == pytest.approx((sum(labels.values()) + others) / (len(labels) + others), abs=1e-6)


def test_the_task_scorer_adds_format_ok_and_the_task_declares_every_metric() -> None:
    case = TASK.load_case(next(CASES.glob("Delores12*.json")))
    truth = TASK.truth(case)
    score = TASK.score(case, truth, Parsed(value=answer_from_truth(truth), format_ok=True))
    assert set(score.metrics) == set(TASK.metric_names) and score.metrics["format_ok"] is True
    assert TASK.metric_directions["critical_missed"] == "lower" and TASK.metric_directions["category_pairs"] == "none"


def test_the_safety_count_says_it_counts_scored_answers_and_over_how_many() -> None:
    truth, answer = _answer("variant-critical-potassium")
    missed = score_labs(TABLE, truth, [{**a, "critical": False} for a in answer]).metrics
    assert missed["critical_missed"] is True
    agg = aggregate_labs([missed] * 3)  # one case, three trials
    assert (agg["answers_critical_missed"], agg["answers_scored"]) == (3, 3) and "cases_critical_missed" not in agg
    assert TASK.metric_directions["answers_critical_missed"] == "lower"
    assert TASK.metric_directions["answers_scored"] == "none"
