"""The LangGraph write agent, driven offline by the scripted chat model through the real tools."""

from __future__ import annotations

import json
import threading
from typing import TYPE_CHECKING, Any, cast

import pytest
from langchain_core.messages import AIMessage, BaseMessage, ToolMessage
from langchain_core.tools import StructuredTool

from groundeval.agent_io import AgentRequest
from groundeval.agents.base import AgentConfig, make_agent
from groundeval.agents.langgraph_agent import LangGraphWriteAgent, tool_trace
from groundeval.datasets import default_data_dir
from groundeval.errors import (
    AgentError,
    AgentLoopError,
    AuthError,
    ConfigError,
    InfraError,
    RefusalError,
    TruncatedError,
)
from groundeval.execution.call import call_agent, request_for
from groundeval.tasks.write.task import WriteTask
from groundeval.testing.scripted_chat import (
    ScriptedChatModel,
    ScriptExhaustedError,
    answer_with_last_result,
    call,
    last_tool_result,
)
from tests._fakes.fake_anthropic import message_body

if TYPE_CHECKING:
    from langchain_anthropic import ChatAnthropic

TASK = WriteTask()
RXNORM = "http://www.nlm.nih.gov/research/umls/rxnorm"
UCUM = "http://unitsofmeasure.org"
TOOLS = ["lookup_rxnorm", "build_medication_statement", "validate_medication_statement"]


def load(case_id: str) -> Any:
    return TASK.load_case(default_data_dir("write") / f"{case_id}.json")


def run(agent: LangGraphWriteAgent, case_id: str) -> tuple[Any, Any]:
    """Run the agent on a case through the runner; return (result, score)."""
    case = load(case_id)
    result = call_agent(agent, request_for(TASK, case)).result
    return result, TASK.score(case, TASK.truth(case), TASK.parse(case, result.text))


def scripted(*steps: Any, **kwargs: Any) -> tuple[LangGraphWriteAgent, ScriptedChatModel]:
    model = ScriptedChatModel(steps=list(steps), **kwargs)
    return LangGraphWriteAgent(chat_model=model), model


def test_scripted_model_drives_the_real_agent_through_the_real_tools() -> None:
    agent, model = scripted(
        call("lookup_rxnorm", query="Tylenol 325 mg"),
        call("build_medication_statement", status="active", rxcui="209387", dose_value=650, dose_unit="mg",
             frequency=1, period=6, period_unit="h", as_needed=True),
        answer_with_last_result("build_medication_statement", "resource"),
    )
    result, score = run(agent, "tylenol-brand-lookup")
    assert model.bound_tools == TOOLS
    assert score.outcome == "passed", score.message
    assert [(t["tool"], t["ok"]) for t in result.trace] == [("lookup_rxnorm", True), ("build_medication_statement", True)]
    assert result.trace[0]["result"]["results"][0]["rxcui"] == "209387"  # the real catalog answered
    assert result.trace[1]["args"]["dose_value"] == 650
    assert result.attempts == 3 and result.model == "scripted"
    assert result.meta == {"stop_reason": None, "recursion_limit": 25, "tool_calls": 2, "model_turns": 3}
    # The model saw the system prompt and the note; the subject came from the request context.
    assert "R4B" in model.seen[0][0].content and "Tylenol 325 mg tablets" in model.seen[0][1].content
    assert json.loads(result.text)["subject"] == {"reference": load("tylenol-brand-lookup").data["patient"]["reference"]}
    json.dumps(result.trace)  # JSON-safe for the run record


def test_validate_then_fix_loop() -> None:
    """The model writes JSON itself, reads the validator's issues, fixes them and validates again."""
    case = load("levothyroxine-micrograms")
    draft = {
        "resourceType": "MedicationStatement", "status": "taking",
        "medicationCodeableConcept": {"coding": [{"system": RXNORM, "code": "966222",
                                                  "display": "Levothyroxine Sodium 0.075 MG Oral Tablet"}]},
        "subject": {"reference": case.data["patient"]["reference"]},
        "dosage": [{"timing": {"repeat": {"frequency": 1, "period": 1, "periodUnit": "day"}},
                    "doseAndRate": [{"doseQuantity": {"value": 75, "unit": "mcg", "system": UCUM, "code": "mcg"}}]}],
    }

    def fix(messages: list[BaseMessage]) -> AIMessage:
        report = last_tool_result(messages, "validate_medication_statement")
        assert report["ok"] is False
        fixed = json.loads(json.dumps(draft))
        for issue in report["issues"]:  # apply the validator's own fixes
            if issue["path"].endswith("status"):
                fixed["status"] = "active"
            elif issue["path"].endswith("periodUnit"):
                fixed["dosage"][0]["timing"]["repeat"]["periodUnit"] = "d"
            elif issue["path"].endswith("doseQuantity.code"):
                fixed["dosage"][0]["doseAndRate"][0]["doseQuantity"].update(unit="ug", code="ug")
        return call("validate_medication_statement", resource=fixed)

    def answer(messages: list[BaseMessage]) -> str:
        assert last_tool_result(messages, "validate_medication_statement")["ok"] is True
        ai = [m for m in messages if isinstance(m, AIMessage) and m.tool_calls]
        return json.dumps(ai[-1].tool_calls[0]["args"]["resource"])

    agent, _ = scripted(call("lookup_rxnorm", query="levothyroxine 75 mcg"),
                        call("validate_medication_statement", resource=draft), fix, answer)
    result, score = run(agent, "levothyroxine-micrograms")
    assert [(t["tool"], t["ok"]) for t in result.trace] == [
        ("lookup_rxnorm", True), ("validate_medication_statement", False), ("validate_medication_statement", True)]
    problems = " ".join(i["problem"] for i in result.trace[1]["result"]["issues"])
    assert "'taking'" in problems and "'day'" in problems and "'mcg'" in problems
    assert score.outcome == "passed", score.message


def test_a_tool_that_raises_becomes_an_error_value_and_the_agent_carries_on() -> None:

    def offline(query: str) -> str:
        """Search a remote terminology server.

        Args:
            query: Drug name.
        """
        raise RuntimeError("terminology server unreachable")

    def tools(request: AgentRequest) -> list[Any]:
        assert request.tools is not None  # the task's own tools, wrapped
        return [StructuredTool.from_function(offline, name="remote_lookup", parse_docstring=True), *request.tools()]

    seen: list[ToolMessage] = []

    def after_error(messages: list[BaseMessage]) -> AIMessage:
        seen.append(cast(ToolMessage, messages[-1]))
        return call("lookup_rxnorm", query="ibuprofen 200 mg")

    model = ScriptedChatModel(steps=[
        call("remote_lookup", query="ibuprofen"), after_error,
        call("build_medication_statement", status="active", rxcui="310965", dose_value=400, dose_unit="mg",
             frequency=3, period=1, period_unit="d"),
        answer_with_last_result("build_medication_statement", "resource"),
    ])
    result, score = run(LangGraphWriteAgent(chat_model=model, tools=tools), "ibuprofen-two-tablets")
    assert seen[0].status == "error"
    assert result.trace[0] == {"tool": "remote_lookup", "args": {"query": "ibuprofen"}, "ok": False,
                               "result": {"ok": False, "error": "RuntimeError: terminology server unreachable"}}
    assert [t["ok"] for t in result.trace[1:]] == [True, True]
    assert score.outcome == "passed"


def test_the_recursion_limit_stops_a_looping_agent_as_agent_loop() -> None:
    model = ScriptedChatModel(steps=[call("lookup_rxnorm", query="ibuprofen")], repeat_last=True)
    agent = LangGraphWriteAgent(AgentConfig(options={"recursion_limit": 7}), chat_model=model)
    with pytest.raises(AgentLoopError) as info:
        run(agent, "ibuprofen-two-tablets")
    error = info.value
    assert error.outcome == "agent_loop"
    assert "recursion_limit=7" in str(error) and error.details["recursion_limit"] == 7
    trace = cast(list[dict[str, Any]], error.details["trace"])
    assert len(trace) >= 2 and {t["tool"] for t in trace} == {"lookup_rxnorm"}
    assert error.attempts == model.calls
    assert error.details["model_calls"] == model.calls and error.details["limit"] == 7
    assert error.details["last_tool"] == "lookup_rxnorm"
    json.dumps(error.details)


def test_a_reply_cut_at_max_tokens_is_truncated_and_its_tool_call_never_runs() -> None:
    """fault case 12 B: partial tool input is neither executed nor scored."""
    cut = AIMessage(content='{"resourceType": "Medic',
                    tool_calls=[{"name": "build_medication_statement", "args": {}, "id": "x"}],
                    response_metadata={"stop_reason": "max_tokens"})
    agent, _ = scripted(call("lookup_rxnorm", query="ibuprofen"), cut)
    with pytest.raises(TruncatedError) as info:
        run(agent, "ibuprofen-two-tablets")
    details = info.value.details
    assert info.value.outcome == "truncated"
    assert details["partial_tool_calls"] == 1 and details["partial_text"] == '{"resourceType": "Medic'
    # The cut call is in the trace as never run: no result, not ok.
    assert [(t["tool"], t["ok"], t["result"] is None) for t in cast(list[dict[str, Any]], details["trace"])] == [
        ("lookup_rxnorm", True, False), ("build_medication_statement", False, True)]
    assert details["tool_calls"] == 2 and "usage" in details


def test_the_agent_needs_a_bundle_or_the_patient_reference_in_the_context() -> None:
    agent, _ = scripted("{}")
    request = AgentRequest(case_id="x", task="extraction", prompt=TASK.prompt(load("ibuprofen-two-tablets")))
    with pytest.raises(AgentError, match="neither a bundle nor a patient_reference"):
        agent.run(request)


def test_a_script_that_runs_out_fails_loudly_instead_of_wrapping_around() -> None:
    model = ScriptedChatModel(steps=["done"])
    assert model.invoke("hi").content == "done"
    with pytest.raises(ScriptExhaustedError, match="called 2 times but its script has 1 steps"):
        model.invoke("again")


def test_tool_trace_marks_calls_that_never_ran() -> None:
    messages = [AIMessage(content="", tool_calls=[{"name": "a", "args": {"q": 1}, "id": "1"},
                                                  {"name": "b", "args": {}, "id": "2"}]),
                ToolMessage(content='{"ok": true}', tool_call_id="1")]
    assert tool_trace(messages) == [{"tool": "a", "args": {"q": 1}, "result": {"ok": True}, "ok": True},
                                    {"tool": "b", "args": {}, "result": None, "ok": False}]


def test_without_a_key_the_agent_refuses_with_a_hint(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    with pytest.raises(ConfigError, match="--groundeval-agent=baseline-write"):
        make_agent("langgraph")
    with pytest.raises(ConfigError, match="recursion_limit must be an integer >= 2"):
        LangGraphWriteAgent(AgentConfig(options={"recursion_limit": "many"}), chat_model=ScriptedChatModel())


# -- ChatAnthropic over a mocked HTTP transport --------------------------------------------------

def claude_agent(monkeypatch: pytest.MonkeyPatch, responses: list[Any], sleeps: list[float]) -> LangGraphWriteAgent:
    """The agent with its real ChatAnthropic, whose SDK client talks to a mock transport."""
    anthropic = pytest.importorskip("anthropic")
    httpx2 = pytest.importorskip("httpx2")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test-not-a-key")
    agent = LangGraphWriteAgent(AgentConfig(options={"max_retries": 2}), sleep=sleeps.append)
    model = agent._model_for(AgentRequest(case_id="x", task="write", prompt=TASK.prompt(load("ibuprofen-two-tablets"))))
    assert type(model).__name__ == "ChatAnthropic"
    model = cast("ChatAnthropic", model)
    assert model.model == "claude-opus-4-8" and model.max_retries == 0  # agents._retry is the one layer

    def handler(request: Any) -> Any:
        status, body = responses.pop(0)
        if isinstance(body, bytes):  # a raw body: an HTML page, cut-off JSON
            kind = "text/html" if body.startswith(b"<") else "application/json"
            return httpx2.Response(status, content=body, headers={"content-type": kind})
        return httpx2.Response(status, json=body, headers={"retry-after": "0.01"} if status == 529 else {})

    client = httpx2.Client(transport=httpx2.MockTransport(handler))
    model.__dict__["_client"] = anthropic.Anthropic(api_key="sk-test-not-a-key", max_retries=0, http_client=client)
    return agent


def test_chat_anthropic_overload_is_retried_then_answered(monkeypatch: pytest.MonkeyPatch) -> None:
    case = load("hydrochlorothiazide-dose-unknown")
    answer = {"resourceType": "MedicationStatement", "status": "active",
              "medicationCodeableConcept": {"coding": [{"system": RXNORM, "code": "310798",
                                                        "display": "Hydrochlorothiazide 25 MG Oral Tablet"}]},
              "subject": {"reference": case.data["patient"]["reference"]}}
    overloaded = {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
    sleeps: list[float] = []
    agent = claude_agent(monkeypatch, [(529, overloaded), (200, message_body(json.dumps(answer),
                                                                            input_tokens=1000, output_tokens=200))],
                         sleeps)
    result, score = run(agent, "hydrochlorothiazide-dose-unknown")
    assert sleeps == [0.01] and result.attempts == 2
    assert result.model == "claude-opus-4-8" and result.meta["stop_reason"] == "end_turn"
    assert result.usage["input_tokens"] == 1000 and result.usage["output_tokens"] == 200
    assert isinstance(result.usage["cost_usd"], float) and result.usage["cost_usd"] > 0
    assert score.outcome == "passed", score.message


def test_chat_anthropic_failures_reuse_the_infra_classes(monkeypatch: pytest.MonkeyPatch) -> None:
    rejected = {"type": "error", "error": {"type": "authentication_error", "message": "invalid x-api-key"}}
    agent = claude_agent(monkeypatch, [(401, rejected)], [])
    with pytest.raises(AuthError, match="rejected the API key"):
        run(agent, "ibuprofen-two-tablets")
    overloaded = {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
    sleeps: list[float] = []
    agent = claude_agent(monkeypatch, [(529, overloaded)] * 3, sleeps)
    with pytest.raises(InfraError) as info:
        run(agent, "ibuprofen-two-tablets")
    assert info.value.outcome == "infra_error" and info.value.attempts == 3 and len(sleeps) == 2
    assert info.value.details["status_code"] == 529 and info.value.details["trace"] == []


@pytest.mark.parametrize("body", [b"<!DOCTYPE html><html><body>Welcome</body></html>", b'{"id": "msg_1", "ty',
                                  b'{"hello": "world"}'])
def test_chat_anthropic_2xx_that_is_not_an_answer_is_an_infra_error(monkeypatch: pytest.MonkeyPatch,
                                                                    body: bytes) -> None:
    sleeps: list[float] = []
    agent = claude_agent(monkeypatch, [(200, body)] * 3, sleeps)
    with pytest.raises(InfraError, match="answered with") as info:
        run(agent, "ibuprofen-two-tablets")
    assert type(info.value) is InfraError and info.value.attempts == 3 and len(sleeps) == 2
    assert info.value.details["bad_response"] in ("html", "not_json", "unreadable")


def test_the_case_timeout_bounds_every_model_turn() -> None:
    model = ScriptedChatModel(steps=[call("lookup_rxnorm", query="ibuprofen")], repeat_last=True)
    agent = LangGraphWriteAgent(AgentConfig(options={"timeout": 1e-6, "recursion_limit": 50}), chat_model=model)
    with pytest.raises(InfraError, match=r"its whole 1e-06 s bound \(--groundeval-timeout\)"):
        run(agent, "ibuprofen-two-tablets")


def test_a_model_turn_is_bounded_by_what_is_left_of_the_case_budget() -> None:
    # the bound is far above what the first (scripted) turn needs once warmed up (tens of ms on a
    # busy machine), and the second turn holds far longer than the bound (released at teardown)
    release = threading.Event()

    def slow(messages: list[BaseMessage]) -> str:
        release.wait(120)  # a turn that would outlive the case
        return "{}"

    model = ScriptedChatModel(steps=[call("lookup_rxnorm", query="ibuprofen"), slow])
    agent = LangGraphWriteAgent(AgentConfig(options={"timeout": 2.0}), chat_model=model)
    agent.warmup()  # as the plugin does before the first case: imports are not the case's time
    try:
        with pytest.raises(InfraError, match=r"stopped at its 2 s bound \(--groundeval-timeout\)") as info:
            run(agent, "ibuprofen-two-tablets")
    finally:
        release.set()
    assert info.value.outcome == "infra_error" and not info.value.connection
    ran, trace = info.value.details["ran_s"], info.value.details["trace"]
    assert info.value.details["timeout_s"] == 2.0 and isinstance(ran, float) and ran >= 2.0
    assert isinstance(trace, list) and [t["tool"] for t in trace] == ["lookup_rxnorm"]  # the first turn ran


def test_a_refusal_stop_reason_is_a_refusal() -> None:
    refused = AIMessage(content="I can't help with that.", response_metadata={"stop_reason": "refusal"})
    agent, _ = scripted(refused)
    with pytest.raises(RefusalError) as info:
        run(agent, "ibuprofen-two-tablets")
    assert info.value.outcome == "refusal" and info.value.details["partial_text"] == "I can't help with that."


@pytest.mark.parametrize("temperature", [-0.1, 1.5])
def test_a_temperature_outside_anthropic_range_is_refused(temperature: float) -> None:
    with pytest.raises(ConfigError, match=rf"--groundeval-temperature={temperature:g} .*\(0 to 1\)"):
        LangGraphWriteAgent(AgentConfig(options={"temperature": temperature}), chat_model=ScriptedChatModel())
