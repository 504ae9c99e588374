"""The LangGraph agent on the extraction task through the read tools, and the capability checks."""

from __future__ import annotations

import json

import pytest

from groundeval.agent_io import AgentRequest
from groundeval.agents.base import AgentConfig, check_task, make_agent, preflight_agent
from groundeval.agents.langgraph_agent import LangGraphAgent, LangGraphFHIRAgent
from groundeval.datasets import Case
from groundeval.errors import AgentError, ConfigError
from groundeval.fhir.read_tools import READ_TOOLS
from groundeval.tasks import make_task
from groundeval.tasks.base import FHIR_BUNDLE, TEXT_PROMPT, TOOLS
from groundeval.tasks.extraction.task import TOOLS_NOTE, ExtractionTask
from groundeval.tasks.write.task import WriteTask
from groundeval.testing.scripted_chat import ScriptedChatModel, call
from tests._paths import REPO

from .reader_agent import reader_model

FIXTURES = REPO / "fixtures" / "extraction"
VARIANTS = {v["transformation"]: v["fixture"]
            for v in json.loads((FIXTURES / "MANIFEST.variants.json").read_text())["variants"]}
TOOL_TASK = ExtractionTask(bundle_in_prompt=False)


def request_for(task: ExtractionTask, fixture: str) -> tuple[AgentRequest, Case]:
    case = task.load_case(FIXTURES / fixture)
    request = AgentRequest(case_id=case.case_id, task=task.name, prompt=task.prompt(case), context=task.context(case))
    return request, case


@pytest.mark.parametrize("transformation", [
    "medref-urn-uuid", "medref-relative", "medref-contained", "subject-other-server", "subject-relative",
    "text-only", "rxnorm-oid", "do-not-perform", "intent-plan", "status-on-hold",
])
def test_the_scripted_reader_scores_perfectly_through_the_tools_alone(transformation: str) -> None:
    models: list[ScriptedChatModel] = []

    def model_for(request: AgentRequest) -> ScriptedChatModel:
        models.append(reader_model())
        return models[-1]

    agent = LangGraphFHIRAgent(chat_model=model_for)
    request, case = request_for(TOOL_TASK, VARIANTS[transformation])
    result = agent.run(request)
    score = TOOL_TASK.score(case, TOOL_TASK.truth(case), TOOL_TASK.parse(case, result.text))
    assert score.outcome == "passed", score.message
    assert models[0].bound_tools == list(READ_TOOLS)
    assert [t["tool"] for t in result.trace][:2] == ["get_resources", "get_resources"]
    assert all(t["tool"] in READ_TOOLS for t in result.trace) and result.meta["tool_calls"] == len(result.trace)
    # the model never saw the Bundle in its prompt: only the note saying where to read it
    first_user = models[0].seen[0][-1].text
    assert TOOLS_NOTE in first_user and '"resourceType"' not in first_user


def test_without_the_tools_the_extraction_prompt_is_unchanged() -> None:
    request, case = request_for(ExtractionTask(), VARIANTS["medref-urn-uuid"])
    user = request.prompt.user
    assert user.startswith("Bundle:\n") and TOOLS_NOTE not in user
    body = user.removeprefix("Bundle:\n").split("\n\nAnswer format: ")[0]
    assert json.loads(body) == case.data
    assert request.prompt.system == TOOL_TASK.prompt(case).system
    assert request.context == {"bundle": case.data}


def test_langgraph_picks_the_read_tools_for_a_bundle_and_the_write_tools_for_a_note() -> None:
    seen: list[ScriptedChatModel] = []

    def model_for(request: AgentRequest) -> ScriptedChatModel:
        seen.append(ScriptedChatModel(steps=["[]"]))
        return seen[-1]

    agent = LangGraphAgent(chat_model=model_for)
    request, _ = request_for(ExtractionTask(), VARIANTS["medref-urn-uuid"])
    assert agent.run(request).text == "[]" and seen[-1].bound_tools == list(READ_TOOLS)
    write = AgentRequest(case_id="w", task="write", prompt=request.prompt, context={"patient_reference": "Patient/1"})
    agent.run(write)
    assert seen[-1].bound_tools == ["lookup_rxnorm", "build_medication_statement", "validate_medication_statement"]


def test_a_bundle_the_tools_cannot_load_is_an_agent_error_naming_the_field() -> None:
    request, case = request_for(ExtractionTask(), VARIANTS["medref-urn-uuid"])
    broken = json.loads(json.dumps(case.data))
    del broken["entry"][0]["resource"]["resourceType"]
    agent = LangGraphFHIRAgent(chat_model=ScriptedChatModel(steps=["[]"]))
    with pytest.raises(AgentError, match="the read tools cannot serve this case: the Bundle is not valid FHIR R4B"):
        agent.run(AgentRequest(case_id="x", task="extraction", prompt=request.prompt, context={"bundle": broken}))
    with pytest.raises(AgentError, match=r"no FHIR Bundle \(context\['bundle'\]\)"):
        agent.run(AgentRequest(case_id="x", task="write", prompt=request.prompt, context={"patient_reference": "P/1"}))


def test_a_tool_loop_on_extraction_stops_as_agent_loop_with_its_trace() -> None:
    from groundeval.errors import AgentLoopError

    model = ScriptedChatModel(steps=[call("get_resources", resource_type="Patient")], repeat_last=True)
    agent = LangGraphFHIRAgent(AgentConfig(options={"recursion_limit": 6}), chat_model=model)
    request, _ = request_for(TOOL_TASK, VARIANTS["medref-urn-uuid"])
    with pytest.raises(AgentLoopError) as info:
        agent.run(request)
    assert info.value.details["last_tool"] == "get_resources" and info.value.details["tool_calls"] in range(2, 7)


# -- capabilities ---------------------------------------------------------------------------

def test_extraction_provides_the_bundle_and_without_it_in_the_prompt_no_text_prompt() -> None:
    assert ExtractionTask().provides == frozenset({TEXT_PROMPT, TOOLS, FHIR_BUNDLE})
    assert ExtractionTask.tools == READ_TOOLS
    task = make_task("extraction", {"bundle_in_prompt": "false"})
    assert task.provides == frozenset({TOOLS, FHIR_BUNDLE})
    with pytest.raises(ConfigError, match=r"bundle_in_prompt='maybe': must be true or false"):
        make_task("extraction", {"bundle_in_prompt": "maybe"})


def test_a_single_call_agent_is_refused_when_the_bundle_is_not_in_the_prompt() -> None:
    task = make_task("extraction", {"bundle_in_prompt": "false"})
    with pytest.raises(ConfigError, match=r"agent 'baseline' requires text_prompt, which the extraction task does "
                                          r"not provide \(it provides: fhir_bundle, tools\)"):
        check_task(make_agent("baseline"), "baseline", task)
    check_task(LangGraphFHIRAgent(chat_model=ScriptedChatModel(steps=[])), "langgraph-fhir", task)


def test_langgraph_fhir_is_refused_on_a_task_without_a_bundle(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test-not-a-key")
    message = r"agent 'langgraph-fhir' requires fhir_bundle, which the write task does not provide"
    with pytest.raises(ConfigError, match=message):
        preflight_agent("langgraph-fhir", AgentConfig(), WriteTask())  # the xdist controller's check
    with pytest.raises(ConfigError, match=message):
        check_task(LangGraphFHIRAgent, "langgraph-fhir", "write")  # type: ignore[arg-type]  # a class, a spec string
    assert preflight_agent("langgraph-fhir", AgentConfig(), ExtractionTask()) == "langgraph-fhir"
    assert preflight_agent("langgraph", AgentConfig(), WriteTask()) == "langgraph"
    assert make_agent("langgraph-fhir").name == "langgraph-fhir"
