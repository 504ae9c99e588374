"""``--groundeval-concurrency``: calls made ahead in threads, reported as a serial run reports them."""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pytest

from groundeval.models import throttle

from .conftest import eval_args, junit_cases

# An agent that answers as the scripted agent does, after a random short wait, and keeps count of
# the calls in flight. `GATE` makes the second and third calls wait for each other (the first
# call on a process goes alone): a run that never has two calls in flight at once breaks the
# barrier (an agent_error), so concurrency is proved, not assumed from timings.
RANDOM_AGENT = '''
import os, random, threading
from scripted_agent import agent as scripted

LOCK = threading.Lock()
STATE = {"in_flight": 0, "peak": 0, "calls": 0}
GATE = threading.Barrier(2, timeout=20) if os.environ.get("GATED") else None


def agent(request):
    with LOCK:
        STATE["in_flight"] += 1
        STATE["peak"] = max(STATE["peak"], STATE["in_flight"])
        STATE["calls"] += 1
        gated = STATE["calls"] in (2, 3)
    try:
        if GATE is not None and gated:
            GATE.wait()
        threading.Event().wait(random.random() * 0.02)
        return scripted(request)
    finally:
        with LOCK:
            STATE["in_flight"] -= 1
'''

VOLATILE = {"run_id", "latency_s", "started_at", "worker"}


def _record(base: Path, folder: str = "runs") -> dict[str, Any]:
    (path,) = sorted((base / folder).glob("*.json"), key=lambda p: p.stat().st_mtime)[-1:]
    record: dict[str, Any] = json.loads(path.read_text())
    return record


def _stable_cases(record: dict[str, Any]) -> list[dict[str, Any]]:
    return [{k: v for k, v in case.items() if k not in VOLATILE} for case in record["cases"]]


def _stable_junit(path: Path) -> dict[str, dict[str, str]]:
    return {name: {k: v for k, v in props.items() if k not in VOLATILE}
            for name, props in junit_cases(path).items()}


@pytest.fixture
def random_agent(pytester: pytest.Pytester, eval_dir: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    pytester.makepyfile(random_agent=RANDOM_AGENT)
    monkeypatch.delenv("GATED", raising=False)
    return eval_dir


def test_results_junit_and_order_are_the_same_whatever_the_concurrency(
    pytester: pytest.Pytester, random_agent: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    serial = pytester.runpytest(*eval_args("--groundeval-agent=random_agent:agent", "--groundeval-concurrency=1",
                                           "--junitxml=one.xml", "-v", "--groundeval-trials=2"))
    one = _record(pytester.path)
    monkeypatch.setenv("GATED", "1")
    many = pytester.runpytest(*eval_args("--groundeval-agent=random_agent:agent", "--groundeval-concurrency=8",
                                         "--junitxml=eight.xml", "-v", "--groundeval-trials=2"))
    eight = _record(pytester.path)
    assert one["run_id"] != eight["run_id"]
    assert _stable_cases(one) == _stable_cases(eight)
    assert one["aggregate"] == eight["aggregate"]
    assert _stable_junit(pytester.path / "one.xml") == _stable_junit(pytester.path / "eight.xml")
    assert one["settings"]["concurrency"] == 1 and eight["settings"]["concurrency"] == 8

    def order(lines: Iterable[str]) -> list[str]:
        return [line.split(" ")[0] for line in lines if line.startswith("groundeval/extraction::")]

    assert order(serial.outlines) == order(many.outlines) and len(order(many.outlines)) == 10
    assert [c["trial"] for c in eight["cases"][:2]] == [0, 1]
    many.stdout.fnmatch_lines(["concurrency: 8 agent calls allowed, reached * in flight at once"])
    assert one["peak_in_flight"] == 1 and 2 <= eight["peak_in_flight"] <= 8


def test_calls_really_overlap_and_never_exceed_the_limit(
    pytester: pytest.Pytester, random_agent: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GATED", "1")
    pytester.makeconftest('''
import random_agent

import json

def pytest_sessionfinish(session):
    with open("state.json", "w") as fh:
        json.dump(random_agent.STATE, fh)
''')
    result = pytester.runpytest(*eval_args("--groundeval-agent=random_agent:agent", "--groundeval-concurrency=3",
                                           "--groundeval-trials=3"))
    outcomes = result.parseoutcomes()  # per trial as the scripted agent answers: no barrier broke
    assert (outcomes["passed"], outcomes["failed"], outcomes["errors"], outcomes["partial"]) == (6, 3, 3, 3)
    state = json.loads((pytester.path / "state.json").read_text())
    assert 2 <= state["peak"] <= 3 and state["calls"] == 15
    assert state["peak"] <= _record(pytester.path)["peak_in_flight"] <= 3  # what the summary states


def test_a_sequence_script_is_called_one_at_a_time(pytester: pytest.Pytester, eval_dir: Path) -> None:
    pytester.makepyfile(seq_agent='''
from groundeval.testing import ScriptedAgent
agent = ScriptedAgent(["[]"] * 5)
''')
    result = pytester.runpytest(*eval_args("--groundeval-agent=seq_agent:agent", "--groundeval-concurrency=8"))
    result.assert_outcomes(passed=1, failed=4)  # Clemente's truth is empty: "[]" is right there only
    assert _record(pytester.path)["settings"]["concurrency"] == 1


def test_exitfirst_cancels_the_calls_not_started(pytester: pytest.Pytester, eval_dir: Path) -> None:
    # Items in order: Clemente (empty truth: "[]" passes) x3, Garrett ("[]" fails) x3, then 9 more.
    # Clemente's first call goes alone; then calls are made ahead in two threads. Garrett's
    # trials 1 and 2 hang until the run has ended, so the two threads are busy when trial 0
    # fails and -x stops the run: every call queued behind them must be cancelled, never made.
    pytester.makepyfile(slow_agent='''
import threading

LOCK = threading.Lock()
STARTED = []
RELEASE = threading.Event()


def agent(request):
    with LOCK:
        STARTED.append((request.case_id, request.trial))
    if request.case_id.startswith("Garrett") and request.trial > 0:
        RELEASE.wait(120)  # far longer than the run needs to stop on a busy machine; released at its end
    return "[]"
''')
    pytester.makeconftest('''
import slow_agent

def pytest_sessionfinish(session):
    with open("started.txt", "w") as fh:
        fh.write(str(len(slow_agent.STARTED)))
    slow_agent.RELEASE.set()
''')
    result = pytester.runpytest(*eval_args("--groundeval-agent=slow_agent:agent", "--groundeval-concurrency=2",
                                           "-x", "--groundeval-trials=3"))
    result.assert_outcomes(passed=3, failed=1)
    started = int((pytester.path / "started.txt").read_text())
    assert started == 6  # Clemente x3, Garrett x3; the nine calls queued behind them never started
    record = _record(pytester.path)
    assert [c["outcome"] for c in record["cases"]].count("not_run") == 11
    assert record["dropped_calls"] == 2  # Garrett's trials 1 and 2: in flight, never scored
    result.stdout.fnmatch_lines(["2 agent calls were dropped when the run stopped*"])


def test_throttle_halves_on_rate_limits_and_grows_back() -> None:
    now = [0.0]
    gate = throttle.AdaptiveLimit(8, clock=lambda: now[0])
    gate.rate_limited(None)
    assert gate.limit == 4 and gate.cuts == 1
    gate.rate_limited(30.0)
    gate.rate_limited(30.0)
    gate.rate_limited(30.0)
    assert gate.limit == 1  # never below one
    with gate.slot(1.0):
        assert gate.in_flight == 1
        with pytest.raises(throttle.SlotTimeout, match="for a concurrency slot; no request was sent"):
            gate.acquire(0.0)
    assert gate.limit == 1  # still within the 30 s hold
    now[0] = 31.0
    for _ in range(10):
        with gate.slot(1.0):
            pass
    assert gate.limit == 8 and gate.peak == 1
    with pytest.raises(ValueError, match="does not grow"), gate.slot(1.0):
        raise ValueError("a failed call does not grow the limit")
    assert gate.in_flight == 0


def test_is_rate_limit_reads_the_status_code() -> None:
    class Status(Exception):
        def __init__(self, code: int) -> None:
            super().__init__(code)
            self.status_code = code

    assert throttle.is_rate_limit(Status(429)) and throttle.is_rate_limit(Status(529))
    assert not throttle.is_rate_limit(Status(500)) and not throttle.is_rate_limit(ValueError())


def test_under_xdist_each_worker_calls_ahead_and_the_record_matches_a_serial_run(
    xdist_trials: tuple[Path, dict[str, pytest.RunResult]],
) -> None:
    """The shared trials runs (``shared_runs.make_trials_run``): five cases, three trials each, after random waits.

    Serially one call at a time, and under ``-n 2`` with eight calls ahead per worker.
    """
    run, results = xdist_trials
    serial, spread = _record(run, "serial-runs"), _record(run)
    assert spread["run_id"] != serial["run_id"]
    assert _stable_cases(spread) == _stable_cases(serial) and spread["aggregate"] == serial["aggregate"]
    assert len(spread["cases"]) == 15 and {c["outcome"] for c in spread["cases"]} == {"passed", "failed"}
    assert _stable_junit(run / "xdist.xml") == _stable_junit(run / "serial.xml")
    assert {c["worker"] for c in spread["cases"]} == {"gw0", "gw1"}
    results["n2"].stdout.fnmatch_lines(
        ["concurrency: 8 agent calls per worker x 2 workers allowed, reached * in flight at once per worker"]
    )
    assert 1 <= spread["peak_in_flight"] <= 8 and serial["peak_in_flight"] == 1


def test_an_agent_that_edits_the_bundle_it_was_handed_cannot_change_its_truth(
    pytester: pytest.Pytester, eval_dir: Path
) -> None:
    pytester.makepyfile(vandal='''
def agent(request):
    bundle = request.context["bundle"]
    bundle["entry"] = [e for e in bundle["entry"] if e["resource"]["resourceType"] != "MedicationRequest"]
    return "[]"
''')
    for n in ("1", "4"):
        result = pytester.runpytest(*eval_args("--groundeval-agent=vandal:agent", f"--groundeval-concurrency={n}",
                                               "-k", "Liz"))
        result.assert_outcomes(failed=1)  # Liz's active medications are still the truth: "[]" misses them
    for record in sorted((pytester.path / "runs").glob("*.json")):
        (case,) = json.loads(record.read_text())["cases"]
        assert case["outcome"] == "failed" and case["metrics"]["recall"] == 0.0


def test_minus_one_workers_is_a_serial_run_as_xdist_makes_it(pytester: pytest.Pytester, eval_dir: Path) -> None:
    # `-n -1` sets xdist's dist mode but starts no worker: the cases run here, with an agent
    result = pytester.runpytest(*eval_args("-n", "-1", "-k", "Liz"))
    result.assert_outcomes(passed=1, deselected=4)


def test_by_default_only_agents_that_say_they_are_thread_safe_are_called_ahead(
    pytester: pytest.Pytester, random_agent: Path
) -> None:
    pytester.runpytest(*eval_args("--groundeval-agent=random_agent:agent", "--groundeval-out-dir=own"))
    (own,) = (pytester.path / "own").glob("*.json")
    assert json.loads(own.read_text())["settings"]["concurrency"] == 1  # an agent of your own: one at a time
    pytester.runpytest(*eval_args("--groundeval-agent=baseline", "--groundeval-out-dir=builtin"))
    (builtin,) = (pytester.path / "builtin").glob("*.json")
    assert json.loads(builtin.read_text())["settings"]["concurrency"] == 4  # thread_safe = True
