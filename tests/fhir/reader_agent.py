"""A scripted chat model that reads a patient's medications through the FHIR read tools.

Used by the tests here, and copied into pytester directories as an agent module
(``--groundeval-agent=reader_agent:agent``). It plays what a careful model would do with the
extraction prompt's rules, written out as a script (test code, independent of the truth code):

1. ``get_resources("Patient")`` and ``get_resources("MedicationRequest")``;
2. ``resolve_reference`` on every distinct subject and every ``medicationReference`` (with the
   request's id as ``parent_resource_id``);
3. answer with the RxNorm coding of every active, ordered, not-forbidden request whose subject
   resolved to the Patient, once per code (the record's text when there is no RxNorm code).

The subject is checked by resolving it, not by comparing strings, so the answer is only right
when ``resolve_reference`` follows FHIR's rule for absolute references.

``reconcile_agent`` plays a naive reconciler with the same reads plus one ``lookup_code`` on the
report's first word: it calls every record medication ``matched``, so it passes the cases whose
report matches the record and fails the others (an honest scripted answer, not a good one).
"""

from __future__ import annotations

import json
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, ToolMessage

from groundeval.agents.langgraph_agent import LangGraphFHIRAgent
from groundeval.testing.scripted_chat import ScriptedChatModel, call

RXNORM = "http://www.nlm.nih.gov/research/umls/rxnorm"
ORDERS = {"order", "original-order", "reflex-order", "filler-order", "instance-order"}


def results(messages: list[BaseMessage]) -> list[tuple[str, dict[str, Any], Any]]:
    """``(tool, args, decoded result)`` for every tool call answered so far, in order."""
    args = {c["id"]: (c["name"], c["args"]) for m in messages if isinstance(m, AIMessage) for c in m.tool_calls}
    out = []
    for m in messages:
        if isinstance(m, ToolMessage) and m.tool_call_id in args:
            content = m.content if isinstance(m.content, str) else json.dumps(m.content)
            out.append((*args[m.tool_call_id], json.loads(content)))
    return out


def _listed(messages: list[BaseMessage], resource_type: str) -> list[dict[str, Any]]:
    for name, args, result in results(messages):
        if name == "get_resources" and args.get("resource_type") == resource_type:
            entries: list[dict[str, Any]] = result["entries"]
            return entries
    return []


def resolve_step(messages: list[BaseMessage]) -> AIMessage:
    """One turn resolving every subject and medicationReference."""
    requests = [e["resource"] for e in _listed(messages, "MedicationRequest")]
    calls = [{"name": "resolve_reference", "args": {"reference": ref}, "id": "pending"}
             for ref in sorted({r["subject"]["reference"] for r in requests})]
    calls += [{"name": "resolve_reference", "id": "pending",
               "args": {"reference": r["medicationReference"]["reference"], "parent_resource_id": r["id"]}}
              for r in requests if "medicationReference" in r]
    if not calls:
        calls = [{"name": "get_resources", "args": {"resource_type": "Medication"}, "id": "pending"}]
    return AIMessage(content="", tool_calls=calls)


def answer_step(messages: list[BaseMessage]) -> str:
    """The final answer from what the tools returned."""
    (patient,) = [e["resource"] for e in _listed(messages, "Patient")]
    resolved = {(a["reference"], a.get("parent_resource_id")): r for n, a, r in results(messages)
                if n == "resolve_reference"}
    answer: list[dict[str, Any]] = []
    seen: set[str | None] = set()
    for request in (e["resource"] for e in _listed(messages, "MedicationRequest")):
        subject = resolved.get((request["subject"]["reference"], None), {})
        is_patient = subject.get("ok") and subject["resource"]["resourceType"] == "Patient" \
            and subject["resource"]["id"] == patient["id"]
        if request["status"] != "active" or request["intent"] not in ORDERS or request.get("doNotPerform") \
                or not is_patient:
            continue
        concept = request.get("medicationCodeableConcept")
        if concept is None:
            target = resolved.get((request["medicationReference"]["reference"], request["id"]), {})
            if not target.get("ok"):
                continue
            concept = target["resource"].get("code", {})
        coding = next((c for c in concept.get("coding", []) if c.get("system") in
                       (RXNORM, "urn:oid:2.16.840.1.113883.6.88")), None)
        item = {"rxnorm_code": coding["code"], "display": coding.get("display")} if coding else \
            {"rxnorm_code": None, "display": concept.get("text", "")}
        if item["rxnorm_code"] not in seen or item["rxnorm_code"] is None:
            seen.add(item["rxnorm_code"])
            answer.append(item)
    return json.dumps(answer)


def reader_model() -> ScriptedChatModel:
    """A fresh scripted model for one case (4 turns: list, list, resolve, answer)."""
    return ScriptedChatModel(steps=[
        call("get_resources", resource_type="Patient"),
        call("get_resources", resource_type="MedicationRequest"),
        resolve_step,
        answer_step,
    ])


agent = LangGraphFHIRAgent(chat_model=lambda request: reader_model())
"""The agent spec ``reader_agent:agent``: ``langgraph-fhir`` over a fresh scripted model per case."""


def all_matched_step(messages: list[BaseMessage]) -> str:
    """Reconcile answer: every record medication the extraction reading finds, as ``matched``."""
    return json.dumps([{**item, "status": "matched"} for item in json.loads(answer_step(messages))])


def reconcile_model(report: str) -> ScriptedChatModel:
    """A fresh scripted reconciler for one case (5 turns: list, list, resolve, look up, answer)."""
    words = [w.strip(".,") for w in report.split() if len(w.strip(".,")) > 4]
    return ScriptedChatModel(steps=[
        call("get_resources", resource_type="Patient"),
        call("get_resources", resource_type="MedicationRequest"),
        resolve_step,
        call("lookup_code", query=words[0] if words else "tablet", limit=3),
        all_matched_step,
    ])


reconcile_agent = LangGraphFHIRAgent(chat_model=lambda request: reconcile_model(str(request.context["report"])))
"""The agent spec ``reader_agent:reconcile_agent``: ``langgraph-fhir`` reconciling naively."""
