"""The LangGraph agent never sends a history whose tool results do not follow their tool calls.

A middleware that drops or moves a tool result (the way a trimming or summarising middleware can)
makes a history the Messages API refuses with a 400, which would stop the whole run as
``config_error``. The history check refuses it first: the request is not sent and the case is a
``harness_error`` (excluded from the means, counted), never ``agent_error``.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from langchain.agents.middleware import AgentMiddleware
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

from groundeval.agent_io import AgentRequest
from groundeval.agents import langgraph_agent
from groundeval.agents._langgraph_history import history_fault
from groundeval.agents.langgraph_agent import LangGraphFHIRAgent
from groundeval.errors import HarnessError
from groundeval.execution.outcome_policy import RunInfo
from groundeval.records.outcomes import POLICY
from groundeval.tasks.extraction.task import ExtractionTask
from groundeval.testing.one_case import run_case
from groundeval.testing.scripted_chat import ScriptedChatModel
from tests._paths import REPO

from .reader_agent import reader_model

FIXTURES = REPO / "fixtures" / "extraction"
VARIANTS = {v["transformation"]: v["fixture"]
            for v in json.loads((FIXTURES / "MANIFEST.variants.json").read_text())["variants"]}
TASK = ExtractionTask(bundle_in_prompt=False)
INFO = RunInfo(run_id="r1", task="extraction", agent="langgraph-fhir", model="scripted")


def _ai(*ids: str) -> AIMessage:
    return AIMessage("", tool_calls=[{"name": "get_resources", "args": {}, "id": i} for i in ids])


def _tool(call_id: str) -> ToolMessage:
    return ToolMessage("{}", tool_call_id=call_id)


def test_a_well_formed_history_passes() -> None:
    history = [HumanMessage("q"), _ai("a", "b"), _tool("b"), _tool("a"), _ai("c"), _tool("c"), AIMessage("done")]
    assert history_fault(history) is None


@pytest.mark.parametrize(("history", "index", "words"), [
    ([HumanMessage("q"), _tool("a")], 1, "answers no tool call"),  # a result with no call before it
    ([HumanMessage("q"), _ai("a"), HumanMessage("more")], 2, "before the tool call(s) ['a']"),
    ([HumanMessage("q"), _ai("a"), _tool("a"), _tool("a")], 3, "answers no tool call"),  # answered twice
    ([HumanMessage("q"), _ai("a"), _tool("b")], 2, "tool_call_id='b'"),
    ([HumanMessage("q"), _ai("a", "b"), _tool("a")], 3, "ends before the tool call(s) ['b']"),
    ([HumanMessage("q"), _ai("a"), _ai("b"), _tool("a")], 2, "a ai message before"),
    ([HumanMessage("q"), _ai("a", "a")], 1, "repeated tool call id"),
])
def test_each_broken_pairing_is_found_with_its_place(history: list[Any], index: int, words: str) -> None:
    fault = history_fault(history)
    assert fault is not None and fault[0] == index and words in fault[1], fault


class DropToolResults(AgentMiddleware):  # type: ignore[type-arg]
    """Plays a middleware that trims tool results out of the history before the model call."""

    def wrap_model_call(self, request: Any, handler: Callable[[Any], Any]) -> Any:
        kept = [m for m in request.messages if not isinstance(m, ToolMessage)]
        return handler(request.override(messages=kept))


@pytest.fixture
def dropping_graph(monkeypatch: pytest.MonkeyPatch) -> None:
    real = langgraph_agent.build_write_graph

    def build(model: Any, tools: Any, system: str, middleware: Any = (), case_id: str = "") -> Any:
        return real(model, tools, system, [*middleware, DropToolResults()], case_id=case_id)

    monkeypatch.setattr(langgraph_agent, "build_write_graph", build)


def _agent(models: list[ScriptedChatModel]) -> LangGraphFHIRAgent:
    def model_for(request: AgentRequest) -> ScriptedChatModel:
        models.append(reader_model())
        return models[-1]

    return LangGraphFHIRAgent(chat_model=model_for)


@pytest.mark.usefixtures("dropping_graph")
def test_a_malformed_history_is_never_sent_and_the_case_is_a_harness_error() -> None:
    case = TASK.load_case(FIXTURES / VARIANTS["medref-urn-uuid"])
    models: list[ScriptedChatModel] = []
    run = run_case(TASK, _agent(models), case, INFO, f"x::{case.case_id}")
    record = run.record
    assert record.outcome == "harness_error" and isinstance(run.exc, HarnessError)
    assert record.error is not None and record.error.type == "HarnessError"
    assert record.error.details["problem"].startswith("the history ends before the tool call(s)")
    assert record.message is not None and record.message.startswith("harness_error: HarnessError: ")
    # the first turn went out (no tool result yet); the second, missing its results, never did
    assert len(models[0].seen) == 1
    rule = next(r for r in POLICY if r.outcome == "harness_error")
    assert rule.pytest == "error" and not rule.counted and record.counted is False


def test_without_the_dropping_middleware_the_same_case_is_scored() -> None:
    case = TASK.load_case(FIXTURES / VARIANTS["medref-urn-uuid"])
    models: list[ScriptedChatModel] = []
    run = run_case(TASK, _agent(models), case, INFO, f"x::{case.case_id}")
    assert run.record.outcome == "passed" and len(models[0].seen) > 1
