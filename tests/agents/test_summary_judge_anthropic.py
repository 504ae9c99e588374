"""The summary task's judge through the real anthropic SDK with a mocked HTTP transport."""

from __future__ import annotations

import pytest

from groundeval.tasks.summary.judge import JUDGE_MAX_TOKENS, SYSTEM_PROMPT, JudgeError, make_judge

from .conftest import ScriptedAPI, api_error, message

CRITERION = {"id": "medication:1", "type": "medication", "kind": "must_mention", "points": 1, "safety": False,
             "statement": "The summary lists lisinopril 10 MG Oral Tablet as a current medication.",
             "names": ["lisinopril"], "alternatives": [], "values": []}


def test_the_judge_is_a_judge_role_model_at_temperature_zero_with_its_usage(api_key: str) -> None:
    api = ScriptedAPI([message('{"met": true, "evidence": "an ACE inhibitor, 10 mg"}', model="claude-sonnet-5-5",
                               input_tokens=400, output_tokens=20)])
    judge = make_judge("anthropic/claude-sonnet-5-5", options={"max_retries": 0}, http_client=api.client())
    verdict = judge.decide(CRITERION, "On an ACE inhibitor, 10 mg daily.", label="c/judge/medication:1")
    assert verdict.met and verdict.usage["input_tokens"] == 400 and verdict.usage["cost_usd"] is not None
    body = api.body()
    assert body["temperature"] == 0.0 and body["max_tokens"] == JUDGE_MAX_TOKENS
    assert body["system"][0]["text"] == SYSTEM_PROMPT
    settings = judge.settings()
    assert settings["role"] == "judge" and settings["temperature"] == 0.0 and settings["model"] == "claude-sonnet-5-5"


def test_opus_gets_no_temperature_and_an_overloaded_api_is_a_judge_error(api_key: str) -> None:
    api = ScriptedAPI([api_error(529, "overloaded_error")])
    judge = make_judge("anthropic/claude-opus-4-8", options={"max_retries": 0}, http_client=api.client())
    with pytest.raises(JudgeError) as info:
        judge.decide(CRITERION, "Lisinopril.", label="c/judge/medication:1")
    assert info.value.cause_outcome == "infra_error"
    assert "temperature" not in api.body()
