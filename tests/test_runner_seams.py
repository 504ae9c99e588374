"""``execution.outcome_policy.classify`` on its own: what an agent returns and when the truth is derived."""

from __future__ import annotations

from typing import Any

from groundeval import AgentResult
from groundeval.agent_io import AgentRequest
from groundeval.agents.base import FunctionAgent
from groundeval.datasets import Case
from groundeval.errors import DatasetError
from groundeval.execution.outcome_policy import RunInfo
from groundeval.tasks.extraction.task import ExtractionTask
from groundeval.testing.one_case import run_case
from tests._paths import REPO

FIXTURES = REPO / "fixtures" / "extraction"
INFO = RunInfo(run_id="r", task="extraction", agent="a", model=None)
LIZ = next(iter(sorted(FIXTURES.glob("Liz_Conn*.json"))))


class BrokenTruth(ExtractionTask):
    def truth(self, case: Case) -> dict[str, Any]:
        raise KeyError("truth bug")


class BadDataTruth(ExtractionTask):
    def truth(self, case: Case) -> dict[str, Any]:
        raise DatasetError(str(case.source), "MedicationRequest/r1 medicationReference 'Medication/x' is not in the Bundle")


def test_an_agent_result_whose_text_is_not_a_str_is_the_agents_error() -> None:
    task = ExtractionTask()
    agent = FunctionAgent(lambda request: AgentResult(text=42), "returns-int")  # type: ignore[arg-type]
    run = run_case(task, agent, task.load_case(LIZ), INFO, "n")
    assert run.record.outcome == "agent_error" and run.record.error is not None
    assert "whose text is int" in run.record.error.message


def test_a_truth_bug_never_calls_the_agent() -> None:
    task = BrokenTruth()
    calls: list[str] = []

    def counting(request: AgentRequest) -> str:
        calls.append(request.case_id)
        return "[]"

    run = run_case(task, FunctionAgent(counting, "counting"), task.load_case(LIZ), INFO, "n")
    assert run.record.outcome == "harness_error" and calls == []
    assert run.record.error is not None and run.record.error.type == "KeyError"


def test_an_agent_that_returns_none_has_not_answered_and_the_case_counts() -> None:
    task = ExtractionTask()
    for value in (None, AgentResult(text=None)):  # type: ignore[arg-type]
        agent = FunctionAgent(lambda request, v=value: v, "returns-none")  # type: ignore[misc]
        run = run_case(task, agent, task.load_case(LIZ), INFO, "n")
        assert run.record.outcome == "no_answer" and run.record.counted and run.exc is None
        assert run.record.metrics["f1"] == 0.0 and "returned None: no answer" in run.record.message


def test_a_data_error_from_the_truth_is_invalid_case_and_never_calls_the_agent() -> None:
    # the truth is derived once, in runner.prepare, after check_case: its DatasetError is the file's fault
    calls: list[str] = []
    agent = FunctionAgent(lambda request: calls.append(request.case_id) or "[]", "counting")  # type: ignore[func-returns-value]
    run = run_case(BadDataTruth(), agent, BadDataTruth().load_case(LIZ), INFO, "n")
    assert run.record.outcome == "invalid_case" and not run.record.counted and calls == []
    assert run.record.message.startswith("invalid_case: MedicationRequest/r1 medicationReference")
