"""The score stage: a case's judge questions asked concurrently, under the run's bound, by the executor."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from groundeval.agent_io import AgentResult
from groundeval.agents.base import FunctionAgent
from groundeval.errors import InfraError
from groundeval.execution.outcome_policy import RunInfo
from groundeval.execution.score_stage import ScoreStage
from groundeval.scorers.model_graded import JudgeError, Question, Verdict
from groundeval.tasks.summary import SummaryTask
from groundeval.tasks.summary.judge import ModelJudge
from groundeval.testing import ScriptedModel
from groundeval.testing.one_case import run_case
from tests._paths import REPO

LIZ = REPO / "fixtures" / "summary" / "Liz_Conn_27c911c6-f045-4ffa-af5d-6eba57ac94b2.json"
GUARD_S = 30.0
"""A deadlock guard on the barriers below (a broken test fails instead of hanging); never a figure."""


def _question(key: str, ask: Any, **kw: Any) -> Question:
    return Question(key=key, ask=ask, **kw)


def test_questions_are_asked_at_once_up_to_the_bound() -> None:
    barrier = threading.Barrier(4, timeout=GUARD_S)  # passes only when 4 calls are in flight together

    def ask() -> Verdict:
        barrier.wait()
        return Verdict(True, "x")

    stage = ScoreStage(4)
    try:
        out = stage.run([_question(str(i), ask) for i in range(4)])
    finally:
        stage.close()
    assert sorted(out) == ["0", "1", "2", "3"] and all(isinstance(v, Verdict) and v.met for v in out.values())
    assert stage.peak == 4 and stage.made == 4


def test_the_bound_is_kept() -> None:
    lock = threading.Lock()
    now = peak = 0

    def ask() -> Verdict:
        nonlocal now, peak
        with lock:
            now += 1
            peak = max(peak, now)
        try:
            threading.Event().wait(0.01)  # overlap; the assertion reads counts, never the time
            return Verdict(False)
        finally:
            with lock:
                now -= 1

    stage = ScoreStage(2)
    try:
        out = stage.run([_question(str(i), ask) for i in range(8)])
    finally:
        stage.close()
    assert len(out) == 8 and peak <= 2 and stage.peak <= 2


def test_the_judges_first_question_goes_alone_and_rule_judges_are_asked_inline() -> None:
    events: list[str] = []
    first_done = threading.Event()

    def first() -> Verdict:
        events.append("first")
        first_done.set()
        return Verdict(True)

    def other() -> Verdict:
        events.append("other" if first_done.is_set() else "other-before-first")
        return Verdict(False)

    stage = ScoreStage(4)
    try:
        stage.run([_question("a", first, alone=True), *[_question(k, other, alone=True) for k in "bcd"]])
        inline: list[str] = []
        stage.run([_question("r", lambda: inline.append(threading.current_thread().name) or Verdict(True),
                             costs_nothing=True)])
    finally:
        stage.close()
    assert events[0] == "first" and "other-before-first" not in events and len(events) == 4
    assert inline == [threading.current_thread().name]  # no model: asked in the calling thread


@pytest.mark.parametrize("workers", [1, 3])
def test_after_a_failure_no_further_question_starts(workers: int) -> None:
    asked: list[str] = []
    failed = threading.Event()

    def ok(key: str) -> Any:
        def ask() -> Verdict:
            asked.append(key)
            return Verdict(True)
        return ask

    def fail() -> Verdict:
        asked.append("fail")
        failed.set()
        raise JudgeError("the judge failed", error=InfraError("529", attempts=1))

    stage = ScoreStage(workers)
    try:
        out = stage.run([_question("fail", fail, alone=True), _question("b", ok("b")), _question("c", ok("c"))])
    finally:
        stage.close()
    assert asked == ["fail"] and list(out) == ["fail"] and isinstance(out["fail"], JudgeError)


def _reply(request: Any) -> str:
    return '{"met": false, "evidence": ""}'


def _record(grades: ScoreStage | None) -> Any:
    task = SummaryTask()
    task.scorer.judge = ModelJudge(ScriptedModel(_reply, role="judge", name="j"))
    case = task.load_case(LIZ)
    info = RunInfo(run_id="r", task="summary", agent="fixed", model=None)
    agent = FunctionAgent(lambda request: AgentResult(text="Patient reviewed. Plan discussed."), "fixed")
    return run_case(task, agent, case, info, "n::Liz", grades=grades).record


def test_a_case_scored_through_the_stage_reads_as_one_scored_serially() -> None:
    stage = ScoreStage(8)
    try:
        staged = _record(stage)
    finally:
        stage.close()
    serial = _record(None)
    assert staged.usage["judge_calls"] == serial.usage["judge_calls"] == staged.metrics["decided_by_judge"] > 1
    assert stage.made == staged.usage["judge_calls"]  # every judge call was the stage's
    assert (staged.outcome, staged.metrics, staged.details) == (serial.outcome, serial.metrics, serial.details)


def test_the_threaded_executor_asks_each_cases_judge_ahead_and_records_read_as_serial() -> None:
    import dataclasses

    from groundeval.execution import CallTally, Job, ThreadedExecutor, make_executor
    from groundeval.models import throttle

    throttle.configure(None)
    threads: set[str] = set()

    def reply(request: Any) -> str:
        threads.add(threading.current_thread().name)
        return '{"met": false, "evidence": ""}'

    def records(concurrency: int) -> list[Any]:
        task = SummaryTask()
        task.scorer.judge = ModelJudge(ScriptedModel(reply, role="judge", name="j"))
        agent = FunctionAgent(lambda request: AgentResult(text="Patient reviewed. Plan discussed."), "fixed")
        agent.network_calls = False  # type: ignore[attr-defined]
        info = RunInfo(run_id="r", task="summary", agent="fixed", model=None)
        executor = make_executor(task, agent, info, concurrency, CallTally())
        paths = sorted((REPO / "fixtures" / "summary").glob("*.json"))[:3]
        jobs = [Job(f"groundeval/summary::{c.case_id}", dataclasses.replace(c, data={}))
                for c in (task.load_case(p) for p in paths)]
        if isinstance(executor, ThreadedExecutor):
            executor.submit(jobs)
        runs = [executor.result(job) for job in jobs]
        executor.close()
        return [r.record for r in runs if r is not None]

    try:
        ahead = records(3)
        ahead_threads = set(threads)
        threads.clear()
        serial = records(1)
    finally:
        throttle.configure(None)
    # asked ahead: in the case's call thread (a first question goes alone) or the stage's, never the item's
    assert ahead_threads and all(name.startswith(("groundeval-judge-", "groundeval-call-")) for name in ahead_threads)
    assert any(name.startswith("groundeval-judge-") for name in ahead_threads)
    assert threads == {threading.current_thread().name}  # serial: the item's own thread
    assert [(r.case_id, r.outcome, r.metrics, r.details, r.usage) for r in ahead] == \
        [(r.case_id, r.outcome, r.metrics, r.details, r.usage) for r in serial]
    assert sum(int(r.usage["judge_calls"]) for r in ahead) > 3
