"""The LangGraph agent's turns go through the model policy: its pre-flight and the spending limit.

The agent runs with its real ChatAnthropic, whose SDK client talks to a mocked transport (as in
``tests/tasks/write/test_langgraph_agent.py``).
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from groundeval.agents.base import AgentConfig
from groundeval.agents.langgraph_agent import LangGraphWriteAgent
from groundeval.errors import CaseTooLargeError, ConfigError, SpendLimitReached
from groundeval.models import spend
from groundeval.models.policy import PolicyModel
from tests._fakes.fake_anthropic import message_body
from tests.tasks.write.test_langgraph_agent import RXNORM, TASK, load, run

pytest.importorskip("langchain_anthropic")


def _agent(monkeypatch: pytest.MonkeyPatch, bodies: list[dict[str, Any]], **options: Any) -> LangGraphWriteAgent:
    import anthropic
    import httpx2

    from groundeval.agent_io import AgentRequest

    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test-not-a-key")
    agent = LangGraphWriteAgent(AgentConfig(options={"max_retries": 0, **options}), sleep=lambda s: None)
    sent: list[Any] = []

    def handler(request: Any) -> Any:
        sent.append(request)
        return httpx2.Response(200, json=bodies.pop(0))

    model = agent._model_for(AgentRequest(case_id="x", task="write", prompt=TASK.prompt(load("ibuprofen-two-tablets"))))
    client = httpx2.Client(transport=httpx2.MockTransport(handler))
    model.__dict__["_client"] = anthropic.Anthropic(api_key="sk-test-not-a-key", max_retries=0, http_client=client)
    agent.sent = sent  # type: ignore[attr-defined]
    return agent


def _answer(case_id: str) -> dict[str, Any]:
    case = load(case_id)
    statement = {"resourceType": "MedicationStatement", "status": "active",
                 "medicationCodeableConcept": {"coding": [{"system": RXNORM, "code": "310798",
                                                           "display": "Hydrochlorothiazide 25 MG Oral Tablet"}]},
                 "subject": {"reference": case.data["patient"]["reference"]}}
    return message_body(json.dumps(statement), input_tokens=1000, output_tokens=200)


def test_the_agent_exposes_its_policy_model(monkeypatch: pytest.MonkeyPatch) -> None:
    agent = _agent(monkeypatch, [])
    assert isinstance(agent.provider_model, PolicyModel)
    assert agent.provider_model.spec == "anthropic/claude-opus-4-8" and agent.provider_model.role == "agent"
    with pytest.raises(ConfigError, match="does not make one provider model call per case"):
        agent.provider_model.batch_api()  # several turns per case: never sent in batches


def test_each_turn_is_reserved_and_settled_at_its_reply_price(monkeypatch: pytest.MonkeyPatch) -> None:
    case = "hydrochlorothiazide-dose-unknown"
    agent = _agent(monkeypatch, [_answer(case)])
    limit = spend.configure(100.0)
    assert limit is not None
    try:
        result, _ = run(agent, case)
    finally:
        spend.configure(None)
    assert limit.spent_usd == pytest.approx(result.usage["cost_usd"]) and limit.spent_usd > 0
    assert limit.reserved_usd == 0


def test_a_turn_past_the_spending_limit_is_never_sent(monkeypatch: pytest.MonkeyPatch) -> None:
    agent = _agent(monkeypatch, [_answer("hydrochlorothiazide-dose-unknown")])
    spend.configure(0.000001)
    try:
        with pytest.raises(SpendLimitReached):
            run(agent, "hydrochlorothiazide-dose-unknown")
    finally:
        spend.configure(None)
    assert agent.sent == []  # type: ignore[attr-defined]


def test_a_turn_too_large_for_the_context_is_refused_before_it_is_sent(monkeypatch: pytest.MonkeyPatch) -> None:
    agent = _agent(monkeypatch, [], max_tokens=50_000_000)
    with pytest.raises(CaseTooLargeError, match="too large for the model claude-opus-4-8") as info:
        run(agent, "ibuprofen-two-tablets")
    assert info.value.attempts == 0 and agent.sent == []  # type: ignore[attr-defined]
