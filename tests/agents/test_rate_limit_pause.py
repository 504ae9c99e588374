"""After a 429 the whole run pauses: no request of any thread, or of any process sharing the run's
pause file, is sent before the server's ``Retry-After`` has passed; every pause is bounded by the
case's deadline. Waits go through a recording ``sleep`` (the policy's seam), never for real."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from groundeval.models import throttle
from groundeval.models.retry import GaveUp, RetryPolicy, call_with_retries


class Status(Exception):
    def __init__(self, code: int) -> None:
        super().__init__(f"status {code}")
        self.status_code = code


def _advise(exc: BaseException) -> tuple[bool, float | None]:
    return True, 30.0  # as a 429 with retry-after: 30


def _limited_once(sent: list[str], name: str) -> object:
    def call(left: float) -> str:
        del left
        sent.append(name)
        if sent.count(name) == 1 and name == "a":
            raise Status(429)
        return name

    return call


def test_a_429_in_one_thread_pauses_the_next_request_of_another_for_its_retry_after() -> None:
    throttle.configure(4)
    sent: list[str] = []
    waits: dict[str, list[float]] = {"a": [], "b": []}
    policy_a = RetryPolicy(max_retries=1, timeout_s=600, sleep=waits["a"].append)
    done = call_with_retries(_limited_once(sent, "a"), policy_a, errors=(Status,), advise=_advise)  # type: ignore[arg-type]
    assert done.attempts == 2 and waits["a"] == [30.0]  # its own retry waited the Retry-After, once
    other = threading.Thread(target=lambda: call_with_retries(
        _limited_once(sent, "b"), RetryPolicy(timeout_s=600, sleep=waits["b"].append),  # type: ignore[arg-type]
        errors=(Status,), advise=_advise))
    other.start()
    other.join(30)
    assert sent == ["a", "a", "b"]
    (paused,) = waits["b"]  # the other thread's first request waited for what was left of the pause
    assert 25.0 < paused <= 30.0


def test_the_pause_crosses_processes_through_the_runs_file_and_is_bounded(tmp_path: Path) -> None:
    shared = tmp_path / "run-1.cooldown"
    one, two = throttle.CallRun(None), throttle.CallRun(None)  # two xdist workers of one run
    one.share_cooldown(shared)
    two.share_cooldown(shared)
    one.cool_down(30.0)
    waited: list[float] = []
    assert 25.0 < two.wait_cooldown(600.0, waited.append) <= 30.0 and len(waited) == 1
    other_run = throttle.CallRun(None)
    other_run.share_cooldown(tmp_path / "run-2.cooldown")  # another run id: never paused by run 1
    assert other_run.wait_cooldown(600.0, waited.append) == 0.0 and len(waited) == 1
    with pytest.raises(throttle.CoolingDown, match=r"past the 5\.0 s this attempt could wait"):
        two.wait_cooldown(5.0, waited.append)
    assert len(waited) == 1  # nothing was waited: the case gives up at once


def test_a_pause_past_the_cases_bound_sends_nothing() -> None:
    throttle.configure(None)
    throttle.active().cool_down(30.0)
    sent: list[str] = []
    with pytest.raises(GaveUp) as gave_up:
        call_with_retries(_limited_once(sent, "b"), RetryPolicy(timeout_s=5, sleep=lambda s: None),  # type: ignore[arg-type]
                          errors=(Status,), advise=_advise)
    assert sent == [] and gave_up.value.attempts == 0
    assert isinstance(gave_up.value.error, throttle.CoolingDown)
