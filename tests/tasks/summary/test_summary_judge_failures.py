"""A judge failure is classed by its model error as an agent call's is: shown with its message, excluded and
counted; an auth failure stops the run; an unreachable judge stops it too; ``judge_calls`` counts the calls made."""

from __future__ import annotations

from typing import Any

import pytest

from groundeval.agent_io import AgentResult
from groundeval.agents.base import FunctionAgent
from groundeval.errors import AuthError, InfraError
from groundeval.execution.outcome_policy import RunInfo
from groundeval.records.aggregate import summarize
from groundeval.records.outcomes import OUTCOMES
from groundeval.tasks.summary import SummaryTask
from groundeval.tasks.summary.judge import UNREACHABLE_AFTER, ModelJudge
from groundeval.testing import ScriptedModel
from groundeval.testing.one_case import run_case
from tests._paths import REPO

LIZ = REPO / "fixtures" / "summary" / "Liz_Conn_27c911c6-f045-4ffa-af5d-6eba57ac94b2.json"
UNCLEAR = "Active problems: none. Current medications: an inhaler."  # the judge must decide


def _runs(replies: list[Any], n: int) -> tuple[SummaryTask, list[Any]]:
    task = SummaryTask()
    task.scorer.judge = ModelJudge(ScriptedModel(replies, role="judge"))
    case = task.load_case(LIZ)
    info = RunInfo(run_id="r", task="summary", agent="fixed", model=None)
    agent = FunctionAgent(lambda request: AgentResult(text=UNCLEAR), "fixed")
    return task, [run_case(task, agent, case, info, f"n::Liz{i}") for i in range(n)]


def test_an_infra_failure_of_the_judge_is_infra_error_with_its_message_and_its_calls_counted() -> None:
    task, runs = _runs([InfraError("529 overloaded", attempts=3)], 1)
    (run,) = runs
    record = run.record
    assert record.outcome == "infra_error" and not record.counted
    assert record.message.startswith("infra_error: the judge scripted/scripted-model failed (infra_error): 529")
    assert record.error is not None and record.error.traceback is None
    assert record.usage["judge_calls"] == 1 and record.metrics == {}
    aggregate = summarize(task, [r.record for r in runs])
    assert aggregate.counted == 0 and aggregate.usage["judge_calls"] == 1  # the call was made, its case excluded


def test_a_rejected_judge_key_is_auth_error_and_stops_the_run() -> None:
    _, (run,) = _runs([AuthError("401 invalid x-api-key")], 1)
    assert run.record.outcome == "auth_error" and OUTCOMES["auth_error"].stops_run and run.exc is not None


def test_an_unreachable_judge_stops_the_run_after_its_first_connection_failures() -> None:
    failures: list[Any] = [InfraError("cannot connect", connection=True) for _ in range(UNREACHABLE_AFTER)]
    _, runs = _runs(failures, UNREACHABLE_AFTER)
    outcomes = [r.record.outcome for r in runs]
    assert outcomes == ["infra_error"] * (UNREACHABLE_AFTER - 1) + ["config_error"]
    assert OUTCOMES["config_error"].stops_run
    assert "looks unreachable" in runs[-1].record.message


def test_a_rate_limited_judge_does_not_stop_the_run() -> None:
    _, runs = _runs([InfraError("429", attempts=3) for _ in range(UNREACHABLE_AFTER)], UNREACHABLE_AFTER)
    assert [r.record.outcome for r in runs] == ["infra_error"] * UNREACHABLE_AFTER


JUDGE_MODULE = '''
from groundeval.errors import InfraError
from groundeval.testing import ScriptedModel

def _down(request):
    raise InfraError("cannot reach the judge (ConnectError)", connection=True, attempts=3)

JUDGE = ScriptedModel(_down, role="judge", name="down")
'''


def test_an_unreachable_judge_stops_a_run_without_tracebacks(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(down_judge=JUDGE_MODULE)
    result = pytester.runpytest("--groundeval-task=summary", "--groundeval-agent=naive-summary",
                                "--groundeval-judge=down_judge:JUDGE", "-p", "no:cacheprovider")
    out = result.stdout.str()
    assert "Traceback" not in out and "looks unreachable" in out
    assert "config_error: 1" in out and "not_run" in out
    assert result.ret != 0
