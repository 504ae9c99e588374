"""Scripted models for ``langgraph-rest``: one plan per task, reading over FHIR REST what ``reader_agent`` reads in-process.

Copied into pytester directories as an agent module beside ``reader_agent.py`` (``tests/fhir``):
``--groundeval-agent=rest_scripts:agent`` is ``langgraph-rest`` over a fresh scripted model per case.
Each plan answers from what its tools returned, with the rules its in-process twin applies:

* extraction, reconcile: ``fhir_read`` the Patient, ``fhir_search`` the patient's MedicationRequests
  with ``_include=MedicationRequest:medication`` (pages followed), answer the active ordered ones
  (the subject check is the server's ``patient`` search; a ``medicationReference`` is resolved from
  the included Medications or the request's contained ones); reconcile calls each ``matched``;
* labs: ``fhir_read`` the Patient, ``fhir_search`` every Observation of the patient, then answer
  with ``baseline-labs``' rule over a Bundle of what came back;
* summary: ``fhir_read`` the Patient, ``fhir_search`` its Conditions, MedicationRequests (with
  ``_include``), AllergyIntolerances and Observations, then answer with ``baseline-summary``'s
  template over a Bundle of what came back (``inprocess_summary_model`` is the same plan over the
  in-process ``get_resources``);
* write: ``lookup_rxnorm`` as the in-process script does, build the statement from the top match
  with the write task's builder (the arguments the in-process script gives its build tool) and
  ``fhir_create`` it; answer with what the server returned.
"""

from __future__ import annotations

import dataclasses
import json
import re
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage
from reader_agent import ORDERS, RXNORM, results

from groundeval.agent_io import AgentRequest, Prompt
from groundeval.agents.langgraph_rest import LangGraphRestAgent
from groundeval.testing.scripted_chat import ScriptedChatModel, call, last_tool_result


def _searched(messages: list[BaseMessage], resource_type: str) -> list[dict[str, Any]]:
    for name, args, result in results(messages):
        if name == "fhir_search" and args.get("resource_type") == resource_type and result.get("ok"):
            entries: list[dict[str, Any]] = result["entries"]
            return entries
    return []


def _tail(reference: str) -> str:
    """The id a ``Type/id``, an absolute URL or a ``urn:uuid:`` reference names."""
    return reference.rsplit("/", 1)[-1].rsplit(":", 1)[-1]


def rest_answer(messages: list[BaseMessage]) -> str:
    """The extraction answer from the REST reads (the rules of ``reader_agent.answer_step``)."""
    entries = _searched(messages, "MedicationRequest")
    included = {e["resource"]["id"]: e["resource"] for e in entries
                if e["resource"].get("resourceType") == "Medication"}
    answer: list[dict[str, Any]] = []
    seen: set[str | None] = set()
    for request in (e["resource"] for e in entries if e["resource"].get("resourceType") == "MedicationRequest"):
        if request["status"] != "active" or request["intent"] not in ORDERS or request.get("doNotPerform"):
            continue
        concept = request.get("medicationCodeableConcept")
        if concept is None:
            ref = request["medicationReference"]["reference"]
            contained = {c.get("id"): c for c in request.get("contained") or []}
            target = contained.get(ref[1:]) if ref.startswith("#") else included.get(_tail(ref))
            if target is None:
                continue
            concept = target.get("code", {})
        coding = next((c for c in concept.get("coding", []) if c.get("system") in
                       (RXNORM, "urn:oid:2.16.840.1.113883.6.88")), None)
        item = {"rxnorm_code": coding["code"], "display": coding.get("display")} if coding else \
            {"rxnorm_code": None, "display": concept.get("text", "")}
        if item["rxnorm_code"] not in seen or item["rxnorm_code"] is None:
            seen.add(item["rxnorm_code"])
            answer.append(item)
    return json.dumps(answer)


def _patient_id(request: AgentRequest) -> str:
    assert request.fhir is not None
    return request.fhir.patient.split("/", 1)[1]


def _medications(request: AgentRequest) -> list[AIMessage]:
    assert request.fhir is not None
    return [
        call("fhir_read", resource_type="Patient", resource_id=_patient_id(request)),
        call("fhir_search", resource_type="MedicationRequest", max_resources=1000,
             params={"patient": request.fhir.patient, "_include": "MedicationRequest:medication"}),
    ]


def extraction_model(request: AgentRequest) -> ScriptedChatModel:
    """Read the Patient and the MedicationRequests, answer."""
    return ScriptedChatModel(steps=[*_medications(request), rest_answer])


def reconcile_model(request: AgentRequest) -> ScriptedChatModel:
    """The extraction reads, every medication answered ``matched`` (``reader_agent.reconcile_model``'s answer)."""
    def matched(messages: list[BaseMessage]) -> str:
        return json.dumps([{**item, "status": "matched"} for item in json.loads(rest_answer(messages))])

    return ScriptedChatModel(steps=[*_medications(request), matched])


def labs_model(request: AgentRequest) -> ScriptedChatModel:
    """Read the Patient and every Observation, answer with ``baseline-labs``' rule over what came back."""
    from groundeval.agents.baselines.labs import labs_answer

    assert request.fhir is not None

    def answer(messages: list[BaseMessage]) -> str:
        patient = last_tool_result(messages, "fhir_read")
        entries = [{"fullUrl": f"Patient/{patient['resource']['id']}", "resource": patient["resource"]}]
        entries += [{"fullUrl": f"Observation/{e['resource']['id']}", "resource": e["resource"]}
                    for e in _searched(messages, "Observation")]
        bundle = {"resourceType": "Bundle", "type": "collection", "entry": entries}
        as_file = dataclasses.replace(request, prompt=Prompt(request.prompt.system, json.dumps(bundle)))
        return json.dumps(labs_answer(as_file), ensure_ascii=False)

    return ScriptedChatModel(steps=[
        call("fhir_read", resource_type="Patient", resource_id=_patient_id(request)),
        call("fhir_search", resource_type="Observation", params={"patient": request.fhir.patient},
             max_resources=1000),
        answer,
    ])


SUMMARY_TYPES = ("Condition", "MedicationRequest", "AllergyIntolerance", "Observation")
"""What ``baseline-summary`` reads, as ``baseline-summary-rest`` searches it."""


def _summary(entries: list[dict[str, Any]]) -> str:
    from groundeval.agents.baselines.summary import summary_text

    return summary_text({"resourceType": "Bundle", "type": "collection", "entry": entries})


def summary_model(request: AgentRequest) -> ScriptedChatModel:
    """Read the Patient and what the summary covers over REST, answer with the baseline's template."""
    assert request.fhir is not None
    patient = request.fhir.patient

    def answer(messages: list[BaseMessage]) -> str:
        me = last_tool_result(messages, "fhir_read")["resource"]
        entries = [{"fullUrl": f"Patient/{me['id']}", "resource": me}]
        for kind in SUMMARY_TYPES:
            entries += [{"fullUrl": f"{e['resource']['resourceType']}/{e['resource']['id']}", "resource": e["resource"]}
                        for e in _searched(messages, kind)]
        return _summary(entries)

    searches = [call("fhir_search", resource_type=kind, max_resources=1000,
                     params={"patient": patient, **({"_include": "MedicationRequest:medication"}
                                                    if kind == "MedicationRequest" else {})})
                for kind in SUMMARY_TYPES]
    return ScriptedChatModel(steps=[
        call("fhir_read", resource_type="Patient", resource_id=_patient_id(request)), *searches, answer])


def inprocess_summary_model(request: AgentRequest) -> ScriptedChatModel:
    """The summary plan over the in-process read tools: list the Patient, the same types and Medications."""
    del request
    kinds = ("Patient", *SUMMARY_TYPES, "Medication")

    def answer(messages: list[BaseMessage]) -> str:
        listed = {args["resource_type"]: result["entries"] for name, args, result in results(messages)
                  if name == "get_resources"}
        return _summary([e for kind in kinds for e in listed.get(kind, [])])

    return ScriptedChatModel(steps=[*(call("get_resources", resource_type=kind) for kind in kinds), answer])


TYLENOL = {"status": "active", "rxcui": "209387", "dose_value": 650, "dose_unit": "mg", "frequency": 1,
           "period": 6, "period_unit": "h", "as_needed": True}
"""The Tylenol case's known-good build arguments (``tests/mcp/mcp_scripts.write_model``)."""


def write_model(request: AgentRequest) -> ScriptedChatModel:
    """Look the drug up, build the statement from the top match, create it on the server, answer with it."""
    from groundeval.tasks.write.tools import build_medication_statement

    assert request.fhir is not None
    patient = request.fhir.patient

    def create(messages: list[BaseMessage]) -> AIMessage:
        found = last_tool_result(messages, "lookup_rxnorm") or {}
        rows = found.get("results") or [] if isinstance(found, dict) else []
        if request.case_id == "tylenol-brand-lookup":
            args: dict[str, Any] = dict(TYLENOL)
            args["display"] = next((r.get("display") for r in rows if r.get("rxcui") == "209387"), None)
        elif rows and rows[0].get("rxcui"):
            args = {"status": "active", "rxcui": rows[0]["rxcui"], "display": rows[0].get("display")}
        else:
            args = {"status": "active", "rxcui": None, "display": None, "medication_text": "unknown medication"}
        return call("fhir_create", resource=build_medication_statement(patient_reference=patient, **args))

    def answer(messages: list[BaseMessage]) -> str:
        created = last_tool_result(messages, "fhir_create") or {}
        return json.dumps(created.get("resource") or {})

    if request.case_id == "tylenol-brand-lookup":
        lookup = call("lookup_rxnorm", query="Tylenol 325 mg")
    else:
        note = request.prompt.user.split("<note>", 1)[-1]
        word = next(iter(re.findall(r"[A-Za-z]{4,}", note)), "tablet")
        lookup = call("lookup_rxnorm", query=word, limit=3)
    return ScriptedChatModel(steps=[lookup, create, answer])


def model_for(request: AgentRequest) -> ScriptedChatModel:
    """The plan for the request's task."""
    plans = {"extraction": extraction_model, "reconcile": reconcile_model, "labs": labs_model,
             "summary": summary_model}
    return plans.get(request.task, write_model)(request)


agent = LangGraphRestAgent(chat_model=model_for)
"""The agent spec ``rest_scripts:agent``: ``langgraph-rest`` over a fresh scripted model per case."""
