"""A case's MCP server: what the official client sees, what the server records, and how failures are classed."""

from __future__ import annotations

import asyncio
import json
import threading
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("mcp")
pytest.importorskip("langchain_mcp_adapters")

from langchain_core.tools import StructuredTool
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client

from groundeval.agent_io import AgentRequest, AgentResult, Prompt, ToolServer
from groundeval.agents._case_tools import case_tools
from groundeval.errors import AgentError, InfraError, RunStopError
from groundeval.execution.call import request_for
from groundeval.mcp_server.http_host import HttpHost
from groundeval.mcp_server.serving import MCPToolsAgent
from groundeval.mcp_server.tools import CaseToolServer, tool_spec
from groundeval.tasks import make_task
from groundeval.terminology import Catalog
from tests._paths import REPO

LABS = sorted((REPO / "fixtures" / "labs").glob("[A-Z]*.json"))
WRITE = REPO / "fixtures" / "write" / "acetaminophen-every-six-to-eight-hours.json"


def _request(task: str, path: Path) -> AgentRequest:
    built = make_task(task, {})
    return request_for(built, built.load_case(path))


def _args(request: AgentRequest) -> dict[str, dict[str, Any]]:
    """Valid arguments for every tool a case may offer (read from the case's own context)."""
    bundle = request.context.get("bundle") or {}
    entries = bundle.get("entry", [])
    patient = next(e for e in entries if e["resource"]["resourceType"] == "Patient") if entries else {}
    loinc = next((c["code"] for e in entries if e["resource"]["resourceType"] == "Observation"
                  for c in e["resource"]["code"]["coding"] if c.get("system") == "http://loinc.org"), "4548-4")
    return {
        "get_resources": {"resource_type": "Patient"},
        "resolve_reference": {"reference": patient.get("fullUrl", "")},
        "lookup_code": {"query": "aspirin", "limit": 2},
        "get_observations": {"loinc_code": loinc},
        "lookup_rxnorm": {"query": "Tylenol", "limit": 1},
        "build_medication_statement": {"status": "active", "rxcui": "209387"},
        "validate_medication_statement": {"resource": {"resourceType": "MedicationStatement", "status": "active"}},
    }


async def _session_calls(url: str, calls: list[tuple[str, dict[str, Any]]]) -> tuple[list[Any], list[Any]]:
    async with streamable_http_client(url) as (read, write, _), ClientSession(read, write) as session:
        await session.initialize()
        listed = (await session.list_tools()).tools
        results = [await session.call_tool(name, args) for name, args in calls]
    return listed, results


class _ClientAgent:
    """An agent that is only an MCP client: lists the case's tools and calls each with valid arguments."""

    name = "client"
    model = None

    def __init__(self, extra: list[tuple[str, dict[str, Any]]] = ()) -> None:  # type: ignore[assignment]
        self.extra = list(extra)
        self.seen: dict[str, Any] = {}

    def run(self, request: AgentRequest) -> AgentResult:
        assert request.tool_server is not None
        args = _args(request)
        calls = [(name, args[name]) for name in request.tool_server.tools] + self.extra
        listed, results = asyncio.run(_session_calls(request.tool_server.url, calls))
        self.seen[request.case_id] = {"listed": listed, "results": results, "server": request.tool_server}
        return AgentResult(text="[]", trace=[{"tool": "ignored", "args": {}, "result": None, "ok": True}])


@pytest.mark.parametrize(("task", "path"), [("write", WRITE), ("labs", LABS[0])], ids=["write", "labs"])
def test_the_official_client_lists_and_calls_every_tool_as_the_in_process_agent_gets_it(task: str, path: Path) -> None:
    request = _request(task, path)
    local = case_tools(request.case_id, request.context, Catalog.load, "the test")
    agent = _ClientAgent()
    result = MCPToolsAgent(agent).run(request)
    seen = agent.seen[request.case_id]
    # same names, descriptions and JSON schemas as the LangChain tools the in-process agent binds
    assert [(t.name, t.description, t.inputSchema) for t in seen["listed"]] == [
        (s["name"], s["description"], s["parameters"]) for s in map(tool_spec, local)]
    assert seen["server"].tools == tuple(t.name for t in local) and len(local) == (3 if task == "write" else 4)
    args = _args(request)
    for tool, answer in zip(local, seen["results"], strict=True):
        expected = tool.invoke(args[tool.name])
        assert not answer.isError, answer.content
        assert json.loads(answer.content[0].text) == json.loads(json.dumps(expected)), tool.name
        assert answer.structuredContent == json.loads(json.dumps(expected))
    # the record's trace is the server's, not what the agent reported
    assert isinstance(result, AgentResult)
    oks = [json.loads(json.dumps(t.invoke(args[t.name]))).get("ok") is not False for t in local]
    assert [(e["tool"], e["args"], e["ok"]) for e in result.trace] == [
        (t.name, args[t.name], ok) for t, ok in zip(local, oks, strict=True)]
    assert True in oks  # a call that succeeded
    assert all(e["duration_s"] >= 0 for e in result.trace)
    assert result.meta["mcp_tool_calls"] == len(local)


def test_a_tool_not_offered_or_arguments_failing_the_schema_are_error_results_and_counted() -> None:
    request = _request("write", WRITE)
    agent = _ClientAgent(extra=[("get_resources", {"resource_type": "Patient"}), ("lookup_rxnorm", {"limit": "x"})])
    result = MCPToolsAgent(agent).run(request)
    unknown, invalid = agent.seen[request.case_id]["results"][-2:]
    assert unknown.isError and "get_resources is not a valid tool" in unknown.content[0].text
    assert invalid.isError and json.loads(invalid.content[0].text)["ok"] is False
    assert isinstance(result, AgentResult)
    assert [e.get("rejected") for e in result.trace[-2:]] == ["unknown_tool", "invalid_arguments"]
    assert [e["ok"] for e in result.trace[-2:]] == [False, False]
    assert "'query' is a required property" in result.trace[-1]["error"]
    assert (result.meta["mcp_unknown_tool_calls"], result.meta["mcp_invalid_argument_calls"]) == (1, 1)


def test_a_tool_that_raises_answers_with_an_mcp_error_result_and_the_server_goes_on() -> None:
    def broken(query: str) -> dict[str, Any]:
        raise RuntimeError(f"catalog unavailable for {query}")

    def fine(query: str) -> dict[str, Any]:
        return {"ok": True, "query": query}

    tools = [StructuredTool.from_function(broken, name="broken", description="Raises."),
             StructuredTool.from_function(fine, name="fine", description="Answers.")]
    server = CaseToolServer(tools)
    host = HttpHost(server.server)
    url = host.start()
    try:
        _, (bad, good) = asyncio.run(_session_calls(url, [("broken", {"query": "a"}), ("fine", {"query": "b"})]))
    finally:
        host.stop()
    assert bad.isError and json.loads(bad.content[0].text) == {
        "ok": False, "error": "RuntimeError: catalog unavailable for a"}
    assert not good.isError and json.loads(good.content[0].text) == {"ok": True, "query": "b"}
    assert [(e["tool"], e["ok"], e.get("error")) for e in server.trace] == [
        ("broken", False, "RuntimeError: catalog unavailable for a"), ("fine", True, None)]


def test_two_concurrent_cases_servers_never_share_data() -> None:
    first, second = (_request("labs", path) for path in LABS[:2])
    assert first.context["bundle"] != second.context["bundle"]
    both_up = threading.Barrier(2, timeout=60)
    seen: dict[str, Any] = {}

    class Reader:
        name = "reader"
        model = None

        def run(self, request: AgentRequest) -> str:
            assert request.tool_server is not None
            both_up.wait()  # both cases' servers are running now
            other = [*seen.setdefault("urls", []), request.tool_server.url]
            seen["urls"] = other
            _, (patients,) = asyncio.run(_session_calls(request.tool_server.url,
                                                        [("get_resources", {"resource_type": "Patient"})]))
            seen[request.case_id] = json.loads(patients.content[0].text)["entries"]
            both_up.wait()  # neither server stops before the other case has read its own
            return "[]"

    wrapper = MCPToolsAgent(Reader())
    results: dict[str, Any] = {}
    threads = [threading.Thread(target=lambda r=r: results.__setitem__(r.case_id, wrapper.run(r)))
               for r in (first, second)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    own = {r.case_id: next(e["resource"]["id"] for e in r.context["bundle"]["entry"]
                           if e["resource"]["resourceType"] == "Patient") for r in (first, second)}
    assert len(set(own.values())) == 2 and len(set(seen["urls"])) == 2
    for case_id, patient in own.items():
        assert [e["resource"]["id"] for e in seen[case_id]] == [patient]
        trace = results[case_id].trace
        assert [e["result"]["entries"][0]["resource"]["id"] for e in trace] == [patient]
    # each server is gone once its case ended
    for url in seen["urls"]:
        with pytest.raises(BaseException, match=r"(?i)connect|unhandled errors"):  # httpx's, in an ExceptionGroup
            asyncio.run(_session_calls(url, []))


def test_a_server_that_cannot_start_is_a_config_error_naming_why() -> None:
    request = _request("write", WRITE)
    agent = _ClientAgent()
    with pytest.raises(RunStopError) as caught:
        MCPToolsAgent(agent, host="203.0.113.1").run(request)  # TEST-NET-3: not an address of this machine
    assert caught.value.outcome == "config_error"
    assert "could not start on 203.0.113.1: OSError" in str(caught.value)
    assert agent.seen == {}


def test_a_case_whose_bundle_cannot_back_the_tools_is_the_agents_error_as_in_process() -> None:
    request = _request("labs", LABS[0])
    broken = AgentRequest(case_id=request.case_id, task="labs", prompt=Prompt("s", "u"),
                          context={"bundle": {"resourceType": "Bundle", "type": "collection", "entry": [
                              {"resource": {"resourceType": "Patient", "birthDate": "not-a-date"}}]}})
    with pytest.raises(AgentError, match="the read tools cannot serve this case"):
        MCPToolsAgent(_ClientAgent()).run(broken)


def test_the_stdio_command_reaches_the_same_server_and_its_calls_are_traced() -> None:
    request = _request("write", WRITE)

    class StdioAgent:
        name = "stdio"
        model = None

        def run(self, request: AgentRequest) -> str:
            server = request.tool_server
            assert server is not None
            command, *args = server.stdio_command

            async def go() -> tuple[list[str], str]:
                params = StdioServerParameters(command=command, args=args)
                async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
                    await session.initialize()
                    names = [t.name for t in (await session.list_tools()).tools]
                    found = await session.call_tool("lookup_rxnorm", {"query": "Tylenol", "limit": 1})
                    return names, found.content[0].text

            names, text = asyncio.run(go())
            return json.dumps({"names": names, "text": text})

    result = MCPToolsAgent(StdioAgent()).run(request)
    assert isinstance(result, AgentResult)
    answer = json.loads(result.text)
    assert answer["names"] == ["lookup_rxnorm", "build_medication_statement", "validate_medication_statement"]
    assert json.loads(answer["text"])["results"][0]["rxcui"] == "209387"
    assert [(e["tool"], e["args"]) for e in result.trace] == [("lookup_rxnorm", {"query": "Tylenol", "limit": 1})]


def test_a_dropped_connection_is_an_infra_error_with_the_calls_made_before_it() -> None:
    from langchain_core.messages import BaseMessage

    from groundeval.agents.langgraph_mcp import LangGraphMCPAgent
    from groundeval.testing.scripted_chat import ScriptedChatModel, call

    request = _request("write", WRITE)
    server = CaseToolServer(case_tools(request.case_id, request.context, Catalog.load, "the test"))
    host = HttpHost(server.server)
    url = host.start()

    def drop_then_call(messages: list[BaseMessage]) -> Any:
        host.stop()  # the server goes away between two tool calls
        return call("lookup_rxnorm", query="ibuprofen")

    model = ScriptedChatModel(steps=[call("lookup_rxnorm", query="Tylenol"), drop_then_call, "never reached"])
    agent = LangGraphMCPAgent(chat_model=model)
    served = AgentRequest(case_id=request.case_id, task=request.task, prompt=request.prompt, context=request.context,
                          tool_server=ToolServer(url=url, tools=server.names))
    try:
        with pytest.raises(InfraError) as caught:
            agent.run(served)
    finally:
        host.stop()
    assert caught.value.outcome == "infra_error"
    assert "MCP connection to the case's tool server" in str(caught.value) and "lookup_rxnorm" in str(caught.value)
    assert model.calls == 2  # the model never saw the failure as a tool result
    assert [e["tool"] for e in server.trace] == ["lookup_rxnorm"]


def test_an_unreachable_server_is_an_infra_error() -> None:
    from groundeval.agents.langgraph_mcp import LangGraphMCPAgent
    from groundeval.testing.scripted_chat import ScriptedChatModel

    request = _request("write", WRITE)
    server = CaseToolServer([])
    host = HttpHost(server.server)
    url = host.start()
    host.stop()  # nothing listens there any more
    served = AgentRequest(case_id="c", task="write", prompt=request.prompt, context=request.context,
                          tool_server=ToolServer(url=url))
    with pytest.raises(InfraError, match="could not open an MCP session"):
        LangGraphMCPAgent(chat_model=ScriptedChatModel(steps=["x"])).run(served)


def test_the_mcp_agent_without_a_tool_server_stops_the_run() -> None:
    from groundeval.agents.langgraph_mcp import LangGraphMCPAgent
    from groundeval.testing.scripted_chat import ScriptedChatModel

    request = _request("write", WRITE)
    with pytest.raises(RunStopError, match="add --groundeval-tools=mcp"):
        LangGraphMCPAgent(chat_model=ScriptedChatModel(steps=["x"])).run(request)
