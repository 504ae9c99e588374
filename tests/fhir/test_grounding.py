"""Grounding and lookups of tool-using agents: what they answered without a tool, what they never looked up."""

from __future__ import annotations

import json
from typing import Any

import pytest

from groundeval.agents.baselines.extraction import BaselineExtractionAgent
from groundeval.agents.langgraph_agent import LangGraphFHIRAgent, LangGraphWriteAgent
from groundeval.datasets import Case
from groundeval.execution.call import request_for
from groundeval.execution.outcome_policy import RunInfo
from groundeval.records.aggregate import summarize
from groundeval.records.run_record import CaseRecord
from groundeval.scorers.grounding import Lookup, LookupPlan, score_trace
from groundeval.tasks.extraction.task import ExtractionTask
from groundeval.tasks.write.task import WriteTask
from groundeval.testing.one_case import run_case
from groundeval.testing.scripted_chat import ScriptedChatModel, answer_with_last_result, call
from tests._paths import REPO

from .reader_agent import answer_step, reader_model, resolve_step

ROOT = REPO / "fixtures"
EXTRACTION = ExtractionTask(bundle_in_prompt=False)
WRITE = WriteTask()


def _run(task: Any, agent: Any, case: Case, trial: int = 0) -> CaseRecord:
    info = RunInfo(run_id="r", task=task.name, agent=agent.name, model="scripted")
    return run_case(task, agent, case, info, f"groundeval/{task.name}::{case.case_id}", trial=trial).record


def test_score_trace_names_what_no_tool_returned_and_counts_errors_and_repeats() -> None:
    trace = [
        {"tool": "get_resources", "args": {"resource_type": "MedicationRequest"}, "ok": True,
         "result": {"entries": [{"resource": {"code": {"coding": [{"code": "111"}]}}}]}},
        {"tool": "get_resources", "args": {"resource_type": "MedicationRequest"}, "ok": True, "result": {}},
        {"tool": "resolve_reference", "args": {"reference": "#m"}, "ok": False, "result": {"ok": False}},
    ]
    plan = LookupPlan(answered=[("111 A", "111"), ("222 B", "222")], required=[
        Lookup("list", "get_resources", {"resource_type": "MedicationRequest"}),
        Lookup("resolve #m", "resolve_reference", {"reference": "#m"}),  # made, but it failed
    ])
    metrics, details = score_trace(plan, trace)
    assert metrics == {"grounded_answer_rate": 0.5, "lookup_recall": 0.5, "tool_errors": 1, "repeated_calls": 1}
    assert details == {"reasoned_not_looked_up": ["222 B"], "missed_lookups": ["resolve #m"]}
    assert score_trace(LookupPlan(), [])[0]["grounded_answer_rate"] is None  # nothing to check is n/a, not 1.0


def _medref_case() -> Case:
    (path,) = (ROOT / "extraction").glob("variant-medref-urn-uuid--*.json")
    return EXTRACTION.load_case(path)


def test_the_reader_is_grounded_and_makes_every_required_lookup() -> None:
    record = _run(EXTRACTION, LangGraphFHIRAgent(chat_model=lambda r: reader_model()), _medref_case())
    assert record.outcome == "passed"
    assert record.metrics["grounded_answer_rate"] == 1.0 and record.metrics["lookup_recall"] == 1.0
    assert record.details["missed_lookups"] == [] and record.metrics["tool_errors"] == 0


def test_an_answer_from_memory_is_caught_by_name_and_its_skipped_resolve_is_missed() -> None:
    case = _medref_case()
    remembered = BaselineExtractionAgent().run(request_for(ExtractionTask(), case)).text  # the right answer

    def from_memory(request: Any) -> ScriptedChatModel:  # lists the requests, resolves nothing, answers anyway
        return ScriptedChatModel(steps=[call("get_resources", resource_type="MedicationRequest"), remembered])

    record = _run(EXTRACTION, LangGraphFHIRAgent(chat_model=from_memory), case)
    assert record.outcome == "passed"  # the verdict is the task's: right is right
    (reasoned,) = record.details["reasoned_not_looked_up"]
    (missed,) = record.details["missed_lookups"]
    code = reasoned.split()[0]
    assert missed.startswith("resolve urn:uuid:") and code in missed
    assert record.metrics["lookup_recall"] == 0.5 and 0 < float(record.metrics["grounded_answer_rate"] or 0) < 1

    def one_more(messages: list[Any]) -> str:  # reads properly, then adds a drug no tool returned
        return json.dumps([*json.loads(answer_step(messages)), {"rxnorm_code": "1049630", "display": "guessed"}])

    steps = [call("get_resources", resource_type="Patient"), call("get_resources", resource_type="MedicationRequest"),
             resolve_step, one_more]
    record = _run(EXTRACTION, LangGraphFHIRAgent(chat_model=lambda r: ScriptedChatModel(steps=steps)), case)
    assert record.outcome != "passed" and record.details["reasoned_not_looked_up"] == ["1049630 guessed"]
    assert "reasoned, not looked up (no tool returned it): 1049630 guessed" in record.message
    agg = summarize(EXTRACTION, [record])
    assert agg.metrics["macro_lookup_recall"] == 1.0 and agg.metrics["macro_grounded_answer_rate"] is not None
    assert "1 answer item(s) in 1 case(s) reasoned, not looked up" in agg.statements["grounding"]


def _tylenol() -> Case:
    return WRITE.load_case(ROOT / "write" / "tylenol-brand-lookup.json")


BUILD = call("build_medication_statement", status="active", rxcui="209387", dose_value=650, dose_unit="mg",
             frequency=1, period=6, period_unit="h", as_needed=True)


def test_a_write_agent_that_builds_from_a_lookup_makes_every_required_call() -> None:
    steps = [call("lookup_rxnorm", query="Tylenol 325 mg"), BUILD,
             answer_with_last_result("build_medication_statement", "resource")]
    record = _run(WRITE, LangGraphWriteAgent(chat_model=lambda r: ScriptedChatModel(steps=steps)), _tylenol())
    assert record.outcome == "passed", record.message
    assert record.metrics["lookup_recall"] == 1.0 and record.metrics["grounded_answer_rate"] == 1.0


@pytest.mark.parametrize("trial", [0, 1])
def test_a_write_agent_that_edits_the_built_resource_and_skips_validation_misses_that_lookup(trial: int) -> None:
    def edited(messages: list[Any]) -> str:  # the built resource with a note added, never validated again
        from groundeval.testing.scripted_chat import last_tool_result

        resource = dict(last_tool_result(messages, "build_medication_statement")["resource"])
        resource["note"] = [{"text": "edited after building"}]
        return json.dumps(resource)

    steps = [call("lookup_rxnorm", query="Tylenol 325 mg"), BUILD, edited]
    record = _run(WRITE, LangGraphWriteAgent(chat_model=lambda r: ScriptedChatModel(steps=steps)), _tylenol(), trial)
    assert record.details["missed_lookups"] == ["validate the final resource (validate_medication_statement)"]
    assert record.metrics["lookup_recall"] == 0.5 and record.details["reasoned_not_looked_up"] == []


def test_tool_plan_consistency_is_the_share_of_trials_following_the_most_common_plan() -> None:
    case = _tylenol()
    plans = [[call("lookup_rxnorm", query="Tylenol"), BUILD], [call("lookup_rxnorm", query="Tylenol"), BUILD],
             [BUILD]]
    records = []
    for trial, plan in enumerate(plans):
        steps = [*plan, answer_with_last_result("build_medication_statement", "resource")]
        records.append(_run(WRITE, LangGraphWriteAgent(chat_model=lambda r, s=steps: ScriptedChatModel(steps=s)),
                            case, trial))
    agg = summarize(WRITE, records)
    assert agg.metrics["tool_plan_consistency"] == pytest.approx(2 / 3, abs=1e-6)


def test_reconcile_requires_a_lookup_of_each_brand_name_the_report_uses() -> None:
    from groundeval.records.run_record import RunRecord
    from groundeval.reporting.summary_md import summary_markdown
    from groundeval.tasks.reconcile.lookups import lookup_plan
    from groundeval.tasks.reconcile.task import ReconcileTask

    task = ReconcileTask()
    case = task.load_case(ROOT / "reconcile" / "brand-name--Delores12_Cronin387_0d154268.json")
    plan = task.lookups(case, None, task.parse(case, "[]"))
    assert [lk.label for lk in plan.required] == [
        "look up the brand name 'zocor' (lookup_code)", "look up the brand name 'toprol' (lookup_code)"]
    looked = [{"tool": "lookup_code", "args": {"query": "Zocor 20 mg"}, "ok": True, "result": {"results": []}}]
    metrics, details = score_trace(plan, looked)
    assert metrics["lookup_recall"] == 0.5 and details["missed_lookups"] == [plan.required[1].label]
    assert lookup_plan([{"name": "aspirin"}], []).required == []  # no brand, nothing to look up
    record = CaseRecord(case_id=case.case_id, nodeid="n", run_id="r", task="reconcile", agent="a", outcome="passed",
                        counted=True, metrics=metrics, details=details)
    md = summary_markdown(RunRecord(run_id="r", task="reconcile", agent="a", model=None, started_at="t",
                                    cases=[record]))
    assert "1 case(s) not grounded in their tool calls" in md and "look up the brand name 'toprol'" in md


def test_fewer_tool_errors_and_repeats_are_better_in_comparisons() -> None:
    from groundeval.plugin.run_end import _directions
    from groundeval.tasks.labs.task import LabsTask

    assert _directions(EXTRACTION)["tool_errors"] == "lower" and _directions(WRITE)["repeated_calls"] == "lower"
    assert "tool_errors" not in _directions(LabsTask())  # a task that declares no lookups
