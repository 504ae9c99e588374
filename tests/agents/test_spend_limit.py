"""``--groundeval-max-cost``: the run stops before a call that could pass the limit; spend apart from cached cost."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import pytest

from groundeval.errors import SpendLimitReached
from groundeval.models.spend import SpendLimit, highest_call_cost
from tests._fakes.fake_anthropic import FAKE_KEY, install

# Sorted by file name: Clemente, Garrett, Johnie961, Liz (12-14k prompt characters each).
PATIENTS = ("Clemente_Kreiger", "Garrett_Thompson", "Johnie961_Connelly992", "Liz_Conn")
CALL_COST = 5000 * 5 / 1e6 + 50 * 25 / 1e6  # every reply: 5000 input, 50 output tokens at Opus 4.8 list price

MOCK_MODULE = '''
import os
from fake_anthropic import message, mock_claude, prompt_of
from groundeval.agents.baselines.extraction import BaselineExtractionAgent
from groundeval.agent_io import AgentRequest, Prompt

BASE = BaselineExtractionAgent()


def handler(request):
    user = prompt_of(request)[1]
    with open(os.environ["MOCK_CALLS"], "a") as fh:
        fh.write("call\\n")
    answer = BASE.run(AgentRequest(case_id="x", task="extraction", prompt=Prompt(system="", user=user))).text
    return message(answer, model="claude-opus-4-8-20260528", input_tokens=5000, output_tokens=50, request_id="req_1")


MockClaude = mock_claude(handler)
'''


@pytest.fixture
def run_dir(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch,
            copy_fixtures: Callable[[Path, Iterable[str]], Path]) -> Path:
    monkeypatch.setenv("ANTHROPIC_API_KEY", FAKE_KEY)
    monkeypatch.setenv("MOCK_CALLS", str(pytester.path / "calls.txt"))
    copy_fixtures(pytester.path / "data", PATIENTS)
    install(pytester.path)
    pytester.makepyfile(mock_claude=MOCK_MODULE)
    pytester.syspathinsert()
    return pytester.path


def _args(*extra: str) -> list[str]:
    return ["--groundeval-task=extraction", "--groundeval-agent=mock_claude:MockClaude", "--groundeval-data-dir=data",
            "-p", "no:cacheprovider", "-p", "no:randomly", *extra]


def _calls(base: Path) -> int:
    path = base / "calls.txt"
    return len(path.read_text().split()) if path.exists() else 0


def _record(base: Path, folder: str = "runs") -> dict[str, Any]:
    (path,) = (base / folder).glob("*.json")
    data: dict[str, Any] = json.loads(path.read_text())
    return data


def test_the_limit_refuses_a_call_that_could_pass_it_and_keeps_the_estimate_until_the_call_returns() -> None:
    limit = SpendLimit(0.10)
    reserved = limit.reserve(0.06, "a")
    with pytest.raises(SpendLimitReached, match=r"--groundeval-max-cost 0.1 USD reached: \$0.0000 spent, \$0.0600 reserved for "
                                                r"calls in flight, limit \$0.1000; the next call "
                                                r"\(b\) could cost up to \$0.0600; it was not made"):
        limit.reserve(0.06, "b")  # 0.06 in flight + 0.06 > 0.10
    limit.settle(reserved, 0.01)
    assert limit.spent_usd == pytest.approx(0.01) and limit.reserved_usd == 0
    limit.settle(limit.reserve(0.06, "b"), None)  # an unpriced return keeps its estimate as spent
    assert limit.spent_usd == pytest.approx(0.07)
    # the estimate: characters / 2 input tokens plus max_tokens output, at list price
    assert highest_call_cost("claude-opus-4-8", 20_000, 4096) == pytest.approx(10_000 * 5 / 1e6 + 4096 * 25 / 1e6)
    assert highest_call_cost("my-local-model", 20_000, 4096) is None


def test_the_run_stops_before_the_limit_and_the_rest_is_not_run(pytester: pytest.Pytester, run_dir: Path) -> None:
    # each call is estimated at about $0.13 (13k characters / 2 tokens at $5/M, 4096 output tokens at $25/M):
    # the first fits $0.15, the second (0.026 spent + 0.137) does not
    result = pytester.runpytest(*_args("--groundeval-max-cost=0.15", "--groundeval-concurrency=1",
                                       "--groundeval-out-dir=runs"))
    assert _calls(run_dir) == 1
    record = _record(run_dir)
    outcomes = {c["case_id"].split("_")[0]: c["outcome"] for c in record["cases"]}
    assert outcomes == {"Clemente": "passed", "Garrett": "not_run", "Johnie961": "not_run", "Liz": "not_run"}
    assert record["aggregate"]["usage"]["cost_usd"] == pytest.approx(CALL_COST)
    assert not record["complete"] and "--groundeval-max-cost 0.15 USD reached: $0.0262 spent" in record["stop_reason"]
    result.stdout.fnmatch_lines(["INCOMPLETE: groundeval: --groundeval-max-cost 0.15 USD reached: $0.0262 spent*"])


def test_concurrent_calls_stay_within_the_limit(pytester: pytest.Pytester, run_dir: Path) -> None:
    pytester.runpytest(*_args("--groundeval-max-cost=0.3", "--groundeval-concurrency=4", "--groundeval-out-dir=runs"))
    record = _record(run_dir)
    # How many calls fit depends on how the four calls overlap (each in-flight call holds its
    # estimate), which depends on the machine; what must hold whatever the timing: every call made,
    # scored or dropped, was paid within the limit, and a case is either scored or not run.
    assert _calls(run_dir) >= 1
    assert _calls(run_dir) * CALL_COST <= 0.3
    outcomes = [c["outcome"] for c in record["cases"]]
    assert len(outcomes) == len(PATIENTS) and all(o != "infra_error" for o in outcomes)


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (("--groundeval-model=my-local-model",), "*--groundeval-max-cost=1: the model 'my-local-model' has no known "
                                                 "price*"),
        (("--groundeval-agent=scripted:agent",), "*--groundeval-max-cost=1: the agent 'scripted:agent' does not call "
                                                 "its model through groundeval's single-call layer*"),
    ],
)
def test_a_run_whose_calls_cannot_be_priced_refuses_the_option(
    pytester: pytest.Pytester, run_dir: Path, extra: tuple[str, ...], message: str
) -> None:
    pytester.makepyfile(scripted="def agent(request):\n    return '[]'\n")
    result = pytester.runpytest(*_args("--groundeval-max-cost=1", *extra))
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([message])
    assert _calls(run_dir) == 0


def test_the_summary_separates_this_runs_spend_from_cached_cost(pytester: pytest.Pytester, run_dir: Path) -> None:
    first = pytester.runpytest(*_args("--groundeval-cache=cache", "--groundeval-out-dir=a", "-k", "Liz or Clemente"))
    assert _calls(run_dir) == 2 and "spent by this run" not in first.stdout.str()  # nothing cached: one figure
    second = pytester.runpytest(*_args("--groundeval-cache=cache", "--groundeval-out-dir=b"))
    assert _calls(run_dir) == 4  # two answers from the cache, two new calls
    usage = _record(run_dir, "b")["aggregate"]["usage"]
    assert usage["spent_usd"] == pytest.approx(2 * CALL_COST) and usage["cached_cost_usd"] == pytest.approx(2 * CALL_COST)
    second.stdout.fnmatch_lines(["cost: 0.052500 USD spent by this run; 0.052500 USD is the recorded cost of the 2 "
                                 "cached or replayed answers (not spent now)"])
