"""Parsing of model answers: fault case 11 (fences, prose, backticks, two answers)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from groundeval.parsing import MAX_DEPTH, MAX_FAILED_DECODES, extract_json
from groundeval.scoring import Parsed
from groundeval.tasks.extraction.task import ExtractionTask
from tests._paths import REPO

MS = {"resourceType": "MedicationStatement", "status": "active", "subject": {"reference": "Patient/p"},
      "dosage": [{"text": "take with `food`"}]}
MS_TEXT = json.dumps(MS)


def parse_object(raw: str) -> Parsed:
    return extract_json(raw, "{", lambda v: isinstance(v, dict) and "resourceType" in v, None)


def test_case11_a_fenced_object_is_recovered_with_format_ok_false() -> None:
    parsed = parse_object(f"```json\n{MS_TEXT}\n```")
    assert parsed.value == MS and parsed.format_ok is False and "fence" in (parsed.error or "")


def test_case11_b_prose_and_fence_around_object() -> None:
    parsed = parse_object(f"Here is the resource:\n```json\n{MS_TEXT}\n```\nLet me know if you need changes.")
    assert parsed.value == MS and parsed.format_ok is False


def test_case11_c_trailing_note() -> None:
    parsed = parse_object(f"{MS_TEXT}\n\nNote: I assumed an adult patient.")
    assert parsed.value == MS and parsed.format_ok is False


def test_case11_d_backticks_inside_strings_are_untouched_and_format_ok() -> None:
    parsed = parse_object(MS_TEXT)
    assert parsed.format_ok is True and parsed.error is None
    assert parsed.value["dosage"][0]["text"] == "take with `food`"


def test_case11_e_two_objects_are_ambiguous_and_not_scored() -> None:
    second = dict(MS, status="completed")
    parsed = parse_object(f"First attempt:\n{MS_TEXT}\nCorrected version:\n{json.dumps(second)}")
    assert parsed.value is None and parsed.format_ok is False and "ambiguous" in (parsed.error or "")
    # the same two objects inside sentences: neither is an answer, and the reason counts both
    inline = parse_object(f"First attempt: {MS_TEXT} Corrected version: {json.dumps(second)}")
    assert inline.found is False and "2 JSON objects appear only inside a sentence" in (inline.error or "")


def test_no_json_at_all() -> None:
    parsed = parse_object("I cannot help with that.")
    assert parsed.value is None and "no JSON object" in (parsed.error or "")


TASK = ExtractionTask()
LIST = [{"rxnorm_code": "316049", "display": "Hydrochlorothiazide 25 MG"}]


def test_extraction_answer_exact_json_is_format_ok() -> None:
    parsed = TASK.parse(None, json.dumps(LIST))  # type: ignore[arg-type]
    assert parsed.value == LIST and parsed.format_ok


def test_extraction_answer_in_fence_with_prose_is_recovered() -> None:
    raw = f"The active medications are:\n```json\n{json.dumps(LIST, indent=2)}\n```\nThese are all [1]."
    parsed = TASK.parse(None, raw)  # type: ignore[arg-type]
    assert parsed.value == LIST and not parsed.format_ok


def test_extraction_answer_empty_list_and_brackets_in_displays() -> None:
    assert TASK.parse(None, "[]").value == []  # type: ignore[arg-type]
    branded = [{"rxnorm_code": "1", "display": "Clonazepam [Klonopin]"}]
    parsed = TASK.parse(None, "Answer:\n" + json.dumps(branded))  # type: ignore[arg-type]
    assert parsed.value == branded


def test_extraction_unparseable_answer_scores_as_empty_prediction_with_error() -> None:
    parsed = TASK.parse(None, '{"medications": "none"}')  # type: ignore[arg-type]
    assert parsed.value == [] and parsed.format_ok is False and parsed.found is False
    assert parsed.error == 'the answer is a JSON object with keys "medications", not the requested array; ' \
        "a value nested inside it is not an answer (answer with the array itself)"
    truth: dict[str, Any] = {"medications": [], "inactive_codes": {}}
    # Even for a patient with no active medication, a reply without a list is not the answer [].
    score = TASK.score(None, truth, parsed)  # type: ignore[arg-type]
    assert score.outcome == "failed" and score.metrics["f1"] == 0.0
    assert score.message.startswith("answer format: the answer is a JSON object")
    assert TASK.score(None, truth, TASK.parse(None, "[]")).outcome == "passed"  # type: ignore[arg-type]


def test_extraction_numeric_code_is_normalised_to_string() -> None:
    parsed = TASK.parse(None, '[{"rxnorm_code": 316049, "display": "x"}]')  # type: ignore[arg-type]
    assert parsed.value == [{"rxnorm_code": "316049", "display": "x"}]


def test_system_prompt_example_agrees_with_an_independent_reader_and_is_cacheable() -> None:
    from groundeval.agent_io import AgentRequest, Prompt
    from groundeval.agents.baselines.extraction import BaselineExtractionAgent
    from groundeval.tasks.extraction.prompt import EXAMPLE_BUNDLE, example_answer, system_prompt

    prompt = Prompt(system="", user="Bundle:\n" + json.dumps(EXAMPLE_BUNDLE))
    text = BaselineExtractionAgent().run(AgentRequest(case_id="example", task="extraction", prompt=prompt)).text

    def by_code(items: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return sorted(items, key=lambda i: (i["rxnorm_code"] or "", i["display"]))

    assert by_code(json.loads(text)) == by_code(example_answer())
    assert len(example_answer()) == 4  # metformin once, lisinopril, amlodipine, uncoded lidocaine
    # Anthropic caches a prefix of at least 1,024 tokens (Opus); at ~4 characters a token, keep a margin.
    assert len(system_prompt()) / 4 > 1300


@pytest.mark.parametrize(
    "raw",
    [
        "[" * 5000 + "]" * 5000,  # valid JSON, deeper than the decoder's recursion limit
        "[" * 100_000,  # never closed
        "The list: " + '{"a": ' * 3000 + "1" + "}" * 3000,
        json.dumps(MS)[:-1] + ', "x": ' + "[" * (MAX_DEPTH + 1) + "]" * (MAX_DEPTH + 1) + "}",  # decodes, too deep
    ],
)
def test_pathologically_nested_answers_are_failed_answers_in_both_tasks(raw: str) -> None:
    from groundeval.tasks.write.task import WriteTask

    for task in (ExtractionTask(), WriteTask()):
        parsed = task.parse(None, raw)  # type: ignore[arg-type]  # parse reads only the text
        error = parsed.error or ""
        assert parsed.found is False and "no JSON" in error, error
        if isinstance(task, WriteTask):  # an object answer: the nesting itself is the reason
            assert "too deeply" in error or "levels deep" in error, error


@pytest.mark.parametrize("raw", [
    '[{"rxnorm_code": 1' + "0" * 5000 + ', "display": "x"}]',  # past Python's int conversion limit
    '{"resourceType": "MedicationStatement", "dosage": [{"doseAndRate": [{"doseQuantity": {"value": 1'
    + "0" * 5000 + "}}]}]}",
])
def test_an_integer_too_long_to_convert_is_a_failed_answer_in_every_task(raw: str) -> None:
    from groundeval.tasks.reconcile.task import ReconcileTask
    from groundeval.tasks.write.task import WriteTask

    for task in (ExtractionTask(), WriteTask(), ReconcileTask()):
        parsed = task.parse(None, raw)  # type: ignore[arg-type]  # parse reads only the text
        assert parsed.found is False and "no JSON" in (parsed.error or ""), (task.name, parsed.error)


def test_nesting_up_to_the_limit_is_still_an_answer() -> None:
    deep: dict[str, object] = {"resourceType": "MedicationStatement", "note": "[" * 10 + "]" * 10}
    nested: object = "leaf"
    for _ in range(MAX_DEPTH - 2):
        nested = [nested]
    deep["extension"] = nested
    parsed = parse_object(json.dumps(deep))
    assert parsed.found and parsed.format_ok and parsed.value == deep


def test_thousands_of_brackets_that_start_nothing_stop_the_search() -> None:
    parsed = parse_object("{ x " * (MAX_FAILED_DECODES + 1) + MS_TEXT)
    assert parsed.found is False and f"over {MAX_FAILED_DECODES} brackets" in (parsed.error or "")
    assert parse_object("{ x " * 50 + "\n" + MS_TEXT).value == MS  # a little noise is still searched


@pytest.mark.parametrize(("text", "name", "where"), [
    ('[{"rxnorm_code": "1", "display": "Aspirin\n81 MG"}]', "a line feed (U+000A)", "line 1 column 42"),
    ('Here you are:\n[{"display": "A\tB"}]', "a tab (U+0009)", "line 2 column 16"),
])
def test_a_raw_control_character_inside_a_json_string_is_named(text: str, name: str, where: str) -> None:
    parsed = extract_json(text, "[", lambda v: isinstance(v, list), [])
    assert not parsed.found and parsed.value == []
    assert parsed.error is not None and f"{name} inside a string at {where}" in parsed.error
    assert "must escape control characters" in parsed.error


# Real replies of a small open-weight model (SmolLM2-135M-Instruct on a llama.cpp server) to the reconcile
# case with no medication on either side; both were once read as the answer [] and passed the case.
REAL_WRAPPED = '{"data":[],"messageType":"report"}'
REAL_PROSE = ('The patient\'s Bundle holds only the Patient resource ("entry": [] for medications), and the '
              "report names no medicine, so there is nothing to reconcile.")


@pytest.mark.parametrize(("raw", "said"), [
    (REAL_WRAPPED, 'the answer is a JSON object with keys "data", "messageType", not the requested array'),
    (f"```json\n{REAL_WRAPPED}\n```", 'the JSON on its own is a JSON object with keys "data", "messageType"'),
    (REAL_PROSE, "a JSON array appears only inside a sentence ('resource (\"entry\": []')"),
    ('Here is what I found: {"medications": [{"rxnorm_code": "1", "display": "x", "status": "matched"}]}',
     "a JSON array appears only inside a sentence ('found: {\"medications\": [{\"rxnorm_code\""),
])
def test_an_array_nested_in_an_object_or_quoted_in_prose_is_no_answer_in_every_task(raw: str, said: str) -> None:
    from groundeval.tasks.reconcile.task import ReconcileTask

    for task in (ExtractionTask(), ReconcileTask()):
        parsed = task.parse(None, raw)  # type: ignore[arg-type]  # parse reads only the text
        assert parsed.found is False and parsed.value == [], (task.name, parsed)
        assert said in (parsed.error or ""), parsed.error


def test_the_real_replies_fail_the_reconcile_case_they_once_passed_as_no_answer() -> None:
    from groundeval.execution.outcome_policy import RunInfo
    from groundeval.tasks.reconcile.task import ReconcileTask
    from groundeval.testing.one_case import run_case

    task = ReconcileTask()
    case = task.load_case(next((REPO / "fixtures" / "reconcile").glob("no-medication--*.json")))

    from groundeval.testing import ScriptedAgent

    info = RunInfo(run_id="r", task="reconcile", agent="fixed", model=None)
    outcomes = {raw: run_case(task, ScriptedAgent({case.case_id: raw}), case, info, f"r::{raw[:9]}").record
                for raw in (REAL_WRAPPED, REAL_PROSE, "[]")}
    assert [r.outcome for r in outcomes.values()] == ["no_answer", "no_answer", "passed"]
    assert outcomes[REAL_WRAPPED].message.startswith("no_answer: the answer is a JSON object with keys")


def test_a_write_answer_must_be_the_resource_itself_not_an_array_or_bundle_holding_it() -> None:
    from groundeval.tasks.write.task import WriteTask

    task = WriteTask()
    wrapped = task.parse(None, json.dumps([MS]))  # type: ignore[arg-type]
    assert wrapped.found is False and "a JSON array of 1 item, not the requested object" in (wrapped.error or "")
    quoted = task.parse(None, f"I would write {MS_TEXT} but the note is unclear.")  # type: ignore[arg-type]
    assert quoted.found is False and "only inside a sentence" in (quoted.error or "")
    one_line_fence = task.parse(None, f"```json {MS_TEXT} ```")  # type: ignore[arg-type]
    assert one_line_fence.value == MS and one_line_fence.format_ok is False
