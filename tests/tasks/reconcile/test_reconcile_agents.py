"""The rule-based reconcile agents, in process: independence from the truth code, and what they answer."""

from __future__ import annotations

import ast
import json
from pathlib import Path
from types import ModuleType

import pytest

import groundeval.agents.baselines.labs as labs_module
import groundeval.agents.baselines.reconcile as module
from groundeval.agent_io import AgentRequest
from groundeval.agents.baselines.reconcile import BaselineReconcileAgent, NaiveReconcileAgent
from groundeval.errors import AgentError
from groundeval.tasks.reconcile.task import ReconcileTask
from tests._paths import REPO

CASES = REPO / "fixtures" / "reconcile"
TASK = ReconcileTask()


def _run(agent: BaselineReconcileAgent, prefix: str) -> tuple[list[dict[str, object]], str]:
    (path,) = CASES.glob(f"{prefix}*.json")
    case = TASK.load_case(path)
    request = AgentRequest(case_id=case.case_id, task="reconcile", prompt=TASK.prompt(case), context=TASK.context(case))
    raw = agent.run(request).text
    return json.loads(raw), TASK.score(case, TASK.truth(case), TASK.parse(case, raw)).outcome


@pytest.mark.parametrize("baseline", [module, labs_module], ids=["baseline-reconcile", "baseline-labs"])
def test_the_baseline_imports_neither_the_truth_nor_the_fhir_helpers(baseline: ModuleType) -> None:
    tree = ast.parse(Path(str(baseline.__file__)).read_text())
    imported = {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)} | {
        a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    assert not any(m and (m.startswith(("groundeval.fhir.bundle", "groundeval.tasks", "groundeval.terminology",
                                        "groundeval.scorers"))) for m in imported), imported


def test_the_baseline_finds_a_high_alert_dose_mismatch_and_a_stopped_drug() -> None:
    answer, outcome = _run(BaselineReconcileAgent(), "dose-high-alert--")
    warfarin = next(a for a in answer if a["rxnorm_code"] == "855332")
    assert outcome == "passed" and warfarin["status"] == "dose_mismatch"
    assert warfarin["record_dose"] == "5 mg" and warfarin["reported_dose"] == "7.5 mg"
    answer, outcome = _run(BaselineReconcileAgent(), "no-active-stopped--Tarra")
    assert outcome == "passed" and answer == [
        {"rxnorm_code": "308192", "display": "Amoxicillin 500 MG Oral Tablet", "status": "stopped_but_taken"}]


def test_the_baseline_misses_brand_names_it_cannot_read() -> None:
    answer, outcome = _run(BaselineReconcileAgent(), "brand-name--Delores")
    assert outcome == "partial"
    assert {"rxnorm_code": None, "display": "zocor 20 mg", "status": "commission"} in answer


def test_the_naive_control_calls_everything_matched() -> None:
    answer, outcome = _run(NaiveReconcileAgent(), "omission-high-alert--Max_Kris")
    assert {a["status"] for a in answer} == {"matched"} and outcome == "failed"


def test_a_prompt_without_a_report_is_an_agent_error() -> None:
    from groundeval.agent_io import Prompt

    with pytest.raises(AgentError, match="no Bundle and <report>"):
        BaselineReconcileAgent().run(AgentRequest(case_id="c", task="reconcile", prompt=Prompt(system="", user="hi")))
