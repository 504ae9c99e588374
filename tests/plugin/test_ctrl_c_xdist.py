"""Ctrl-C under pytest-xdist (issue 37): calls in flight are cut, their cases are not run, and every output says so.

The agent posts to a loopback server that holds every request until the test ends (never
answers), so a run that waits for its calls in flight never ends on its own: the forked run's
``communicate`` bound is only a safety net. The test signals once the server has seen one
request from each worker, and every figure is checked against what the server saw.
"""

from __future__ import annotations

import signal
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests._fakes.loopback import Answer, Loopback

from .conftest import junit_cases, run_records
from .forked import ForkedPytest

NAMES = ["Liz_Conn", "Clemente_Kreiger", "Garrett_Thompson", "Max_Kris", "Stephen_McLaughlin", "Trey_Berge"]

HOLDING_AGENT = '''
import json
import os
import urllib.request


class HoldingAgent:
    name = "holding"
    model = None
    thread_safe = True  # with --groundeval-concurrency=2: two calls in flight on each worker, made ahead
    network_calls = False  # ahead from the first call (the held server never answers one)

    def run(self, request):
        body = json.dumps({"case": request.case_id}).encode()
        post = urllib.request.Request(os.environ["GROUNDEVAL_TEST_HOLD_URL"], data=body, method="POST")
        with urllib.request.urlopen(post, timeout=600) as reply:  # the server holds it: only a stop ends it
            return reply.read().decode()


agent = HoldingAgent()
'''


@pytest.fixture
def holding_server() -> Iterator[Loopback]:
    """A loopback server that holds every request until the test ends (then answers ``[]``)."""
    release = threading.Event()

    def hold(path: str, body: dict[str, Any]) -> Answer:
        release.wait(600)
        return Answer(200, b"[]")

    with Loopback(hold) as server:
        try:
            yield server
        finally:
            release.set()


def _wait_for_requests(server: Loopback, proc: ForkedPytest, wanted: int) -> None:
    deadline = time.monotonic() + 120  # a safety net for a broken run, not a timing assertion
    while len(server.requests) < wanted:
        if proc.poll() is not None or time.monotonic() > deadline:
            out = proc.communicate(timeout=60)
            pytest.fail(f"the run never had {wanted} calls in flight ({len(server.requests)} seen)\n{out}")
        time.sleep(0.05)


@pytest.mark.parametrize(("to_group", "concurrency"), [(False, 1), (True, 1), (False, 2), (True, 2)],
                         ids=["controller-alone", "process-group", "controller-alone-ahead", "process-group-ahead"])
def test_ctrl_c_under_xdist_cuts_calls_in_flight_and_reports_their_cases_not_run(
    pytester: pytest.Pytester, copy_fixtures: Callable[[Path, Iterable[str]], Path],
    holding_server: Loopback, monkeypatch: pytest.MonkeyPatch, to_group: bool, concurrency: int,
) -> None:
    copy_fixtures(pytester.path / "data", NAMES)
    pytester.makepyfile(holding_agent=HOLDING_AGENT)
    monkeypatch.setenv("GROUNDEVAL_TEST_HOLD_URL", holding_server.root + "/hold")
    proc = ForkedPytest(pytester.path, ["--groundeval-task=extraction", "--groundeval-agent=holding_agent:agent",
                                        "--groundeval-data-dir=data", "-p", "no:cacheprovider", "-n", "2",
                                        "--junitxml=junit.xml", f"--groundeval-concurrency={concurrency}"],
                        own_group=to_group)
    in_flight = 2 * concurrency
    _wait_for_requests(holding_server, proc, in_flight)  # as many calls in flight on each worker as it may make
    if to_group:
        proc.signal_group(signal.SIGINT)  # Ctrl-C in a terminal
    else:
        proc.send_signal(signal.SIGINT)  # kill -INT <controller>
    try:
        out = proc.communicate(timeout=120)  # the server never answers: only a cut call ends the run
    except TimeoutError:
        out = proc.communicate(timeout=10)
        pytest.fail(f"Ctrl-C did not cut the calls in flight: the run waited for the server\n{out}")
    assert proc.returncode == pytest.ExitCode.INTERRUPTED, out
    assert "Traceback" not in out and "INTERNALERROR" not in out and "crashed" not in out, out
    sent = len(holding_server.requests)
    assert sent == in_flight, f"calls started after Ctrl-C: {sent}"
    (record,) = run_records(pytester.path)
    assert record["complete"] is False and len(record["cases"]) == len(NAMES)
    assert [c["outcome"] for c in record["cases"]] == ["not_run"] * len(NAMES)
    assert record["dropped_calls"] == sent  # the calls really sent, cut in flight: paid for, never scored
    junit = junit_cases(pytester.path / "junit.xml")
    assert {c["_result"] for c in junit.values()} <= {"skipped"}, junit  # not a "worker crashed" failure
    assert " failed" not in out and " error" not in out, out  # was "6 failed": the record's not_run cases
    assert f"scored 0 of {len(NAMES)} cases: 0 excluded, {len(NAMES)} not run" in out
    assert f"INCOMPLETE: interrupted by signal SIGINT; {len(NAMES)} selected case(s) did not run" in out
