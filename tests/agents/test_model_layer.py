"""The model layer: specs, ``get_model`` for an agent and a judge, one request shape, the scripted model."""

from __future__ import annotations

import ast
import json
from pathlib import Path
from typing import Any

import httpx2
import pytest

from groundeval.agent_io import AgentRequest, Prompt
from groundeval.agents.base import AgentConfig
from groundeval.agents.claude import ClaudeAgent
from groundeval.errors import AgentError, ConfigError, InfraError, TruncatedError
from groundeval.models import check_model, get_model, parse_spec
from groundeval.models.base import Model, ModelRequest, ModelResponse
from groundeval.testing import ScriptedModel
from tests._fakes.fake_anthropic import ScriptedAPI, api_error, message

SRC = Path(__file__).resolve().parents[2] / "src" / "groundeval"
PROVIDER_SDKS = {"anthropic", "openai", "langchain_anthropic", "langchain_openai"}


@pytest.mark.parametrize(
    ("spec", "provider", "name", "url"),
    [
        ("anthropic/claude-opus-4-8", "anthropic", "claude-opus-4-8", None),
        ("anthropic", "anthropic", None, None),
        ("openai-compatible/qwen2.5-7b@http://127.0.0.1:8000/v1", "openai-compatible", "qwen2.5-7b",
         "http://127.0.0.1:8000/v1"),
        ("openai-compatible/Qwen/Qwen2.5@https://u:pw@host.example/v1", "openai-compatible", "Qwen/Qwen2.5",
         "https://u:pw@host.example/v1"),
        ("local/smollm2", "local", "smollm2", None),
    ],
)
def test_specs_name_a_provider_a_model_and_a_server(spec: str, provider: str, name: str | None, url: str | None) -> None:
    parsed = parse_spec(spec)
    assert (parsed.provider, parsed.name, parsed.base_url) == (provider, name, url)


def test_an_unknown_provider_is_refused_with_the_known_ones_and_the_form() -> None:
    with pytest.raises(ConfigError, match=r"unknown provider 'gpt'; write <provider>/<model> with a provider among anthropic, openai-compatible, local"):
        parse_spec("gpt/4o")


def test_an_openai_compatible_spec_whose_server_is_not_a_url_is_refused_with_the_form() -> None:
    with pytest.raises(ConfigError, match=r"'127\.0\.0\.1:8000/v1' after '@' is not an http\(s\) URL; write "
                                          r"openai-compatible/<name>@<base URL>"):
        parse_spec("openai-compatible/qwen@127.0.0.1:8000/v1")


def test_a_judge_model_answers_through_the_same_layer_with_its_role_recorded(api_key: str, sleeps: list[float]) -> None:
    api = ScriptedAPI([api_error(529, "overloaded_error"), message("yes", input_tokens=100, output_tokens=2)])
    judge = get_model("anthropic/claude-opus-4-8", "judge", options={"temperature": 0.0, "max_tokens": 64},
                      http_client=api.client(), sleep=sleeps.append)
    assert isinstance(judge, Model)
    response = judge.generate(ModelRequest.single("Is it met?", system="Grade.", label="c1/judge/allergy"))
    assert (response.text, response.attempts, len(sleeps)) == ("yes", 2, 1)  # the one retry layer
    assert response.usage["cost_usd"] == pytest.approx(100 * 5 / 1e6 + 2 * 25 / 1e6)
    assert judge.settings() == {"spec": "anthropic/claude-opus-4-8", "role": "judge", "model": "claude-opus-4-8",
                                "max_tokens": 64, "temperature": 0.0}
    assert api.body(1)["max_tokens"] == 64 and api.body(1)["temperature"] == 0.0


def test_the_agent_and_a_model_of_the_same_spec_send_the_same_request(api_key: str, sleeps: list[float]) -> None:
    api = ScriptedAPI([message("[]"), message("[]")])
    agent = ClaudeAgent(AgentConfig(options={"max_tokens": 256}), http_client=api.client(), sleep=sleeps.append)
    model = get_model("anthropic/claude-opus-4-8", options={"max_tokens": 256}, http_client=api.client())
    agent.run(AgentRequest(case_id="c1", task="extraction", prompt=Prompt(system="Rules.", user="Bundle")))
    model.generate(ModelRequest.single("Bundle", system="Rules.", label="c1"))
    assert api.body(0) == api.body(1)
    assert agent.backend.spec == "anthropic/claude-opus-4-8"


def test_errors_name_the_request_label_and_a_cut_off_reply_is_truncated(api_key: str, sleeps: list[float]) -> None:
    api = ScriptedAPI([message("partial", stop_reason="max_tokens"), api_error(503, "api_error")], repeat_last=True)
    model = get_model("anthropic", "judge", options={"max_retries": 0}, http_client=api.client(), sleep=sleeps.append)
    with pytest.raises(TruncatedError, match=r"^c9/judge/allergy: the answer was cut off") as cut:
        model.generate(ModelRequest.single("q", label="c9/judge/allergy"))
    assert cut.value.details["partial_text"] == "partial"
    with pytest.raises(InfraError, match=r"c9/judge/x"):
        model.generate(ModelRequest.single("q", label="c9/judge/x"))


def test_tool_calls_and_tools_cross_the_layer_in_both_providers(api_key: str) -> None:
    tool = {"name": "lookup_code", "description": "Find a code.", "input_schema": {"type": "object"}}
    body = {"id": "m", "type": "message", "role": "assistant", "model": "claude-opus-4-8", "stop_reason": "tool_use",
            "content": [{"type": "text", "text": "Looking."},
                        {"type": "tool_use", "id": "tu_1", "name": "lookup_code", "input": {"code": "860975"}}],
            "usage": {"input_tokens": 10, "output_tokens": 5}}
    api = ScriptedAPI([httpx2.Response(200, json=body)])
    model = get_model("anthropic", http_client=api.client())
    response = model.generate(ModelRequest(messages=({"role": "user", "content": "q"},), tools=(tool,)))
    assert api.body()["tools"] == [tool]
    assert [(c.id, c.name, c.args) for c in response.tool_calls] == [("tu_1", "lookup_code", {"code": "860975"})]

    seen: list[dict[str, Any]] = []

    def chat(request: httpx2.Request) -> httpx2.Response:
        seen.append(json.loads(request.content))
        call = {"id": "call_1", "type": "function", "function": {"name": "lookup_code", "arguments": '{"code": "1"}'}}
        return httpx2.Response(200, json={
            "id": "c", "object": "chat.completion", "created": 0, "model": "m",
            "choices": [{"index": 0, "finish_reason": "tool_calls",
                         "message": {"role": "assistant", "content": None, "tool_calls": [call]}}],
            "usage": {"prompt_tokens": 3, "completion_tokens": 4, "total_tokens": 7}})

    other = get_model("openai-compatible/m@http://127.0.0.1:9/v1", http_client=httpx2.Client(transport=httpx2.MockTransport(chat)))
    answer = other.generate(ModelRequest(messages=({"role": "user", "content": "q"},), system="S", tools=(tool,)))
    assert seen[0]["messages"][0] == {"role": "system", "content": "S"}
    assert seen[0]["tools"][0]["function"]["name"] == "lookup_code"
    assert [(c.name, c.args) for c in answer.tool_calls] == [("lookup_code", {"code": "1"})]
    assert other.spec == "openai-compatible/m@http://127.0.0.1:9/v1"


def test_check_model_refuses_what_get_model_would_without_building_a_client(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    with pytest.raises(ConfigError, match="ANTHROPIC_API_KEY is not set: the judge model needs it"):
        check_model("anthropic/claude-opus-4-8", owner="the judge model")
    with pytest.raises(ConfigError, match=r"temperature=3 is outside"):
        check_model("openai-compatible/m@http://127.0.0.1:9/v1", options={"temperature": 3}, owner="the judge model")


def test_the_scripted_model_is_a_model_and_keeps_what_it_was_asked() -> None:
    model = ScriptedModel(["met", AgentError("x: down", attempts=1)], role="judge")
    assert isinstance(model, Model)
    assert model.generate(ModelRequest.single("q1", label="a")).text == "met"
    with pytest.raises(AgentError, match="x: down"):
        model.generate(ModelRequest.single("q2", label="b"))
    with pytest.raises(AgentError, match="ran out of replies after 2"):
        model.generate(ModelRequest.single("q3", label="c"))
    assert [r.label for r in model.requests] == ["a", "b", "c"]
    echo = ScriptedModel(lambda r: ModelResponse(text=r.system, model="e", stop_reason="end_turn", usage={}))
    assert echo.generate(ModelRequest.single("u", system="sys")).text == "sys"


def test_no_provider_sdk_is_imported_outside_the_model_layer() -> None:
    outside: list[str] = []
    for path in SRC.rglob("*.py"):
        if path.relative_to(SRC).parts[0] == "models":
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else (
                [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            outside += [f"{path.relative_to(SRC)}: {n}" for n in names if n.split(".")[0] in PROVIDER_SDKS]
    assert outside == []


def test_the_run_record_names_the_agents_model_by_spec_and_role(monkeypatch: pytest.MonkeyPatch) -> None:
    from types import SimpleNamespace

    from groundeval.plugin.run_end import _models

    def settings(agent: str, model: str | None = None, **options: object) -> object:
        return SimpleNamespace(agent=agent, model=model, agent_options=options)

    assert _models(settings("claude")) == [{"role": "agent", "spec": "anthropic/claude-opus-4-8"}]
    assert _models(settings("openai-compatible", "qwen", base_url="http://u:secret@127.0.0.1:8000/v1/")) == [
        {"role": "agent", "spec": "openai-compatible/qwen@http://127.0.0.1:8000/v1"}]  # no credential
    assert _models(settings("baseline")) == []  # rule-based: no model call
    assert _models(settings("replay:runs/r.json")) == []


def test_an_unknown_role_is_refused_with_the_roles() -> None:
    from groundeval.models import rejects_temperature

    with pytest.raises(ConfigError, match=r"unknown model role 'jduge' \(did you mean judge\?\); use one of: agent, judge"):
        get_model("anthropic/claude-sonnet-5-5", "jduge")  # type: ignore[arg-type]
    assert rejects_temperature("anthropic/claude-opus-4-8") and rejects_temperature("anthropic")
    assert not rejects_temperature("anthropic/claude-opus-4-6") and not rejects_temperature("anthropic/claude-sonnet-5-5")
