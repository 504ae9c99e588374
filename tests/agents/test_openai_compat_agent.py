"""The openai-compatible agent against a real HTTP server on 127.0.0.1 (stdlib http.server)."""

from __future__ import annotations

import json
import shutil
import socket
from collections.abc import Iterator
from typing import Any, cast

import pytest

from groundeval.agent_io import AgentRequest, Prompt
from groundeval.agents.base import AgentConfig, make_agent
from groundeval.agents.baselines.extraction import BaselineExtractionAgent
from groundeval.agents.openai_compat import KEY_ENV, OpenAICompatibleAgent
from groundeval.errors import (
    AuthError,
    CaseTooLargeError,
    ConfigError,
    InfraError,
    RunStopError,
    TruncatedError,
)
from tests._fakes.fake_openai import ChatServer, Reply, completion, error, serve_chat
from tests._paths import REPO

FIXTURES = REPO / "fixtures" / "extraction"
REQUEST = AgentRequest(case_id="c1", task="extraction", prompt=Prompt(system="Rules.", user="Bundle: {}"))

def agent_of(server: ChatServer, sleeps: list[float], **options: object) -> OpenAICompatibleAgent:
    config = AgentConfig(model="llama-3.3-70b-instruct", options={"base_url": server.url, **options})
    return OpenAICompatibleAgent(config, sleep=sleeps.append)


@pytest.fixture
def server() -> Iterator[ChatServer]:
    yield from serve_chat()


def test_normal_answer_with_usage_in_anthropic_terms(server: ChatServer, sleeps: list[float], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(KEY_ENV, raising=False)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-openai-real-key-must-not-leave")
    server.replies = [completion('[{"rxnorm_code": "123", "display": "x"}]', prompt=900, out=30, cached=200)]
    result = agent_of(server, sleeps, max_tokens=256).run(REQUEST)
    assert result.text == '[{"rxnorm_code": "123", "display": "x"}]' and result.model == "llama-3.3-70b-instruct"
    assert result.attempts == 1
    assert result.usage == {"input_tokens": 700, "output_tokens": 30, "cache_creation_input_tokens": 0,
                            "cache_read_input_tokens": 200, "cost_usd": None}  # open weights: no list price
    assert result.meta == {"stop_reason": "stop", "request_id": "req-local-1", "max_tokens": 256,
                           "temperature": None, "retry_wait_s": 0.0}
    (req,) = server.requests
    assert req["path"] == "/v1/chat/completions"
    assert req["body"]["messages"] == [{"role": "system", "content": "Rules."},
                                       {"role": "user", "content": "Bundle: {}"}]
    assert req["body"]["max_tokens"] == 256 and "temperature" not in req["body"]
    auth = {k.lower(): v for k, v in req["headers"].items()}["authorization"]
    assert auth == "Bearer EMPTY"  # OPENAI_API_KEY is never sent to another host


def test_key_and_temperature_when_given(server: ChatServer, sleeps: list[float], monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    monkeypatch.setenv(KEY_ENV, "local-server-key-123456")
    caplog.set_level("DEBUG")
    result = agent_of(server, sleeps, temperature=0.0).run(REQUEST)
    (req,) = server.requests
    assert req["body"]["temperature"] == 0.0 and result.meta["temperature"] == 0.0
    assert {k.lower(): v for k, v in req["headers"].items()}["authorization"] == "Bearer local-server-key-123456"
    assert "chat/completions" in caplog.text and "local-server-key-123456" not in caplog.text


def test_503_then_success_is_retried_once(server: ChatServer, sleeps: list[float]) -> None:
    server.replies = [error(503, "loading model", retry_after="2"), completion()]
    result = agent_of(server, sleeps).run(REQUEST)
    assert result.attempts == 2 and len(server.requests) == 2 and sleeps == [2.0]


def test_5xx_until_retries_run_out_is_an_infra_error(server: ChatServer, sleeps: list[float]) -> None:
    server.replies = [error(500, "CUDA out of memory")]
    with pytest.raises(InfraError) as info:
        agent_of(server, sleeps, max_retries=1).run(REQUEST)
    assert info.value.attempts == 2 and len(server.requests) == 2
    assert info.value.details["status_code"] == 500 and server.url in str(info.value)


def test_401_is_an_auth_error_without_retry(server: ChatServer, sleeps: list[float]) -> None:
    server.replies = [error(401, "Invalid API key")]
    with pytest.raises(AuthError, match=f"set {KEY_ENV}"):
        agent_of(server, sleeps).run(REQUEST)
    assert len(server.requests) == 1


def test_404_unknown_model_stops_the_run(server: ChatServer, sleeps: list[float]) -> None:
    server.replies = [error(404, "The model `nope` does not exist.")]
    with pytest.raises(RunStopError, match="check --groundeval-model and --groundeval-base-url") as info:
        agent_of(server, sleeps).run(REQUEST)
    assert type(info.value) is RunStopError and len(server.requests) == 1
    assert "'llama-3.3-70b-instruct'" in str(info.value)


def test_context_length_400_is_case_too_large(server: ChatServer, sleeps: list[float]) -> None:
    server.replies = [error(400, "This model's maximum context length is 8192 tokens. However, you requested 9000")]
    with pytest.raises(CaseTooLargeError, match="c1: the case is too large for the model llama") as info:
        agent_of(server, sleeps).run(REQUEST)
    assert len(server.requests) == 1 and info.value.outcome == "case_too_large"


def test_unknown_parameter_400_stops_the_run(server: ChatServer, sleeps: list[float]) -> None:
    server.replies = [error(400, "Unrecognized request argument supplied: foo")]
    with pytest.raises(RunStopError, match=r"refused the request for model 'llama-3\.3-70b-instruct' as invalid"):
        agent_of(server, sleeps).run(REQUEST)


def test_finish_reason_length_is_truncated(server: ChatServer, sleeps: list[float]) -> None:
    server.replies = [completion('[{"rxnorm_code": "31', finish="length", out=16)]
    with pytest.raises(TruncatedError) as info:
        agent_of(server, sleeps, max_tokens=16).run(REQUEST)
    assert info.value.details["partial_text"] == '[{"rxnorm_code": "31' and len(server.requests) == 1
    assert cast(dict[str, Any], info.value.details["usage"])["output_tokens"] == 16


def test_nothing_listening_is_an_infra_error(sleeps: list[float]) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]  # closed again when the block ends: nobody listens there
    config = AgentConfig(model="m", options={"base_url": f"http://127.0.0.1:{port}/v1", "max_retries": 1})
    with pytest.raises(InfraError, match=r"cannot reach the server at http://127\.0\.0\.1") as info:
        OpenAICompatibleAgent(config, sleep=sleeps.append).run(REQUEST)
    assert info.value.attempts == 2 and len(sleeps) == 1


@pytest.mark.parametrize(
    ("config", "message"),
    [(AgentConfig(model="m"), "needs --groundeval-base-url"),
     (AgentConfig(options={"base_url": "http://h/v1"}), "needs --groundeval-model")],
)
def test_base_url_and_model_are_required(config: AgentConfig, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        make_agent("openai-compatible", config)


def test_plugin_run_compares_an_open_weight_model_on_the_same_cases(server: ChatServer, pytester: pytest.Pytester) -> None:
    baseline = BaselineExtractionAgent()

    def answer(body: dict[str, Any]) -> Reply:
        user = body["messages"][-1]["content"]
        req = AgentRequest(case_id="x", task="extraction", prompt=Prompt(system="", user=user))
        return completion(baseline.run(req).text)

    server.replies = [answer]
    data = pytester.path / "data"
    data.mkdir()
    for prefix in ("Liz_Conn", "Clemente_Kreiger"):
        (src,) = FIXTURES.glob(f"{prefix}_*.json")
        shutil.copy(src, data / src.name)
    result = pytester.runpytest(
        "--groundeval-task=extraction", "--groundeval-agent=openai-compatible",
        f"--groundeval-base-url={server.url}", "--groundeval-model=llama-3.3-70b-instruct",
        "--groundeval-data-dir=data", "-p", "no:cacheprovider",
    )
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines([
        "agent: openai-compatible  model: llama-3.3-70b-instruct  run: *",
        "usage: input_tokens: 1800  output_tokens: 60  cache_creation_input_tokens: 0  "
        "cache_read_input_tokens: 0  cost_usd: unknown (no price for the model: price it with --groundeval-prices FILE)",
    ])
    (path,) = (pytester.path / "runs").glob("*.json")
    record = json.loads(path.read_text())
    assert record["settings"]["agent_options"]["base_url"] == server.url
    case = record["cases"][0]
    assert case["model"] == "llama-3.3-70b-instruct" and case["attempts"] == 1
    assert case["agent_meta"]["stop_reason"] == "stop" and case["agent_meta"]["request_id"] == "req-local-1"
    assert case["usage"]["cost_usd"] is None
