"""The executors on their own, in-process: order, the first lone call, stopping, output, errors."""

from __future__ import annotations

import ast
import dataclasses
import io
import shutil
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from groundeval.agent_io import AgentRequest
from groundeval.agents.base import FunctionAgent
from groundeval.datasets import Case
from groundeval.errors import InfraError
from groundeval.execution import (
    LOOKAHEAD_PER_SLOT,
    CallTally,
    Executor,
    Job,
    SerialExecutor,
    ThreadedExecutor,
    effective_concurrency,
    make_executor,
)
from groundeval.execution.outcome_policy import RunInfo
from groundeval.execution.thread_output import Router
from groundeval.models import stop_switch, throttle
from groundeval.tasks.extraction.task import ExtractionTask
from groundeval.testing.scripted_agent import ScriptedAgent

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "extraction"
PATIENTS = ("Liz_Conn", "Clemente_Kreiger", "Max_Kris")
INFO = RunInfo(run_id="r", task="extraction", agent="a", model=None)
WAIT_S = 30  # a guard against a hung test, not a timing assertion


class TruthBugOnMax(ExtractionTask):
    def truth(self, case: Case) -> dict[str, Any]:
        if case.case_id.startswith("Max_Kris"):
            raise KeyError("truth bug")
        return super().truth(case)


@pytest.fixture(autouse=True)
def _fresh_calls() -> Iterator[None]:
    """Each test gets a run of its own (a clear stop switch, no limit), as a session does."""
    throttle.configure(None)
    yield
    throttle.configure(None)


def _jobs(task: ExtractionTask, data: Path = FIXTURES) -> list[Job]:
    """One job per patient, as collection makes them: the case without its content."""
    jobs = []
    for prefix in PATIENTS:
        path = next(iter(sorted(data.glob(f"{prefix}*.json"))))
        case = task.load_case(path)
        jobs.append(Job(f"groundeval/extraction::{case.case_id}", dataclasses.replace(case, data={})))
    return jobs


def _executor(fn: Callable[[AgentRequest], Any], concurrency: int, task: ExtractionTask | None = None) -> Executor:
    return make_executor(task or ExtractionTask(), FunctionAgent(fn, "fn"), INFO, concurrency, CallTally())


def _counting(called: list[str], value: str = "[]") -> Callable[[AgentRequest], str]:
    """An agent that notes which case it was called for (and in which thread) and answers ``value``."""

    def agent(request: AgentRequest) -> str:
        called.append(request.case_id)
        return value

    return agent


def test_the_serial_executor_calls_when_the_item_runs_in_the_calling_thread() -> None:
    threads: list[str] = []

    def agent(request: AgentRequest) -> str:
        threads.append(threading.current_thread().name)
        return "[]"

    executor = _executor(agent, 1)
    assert isinstance(executor, SerialExecutor) and executor.lookahead == 0
    jobs = _jobs(ExtractionTask())
    executor.submit(jobs)  # nothing is made ahead
    assert threads == []
    runs = [executor.result(job) for job in jobs]
    assert [r.record.nodeid for r in runs if r is not None] == [job.nodeid for job in jobs]
    assert threads == [threading.current_thread().name] * 3
    assert executor.close() == 0


def test_the_first_call_goes_alone_then_calls_go_ahead_in_threads_and_come_back_in_order() -> None:
    threads: dict[str, str] = {}
    first_done = threading.Event()  # the later jobs' calls finish in reverse order

    def agent(request: AgentRequest) -> str:
        threads[request.case_id] = threading.current_thread().name
        if request.case_id.startswith("Clemente"):
            assert first_done.wait(WAIT_S)  # Max_Kris's call, queued after it, finishes first
        elif request.case_id.startswith("Max_Kris"):
            first_done.set()
        return "[]"

    executor = _executor(agent, 2)
    assert isinstance(executor, ThreadedExecutor) and executor.lookahead == 0
    liz, clemente, max_kris = _jobs(ExtractionTask())
    executor.submit([liz, clemente, max_kris])  # before any call returned: nothing goes ahead
    assert threads == {}
    run = executor.result(liz)
    assert run is not None and run.record.outcome == "failed"  # an empty list: a verdict, the call returned
    assert threads[liz.case.case_id] == threading.current_thread().name
    assert executor.lookahead == 2 * LOOKAHEAD_PER_SLOT
    executor.submit([clemente, max_kris])
    executor.submit([clemente, max_kris])  # a window seen again: nothing is queued twice
    runs = [executor.result(clemente), executor.result(max_kris)]
    assert [r.record.case_id for r in runs if r is not None] == [clemente.case.case_id, max_kris.case.case_id]
    assert all(threads[job.case.case_id].startswith("groundeval-call-") for job in (clemente, max_kris))
    assert executor.started == 2
    assert executor.close() == 0  # every call made was handed back


def test_a_scripted_agents_second_call_starts_while_its_first_is_in_flight() -> None:
    """``ScriptedAgent`` declares ``network_calls = False``: its first call does not go alone.

    The first two calls each wait until both are in flight (a barrier of two), and every call
    notes how many calls were in flight when it started; were the first call alone, the second
    would start only once the first returned (with 1 in flight) and the barrier would break.
    """
    lock = threading.Lock()
    in_flight = 0
    seen: dict[str, int] = {}
    both = threading.Barrier(2, timeout=WAIT_S)
    liz, clemente, max_kris = _jobs(ExtractionTask())

    def script(request: AgentRequest) -> str:
        nonlocal in_flight
        with lock:
            in_flight += 1
            seen[request.case_id] = in_flight
        try:
            if request.case_id != max_kris.case.case_id:
                both.wait()
            return "[]"
        finally:
            with lock:
                in_flight -= 1

    executor = make_executor(ExtractionTask(), ScriptedAgent(script), INFO, 2, CallTally())
    assert executor.lookahead == 2 * LOOKAHEAD_PER_SLOT  # before any call returned
    executor.submit([liz, clemente, max_kris])
    runs = [executor.result(job) for job in (liz, clemente, max_kris)]
    assert sorted(r.record.case_id for r in runs if r is not None and r.exc is None) == sorted(seen)  # all answered
    assert seen[clemente.case.case_id] == 2  # the second call started with the first one in flight
    assert executor.close() == 0


def test_a_model_agents_second_call_starts_only_after_its_first_returned() -> None:
    """An agent that does not declare ``network_calls = False`` keeps the lone first call."""
    lock = threading.Lock()
    in_flight = 0
    seen: dict[str, int] = {}

    def agent(request: AgentRequest) -> str:
        nonlocal in_flight
        with lock:
            in_flight += 1
            seen[request.case_id] = in_flight
        with lock:
            in_flight -= 1
        return "[]"

    executor = _executor(agent, 2)
    jobs = _jobs(ExtractionTask())
    for job in jobs:  # as the session does: the window before each item, then its result
        if executor.lookahead:
            executor.submit(jobs[jobs.index(job):])
        assert executor.result(job) is not None
        if job is jobs[0]:
            assert list(seen) == [job.case.case_id]  # nothing else started while the first call was made
    assert seen[jobs[0].case.case_id] == 1
    assert executor.close() == 0


def test_an_agent_without_network_calls_goes_ahead_from_the_first_call() -> None:
    """No key, model or API can be wrong for a rule-based agent: its first call need not go alone."""
    called: list[str] = []
    agent = FunctionAgent(_counting(called), "rules")
    agent.network_calls = False  # type: ignore[attr-defined]
    executor = make_executor(ExtractionTask(), agent, INFO, 2, CallTally())
    assert isinstance(executor, ThreadedExecutor) and executor.lookahead == 2 * LOOKAHEAD_PER_SLOT
    jobs = _jobs(ExtractionTask())
    executor.submit(jobs)  # all three are queued before any call returned
    runs = [executor.result(job) for job in jobs]
    assert [r.record.case_id for r in runs if r is not None] == [job.case.case_id for job in jobs]
    assert executor.started == 3  # every call, the first included, was made in a thread
    assert executor.close() == 0


@pytest.mark.parametrize("spec", ["baseline", "naive"])
def test_the_rule_based_agents_and_their_cached_wrapper_declare_no_network_calls(spec: str, tmp_path: Path) -> None:
    from groundeval.agents.base import make_agent
    from groundeval.agents.result_cache import CachingAgent
    from groundeval.models.cache_store import ResultCache

    agent = make_agent(spec)
    assert getattr(agent, "network_calls", True) is False
    cached = CachingAgent(agent, ResultCache(tmp_path), spec=spec, options={})
    assert getattr(cached, "network_calls", True) is False
    assert getattr(FunctionAgent(_counting([]), "fn"), "network_calls", True) is True  # undeclared: assume a network


def test_a_connection_failure_does_not_open_the_calls_ahead() -> None:
    def unreachable(request: AgentRequest) -> str:
        raise InfraError("connection refused", connection=True)

    executor = _executor(unreachable, 4)
    run = executor.result(_jobs(ExtractionTask())[0])
    assert run is not None and run.record.outcome == "infra_error" and isinstance(run.exc, InfraError)
    assert executor.lookahead == 0  # the next case's call goes alone too


def test_closing_cancels_the_queued_calls_and_counts_those_in_flight() -> None:
    release, two_in_flight = threading.Event(), threading.Barrier(3)
    called: list[str] = []

    def agent(request: AgentRequest) -> str:
        called.append(request.case_id)
        if len(called) > 1:  # the calls made ahead hold their slot until released
            two_in_flight.wait(WAIT_S)
            assert release.wait(WAIT_S)
        return "[]"

    executor = _executor(agent, 2)
    assert isinstance(executor, ThreadedExecutor)
    task = ExtractionTask()
    first, *later = _jobs(task)
    executor.result(first)
    more = [dataclasses.replace(job, nodeid=job.nodeid + "[again]") for job in later]
    executor.submit([*later, *more])  # four calls: two start, two wait in the queue
    two_in_flight.wait(WAIT_S)
    stop_switch.stop_calls()  # what the session does first on a stop
    assert executor.close() == 2  # in flight: paid for, never handed back (dropped_calls)
    release.set()
    assert executor.cancelled == 2 and executor.lookahead == 0
    executor.submit(later)  # after close nothing goes ahead
    assert executor.result(more[0]) is None  # its call never started: not run
    assert len(called) == 3


def test_what_a_call_made_ahead_prints_reaches_its_own_case_redacted(monkeypatch: pytest.MonkeyPatch) -> None:
    secret = "sk-printed-0123456789abcdef"
    monkeypatch.setenv("PRINTING_AGENT_API_KEY", secret)
    terminal = io.StringIO()
    monkeypatch.setattr(sys, "stdout", Router(terminal, "stdout"))
    printed = threading.Event()

    def agent(request: AgentRequest) -> str:
        print(f"out from {request.case_id} key={secret}")
        if threading.current_thread().name.startswith("groundeval-call-"):
            printed.set()
        return "[]"

    executor = _executor(agent, 2)
    first, second, _ = _jobs(ExtractionTask())
    executor.result(first)  # the first call goes alone, in this thread: its output is not held back
    assert terminal.getvalue().startswith(f"out from {first.case.case_id} key=")
    terminal.seek(0)
    terminal.truncate()
    executor.submit([second])
    assert printed.wait(WAIT_S)
    assert terminal.getvalue() == ""  # kept for its case, not written while another item runs
    executor.result(second)
    assert terminal.getvalue() == f"out from {second.case.case_id} key=[REDACTED]\n"


@pytest.mark.parametrize("concurrency", [1, 2])
def test_a_case_that_cannot_be_prepared_is_recorded_without_a_call(concurrency: int, tmp_path: Path) -> None:
    called: list[str] = []
    task = TruthBugOnMax()
    for prefix in PATIENTS:
        shutil.copy(next(iter(FIXTURES.glob(f"{prefix}*.json"))), tmp_path)
    first, changed, broken = _jobs(task, tmp_path)
    executor = _executor(_counting(called), concurrency, task)
    executor.result(first)
    changed.case.source.write_text(changed.case.source.read_text() + " ")  # edited after collection
    executor.submit([changed, broken])  # neither can be prepared: both are left to their items
    run = executor.result(changed)
    assert run is not None and run.record.outcome == "invalid_case" and "changed after collection" in run.record.message
    run = executor.result(broken)
    assert run is not None and run.record.outcome == "harness_error" and isinstance(run.exc, KeyError)
    assert called == [first.case.case_id]


def test_a_stopped_run_makes_no_call() -> None:
    called: list[str] = []
    for concurrency in (1, 4):
        executor = _executor(_counting(called), concurrency)
        stop_switch.stop_calls()
        assert executor.result(_jobs(ExtractionTask())[0]) is None
        throttle.configure(None)
    assert called == []


def test_concurrency_follows_the_option_then_the_agent_declarations() -> None:
    class Safe:
        thread_safe = True

    class Capped(Safe):
        max_concurrency = 1

    assert effective_concurrency(None, object()) == 1  # an agent of your own: one call at a time
    assert effective_concurrency(None, Safe()) == 4 and effective_concurrency(8, Safe()) == 8
    assert effective_concurrency(8, Capped()) == 1


def test_the_executors_import_neither_pytest_nor_the_plugin() -> None:
    package = Path(__file__).resolve().parents[2] / "src" / "groundeval" / "execution"
    for module in package.glob("*.py"):
        tree = ast.parse(module.read_text())
        for node in ast.walk(tree):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else []
            if isinstance(node, ast.ImportFrom):
                names = [node.module or ""]
            for name in names:
                assert not name.startswith(("pytest", "_pytest", "groundeval.plugin", "groundeval.cli")), (module, name)
