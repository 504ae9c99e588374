"""``--groundeval-fhir=URL`` against a real HAPI FHIR server: each REST baseline scores as over the sandbox, the
access log comes through the recording proxy, and every case is removed from the server afterwards."""

from __future__ import annotations

import os
from typing import Any

import pytest

from groundeval.agent_io import AgentRequest, AgentResult
from groundeval.agents.base import AgentConfig, make_agent
from groundeval.datasets import default_data_dir
from groundeval.execution.outcome_policy import RunInfo
from groundeval.fhir.remote_server import FhirServer
from groundeval.fhir.serving import FhirServingAgent
from groundeval.tasks import make_task
from groundeval.tasks.fhir_mode import FhirModeTask
from groundeval.testing.one_case import run_case


@pytest.fixture(scope="module")
def hapi() -> str:
    url = os.environ.get("GROUNDEVAL_HAPI_URL")
    if not url:
        if os.environ.get("CI") == "true":
            pytest.fail("CI=true but GROUNDEVAL_HAPI_URL is unset: .ci/run must start HAPI FHIR (scripts/hapi_fhir.sh)")
        pytest.skip("GROUNDEVAL_HAPI_URL is unset: start HAPI FHIR with scripts/hapi_fhir.sh start")
    return url


def _run(task_name: str, agent_name: str, mode: str, limit: int, agent: Any = None) -> tuple[list[Any], str]:
    task = make_task(task_name)
    served: Any = FhirModeTask(task, mode)
    wrapped = FhirServingAgent(agent or make_agent(agent_name, AgentConfig()), mode)
    paths = task.case_files(default_data_dir(task_name))[:limit]
    info = RunInfo(run_id="hapi", task=task_name, agent=agent_name, model=None)
    return [run_case(served, wrapped, task.load_case(p), info, f"t::{p.stem}").record for p in paths], wrapped.run_id


@pytest.mark.parametrize(("task_name", "agent_name"), [("extraction", "baseline-rest"), ("write", "baseline-write-rest")])
def test_a_rest_baseline_on_hapi_scores_as_on_the_sandbox_and_leaves_nothing_behind(
    hapi: str, task_name: str, agent_name: str
) -> None:
    on_hapi, tag = _run(task_name, agent_name, hapi, 4)
    on_sandbox, _ = _run(task_name, agent_name, "sandbox", 4)
    for there, here in zip(on_hapi, on_sandbox, strict=True):
        assert there.outcome == here.outcome, (there.case_id, there.message)
        assert there.metrics == here.metrics, there.case_id  # retrieval included: the proxy logs as the sandbox does
        facts = there.agent_meta["fhir"]
        assert facts["mode"] == "server" and facts["cleanup"] in ("$expunge", "DELETE")
        assert hapi not in str(there.model_dump())  # the server's URL is not in the record
    server = FhirServer(hapi, token="")
    status, found = server.request("GET", "Patient?_count=1000")
    assert status == 200 and found is not None
    assert not [e for e in found.get("entry") or [] if e["resource"]["id"].startswith(f"ge-{tag}-")]  # none left


def test_another_patient_on_the_shared_server_is_refused_and_counted(hapi: str) -> None:
    inner = make_agent("baseline-rest", AgentConfig())

    class Snoops:
        name, model, record_access, tasks = "snoops", None, "fhir", frozenset({"extraction"})

        def run(self, request: AgentRequest) -> AgentResult:
            assert request.fhir is not None
            snoop = FhirServer(request.fhir.base_url, token=request.fhir.token)
            assert snoop.request("GET", "Observation?_count=50")[0] in (200, 403)  # no patient: refused if it leaks
            assert snoop.request("GET", "Patient/some-other-patient")[0] == 403
            out = inner.run(request)
            assert isinstance(out, AgentResult)
            return out

    (record,), _ = _run("extraction", "snoops", hapi, 1, Snoops())
    assert record.outcome == "passed"
    assert record.metrics["fhir_refused"] >= 1
