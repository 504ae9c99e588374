"""The model-graded scorer's parts: the one unreachable rule, the response cache, usage by role."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from groundeval.errors import InfraError
from groundeval.models.base import ModelRequest, ModelResponse
from groundeval.models.cache_store import ResultCache
from groundeval.models.reachability import UNREACHABLE_AFTER, Reachability
from groundeval.models.response_cache import ResponseCache, response_key
from groundeval.records.aggregate import summarize
from groundeval.records.run_record import CaseRecord
from groundeval.run.stop_policy import StopPolicy
from groundeval.scorers.model_graded import JudgeError, ModelGrader, Verdict, role_usage
from groundeval.testing import ScriptedModel

SETTINGS = {"spec": "scripted/j", "role": "judge", "model": "j", "max_tokens": 512, "temperature": 0.0}


def _parse(raw: str, text: str) -> tuple[bool, str, str | None]:
    return (raw == "yes", "", None) if raw in ("yes", "no") else (False, raw[:200], "format_not_ok")


def _grader(script: Any, cache: ResponseCache | None = None) -> tuple[ModelGrader, ScriptedModel]:
    model = ScriptedModel(script, role="judge", name="j")
    return ModelGrader(model, system="grade", prompt_sha256="p", parse=_parse, max_tokens=16, cache=cache), model


def test_the_unreachable_rule_is_one_class_and_the_stop_policy_is_it() -> None:
    reach = Reachability()
    assert [reach.note_failure(True) for _ in range(UNREACHABLE_AFTER)] == [False] * (UNREACHABLE_AFTER - 1) + [True]
    rate_limited = Reachability()
    assert not any(rate_limited.note_failure(False) for _ in range(UNREACHABLE_AFTER + 1))
    answered = Reachability()
    answered.note_answer()
    assert not any(answered.note_failure(True) for _ in range(UNREACHABLE_AFTER + 1))
    assert isinstance(StopPolicy(), Reachability)


def test_a_grader_that_never_connects_stops_the_run_on_its_third_failure() -> None:
    grader, _ = _grader([InfraError("refused", connection=True) for _ in range(UNREACHABLE_AFTER)])
    outcomes = []
    for _ in range(UNREACHABLE_AFTER):
        try:
            grader.grade("q", "t", label="c/judge/1")
        except JudgeError as exc:
            outcomes.append(exc.cause_outcome)
    assert outcomes == ["infra_error"] * (UNREACHABLE_AFTER - 1) + ["config_error"]


def test_model_responses_are_cached_by_request_and_settings_not_by_label(tmp_path: Path) -> None:
    cache = ResponseCache(ResultCache(tmp_path))
    grader, model = _grader(lambda request: "yes", cache)
    first = grader.grade("q", "t", label="case-a/judge/1")
    again = grader.grade("q", "t", label="case-b/judge/1")  # another case, the same question
    assert not first.cached and again.cached and again.met and again.usage == {} and len(model.requests) == 1
    grader.grade("q2", "t", label="x")  # another question: asked
    assert len(model.requests) == 2
    prose, model = _grader(lambda request: "I think so", cache)
    assert prose.grade("q3", "t", label="x").flag == "format_not_ok"
    assert prose.grade("q3", "t", label="x").flag == "format_not_ok" and len(model.requests) == 2  # not stored
    request = ModelRequest.single("q", system="grade", max_tokens=16)
    assert response_key(SETTINGS, request) != response_key({**SETTINGS, "model": "k"}, request)
    entry = ResultCache(tmp_path).get(response_key(grader.settings(), grader.request("q", label="")))
    assert entry is not None and entry["kind"] == "response" and entry["text"] == "yes"


def test_usage_by_role_counts_calls_cached_replies_and_failures() -> None:
    verdicts: list[Verdict | JudgeError] = [
        Verdict(True, usage={"input_tokens": 10, "output_tokens": 2, "cost_usd": 0.5}),
        Verdict(False, cached=True),
        JudgeError("failed"),
    ]
    assert role_usage(verdicts) == {"judge_calls": 2, "judge_cached": 1, "judge_input_tokens": 10,
                                    "judge_output_tokens": 2, "judge_cost_usd": 0.5}
    assert role_usage([Verdict(True, usage={"cost_usd": None})])["judge_cost_usd"] is None  # unpriced: unknown
    assert role_usage(verdicts, costs_nothing=True) == {}


class _Task:
    def aggregate(self, metrics: Any) -> dict[str, Any]:
        return {}


def _case(i: int, usage: dict[str, Any]) -> CaseRecord:
    return CaseRecord(case_id=f"c{i}", nodeid=f"n::c{i}", run_id="r", task="summary", agent="a", outcome="passed",
                      counted=True, usage=usage)


def test_the_run_sums_a_judges_usage_apart_from_the_agents() -> None:
    judge = {"judge_calls": 2, "judge_cached": 0, "judge_input_tokens": 5, "judge_output_tokens": 1,
             "judge_cost_usd": 0.25}
    rule_agent = summarize(_Task(), [_case(0, judge), _case(1, dict(judge))])
    assert rule_agent.usage == {"judge_calls": 4, "judge_cached": 0, "judge_input_tokens": 10,
                                "judge_output_tokens": 2, "judge_cost_usd": 0.5}  # no agent cost invented
    model_agent = summarize(_Task(), [_case(0, {"input_tokens": 7, "cost_usd": 1.0, **judge}),
                                      _case(1, {"input_tokens": 3, "cost_usd": 2.0, **judge, "judge_cost_usd": None})])
    assert model_agent.usage["cost_usd"] == 3.0 and model_agent.usage["input_tokens"] == 10
    assert model_agent.usage["judge_cost_usd"] is None  # one unpriced judge call: the judge's total is unknown


def test_a_scripted_model_answers_concurrent_calls_at_once() -> None:
    import threading

    barrier = threading.Barrier(2, timeout=30.0)  # a deadlock guard, never a figure

    def reply(request: ModelRequest) -> ModelResponse:
        barrier.wait()
        return ModelResponse(text="yes", model="j", stop_reason="end_turn", usage={})

    model = ScriptedModel(reply, role="judge")
    threads = [threading.Thread(target=model.generate, args=(ModelRequest.single("q"),)) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not barrier.broken and len(model.requests) == 2
