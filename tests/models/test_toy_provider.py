"""A new provider is its file, its registration and its extra: a toy one added here, and nothing else.

This module is the toy provider's file (``ToyProvider``: a JSON API behind ``httpx2`` over a
``MockTransport``). Its registration is one entry of ``models.providers.PROVIDERS`` and its extra
one entry of ``extras.EXTRAS`` (a package would add its optional dependency beside it); both are
set with ``monkeypatch``. Everything else a call needs (retries, classification of a 5xx, the
spending limit, pre-flight, refusal and truncation, the response cache, a judge's role, batch
mode's refusal) comes from ``models.policy.PolicyModel`` without a line for the toy. An agent name
for it is one ``ModelAlias`` (the last test).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx2
import pytest

from groundeval.agent_io import AgentRequest, Prompt
from groundeval.agents.base import AgentConfig
from groundeval.agents.model_agent import ModelAgent, ModelAlias
from groundeval.errors import AgentError, ConfigError, InfraError, RefusalError, SpendLimitReached, TruncatedError
from groundeval.extras import EXTRAS, require_extra
from groundeval.models import get_model, parse_spec, spend
from groundeval.models.base import ModelRequest
from groundeval.models.classify import BadResponse
from groundeval.models.policy import PolicyModel
from groundeval.models.providers import PROVIDERS
from groundeval.models.providers.base import Provider, Reply
from groundeval.models.retry import Completed

URL = "http://toy.test/generate"


class ToyStatusError(Exception):
    """The toy API's error: a status and its response (what ``models.classify.advise`` reads)."""

    def __init__(self, response: httpx2.Response) -> None:
        super().__init__(f"toy API answered {response.status_code}")
        self.status_code = response.status_code
        self.response = response


class ToyProvider(Provider[httpx2.Client]):
    """A toy JSON API: ``POST /generate {"model", "prompt", "max_tokens"}`` -> ``{"text", "stop", "model"}``."""

    name = "toy"
    default_model = "toy-1"
    refusal_reasons = frozenset({"refused"})

    def configure(self, name: str | None) -> str | None:
        require_extra("toy", "json", self.owner)
        return name

    def new_client(self, options: dict[str, Any]) -> httpx2.Client:
        client: httpx2.Client = options.get("http_client") or httpx2.Client()
        return client

    def params(self, request: ModelRequest, max_tokens: int, temperature: float | None) -> dict[str, Any]:
        return {"model": self.model, "system": request.system, "prompt": request.messages[-1]["content"],
                "max_tokens": max_tokens}

    def api_errors(self) -> tuple[type[BaseException], ...]:
        return (ToyStatusError,)

    def call(self, params: dict[str, Any], timeout_s: float) -> Any:
        response = self.client().post(URL, json=params, timeout=timeout_s)
        if response.status_code >= 400:
            raise ToyStatusError(response)
        return response.json()

    def check_value(self, value: Any) -> None:
        if not isinstance(value, dict) or "text" not in value:
            raise BadResponse("shape", "JSON that is not a toy answer")

    def endpoint(self) -> str:
        return "http://toy.test"

    def classify(self, exc: BaseException, label: str, *, attempts: int, note: str) -> AgentError:
        return InfraError(f"{label}: the toy API failed ({exc}){note}", attempts=attempts)

    def reply(self, request: ModelRequest, done: Completed[Any]) -> Reply:
        value = done.value
        usage = {"input_tokens": 3, "output_tokens": 2, "cost_usd": value.get("cost_usd")}
        return Reply(text=value["text"], model=value["model"], stop_reason=value["stop"], usage=usage,
                     request_id=None)

    def truncation_fix(self, stop_reason: str | None) -> str | None:
        return "Raise --groundeval-max-tokens" if stop_reason == "length" else None


@pytest.fixture
def toy(monkeypatch: pytest.MonkeyPatch) -> None:
    """The toy provider's registration and extra: the only two lines outside its file."""
    monkeypatch.setitem(PROVIDERS, "toy", f"{__name__}:ToyProvider")
    monkeypatch.setitem(EXTRAS, "toy", ("json",))


def _server(answers: list[tuple[int, dict[str, Any]]], seen: list[dict[str, Any]]) -> httpx2.Client:
    def handle(request: httpx2.Request) -> httpx2.Response:
        seen.append(json.loads(request.content))
        status, body = answers.pop(0)
        return httpx2.Response(status, json=body)

    return httpx2.Client(transport=httpx2.MockTransport(handle))


def _toy(answers: list[tuple[int, dict[str, Any]]], seen: list[dict[str, Any]], **kw: Any) -> PolicyModel[Any]:
    return get_model("toy/toy-2", http_client=_server(answers, seen), sleep=lambda s: None, **kw)


def _ok(text: str = "hello", stop: str = "end", cost: float | None = None) -> tuple[int, dict[str, Any]]:
    return 200, {"text": text, "stop": stop, "model": "toy-2", "cost_usd": cost}


def test_a_registered_provider_is_a_model_with_the_whole_policy(toy: None) -> None:
    seen: list[dict[str, Any]] = []
    model = _toy([(503, {"error": "busy"}), _ok()], seen)
    assert parse_spec("toy/toy-2").provider == "toy" and model.spec == "toy/toy-2"
    response = model.generate(ModelRequest.single("hi", system="Sys.", label="case-1"))
    assert response.text == "hello" and response.attempts == 2  # the 503 retried by the policy
    assert seen[-1] == {"model": "toy-2", "system": "Sys.", "prompt": "hi", "max_tokens": 4096}
    assert response.meta["max_tokens"] == 4096 and response.started_at is not None


def test_the_policy_classifies_refuses_and_cuts_for_the_toy(toy: None) -> None:
    seen: list[dict[str, Any]] = []
    model = _toy([(503, {}), (503, {}), (503, {}), _ok("no", "refused"), _ok("half", "length")], seen,
                 options={"max_retries": 2})
    with pytest.raises(InfraError, match="the toy API failed"):
        model.generate(ModelRequest.single("a", label="c1"))
    with pytest.raises(RefusalError, match="declined"):
        model.generate(ModelRequest.single("b", label="c2"))
    with pytest.raises(TruncatedError, match="Raise --groundeval-max-tokens") as cut:
        model.generate(ModelRequest.single("c", label="c3"))
    assert cut.value.details["partial_text"] == "half" and len(seen) == 5


def test_the_spending_limit_counts_the_toys_calls(toy: None) -> None:
    seen: list[dict[str, Any]] = []
    model = _toy([_ok(cost=0.6), _ok(cost=0.6)], seen)
    limit = spend.configure(1.0)
    assert limit is not None
    try:
        model.generate(ModelRequest.single("a", label="c1"))
        model.generate(ModelRequest.single("b", label="c2"))  # reserved at 0 (no list price), cost 0.6
        with pytest.raises(SpendLimitReached):
            model.generate(ModelRequest.single("c", label="c3"))
    finally:
        spend.configure(None)
    assert limit.spent_usd == pytest.approx(1.2) and len(seen) == 2


def test_the_toy_as_a_judge_caches_its_replies_and_has_no_batch_api(toy: None, tmp_path: Path) -> None:
    from groundeval.models.cache_store import ResultCache
    from groundeval.models.response_cache import ResponseCache

    seen: list[dict[str, Any]] = []
    judge = _toy([_ok("PASS")], seen, role="judge")
    judge.use_cache(ResponseCache(ResultCache(tmp_path)), prompt_sha256="abc")
    first = judge.generate(ModelRequest.single("grade", label="c1/judge"))
    again = judge.generate(ModelRequest.single("grade", label="c2/judge"))
    assert (first.text, again.text, again.meta.get("cached"), len(seen)) == ("PASS", "PASS", True, 1)
    assert judge.settings()["role"] == "judge"
    with pytest.raises(ConfigError, match="has no provider batch API"):
        judge.batch_api()


def test_a_missing_extra_is_the_one_line_error(toy: None, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(EXTRAS, "toy", ("a_module_that_is_not_installed",))
    monkeypatch.setattr(ToyProvider, "configure",
                        lambda self, name: require_extra("toy", "a_module_that_is_not_installed", self.owner))
    with pytest.raises(ConfigError, match=r"groundeval\[toy\]"):
        get_model("toy/toy-2")


def test_an_agent_name_for_the_toy_is_one_alias(toy: None) -> None:
    seen: list[dict[str, Any]] = []

    class ToyAgent(ModelAgent):
        alias = ModelAlias("toy", provider="toy", extra="toy", module="json")

    agent = ToyAgent(AgentConfig(model="toy-2"), http_client=_server([_ok("42")], seen), sleep=lambda s: None)
    assert agent.name == "toy" and agent.provider_model.spec == "toy/toy-2"
    result = agent.run(AgentRequest(case_id="c1", task="extraction", prompt=Prompt(system="S", user="U")))
    assert result.text == "42" and seen[0]["prompt"] == "U"
