"""``plugin.worker_stop``: the handler cuts only a call the main thread waits for, and only after a real SIGINT."""

from __future__ import annotations

import signal
from collections.abc import Iterator
from pathlib import Path

import pytest

from groundeval.models import stop_switch, throttle
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
    assert stop.reason is None and not stop_switch.calls_stopped()


def test_a_sigint_between_calls_stops_calls_and_cuts_the_next_wait(tmp_path: Path) -> None:
    stop = WorkerStop(tmp_path / "run.stop")
    stop._on_signal(signal.SIGINT, None)  # between cases: nothing raised there
    assert stop.reason == "interrupted by signal SIGINT" and stop_switch.calls_stopped()
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


def test_the_stop_switch_is_a_leaf_and_the_stop_path_imports_no_more_of_groundeval() -> None:
    """``models.stop_switch`` imports nothing of groundeval; a worker's stop path loads it alone."""
    import ast
    import subprocess
    import sys

    source = Path(stop_switch.__file__).read_text(encoding="utf-8")
    imported = [a.name for n in ast.walk(ast.parse(source)) if isinstance(n, ast.Import) for a in n.names]
    imported += [n.module or "" for n in ast.walk(ast.parse(source)) if isinstance(n, ast.ImportFrom)]
    assert imported and not [m for m in imported if m.startswith("groundeval")], imported
    code = ("import sys, groundeval.plugin.worker_stop\n"
            "print(sorted(m for m in sys.modules if m.startswith('groundeval')))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == str(sorted([
        "groundeval", "groundeval.errors", "groundeval.models", "groundeval.models.providers",
        "groundeval.models.stop_switch", "groundeval.plugin",
        "groundeval.plugin.worker_stop",
    ]))


def test_configure_renews_the_switch_and_a_call_keeps_the_one_it_started_under() -> None:
    gate = throttle.configure(4)
    assert gate is not None and gate.switch is stop_switch.current() is throttle.active().switch
    earlier = throttle.active()
    throttle.configure(None)  # a new run: the earlier run's calls start no further attempt
    assert earlier.stopped() and not stop_switch.calls_stopped()
    with pytest.raises(stop_switch.CallsStopped):
        gate.acquire(1.0)  # the earlier run's gate gives up at once
