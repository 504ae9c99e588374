"""One case run in the calling thread, for tests of tasks, scorers and agents.

The steps a run's executor takes for a job (``execution.base.ExecutionContext``), with no case
file re-read, no call tally and no stop switch: prepare the request and truth, make the one call,
and class the result.
"""

from __future__ import annotations

from groundeval.agents.base import Agent
from groundeval.datasets import Case
from groundeval.execution.call import attempt, prepare
from groundeval.execution.outcome_policy import CaseRun, RunInfo, classify, unprepared
from groundeval.scorers.model_graded import GradeStage
from groundeval.tasks.base import Task

__all__ = ["run_case"]


def run_case(
    task: Task, agent: Agent, case: Case, info: RunInfo, nodeid: str, trial: int = 0,
    grades: GradeStage | None = None,
) -> CaseRun:
    """Run ``agent`` on ``case`` (trial ``trial``) and class the answer; never raises for a case-level problem.

    Args:
        task: The task (prompt, truth, parsing, scoring).
        agent: The agent under evaluation.
        case: The loaded case.
        info: Run-wide facts copied onto the record.
        nodeid: The node id the record carries.
        trial: 0-based trial index, passed on in the request.
        grades: Asks a model-graded scorer's questions (``execution.score_stage``); None asks them
            one after another.

    Returns:
        The ``CaseRun``: its record, and for excluded outcomes the exception to report.

    Raises:
        KeyboardInterrupt: Ctrl-C during the call.
    """
    try:
        request, truth = prepare(task, case, trial)
    except Exception as exc:  # the task's check, prompt, context or truth: the agent is never called
        return unprepared(info, case, nodeid, exc, trial)
    return classify(task, agent, case, info, nodeid, attempt(agent, request, truth), grades=grades)
