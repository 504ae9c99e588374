"""``plugin.worker_stop``: the handler cuts only a call the main thread waits for, and only after a real SIGINT."""

from __future__ import annotations

import signal
from collections.abc import Iterator
from pathlib import Path

import pytest

from groundeval.models import throttle
from groundeval.plugin.worker_stop import CallCut, WorkerStop


@pytest.fixture(autouse=True)
def fresh_calls() -> Iterator[None]:
    throttle.configure(None)  # a clear stop switch for this test, and none left for the next
    yield
    throttle.configure(None)


def test_without_a_signal_a_call_waited_for_is_never_cut(tmp_path: Path) -> None:
    stop = WorkerStop(tmp_path / "run.stop")
    with stop.cuttable():
        pass  # the call returned: nothing raised
    assert stop.reason is None and not throttle.calls_stopped()


def test_a_sigint_between_calls_stops_calls_and_cuts_the_next_wait(tmp_path: Path) -> None:
    stop = WorkerStop(tmp_path / "run.stop")
    stop._on_signal(signal.SIGINT, None)  # between cases: nothing raised there
    assert stop.reason == "interrupted by signal SIGINT" and throttle.calls_stopped()
    with pytest.raises(CallCut), stop.cuttable():
        pytest.fail("a wait entered after the SIGINT must be cut at once")


def test_a_sigint_during_a_wait_cuts_it_the_second_is_absorbed_the_third_aborts(tmp_path: Path) -> None:
    stop = WorkerStop(tmp_path / "run.stop")
    with pytest.raises(CallCut), stop.cuttable():
        stop._on_signal(signal.SIGINT, None)
    stop._on_signal(signal.SIGINT, None)  # `uv run` forwarding the Ctrl-C the group already got
    with pytest.raises(KeyboardInterrupt) as aborted:
        stop._on_signal(signal.SIGINT, None)
    assert not isinstance(aborted.value, CallCut)
