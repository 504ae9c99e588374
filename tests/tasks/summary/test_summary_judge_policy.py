"""A model judge's calls keep the run's call policy, as an agent's do: the same deadline
(``--groundeval-timeout``), the same retries (``--groundeval-max-retries``) and the same classification.

The judge is a real OpenAI-compatible model over the SDK, talking to a loopback server started by
the test; the agent writes a summary whose medication the rules cannot decide, so the judge is asked.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests._fakes.loopback import Answer, Loopback

HOLD_S = 5.0
"""How long the silent server holds a request before it answers 529 (a bound on the test, never reached
when the deadline is kept)."""


@pytest.fixture
def silent() -> Iterator[Loopback]:
    """A judge server that answers nothing within ``HOLD_S`` seconds (then 529)."""
    server = Loopback(lambda path, body: Answer())

    def hold(path: str, body: dict[str, Any]) -> Answer:
        del path, body
        server.stop.wait(HOLD_S)
        return Answer.json(529, {"error": {"message": "overloaded", "type": "server_error"}}, retry_after="0")

    server.plan = hold
    with server:
        yield server


@pytest.fixture
def overloaded() -> Iterator[Loopback]:
    """A judge server that answers every request at once with 529 and ``retry-after: 0``."""
    body = {"error": {"message": "overloaded", "type": "server_error"}}
    with Loopback(lambda path, b: Answer.json(529, body, retry_after="0")) as server:
        yield server


UNCLEAR_AGENT = '''
def agent(request):
    return "Active problems: none. Current medications: an inhaler."
'''


def _run(pytester: pytest.Pytester, root: str, *extra: str) -> dict[str, Any]:
    pytester.makepyfile(unclear_agent=UNCLEAR_AGENT)
    pytester.runpytest("--groundeval-task=summary", "--groundeval-agent=unclear_agent:agent", "--groundeval-limit=1",
                       f"--groundeval-judge=openai-compatible/judge@{root}/v1", "-p", "no:cacheprovider", *extra)
    (path,) = (pytester.path / "runs").glob("*.json")
    record: dict[str, Any] = json.loads(Path(path).read_text())
    return record


def test_a_judge_that_never_answers_is_cut_at_the_runs_deadline(pytester: pytest.Pytester, silent: Loopback) -> None:
    record = _run(pytester, silent.root, "--groundeval-timeout=0.5", "--groundeval-max-retries=2")
    (case,) = record["cases"]
    assert case["outcome"] == "infra_error"
    # cut at the bound: by the SDK's own timeout (the attempt's HTTP timeout is what is left of the bound)
    # or, if that has not fired, by the retry layer a grace period later; either way the bound is named
    # ("... of its 0.5 s bound" from the SDK's timeout, "... was stopped at its 0.5 s bound" from the retry
    # layer, which of the two fires first depends on the machine's load: the test reads the bound, not the path)
    assert "its 0.5 s bound (--groundeval-timeout)" in case["message"]
    _received(silent, 1)  # the server may read the request after the client gave up on it (a busy machine)
    assert len(silent.requests) == 1  # abandoned at the deadline: no retry after it


def _received(server: Loopback, wanted: int) -> None:
    """Wait until ``server`` has read ``wanted`` requests: one the client sent and abandoned may still be queued.

    The server's threads accept and read a request when the machine lets them, which on a loaded
    machine can be after the client's deadline cut it and the run ended; counting then would see none.
    """
    deadline = time.monotonic() + 60  # a safety net for a broken run, not a timing assertion
    while len(server.requests) < wanted:
        assert time.monotonic() < deadline, f"the server read {len(server.requests)} of {wanted} requests"
        time.sleep(0.02)


def test_a_judge_gets_the_runs_retries_and_classification(pytester: pytest.Pytester, overloaded: Loopback) -> None:
    record = _run(pytester, overloaded.root, "--groundeval-max-retries=0")
    (case,) = record["cases"]
    assert case["outcome"] == "infra_error" and "529" in case["message"]
    assert len(overloaded.requests) == 1  # --groundeval-max-retries=0: one attempt, as for an agent
    overloaded.requests.clear()
    (pytester.path / "runs" / next((pytester.path / "runs").glob("*.json")).name).unlink()
    _run(pytester, overloaded.root, "--groundeval-max-retries=1")
    assert len(overloaded.requests) == 2
