"""Runs that scale: concurrency that happens and is reported as reached, no call after a stop, failures one line each, case files read when their case runs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from groundeval.models import stop_switch, throttle

from .conftest import eval_args, run_records

# Never answers in the requested format (every case is no_answer). Calls 2 and 3 wait for each
# other: a run that never has two calls in flight breaks the barrier (an agent_error).
NO_ANSWER_AGENT = '''
import threading

LOCK = threading.Lock()
STATE = {"calls": 0}
GATE = threading.Barrier(2, timeout=20)


def agent(request):
    with LOCK:
        STATE["calls"] += 1
        n = STATE["calls"]
    if n in (2, 3):
        GATE.wait()
    return "I could not find any medications."
'''


def test_calls_go_ahead_after_a_first_call_that_was_not_answered(pytester: pytest.Pytester, eval_dir: Path) -> None:
    pytester.makepyfile(no_answer=NO_ANSWER_AGENT)
    result = pytester.runpytest(*eval_args("--groundeval-agent=no_answer:agent", "--groundeval-concurrency=4"))
    result.assert_outcomes(failed=5)  # every case no_answer; no barrier broke
    (record,) = run_records(pytester.path)
    assert {c["outcome"] for c in record["cases"]} == {"no_answer"}
    assert record["peak_in_flight"] >= 2
    result.stdout.fnmatch_lines(["concurrency: 4 agent calls allowed, reached * in flight at once"])


# Call 3 sends this process SIGTERM and waits until the stop switch is thrown (the handler ran),
# then holds its call until the run has ended (serially the handler's KeyboardInterrupt cuts it off). Every other call answers at once. A call that
# starts after the stop is counted in AFTER_STOP.
SIGNAL_AGENT = '''
import os, signal, threading
from groundeval.models import stop_switch

LOCK = threading.Lock()
STATE = {"calls": 0, "after_stop": 0, "stop_seen": False}
RELEASE = threading.Event()


def agent(request):
    with LOCK:
        STATE["calls"] += 1
        n = STATE["calls"]
        if STATE["stop_seen"]:
            STATE["after_stop"] += 1
    if n == 3:
        try:  # serially the handler raises KeyboardInterrupt right here, in this call
            os.kill(os.getpid(), signal.SIGTERM)
            for _ in range(2000):  # in a thread: the handler runs in the main thread, at once
                if stop_switch.calls_stopped():
                    break
                threading.Event().wait(0.01)
        finally:
            with LOCK:
                STATE["stop_seen"] = stop_switch.calls_stopped()
        RELEASE.wait(20)
    return "[]"
'''

SIGNAL_CONFTEST = '''
import json
import signal_agent

def pytest_sessionfinish(session):
    with open("state.json", "w") as fh:
        json.dump(signal_agent.STATE, fh)
    signal_agent.RELEASE.set()
'''


@pytest.mark.parametrize("concurrency", ["1", "2"])
def test_no_call_starts_after_a_signal_and_the_call_in_flight_is_dropped(
    pytester: pytest.Pytester, eval_dir: Path, concurrency: str
) -> None:
    pytester.makepyfile(signal_agent=SIGNAL_AGENT)
    pytester.makeconftest(SIGNAL_CONFTEST)
    result = pytester.runpytest(*eval_args("--groundeval-agent=signal_agent:agent",
                                           f"--groundeval-concurrency={concurrency}", "--groundeval-trials=3"),
                                no_reraise_ctrlc=True)
    state = json.loads((pytester.path / "state.json").read_text())
    assert state["stop_seen"] and state["after_stop"] == 0
    (record,) = run_records(pytester.path)
    assert record["stop_reason"] == "interrupted by signal SIGTERM"
    scored = sum(c["outcome"] != "not_run" for c in record["cases"])
    # every call made is scored or dropped; the one held at the stop is dropped, paid for
    assert record["dropped_calls"] >= 1 and scored + record["dropped_calls"] == state["calls"]
    if concurrency == "1":
        assert state["calls"] == 3 and record["dropped_calls"] == 1
    result.stdout.fnmatch_lines(["*INCOMPLETE: interrupted by signal SIGTERM*"])


def test_a_worker_stop_file_stops_the_calls(tmp_path: Path) -> None:
    throttle.configure(2)
    try:
        stop = tmp_path / "run.stop"
        stop_switch.watch_stop(stop.exists)
        assert not stop_switch.calls_stopped()
        stop.touch()  # the controller was signalled
        assert stop_switch.calls_stopped()
        stop.unlink()
        assert stop_switch.calls_stopped()  # once stopped, it stays stopped
    finally:
        throttle.configure(None)
    assert not stop_switch.calls_stopped()


def test_many_failed_cases_are_one_line_each_unless_blocks_are_asked_for(
    pytester: pytest.Pytester, eval_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from groundeval.plugin import controller

    monkeypatch.setattr(controller, "MAX_FAILURE_BLOCKS", 2)  # Max_Kris fails 3 trials: above it
    lines = pytester.runpytest(*eval_args("--groundeval-trials=3", "-k", "Max_Kris or Liz"))
    lines.assert_outcomes(failed=3, passed=3)  # pytest still counts every failure
    lines.stdout.fnmatch_lines([
        "*- failed cases (3, one line each; --groundeval-failure-blocks prints pytest's blocks) -*",
        "FAILED groundeval/extraction::Max_Kris*[[]trial-0[]] - *",
        "FAILED groundeval/extraction::Max_Kris*[[]trial-2[]] - *",
        "*= groundeval extraction =*",
    ])
    lines.stdout.no_fnmatch_line("*= FAILURES =*")
    assert sum(line.startswith("FAILED ") for line in lines.stdout.lines) == 3  # not twice (short summary)
    blocks = pytester.runpytest(*eval_args("--groundeval-trials=3", "-k", "Max_Kris or Liz",
                                           "--groundeval-failure-blocks"))
    blocks.stdout.fnmatch_lines(["*= FAILURES =*"])
    blocks.stdout.no_fnmatch_line("*failed cases (*")


def test_items_hold_no_case_content_and_a_file_changed_after_collection_is_invalid(
    pytester: pytest.Pytester, eval_dir: Path
) -> None:
    """Past ``LOADED_AT_COLLECTION`` cases (0 here, as in a run of thousands), a file is read again when its case runs."""
    pytester.makeconftest('''
import json
from pathlib import Path

from groundeval.plugin import items

KEPT = items.LOADED_AT_COLLECTION


def pytest_configure(config):
    items.LOADED_AT_COLLECTION = 0


def pytest_unconfigure(config):
    items.LOADED_AT_COLLECTION = KEPT


def pytest_collection_finish(session):
    held = [len(item.case.data) for item in session.items]
    Path("held.json").write_text(json.dumps(held))
    (liz,) = Path("data").glob("Liz_Conn*.json")
    liz.write_text(liz.read_text() + " ")  # edited while the run goes on
''')
    result = pytester.runpytest(*eval_args("-k", "Liz or Max_Kris"))
    result.assert_outcomes(failed=1, errors=1)
    assert json.loads((pytester.path / "held.json").read_text()) == [0, 0]
    (record,) = run_records(pytester.path)
    liz = next(c for c in record["cases"] if c["case_id"].startswith("Liz"))
    assert liz["outcome"] == "invalid_case" and "the file changed after collection" in liz["message"]
    assert liz["attempts"] is None and liz["started_at"] is None  # no agent call


def test_a_case_kept_from_collection_runs_on_what_was_collected(pytester: pytest.Pytester, eval_dir: Path) -> None:
    """Within ``LOADED_AT_COLLECTION`` the item holds the collected case and its file is not read again."""
    pytester.makeconftest('''
import json
from pathlib import Path

def pytest_collection_finish(session):
    held = [len(item.case.data) for item in session.items]
    Path("held.json").write_text(json.dumps(held))
    (liz,) = Path("data").glob("Liz_Conn*.json")
    liz.write_text(liz.read_text() + " ")  # edited after collection: the run scores what was collected
''')
    result = pytester.runpytest(*eval_args("-k", "Liz or Max_Kris"))
    assert all(n > 0 for n in json.loads((pytester.path / "held.json").read_text()))
    (record,) = run_records(pytester.path)
    liz = next(c for c in record["cases"] if c["case_id"].startswith("Liz"))
    assert liz["outcome"] != "invalid_case" and liz["started_at"] is not None, result.stdout.str()
