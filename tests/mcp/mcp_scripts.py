"""Scripted agents for the MCP tests: one script per task, played by the in-process and the MCP LangGraph agent.

Copied into pytester directories as an agent module, with ``reader_agent.py`` (``tests/fhir``):
``--groundeval-agent=mcp_scripts:inprocess`` is ``langgraph`` and ``mcp_scripts:mcp`` is
``langgraph-mcp`` (with ``--groundeval-tools=mcp``), each over a fresh scripted model per case
built from the same script, so the two runs differ only in how the tools are reached.

* extraction, reconcile: ``reader_agent``'s reads (list, list, resolve[, look up]) and answer;
* labs: list the Patient and the Observations of the first LOINC code the prompt names, then answer
  with the rule-based ``baseline-labs`` answer (the tools' results are not used: the point is the trace);
* write: look the drug up by the note's first word, build from the top match, answer with the
  built resource (the Tylenol case with its known-good arguments).
"""

from __future__ import annotations

import json
import re
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage
from reader_agent import reader_model, reconcile_model

from groundeval.agent_io import AgentRequest
from groundeval.agents.langgraph_agent import LangGraphAgent
from groundeval.agents.langgraph_mcp import LangGraphMCPAgent
from groundeval.testing.scripted_chat import ScriptedChatModel, answer_with_last_result, call, last_tool_result


def _build_from_lookup(messages: list[BaseMessage]) -> AIMessage:
    found = last_tool_result(messages, "lookup_rxnorm") or {}
    top = (found.get("results") or [{}])[0] if isinstance(found, dict) else {}
    args: dict[str, Any] = {"status": "active"}
    if top.get("rxcui"):
        args["rxcui"] = top["rxcui"]
    else:
        args["medication_text"] = "unknown medication"
    return call("build_medication_statement", **args)


def write_model(request: AgentRequest) -> ScriptedChatModel:
    if request.case_id == "tylenol-brand-lookup":
        return ScriptedChatModel(steps=[
            call("lookup_rxnorm", query="Tylenol 325 mg"),
            call("build_medication_statement", status="active", rxcui="209387", dose_value=650,
                 dose_unit="mg", frequency=1, period=6, period_unit="h", as_needed=True),
            answer_with_last_result("build_medication_statement", "resource"),
        ])
    note = request.prompt.user.split("<note>", 1)[-1]
    word = next(iter(re.findall(r"[A-Za-z]{4,}", note)), "tablet")
    return ScriptedChatModel(steps=[
        call("lookup_rxnorm", query=word, limit=3),
        _build_from_lookup,
        answer_with_last_result("build_medication_statement", "resource"),
    ])


def labs_model(request: AgentRequest) -> ScriptedChatModel:
    from groundeval.agents.baselines.labs import BaselineLabsAgent

    out = BaselineLabsAgent().run(request)
    answer = out if isinstance(out, str) else out.text
    codes = re.findall(r"\b\d{3,5}-\d\b", request.prompt.user)
    return ScriptedChatModel(steps=[
        call("get_resources", resource_type="Patient"),
        call("get_observations", loinc_code=codes[0] if codes else "4548-4"),
        answer,
    ])


def model_for(request: AgentRequest) -> ScriptedChatModel:
    if request.task == "extraction":
        return reader_model()
    if request.task == "reconcile":
        return reconcile_model(str(request.context["report"]))
    if request.task == "labs":
        return labs_model(request)
    return write_model(request)


inprocess = LangGraphAgent(chat_model=model_for)
"""``langgraph`` (tools in-process) over the scripts."""

mcp = LangGraphMCPAgent(chat_model=model_for)
"""``langgraph-mcp`` (tools from the case's MCP server) over the same scripts."""

__all__ = ["inprocess", "json", "mcp", "model_for"]
