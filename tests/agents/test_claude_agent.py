"""The Claude agent through the real anthropic SDK with a mocked HTTP transport (cases 12, 15)."""

from __future__ import annotations

import subprocess
import sys
import warnings
from pathlib import Path

import anthropic
import httpx2
import pytest

from groundeval.agent_io import AgentRequest, Prompt
from groundeval.agents.base import AgentConfig, make_agent
from groundeval.agents.baselines.extraction import BaselineExtractionAgent
from groundeval.agents.claude import NO_KEY_HINT, ClaudeAgent
from groundeval.errors import (
    AgentError,
    AuthError,
    CaseTooLargeError,
    ConfigError,
    InfraError,
    RunStopError,
    TruncatedError,
)
from groundeval.execution.outcome_policy import RunInfo
from groundeval.plugin.junit import junit_properties
from groundeval.records.aggregate import summarize
from groundeval.tasks import make_task
from groundeval.testing.one_case import run_case
from tests._fakes.fake_anthropic import FAKE_KEY, ScriptedAPI, api_error, message
from tests._paths import REPO

FIXTURES = REPO / "fixtures" / "extraction"
REQUEST = AgentRequest(case_id="c1", task="extraction", prompt=Prompt(system="Rules.", user="Bundle: {}"))
INFO = RunInfo(run_id="r1", task="extraction", agent="claude", model="claude-opus-4-8")


def agent_for(api: ScriptedAPI, sleeps: list[float], **options: object) -> ClaudeAgent:
    return ClaudeAgent(AgentConfig(options=dict(options)), http_client=api.client(), sleep=sleeps.append)


def test_normal_answer_records_usage_cache_fields_cost_and_request_shape(api_key: str, sleeps: list[float]) -> None:
    api = ScriptedAPI([message("[]", model="claude-opus-4-8-20260528", input_tokens=1000, output_tokens=200,
                               cache_creation=2000, cache_read=0, request_id="req_011abc")])
    result = agent_for(api, sleeps).run(REQUEST)
    assert result.text == "[]"
    assert result.model == "claude-opus-4-8-20260528"  # as returned, not as requested
    assert result.attempts == 1 and sleeps == []
    # Opus 4.8: $5 in, $25 out, $6.25 5-minute cache write per MTok.
    assert result.usage == {
        "input_tokens": 1000, "output_tokens": 200, "cache_creation_input_tokens": 2000,
        "cache_read_input_tokens": 0, "cost_usd": pytest.approx(0.005 + 0.005 + 0.0125),
        "price_source": "groundeval Claude list prices (checked 2026-11-29)",
    }
    assert result.meta == {"stop_reason": "end_turn", "request_id": "req_011abc", "max_tokens": 4096,
                           "temperature": None, "retry_wait_s": 0.0}
    body = api.body()
    assert body["model"] == "claude-opus-4-8" and body["max_tokens"] == 4096
    assert body["system"] == [{"type": "text", "text": "Rules.", "cache_control": {"type": "ephemeral"}}]
    assert body["messages"] == [{"role": "user", "content": "Bundle: {}"}]
    assert "temperature" not in body  # Opus 4.7+ reject an explicit temperature
    assert api.requests[0].headers["authorization"] == f"Bearer {FAKE_KEY}"


def test_second_case_reads_the_cached_prefix_at_the_cache_read_price(api_key: str, sleeps: list[float]) -> None:
    api = ScriptedAPI([message(input_tokens=1000, output_tokens=0, cache_read=2000)])
    result = agent_for(api, sleeps, temperature=0.0, max_tokens=512).run(REQUEST)
    assert result.usage["cost_usd"] == pytest.approx(0.005 + 2000 * 0.50 / 1e6)
    assert api.body()["temperature"] == 0.0 and api.body()["max_tokens"] == 512
    assert result.meta["temperature"] == 0.0 and result.meta["max_tokens"] == 512


def test_unknown_model_costs_none_not_zero(api_key: str, sleeps: list[float]) -> None:
    api = ScriptedAPI([message(model="claude-unreleased-9")])
    result = ClaudeAgent(AgentConfig(model="claude-unreleased-9"), http_client=api.client(), sleep=sleeps.append).run(REQUEST)
    assert result.usage["cost_usd"] is None and result.usage["input_tokens"] == 1200
    assert api.body()["model"] == "claude-unreleased-9"


def test_fenced_json_is_kept_raw_and_scored_with_format_ok_false(api_key: str, sleeps: list[float]) -> None:
    task = make_task("extraction")
    (path,) = FIXTURES.glob("Liz_Conn_*.json")
    case = task.load_case(path)
    answer = BaselineExtractionAgent().run(
        AgentRequest(case_id=case.case_id, task="extraction", prompt=task.prompt(case))
    ).text
    fenced = f"Here is the list:\n```json\n{answer}\n```"
    api = ScriptedAPI([message(fenced)])
    run = run_case(task, agent_for(api, sleeps), case, INFO, "n")
    record = run.record
    assert record.raw_output == fenced
    assert record.outcome == "passed" and record.format_ok is False
    assert record.agent_meta["stop_reason"] == "end_turn"
    assert ("stop_reason", "end_turn") in junit_properties(record, task.metric_names)


def test_max_tokens_is_truncated_not_a_format_failure_and_not_retried(api_key: str, sleeps: list[float]) -> None:
    partial = '[{"rxnorm_code": "3109'
    api = ScriptedAPI([message(partial, stop_reason="max_tokens", input_tokens=900, output_tokens=64)])
    with pytest.raises(TruncatedError) as info:
        agent_for(api, sleeps, max_tokens=64).run(REQUEST)
    exc = info.value
    assert len(api.requests) == 1 and exc.attempts == 1  # never re-asked with the same limit
    assert exc.outcome == "truncated"
    assert exc.details["partial_text"] == partial and exc.details["stop_reason"] == "max_tokens"
    assert "max_tokens=64" in str(exc) and "--groundeval-max-tokens" in str(exc)
    task = make_task("extraction")
    case = task.load_case(next(FIXTURES.glob("Liz_Conn_*.json")))
    record = run_case(task, agent_for(ScriptedAPI([message(partial, stop_reason="max_tokens", input_tokens=900,
                                                               output_tokens=64)]), sleeps, max_tokens=64),
                      case, INFO, "n").record
    assert record.outcome == "truncated" and record.parsed is None  # the partial text is never parsed
    assert record.raw_output == partial and record.answered is False and record.metrics["recall"] == 0.0
    assert record.usage["output_tokens"] == 64 and record.usage["cost_usd"] == pytest.approx(
        (900 * 5 + 64 * 25) / 1e6
    )
    props = dict(junit_properties(record, task.metric_names))
    assert props["stop_reason"] == "max_tokens" and props["output_tokens"] == 64
    summary = summarize(task, [record])
    assert summary.excluded == 0 and summary.counted == 1  # an agent fault counts against the agent


def test_429_with_retry_after_then_success(api_key: str, sleeps: list[float]) -> None:
    api = ScriptedAPI([api_error(429, "rate_limit_error", retry_after="30"), message()])
    result = agent_for(api, sleeps).run(REQUEST)
    assert len(api.requests) == 2 and result.attempts == 2
    assert sleeps == [30.0]  # Retry-After honoured, but through the recorder: no real wait
    assert result.meta["retry_wait_s"] == 30.0
    assert api.requests[1].headers["x-stainless-retry-count"] == "0"  # the SDK itself never retried


def test_529_until_retries_run_out_is_an_infra_error(api_key: str, sleeps: list[float]) -> None:
    api = ScriptedAPI([api_error(529, "overloaded_error", "Overloaded")], repeat_last=True)
    with pytest.raises(InfraError) as info:
        agent_for(api, sleeps).run(REQUEST)
    exc = info.value
    assert type(exc) is InfraError and exc.outcome == "infra_error"
    assert len(api.requests) == 3 and exc.attempts == 3  # max_retries=2: one layer, 3 calls
    assert len(sleeps) == 2 and 0.375 <= sleeps[0] <= 0.5 and 0.75 <= sleeps[1] <= 1.0
    assert exc.details["status_code"] == 529 and exc.details["error_type"] == "overloaded_error"
    assert exc.details["request_id"] == "req_529"
    assert "overloaded" in str(exc) and "after 3 attempts" in str(exc)


def test_529_three_times_then_success_with_a_budget_of_four(api_key: str, sleeps: list[float]) -> None:
    overloaded = api_error(529, "overloaded_error")
    api = ScriptedAPI([overloaded, overloaded, overloaded, message()])
    result = agent_for(api, sleeps, max_retries=3).run(REQUEST)
    assert result.attempts == 4 and len(api.requests) == 4 and len(sleeps) == 3


def test_retry_after_longer_than_the_time_budget_fails_at_once(api_key: str, sleeps: list[float]) -> None:
    api = ScriptedAPI([api_error(429, "rate_limit_error", retry_after="171")])
    with pytest.raises(InfraError) as info:
        agent_for(api, sleeps, timeout=60).run(REQUEST)
    assert len(api.requests) == 1 and sleeps == []
    assert "the server asked to wait 171 s" in str(info.value) and "of its 60 s bound" in str(info.value)
    assert info.value.details["retry_after_s"] == 171.0


def test_each_attempt_gets_what_is_left_of_the_case_timeout(api_key: str, sleeps: list[float]) -> None:
    api = ScriptedAPI([message()])
    agent_for(api, sleeps, timeout=600).run(REQUEST)
    # what is left of 600 s: at most the bound, and far more than a busy machine spends before the call
    assert 540 < api.requests[0].extensions["timeout"]["read"] <= 600


def test_401_fails_fast_with_one_call_and_the_hint(api_key: str, sleeps: list[float]) -> None:
    api = ScriptedAPI([api_error(401, "authentication_error", "invalid x-api-key")], repeat_last=True)
    with pytest.raises(AuthError) as info:
        agent_for(api, sleeps).run(REQUEST)
    exc = info.value
    assert len(api.requests) == 1 and exc.attempts == 1 and sleeps == []
    assert exc.outcome == "auth_error"
    assert "rejected the API key" in str(exc) and "--groundeval-agent=baseline" in str(exc)
    assert FAKE_KEY not in str(exc) and FAKE_KEY not in repr(exc.details)


def test_connection_error_is_retried_then_an_infra_error(api_key: str, sleeps: list[float]) -> None:
    api = ScriptedAPI([httpx2.ConnectError("[Errno 111] Connection refused")], repeat_last=True)
    with pytest.raises(InfraError) as info:
        agent_for(api, sleeps, max_retries=1).run(REQUEST)
    assert len(api.requests) == 2 and info.value.attempts == 2 and len(sleeps) == 1
    assert "cannot reach Anthropic" in str(info.value) and "Connection refused" in str(info.value)


def test_timeout_is_an_infra_error(api_key: str, sleeps: list[float]) -> None:
    api = ScriptedAPI([httpx2.ReadTimeout("timed out"), message()])
    assert agent_for(api, sleeps).run(REQUEST).attempts == 2
    api = ScriptedAPI([httpx2.ReadTimeout("timed out")], repeat_last=True)
    with pytest.raises(InfraError, match="no answer from Anthropic in time after 3 attempts"):
        agent_for(api, sleeps).run(REQUEST)


@pytest.mark.parametrize(
    ("reply", "cls", "text"),
    [
        (api_error(400, "invalid_request_error", "`temperature` is deprecated for this model."),
         RunStopError, "drop --groundeval-temperature"),
        (api_error(400, "invalid_request_error", "top_k: Extra inputs are not permitted"), RunStopError,
         r"refused the request for model 'claude-opus-4-8' as invalid"),
        (api_error(404, "not_found_error", "model: claude-nope"), RunStopError,
         r"no model 'claude-opus-4-8'.*check --groundeval-model"),
        (api_error(400, "invalid_request_error", "prompt is too long: 212345 tokens > 200000 maximum"),
         CaseTooLargeError, "c1: the case is too large for the model claude-opus-4-8"),
        (api_error(413, "request_too_large", "Request exceeds the maximum allowed number of bytes."),
         CaseTooLargeError, "too large for the model"),
        (api_error(403, "permission_error", "no access"), AuthError, "may not use this model"),
        (api_error(500, "api_error", x_should_retry="false"), InfraError, "server error"),
    ],
)
def test_refusals_are_not_retried(
    api_key: str, sleeps: list[float], reply: httpx2.Response, cls: type[Exception], text: str
) -> None:
    api = ScriptedAPI([reply], repeat_last=True)
    with pytest.raises(cls, match=text) as info:
        agent_for(api, sleeps).run(REQUEST)
    assert type(info.value) is cls and len(api.requests) == 1 and sleeps == []


def test_a_deprecated_model_warns_once_per_agent_not_per_case(api_key: str, sleeps: list[float]) -> None:
    api = ScriptedAPI([message(model="claude-sonnet-4-5")], repeat_last=True)
    agent = ClaudeAgent(AgentConfig(model="claude-sonnet-4-5"), http_client=api.client(), sleep=sleeps.append)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for _ in range(3):
            agent.run(REQUEST)
    deprecations = [w for w in caught if issubclass(w.category, DeprecationWarning)]
    assert len(deprecations) == 1 and "claude-sonnet-4-5' is deprecated" in str(deprecations[0].message)


def test_missing_key_is_a_config_error_with_the_one_line_hint(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    with pytest.raises(ConfigError) as info:
        make_agent("claude")
    assert str(info.value) == NO_KEY_HINT and "\n" not in NO_KEY_HINT


@pytest.mark.parametrize("options", [{"max_tokens": 0}, {"timeout": -1}, {"max_retries": "x"}])
def test_bad_options_are_config_errors(api_key: str, options: dict[str, object]) -> None:
    with pytest.raises(ConfigError, match="agent options"):
        ClaudeAgent(AgentConfig(options=options))


def test_the_sdk_client_has_no_retry_layer_of_its_own(api_key: str, sleeps: list[float]) -> None:
    api = ScriptedAPI([message()])
    agent = agent_for(api, sleeps)
    agent.run(REQUEST)
    assert agent.backend._pool.current is not None and agent.backend._pool.current.max_retries == 0


def test_classify_anthropic_error_for_langchain_style_callers() -> None:
    from groundeval.models.classify import classify_anthropic_error

    request = httpx2.Request("POST", "https://api.anthropic.com/v1/messages")
    body = {"type": "error", "error": {"type": "rate_limit_error", "message": "slow down"}}
    exc = anthropic.RateLimitError("429", response=httpx2.Response(429, request=request), body=body)
    error = classify_anthropic_error(exc, "case-1")
    assert isinstance(error, InfraError) and error.attempts is None
    assert error.details["status_code"] == 429 and str(error).startswith("case-1: rate limited")
    assert isinstance(classify_anthropic_error(anthropic.APITimeoutError(request), "c"), InfraError)
    assert type(classify_anthropic_error(ValueError("odd"), "c")) is AgentError


def test_importing_the_agents_does_not_import_the_sdks(tmp_path: Path) -> None:
    code = (
        "import sys, os\n"
        "os.environ['ANTHROPIC_API_KEY'] = 'x'\n"
        "from groundeval.agents.base import AgentConfig, make_agent\n"
        "make_agent('claude')\n"
        "make_agent('openai-compatible', AgentConfig(model='m', options={'base_url': 'http://h/v1'}))\n"
        "bad = [m for m in ('anthropic', 'openai', 'httpx2') if m in sys.modules]\n"
        "assert not bad, bad\n"
    )
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path, check=False)
    assert run.returncode == 0, run.stderr
