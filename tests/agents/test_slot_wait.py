"""Faults classed the same at any concurrency: waiting for a slot is not a request, and a stop sends nothing.

Every wait here is ended by an event or by the test releasing a slot, never by a wall-clock bound the
test depends on; the case budgets run on a fake clock.
"""

from __future__ import annotations

import dataclasses
import functools
import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from groundeval.agent_io import AgentRequest, Prompt
from groundeval.agents.base import AgentConfig
from groundeval.agents.claude import ClaudeAgent
from groundeval.errors import CaseTooLargeError, InfraError
from groundeval.models import stop_switch, throttle
from groundeval.models.retry import GaveUp, RetryPolicy, call_with_retries
from tests._fakes.fake_anthropic import ScriptedAPI, api_error

REQUEST = AgentRequest(case_id="c1", task="extraction", prompt=Prompt(system="Rules.", user="Bundle: {}"))


class Status(Exception):
    def __init__(self, code: int) -> None:
        super().__init__(f"status {code}")
        self.status_code = code


@pytest.fixture
def gate() -> Iterator[throttle.AdaptiveLimit]:
    """A process limit of 4 cut to 1 (as permanent 429s leave it), cleared afterwards."""
    limit = throttle.configure(4)
    assert limit is not None
    limit.rate_limited(None)
    limit.rate_limited(None)
    assert limit.limit == 1
    yield limit
    throttle.configure(None)


def waiting(gate: throttle.AdaptiveLimit, count: int = 1) -> None:
    """Block until ``count`` callers wait for a slot of ``gate`` (an event, not a timer)."""
    with gate._cond:
        assert gate._cond.wait_for(lambda: len(gate._queue) >= count, timeout=60)


def in_thread(fn: Callable[[], Any]) -> tuple[threading.Thread, dict[str, Any]]:
    box: dict[str, Any] = {}

    def run() -> None:
        try:
            box["value"] = fn()
        except BaseException as exc:
            box["error"] = exc

    thread = threading.Thread(target=run)
    thread.start()
    return thread, box


def test_the_budget_starts_at_the_first_send_not_while_waiting_for_a_slot(gate: throttle.AdaptiveLimit) -> None:
    now = [0.0]
    policy = RetryPolicy(timeout_s=5.0, clock=lambda: now[0], sleep=lambda s: None)
    gate.acquire(1.0)  # a trickling call of another case holds the only slot
    lefts: list[float] = []

    def call(left: float) -> str:
        lefts.append(left)
        return "answer"

    thread, box = in_thread(lambda: call_with_retries(call, policy, errors=(Status,), advise=lambda e: (True, None)))
    waiting(gate)
    now[0] += 100.0  # far past the case's 5 s bound while it waited, unsent
    gate.release(ok=True)
    thread.join()
    assert box["value"].value == "answer" and box["value"].attempts == 1
    assert lefts == [5.0]  # its whole budget, from the send


def test_a_retry_that_never_gets_a_slot_keeps_the_last_status_and_counts_only_sent_attempts(
    gate: throttle.AdaptiveLimit,
) -> None:
    calls: list[float] = []

    def call(left: float) -> str:
        calls.append(left)
        raise Status(503)

    now = [0.0]

    def sleep(seconds: float) -> None:
        gate.acquire(1.0)  # while this case backs off, another case's call takes the only slot
        now[0] += 10.0  # and the case's 5 s budget runs out before the slot frees (a fake clock)

    policy = RetryPolicy(timeout_s=5.0, sleep=sleep, initial_delay_s=0.001, clock=lambda: now[0])
    with pytest.raises(GaveUp) as info:
        call_with_retries(call, policy, errors=(Status,), advise=lambda e: (True, None))
    assert len(calls) == 1 and info.value.attempts == 1  # one request was sent, one counted
    assert isinstance(info.value.error, Status) and info.value.error.status_code == 503
    assert "attempt 2: waited" in info.value.note and "no request was sent" in info.value.note
    gate.release(ok=False)


def test_a_case_never_sent_says_it_waited_for_a_slot(gate: throttle.AdaptiveLimit) -> None:
    gate.acquire(1.0)
    calls: list[float] = []
    with pytest.raises(GaveUp) as info:
        call_with_retries(calls.append, RetryPolicy(timeout_s=0.01), errors=(Status,), advise=lambda e: (True, None))
    assert calls == [] and info.value.attempts == 0
    assert isinstance(info.value.error, throttle.SlotTimeout)
    assert "for a concurrency slot; no request was sent" in str(info.value.error)
    gate.release(ok=True)


def test_slots_go_first_come_first_served(gate: throttle.AdaptiveLimit) -> None:
    gate.acquire(1.0)
    order: list[str] = []
    threads = []
    def take(name: str) -> None:
        gate.acquire(60.0)
        order.append(name)
        gate.release(ok=False)

    for name in ("first", "second", "third"):
        thread, _ = in_thread(functools.partial(take, name))
        threads.append(thread)
        waiting(gate, len(threads))
    gate.release(ok=False)
    for thread in threads:
        thread.join()
    assert order == ["first", "second", "third"]


def test_a_stop_wakes_the_waiters_and_no_call_starts_after_it(gate: throttle.AdaptiveLimit) -> None:
    gate.acquire(1.0)
    calls: list[float] = []
    policy = RetryPolicy(timeout_s=60.0)
    thread, box = in_thread(lambda: call_with_retries(calls.append, policy, errors=(Status,),
                                                     advise=lambda e: (True, None)))
    waiting(gate)
    stop_switch.stop_calls()
    thread.join()
    gave_up = box["error"]
    assert isinstance(gave_up, GaveUp) and isinstance(gave_up.error, stop_switch.CallsStopped)
    gate.release(ok=True)
    with pytest.raises(GaveUp):  # and a case that starts after the stop sends nothing
        call_with_retries(calls.append, policy, errors=(Status,), advise=lambda e: (True, None))
    assert calls == [] and stop_switch.calls_stopped()


def test_a_stop_between_retries_sends_no_retry() -> None:
    throttle.configure(None)
    calls: list[float] = []

    def call(left: float) -> str:
        calls.append(left)
        raise Status(503)

    try:
        policy = RetryPolicy(timeout_s=60.0, sleep=lambda s: stop_switch.stop_calls())  # the signal comes mid-backoff
        with pytest.raises(GaveUp) as info:
            call_with_retries(call, policy, errors=(Status,), advise=lambda e: (True, None))
        assert len(calls) == 1 and info.value.attempts == 1 and isinstance(info.value.error, Status)
        assert "the run was stopped" in info.value.note
    finally:
        throttle.configure(None)
    assert not stop_switch.calls_stopped()  # configure clears the switch for the next run


def _claude(api: ScriptedAPI, clock: Callable[[], float]) -> ClaudeAgent:
    agent = ClaudeAgent(AgentConfig(options={"timeout": 5.0}), http_client=api.client(), sleep=lambda s: None)
    agent.retry = dataclasses.replace(agent.retry, clock=clock)
    return agent


def test_a_too_large_case_that_waited_for_a_slot_is_still_case_too_large(
    api_key: str, gate: throttle.AdaptiveLimit
) -> None:
    api = ScriptedAPI([api_error(400, "invalid_request_error", "prompt is too long: 212345 tokens > 200000 maximum")])
    now = [0.0]
    gate.acquire(1.0)
    thread, box = in_thread(lambda: _claude(api, lambda: now[0]).run(REQUEST))
    waiting(gate)
    now[0] += 100.0  # as at concurrency 16 behind a trickling call: far past the case's bound
    gate.release(ok=True)
    thread.join()
    error = box["error"]
    assert isinstance(error, CaseTooLargeError) and error.attempts == 1 and len(api.requests) == 1


def test_a_5xx_case_whose_retry_never_got_a_slot_keeps_its_status(api_key: str, gate: throttle.AdaptiveLimit) -> None:
    api = ScriptedAPI([api_error(503, "api_error", "upstream down")])
    now = [0.0]

    def backoff(seconds: float) -> None:
        gate.acquire(1.0)  # another case takes the only slot during the backoff, and keeps it
        now[0] += 4.9  # of the case's 5 s budget

    agent = ClaudeAgent(AgentConfig(options={"timeout": 5.0}), http_client=api.client(), sleep=backoff)
    agent.retry = dataclasses.replace(agent.retry, clock=lambda: now[0], initial_delay_s=0.1)
    with pytest.raises(InfraError) as info:
        agent.run(REQUEST)
    assert len(api.requests) == 1 and info.value.attempts == 1
    assert "503" in str(info.value) and "no request was sent" in str(info.value)
    assert info.value.details["status_code"] == 503
    gate.release(ok=False)


def test_a_case_that_timed_out_beside_other_calls_says_they_were_queued(api_key: str) -> None:
    gate = throttle.configure(4)
    assert gate is not None
    release = threading.Event()

    def hang(request: Any) -> Any:
        release.wait(60)
        raise AssertionError("abandoned")

    api = ScriptedAPI([hang])
    try:
        gate.acquire(1.0)  # another case's call is in flight at the same server
        agent = ClaudeAgent(AgentConfig(options={"timeout": 0.01}), http_client=api.client(), sleep=lambda s: None)
        with pytest.raises(InfraError) as info:
            agent.run(REQUEST)
        assert "1 other call of this run were in flight" in str(info.value)
        assert "lower --groundeval-concurrency" in str(info.value)
        assert info.value.details["others_in_flight"] == 1
    finally:
        release.set()
        throttle.configure(None)
