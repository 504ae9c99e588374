"""Every verdict path of a model judge (scripted), judge failures as excluded errors, and the judge's own usage."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from groundeval.agent_io import AgentResult
from groundeval.agents.base import FunctionAgent
from groundeval.errors import ConfigError, InfraError
from groundeval.execution.outcome_policy import RunInfo
from groundeval.models.base import ModelRequest, ModelResponse
from groundeval.tasks.summary import SummaryTask
from groundeval.tasks.summary.judge import (
    PROMPT_SHA256,
    SYSTEM_PROMPT,
    JudgeError,
    ModelJudge,
    make_judge,
    rejects_temperature,
)
from groundeval.testing import ScriptedModel
from groundeval.testing.one_case import run_case
from tests._paths import REPO

CASES = REPO / "fixtures" / "summary"
LIZ = CASES / "Liz_Conn_27c911c6-f045-4ffa-af5d-6eba57ac94b2.json"
CRITERION = {"id": "condition:1", "type": "condition", "kind": "must_mention", "points": 1, "safety": False,
             "statement": "The summary names Essential hypertension as a current problem.",
             "names": ["Essential hypertension"], "alternatives": [], "values": []}
SUMMARY = "Active problems: high blood pressure, on lisinopril."


def _judge(reply: str | BaseException) -> tuple[ModelJudge, ScriptedModel]:
    model = ScriptedModel([reply], role="judge", name="judge-model")
    return ModelJudge(model), model


def test_a_met_verdict_with_a_quote_from_the_summary_is_met() -> None:
    judge, model = _judge('{"met": true, "evidence": "high blood pressure"}')
    verdict = judge.decide(CRITERION, SUMMARY, label="c/judge/condition:1")
    assert verdict.met and verdict.flag is None and verdict.evidence == "high blood pressure"
    (request,) = model.requests
    assert request.system == SYSTEM_PROMPT and CRITERION["statement"] in request.messages[0]["content"]
    assert request.label == "c/judge/condition:1"
    assert judge.settings()["prompt_sha256"] == PROMPT_SHA256 and judge.settings()["role"] == "judge"


def test_a_quote_that_is_not_in_the_summary_is_not_met_and_flagged() -> None:
    judge, _ = _judge('```json\n{"met": true, "evidence": "essential hypertension, well controlled"}\n```')
    verdict = judge.decide(CRITERION, SUMMARY, label="x")
    assert not verdict.met and verdict.flag == "evidence_not_in_summary"


def test_a_reply_that_is_not_a_verdict_is_the_judges_no_answer_with_its_usage_and_a_failing_model_an_error() -> None:
    judge, _ = _judge("Yes, it is mentioned.")
    verdict = judge.decide(CRITERION, SUMMARY, label="x")
    assert (verdict.met, verdict.flag, verdict.evidence) == (False, "format_not_ok", "Yes, it is mentioned.")
    judge, _ = _judge("   ")
    assert judge.decide(CRITERION, SUMMARY, label="x").flag == "no_answer"
    judge, _ = _judge(InfraError("529 overloaded", attempts=3))
    with pytest.raises(JudgeError, match="infra_error") as info:
        judge.decide(CRITERION, SUMMARY, label="x")
    assert info.value.cause_outcome == "infra_error"


def test_a_prose_answering_judge_fails_the_case_on_the_unjudged_criteria_and_its_calls_are_paid_for() -> None:
    def prose(request: ModelRequest) -> ModelResponse:
        usage: dict[str, Any] = {"input_tokens": 300, "output_tokens": 40, "cost_usd": 0.002}
        return ModelResponse(text="The summary seems to cover the patient's problems reasonably well.",
                             model="small", stop_reason="stop", usage=usage)

    task = SummaryTask()
    task.scorer.judge = ModelJudge(ScriptedModel(prose, role="judge"))
    record = _run(task, "Active problems: none. Current medications: an inhaler.")
    assert record.outcome == "failed" and record.counted and record.error is None  # never a harness_error
    unjudged = record.metrics["judge_no_verdict"]
    assert unjudged >= 1 and unjudged == record.usage["judge_calls"] == record.metrics["decided_by_judge"]
    assert record.usage["judge_input_tokens"] == 300 * unjudged and record.usage["judge_output_tokens"] == 40 * unjudged
    assert record.usage["judge_cost_usd"] == pytest.approx(0.002 * unjudged)
    assert "gave no verdict on" in record.message and "format_not_ok" in record.message
    flagged = [c for c in record.details["criteria"] if c.get("flag") == "format_not_ok"]
    assert len(flagged) == unjudged and all(c["met"] is False for c in flagged)


def _run(task: SummaryTask, text: str) -> Any:
    case = task.load_case(LIZ)
    info = RunInfo(run_id="r", task="summary", agent="fixed", model=None)
    return run_case(task, FunctionAgent(lambda request: AgentResult(text=text), "fixed"), case, info, "n::Liz").record


def test_a_judge_failure_is_an_excluded_error_never_a_wrong_summary() -> None:
    task = SummaryTask()
    task.scorer.judge = ModelJudge(ScriptedModel([InfraError("timeout", attempts=3)], role="judge"))
    record = _run(task, "Active problems: none. Current medications: an inhaler.")  # the judge must decide
    assert record.outcome == "infra_error" and not record.counted
    assert "the judge scripted/scripted-model failed (infra_error)" in record.message + str(record.error)


def test_judge_tokens_and_cost_are_recorded_apart_from_the_agent() -> None:
    def reply(request: ModelRequest) -> ModelResponse:
        usage: dict[str, Any] = {"input_tokens": 120, "output_tokens": 9, "cost_usd": 0.0015}
        return ModelResponse(text='{"met": false, "evidence": ""}', model="judge-model", stop_reason="end_turn",
                             usage=usage)

    task = SummaryTask()
    task.scorer.judge = ModelJudge(ScriptedModel(reply, role="judge"))
    record = _run(task, "Patient is well.")
    judged = record.metrics["decided_by_judge"]
    assert judged >= 1 and record.usage["judge_calls"] == judged
    assert record.usage["judge_input_tokens"] == 120 * judged
    assert record.usage["judge_cost_usd"] == pytest.approx(0.0015 * judged)
    assert record.usage.get("input_tokens", 0) == 0  # the agent's own usage is untouched
    assert not any(key.startswith("judge_") for key in record.metrics if key != "judge_no_verdict")
    assert {c["decided_by"] for c in record.details["criteria"]} == {"judge"}  # nothing named: nothing for rules


def test_judge_specs_and_temperature() -> None:
    assert make_judge("baseline").spec == "baseline"
    assert rejects_temperature("anthropic/claude-opus-4-8") and not rejects_temperature("anthropic/claude-sonnet-5-5")
    assert not rejects_temperature("openai-compatible/qwen@http://127.0.0.1:8000/v1")
    with pytest.raises(ConfigError, match="unknown provider"):
        make_judge("nosuch/model")


def test_a_card_of_another_judge_is_refused_and_a_low_kappa_marks_the_judge_unreliable(tmp_path: Path) -> None:
    card = {"judge": "baseline", "prompt_sha256": "0" * 64, "kappa": 0.9, "n": 10}
    (tmp_path / "other.json").write_text(json.dumps(card))
    with pytest.raises(ConfigError, match="groundeval calibrate --task summary --judge baseline"):
        SummaryTask(judge_card=str(tmp_path / "other.json"))
    from groundeval.tasks.summary.judge import BASELINE_SHA256

    card.update(prompt_sha256=BASELINE_SHA256, kappa=0.41, kappa_95ci=[0.3, 0.5], date="2026-12-02",
                calibration_set={"kind": "human_labels", "file": "ours.jsonl", "sha256": "ab" * 32, "summaries": 4,
                                 "records": 2, "labellers": ["a", "b"]})
    (tmp_path / "low.json").write_text(json.dumps(card))
    agg = SummaryTask(judge_card=str(tmp_path / "low.json")).aggregate([])
    assert agg["judge_kappa"] == 0.41 and agg["judge_kappa_95ci"] == "[0.30, 0.50]" and agg["judge_kappa_n"] == 10
    assert str(agg["judge_reliability"]).startswith("judge unreliable")
    assert agg["judge_calibration_set"] == "ours.jsonl (SHA-256 abababababab; 4 summaries, 2 records; labellers a, b)"


def test_the_judge_cache_answers_a_rerun_and_a_changed_summary_or_judge_asks_again(tmp_path: Path) -> None:
    from groundeval.models.cache_store import ResultCache

    def judge(name: str) -> tuple[ModelJudge, ScriptedModel]:
        model = ScriptedModel(lambda r: '{"met": true, "evidence": "high blood pressure"}', role="judge", name=name)
        return ModelJudge(model, cache=ResultCache(tmp_path)), model

    first, model = judge("judge-a")
    assert not first.decide(CRITERION, SUMMARY, label="x").cached and len(model.requests) == 1
    again, model = judge("judge-a")
    verdict = again.decide(CRITERION, SUMMARY, label="x")
    assert verdict.cached and verdict.met and verdict.usage == {} and model.requests == []
    again.decide(CRITERION, SUMMARY + " Stable.", label="x")  # another summary: another request
    other, model = judge("judge-b")  # another model id: another key
    other.decide(CRITERION, SUMMARY, label="x")
    assert len(model.requests) == 1


def test_cached_judge_replies_are_counted_apart_from_calls(tmp_path: Path) -> None:
    from groundeval.models.cache_store import ResultCache

    task = SummaryTask()
    task.scorer.judge = ModelJudge(ScriptedModel(lambda r: '{"met": false, "evidence": ""}', role="judge"),
                                   cache=ResultCache(tmp_path))
    first = _run(task, "Patient is well.")
    second = _run(task, "Patient is well.")
    assert first.usage["judge_calls"] == second.usage["judge_cached"] > 0 and second.usage["judge_calls"] == 0
    assert second.metrics["rubric_score"] == first.metrics["rubric_score"]


def test_a_criterion_type_below_the_threshold_is_named_and_ungates_the_verdicts(tmp_path: Path) -> None:
    from groundeval.cli import main as cli_main
    from groundeval.records.scope import UNGATED_FACT
    from groundeval.tasks.summary.truth import CRITERION_TYPES

    labels = Path(__file__).parent / "labels" / "two_labellers.jsonl"
    assert cli_main(["calibrate", "--judge", "baseline", "--labels", str(labels), "-o", str(tmp_path / "c.json")]) == 0
    card = json.loads((tmp_path / "c.json").read_text())
    card.update(kappa=0.9)
    card["by_type"] = {t: {"kappa": {"value": 0.9, "ci": [0.8, 1.0], "n": 50}} for t in CRITERION_TYPES}
    card["by_layer"]["judge"]["kappa"] = {"value": 0.9, "ci": [0.8, 1.0], "n": 50}
    card["overall"]["kappa"] = card["verdicts"]["kappa"] = {"value": 0.9, "ci": [0.8, 1.0], "n": 50}
    (tmp_path / "good.json").write_text(json.dumps(card))
    assert str(SummaryTask(judge_card=str(tmp_path / "good.json")).aggregate([])["judge_reliability"]).startswith(
        "calibrated")
    assert UNGATED_FACT not in SummaryTask(judge_card=str(tmp_path / "good.json")).run_facts()
    card["by_type"]["medication"]["kappa"]["value"] = 0.0  # the overall kappa stays high
    del card["by_type"]["allergy"]
    (tmp_path / "weak.json").write_text(json.dumps(card))
    task = SummaryTask(judge_card=str(tmp_path / "weak.json"))
    status = str(task.aggregate([])["judge_reliability"])
    assert status.startswith("judge unreliable for medication (kappa 0.00), allergy (not calibrated) (overall kappa 0.9")
    assert task.run_facts()[UNGATED_FACT] == (
        "the case verdicts rest on the judge baseline: judge unreliable for medication (kappa 0.00), allergy (not calibrated)")


def test_a_local_judges_card_is_keyed_by_its_gguf_sha256_so_moving_the_file_keeps_it(tmp_path: Path) -> None:
    import hashlib

    from groundeval.tasks.summary.card import matches
    from groundeval.tasks.summary.judge import judge_identity

    class LocalLike(ScriptedModel):  # a local model as the judge sees it: a provider with a model_path to its GGUF file
        api: Any

    gguf = tmp_path / "a" / "small.gguf"
    gguf.parent.mkdir()
    gguf.write_bytes(b"GGUF fake weights")
    model = LocalLike(['{"met": false, "evidence": ""}'], role="judge", name="small")
    model.api = SimpleNamespace(model_path=gguf)  # PolicyModel.api: the LocalProvider
    judge = ModelJudge(model, "local/small")
    assert judge_identity(judge) == "sha256:" + hashlib.sha256(b"GGUF fake weights").hexdigest()
    card = {"judge": "local/small", "judge_identity": judge_identity(judge), "prompt_sha256": judge.prompt_sha256}
    moved = tmp_path / "b" / "renamed.gguf"
    moved.parent.mkdir()
    gguf.rename(moved)
    model.api = SimpleNamespace(model_path=moved)
    assert matches(card, ModelJudge(model, "local/renamed"))  # another path and spec, the same file
    moved.write_bytes(b"GGUF other weights")
    assert not matches(card, ModelJudge(model, "local/renamed"))  # other weights: another judge
    assert not matches({**card, "prompt_sha256": "0" * 64}, judge)


def test_closing_the_task_closes_its_judges_model_and_the_session_closes_the_task(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from groundeval.run.assembly import Assembly
    from groundeval.tasks.summary.task import SummaryTask

    closed: list[str] = []

    class Closing(ScriptedModel):
        def close(self) -> None:
            closed.append("model")

    task = SummaryTask()
    object.__setattr__(task.scorer, "judge", ModelJudge(Closing(["{}"], role="judge", name="m"), "local/m"))
    task.close()
    assert closed == ["model"]  # a local/<gguf> judge's close stops its llama.cpp server
    assert Assembly(task=task).close() == []  # what the session closes at the end of a run
    assert closed == ["model", "model"]


@pytest.mark.parametrize(("where", "figure", "named"), [
    ("allergy", {"value": 0.9, "ci": [0.41, 1.0], "n": 12}, "allergy (kappa 0.90, interval down to 0.41)"),
    ("allergy", {"value": 1.0, "ci": None, "n": 3, "why_no_ci": "every bootstrap resample gives kappa 1.00"},
     "allergy (kappa 1.00, no interval)"),
    ("verdicts", {"value": -0.12, "ci": [-0.59, 0.43], "n": 12}, "case verdicts (kappa -0.12)"),
    ("overall", {"value": 0.98, "ci": [0.55, 1.0], "n": 40}, "judge unreliable (kappa 0.98"),
])
def test_a_kappa_whose_interval_reaches_below_the_threshold_does_not_gate(
    tmp_path: Path, where: str, figure: dict[str, Any], named: str,
) -> None:
    """A handful of labels (a type with 3 items, all agreeing) or verdicts that disagree never make a judge calibrated."""
    from groundeval.records.scope import UNGATED_FACT
    from groundeval.tasks.summary.truth import CRITERION_TYPES

    good = {"value": 0.9, "ci": [0.8, 1.0], "n": 50}
    card = json.loads((REPO / "fixtures" / "summary-judge-cards" / "baseline.json").read_text())
    card.update(kappa=0.98 if where == "overall" else 0.9)
    card["calibration_set"].update(kind="human_labels", labelled_by="people")  # as if people had labelled it
    card["by_type"] = {t: {"kappa": dict(good)} for t in CRITERION_TYPES}
    card["by_layer"]["judge"]["kappa"] = dict(good)
    card["overall"]["kappa"] = card["verdicts"]["kappa"] = dict(good)
    if where in CRITERION_TYPES:
        card["by_type"][where]["kappa"] = figure
    else:
        card[where]["kappa"] = figure
    (tmp_path / "card.json").write_text(json.dumps(card))
    task = SummaryTask(judge_card=str(tmp_path / "card.json"))
    assert named in str(task.aggregate([])["judge_reliability"])
    assert UNGATED_FACT in task.run_facts()
