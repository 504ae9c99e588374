"""The FHIR REST tools (``groundeval.fhir.rest_tools``) and ``langgraph-rest`` against a sandbox of a packaged record."""

from __future__ import annotations

import json
import logging
import socket
from collections.abc import Iterator
from typing import Any

import pytest

from tests._paths import REPO

pytest.importorskip("fhirpy")
pytest.importorskip("langgraph")

RECORD = sorted((REPO / "fixtures" / "labs").glob("B*.json"))[0]


@pytest.fixture
def served() -> Iterator[tuple[Any, dict[str, Any]]]:
    from groundeval.agent_io import FhirEndpoint
    from groundeval.fhir.sandbox import FhirSandbox, new_token

    bundle = json.loads(RECORD.read_text())
    patient = next(f"Patient/{e['resource']['id']}" for e in bundle["entry"]
                   if e["resource"]["resourceType"] == "Patient")
    token = new_token()
    with FhirSandbox(bundle, token=token, patient=patient) as box:
        yield box, {"endpoint": FhirEndpoint(box.base_url, patient, token), "bundle": bundle, "patient": patient}


def _count(bundle: dict[str, Any], kind: str) -> int:
    return sum(e["resource"]["resourceType"] == kind for e in bundle["entry"])


def test_search_follows_next_pages_to_the_end(served: Any) -> None:
    from groundeval.fhir.rest_tools import RestTools

    box, facts = served
    tools = RestTools(facts["endpoint"], "case")
    out = tools.search("Observation", {"patient": facts["patient"], "_count": "10"}, max_resources=1000)
    expected = _count(facts["bundle"], "Observation")
    assert expected > 10  # several pages
    assert out["ok"] and out["complete"] and out["count"] == expected and out["pages"] == -(-expected // 10)
    assert len({e["resource"]["id"] for e in out["entries"]}) == expected
    assert sum(e.path.endswith("Observation") for e in box.access_log) == out["pages"]


def test_search_stops_at_max_resources_and_says_so(served: Any) -> None:
    from groundeval.fhir.rest_tools import RestTools

    _box, facts = served
    out = RestTools(facts["endpoint"], "case").search("Observation", {"patient": facts["patient"], "_count": "5"},
                                                      max_resources=7)
    assert out["ok"] and not out["complete"] and out["count"] == 10 and out["pages"] == 2


def test_refusals_come_back_as_tool_errors_with_the_operation_outcome(served: Any) -> None:
    from groundeval.fhir.rest_tools import RestTools

    _box, facts = served
    tools = RestTools(facts["endpoint"], "case")
    unknown = tools.search("Observation", {"patient": facts["patient"], "bogus": "1"})
    assert unknown["ok"] is False and unknown["status"] == 400 and "bogus" in unknown["error"]
    assert unknown["issues"] and unknown["issues"][0]["severity"] == "error"
    missing = tools.read("Observation", "no-such-id")
    assert missing["ok"] is False and missing["status"] == 404
    other = tools.read("Patient", "someone-else")
    assert other["ok"] is False and other["status"] == 403
    invalid = tools.create({"resourceType": "MedicationStatement", "status": "active"})  # no subject, no medication
    assert invalid["ok"] is False and invalid["status"] == 422 and invalid["issues"]


def test_create_and_update_reach_the_server(served: Any) -> None:
    from groundeval.fhir.rest_tools import RestTools

    box, facts = served
    tools = RestTools(facts["endpoint"], "case")
    statement = {"resourceType": "MedicationStatement", "status": "active", "subject": {"reference": facts["patient"]},
                 "medicationCodeableConcept": {"text": "aspirin"}}
    created = tools.create(statement)
    assert created["ok"] and created["status"] == 201 and created["resource"]["id"]
    updated = tools.update({**created["resource"], "status": "stopped"})
    assert updated["ok"] and updated["status"] == 200
    assert tools.read("MedicationStatement", created["resource"]["id"])["resource"]["status"] == "stopped"
    assert [w.interaction for w in box.writes] == ["create", "update"]


def test_a_wrong_token_is_refused_and_never_shown(served: Any, caplog: pytest.LogCaptureFixture) -> None:
    from groundeval.agent_io import FhirEndpoint
    from groundeval.fhir.rest_tools import RestTools

    _box, facts = served
    endpoint = facts["endpoint"]
    wrong = "wrong-" + endpoint.token
    caplog.set_level(logging.DEBUG)
    out = RestTools(FhirEndpoint(endpoint.base_url, endpoint.patient, wrong), "case").read("Patient", "x")
    assert out["ok"] is False and out["status"] == 401
    assert endpoint.token not in json.dumps(out) and endpoint.token not in caplog.text


def test_an_unreachable_server_is_an_infra_error() -> None:
    from groundeval.agent_io import FhirEndpoint
    from groundeval.errors import InfraError
    from groundeval.fhir.rest_tools import RestTools

    with socket.socket() as sock:  # a port nothing listens on once this socket is closed
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    tools = RestTools(FhirEndpoint(f"http://127.0.0.1:{port}/fhir", "Patient/1", "secret-token"), "case-7",
                      timeout_s=5)
    with pytest.raises(InfraError, match="case-7: the case's FHIR server") as raised:
        tools.search("Observation", {"patient": "Patient/1"})
    assert "secret-token" not in str(raised.value)


def test_the_agent_traces_every_call_and_keeps_the_token_out_of_its_result(served: Any) -> None:
    from groundeval.agent_io import AgentRequest, Prompt
    from groundeval.agents.langgraph_rest import LangGraphRestAgent
    from groundeval.testing.scripted_chat import ScriptedChatModel, call

    _box, facts = served
    endpoint = facts["endpoint"]
    model = ScriptedChatModel(steps=[
        call("fhir_read", resource_type="Patient", resource_id=endpoint.patient.split("/")[1]),
        call("fhir_search", resource_type="Observation", params={"patient": endpoint.patient, "nope": "1"}),
        "done",
    ])
    result = LangGraphRestAgent(chat_model=model).run(
        AgentRequest(case_id="c", task="labs", prompt=Prompt("s", "u"), fhir=endpoint))
    assert [(c["tool"], c["ok"]) for c in result.trace] == [("fhir_read", True), ("fhir_search", False)]
    assert result.trace[0]["result"]["resource"]["id"] == endpoint.patient.split("/")[1]
    assert result.trace[1]["result"]["status"] == 400
    assert endpoint.token not in json.dumps([result.trace, result.messages, result.meta])


def test_without_an_endpoint_the_agent_stops_the_run() -> None:
    from groundeval.agent_io import AgentRequest, Prompt
    from groundeval.agents.langgraph_rest import LangGraphRestAgent
    from groundeval.errors import RunStopError
    from groundeval.testing.scripted_chat import ScriptedChatModel

    agent = LangGraphRestAgent(chat_model=ScriptedChatModel(steps=["x"]))
    with pytest.raises(RunStopError, match="--groundeval-fhir=sandbox"):
        agent.run(AgentRequest(case_id="c", task="extraction", prompt=Prompt("s", "u")))


def test_only_the_write_task_gets_the_write_tools(served: Any) -> None:
    from groundeval.agent_io import AgentRequest, Prompt
    from groundeval.agents.langgraph_rest import LangGraphRestAgent
    from groundeval.testing.scripted_chat import ScriptedChatModel

    _box, facts = served
    agent = LangGraphRestAgent(chat_model=ScriptedChatModel(steps=["x"]))
    read = AgentRequest(case_id="c", task="labs", prompt=Prompt("s", "u"), fhir=facts["endpoint"])
    write = AgentRequest(case_id="c", task="write", prompt=Prompt("s", "u"), fhir=facts["endpoint"],
                         context={"patient_reference": facts["patient"]})
    assert [t.name for t in agent._tools_for(read)] == ["fhir_search", "fhir_read"]
    assert [t.name for t in agent._tools_for(write)] == ["fhir_search", "fhir_read", "fhir_create", "fhir_update",
                                                         "lookup_rxnorm"]
