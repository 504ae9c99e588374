"""A burst of 429s under ``--groundeval-concurrency``: the real Claude agent over a mocked transport.

The first call goes alone and succeeds; the next four calls, made at once in four threads, are
all answered 429. Every case must still pass on its retry (no case lost, none scored as a model
failure), the throttle must have cut the calls in flight, and no more than four may ever have
been in flight.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from pathlib import Path

import pytest

from tests._fakes.fake_anthropic import FAKE_KEY, install

MOCK = '''
import threading
from fake_anthropic import api_error, message, mock_claude, prompt_of
from groundeval.models import throttle
from groundeval.agents.baselines.extraction import BaselineExtractionAgent
from groundeval.agent_io import AgentRequest, Prompt

BASE = BaselineExtractionAgent()
LOCK = threading.Lock()
STATE = {"calls": 0, "in_flight": 0, "peak": 0, "limited": 0, "cuts": 0}


def handler(request):
    with LOCK:
        STATE["calls"] += 1
        n = STATE["calls"]
        STATE["in_flight"] += 1
        STATE["peak"] = max(STATE["peak"], STATE["in_flight"])
    try:
        if 2 <= n <= 5:
            threading.Event().wait(0.05)  # hold the slot so the four overlap
            with LOCK:
                STATE["limited"] += 1
            return api_error(429, "rate_limit_error", "slow down", retry_after="1")
        user = prompt_of(request)[1]
        answer = BASE.run(AgentRequest(case_id="x", task="extraction", prompt=Prompt(system="", user=user))).text
        return message(answer, model="claude-opus-4-8-20260528", input_tokens=100, output_tokens=10)
    finally:
        with LOCK:
            STATE["in_flight"] -= 1
            gate = throttle.current()
            if gate is not None:
                STATE["cuts"] = gate.cuts


MockClaude = mock_claude(handler)
'''


def test_a_429_burst_under_concurrency_loses_no_case(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, copy_fixtures: Callable[[Path, Iterable[str]], Path]
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", FAKE_KEY)
    copy_fixtures(pytester.path / "data", ("Liz_Conn", "Max_Kris", "Clemente_Kreiger", "Garrett_Thompson"))
    install(pytester.path)
    pytester.makepyfile(mock_burst=MOCK)
    pytester.makeconftest('''
import json
import mock_burst

def pytest_sessionfinish(session):
    with open("state.json", "w") as fh:
        json.dump(mock_burst.STATE, fh)
''')
    pytester.syspathinsert()
    result = pytester.runpytest(
        "--groundeval-task=extraction", "--groundeval-agent=mock_burst:MockClaude", "--groundeval-data-dir=data",
        "-p", "no:cacheprovider", "--groundeval-concurrency=4", "--groundeval-trials=2",
    )
    result.assert_outcomes(passed=8)
    state = json.loads((pytester.path / "state.json").read_text())
    assert state["limited"] == 4 and state["calls"] == 8 + 4  # each limited call retried once, then answered
    assert state["peak"] <= 4 and state["cuts"] == 4  # each 429 cut the limit: 4 -> 2 -> 1 -> 1 -> 1
    (path,) = (pytester.path / "runs").glob("*.json")
    cases = json.loads(path.read_text())["cases"]
    assert sorted(c["attempts"] for c in cases) == [1, 1, 1, 1, 2, 2, 2, 2]
    assert all(c["outcome"] == "passed" for c in cases)
