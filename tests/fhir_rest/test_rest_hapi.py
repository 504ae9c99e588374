"""``langgraph-rest`` against a real HAPI FHIR server (``--groundeval-fhir=URL``): it scores as over the sandbox.

The same scripted plans as the parity test (``rest_scripts``), each case loaded onto HAPI under ids of
its own, reached through groundeval's recording proxy, and removed afterwards. Skipped locally without
``$GROUNDEVAL_HAPI_URL``; under ``CI=true`` its absence is a failure (``.ci/run`` starts HAPI).
"""

from __future__ import annotations

import os
import sys
from typing import Any

import pytest

from tests._paths import REPO

pytest.importorskip("fhirpy")
pytest.importorskip("langgraph")

sys.path[:0] = [str(REPO / "tests" / "fhir"), str(REPO / "tests" / "fhir_rest")]


@pytest.fixture(scope="module")
def hapi() -> str:
    url = os.environ.get("GROUNDEVAL_HAPI_URL")
    if not url:
        if os.environ.get("CI") == "true":
            pytest.fail("CI=true but GROUNDEVAL_HAPI_URL is unset: .ci/run must start HAPI FHIR (scripts/hapi_fhir.sh)")
        pytest.skip("GROUNDEVAL_HAPI_URL is unset: start HAPI FHIR with scripts/hapi_fhir.sh start")
    return url


def _run(task_name: str, mode: str, limit: int, data_dir: Any = None) -> list[Any]:
    import rest_scripts

    from groundeval.datasets import default_data_dir
    from groundeval.execution.outcome_policy import RunInfo
    from groundeval.fhir.serving import FhirServingAgent
    from groundeval.tasks import make_task
    from groundeval.tasks.fhir_mode import FhirModeTask
    from groundeval.testing.one_case import run_case

    task = make_task(task_name)
    served: Any = FhirModeTask(task, mode)
    wrapped = FhirServingAgent(rest_scripts.agent, mode)
    paths = task.case_files(data_dir or default_data_dir(task_name))[:limit]
    info = RunInfo(run_id="hapi-rest", task=task_name, agent="langgraph-rest", model=None)
    return [run_case(served, wrapped, task.load_case(p), info, f"t::{p.stem}").record for p in paths]


@pytest.mark.parametrize("task_name", ["extraction", "labs", "write"])
def test_the_rest_agent_on_hapi_scores_as_on_the_sandbox(hapi: str, task_name: str) -> None:
    on_hapi = _run(task_name, hapi, 3)
    on_sandbox = _run(task_name, "sandbox", 3)
    for there, here in zip(on_hapi, on_sandbox, strict=True):
        assert there.outcome == here.outcome, (there.case_id, there.message)
        assert there.outcome not in ("agent_error", "infra_error", "harness_error"), there.message
        assert there.metrics == here.metrics, there.case_id
        assert [c["tool"] for c in there.trace] == [c["tool"] for c in here.trace]
        assert there.agent_meta["fhir"]["mode"] == "server"


def test_whole_records_on_hapi_score_as_on_the_sandbox(hapi: str) -> None:
    """The seven whole Synthea records (``fixtures/full-records``), each loaded onto HAPI as one transaction."""
    full = REPO / "fixtures" / "full-records"
    on_hapi = _run("extraction", hapi, 10, full)
    on_sandbox = _run("extraction", "sandbox", 10, full)
    assert len(on_hapi) == 7
    for there, here in zip(on_hapi, on_sandbox, strict=True):
        assert there.outcome == here.outcome == "passed", (there.case_id, there.message)
        assert there.metrics == here.metrics, there.case_id
