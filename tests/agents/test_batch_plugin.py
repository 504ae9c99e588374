"""``--groundeval-batch`` in real plugin runs (pytester), against a fake Message Batches API.

``mock_batch:BatchClaude`` is the real ``ClaudeAgent`` over an ``httpx2.MockTransport`` that
answers both the Messages API (direct calls) and the Message Batches API (``fake_batches``,
its batches kept in a file so that a second run sees the first one's). Per patient the answer is
the same either way: Liz_Conn and Max_Kris the right list, Clemente_Kreiger an empty one (right: it has none),
Garrett_Thompson cut off at ``max_tokens``. Every HTTP call is appended to ``$MOCK_CALLS``.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import pytest

from tests.plugin.forked import ForkedPytest

from .conftest import FAKE_KEY

REAL_SLEEP = time.sleep
"""``time.sleep`` as this module found it, before ``conftest._no_real_sleep`` replaces it in each test."""

PATIENTS = ("Liz_Conn", "Max_Kris", "Clemente_Kreiger", "Garrett_Thompson")

MOCK_MODULE = '''
import importlib.util, json, os, sys
import httpx2
from groundeval.agents.baselines.extraction import BaselineExtractionAgent
from groundeval.agents.claude import ClaudeAgent
from groundeval.agent_io import AgentRequest, Prompt

spec = importlib.util.spec_from_file_location("fake_batches", os.environ["FAKE_BATCHES"])
fake_batches = importlib.util.module_from_spec(spec)
sys.modules["fake_batches"] = fake_batches
spec.loader.exec_module(fake_batches)
BASE = BaselineExtractionAgent()


def answer(user):
    text = BASE.run(AgentRequest(case_id="x", task="extraction", prompt=Prompt(system="", user=user))).text
    if "5a72e290" in user:  # Garrett_Thompson
        return {"type": "succeeded", "text": text[:20], "stop_reason": "max_tokens"}
    if "1484a42d" in user:  # Clemente_Kreiger
        return {"type": "succeeded", "text": "[]"}
    return {"type": "succeeded", "text": text}


FAKE = fake_batches.FakeAnthropicBatches(
    answer=lambda cid, body: answer(body["messages"][-1]["content"]), state=os.environ["FAKE_STATE"],
    never_end=bool(os.environ.get("FAKE_NEVER_END")),
)


def handler(request):
    with open(os.environ["MOCK_CALLS"], "a") as fh:
        fh.write(request.method + " " + request.url.path + "\\n")
    if request.url.path != "/v1/messages":
        return FAKE.handle(request)
    body = json.loads(request.content)
    said = answer(body["messages"][-1]["content"])
    message = {"id": "msg_1", "type": "message", "role": "assistant", "model": body["model"],
               "content": [{"type": "text", "text": said["text"]}], "stop_reason": said.get("stop_reason", "end_turn"),
               "usage": {"input_tokens": 1000, "output_tokens": 40, "cache_creation_input_tokens": 0,
                         "cache_read_input_tokens": 0}}
    return httpx2.Response(200, json=message, headers={"request-id": "req_1"})


class BatchClaude(ClaudeAgent):
    def __init__(self, config):
        super().__init__(config, http_client=httpx2.Client(transport=httpx2.MockTransport(handler)),
                         sleep=lambda seconds: None)
'''

FAST = ("--groundeval-batch", "--groundeval-batch-size=4", "--groundeval-batch-send-delay=300",
        "--groundeval-batch-poll=0.01")
"""A batch is sent when the 4 cases' requests are in, never by the send delay: the batch count is certain."""
MARKS = {"run_id", "latency_s", "started_at", "usage", "agent_meta", "batch"}
"""What may differ between a batched and a direct run of the same answers (timing, cost, batch marks)."""


@pytest.fixture
def run_dir(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch,
            copy_fixtures: Callable[[Path, Iterable[str]], Path]) -> Path:
    monkeypatch.setenv("ANTHROPIC_API_KEY", FAKE_KEY)
    monkeypatch.setenv("MOCK_CALLS", str(pytester.path / "calls.txt"))
    monkeypatch.setenv("FAKE_STATE", str(pytester.path / "fake-state.json"))
    monkeypatch.setenv("FAKE_BATCHES", str(Path(__file__).parents[1] / "_fakes" / "fake_batches.py"))
    monkeypatch.delenv("FAKE_NEVER_END", raising=False)
    copy_fixtures(pytester.path / "data", PATIENTS)
    pytester.makepyfile(mock_batch=MOCK_MODULE)
    pytester.syspathinsert()
    return pytester.path


def args(out: str, *extra: str) -> list[str]:
    return ["--groundeval-task=extraction", "--groundeval-agent=mock_batch:BatchClaude", "--groundeval-data-dir=data",
            f"--groundeval-out-dir={out}", "-p", "no:cacheprovider", *extra]


def calls(base: Path, what: str) -> int:
    path = base / "calls.txt"
    return path.read_text().splitlines().count(what) if path.exists() else 0


def cases(base: Path, out: str) -> dict[str, dict[str, Any]]:
    (path,) = (base / out).glob("*.json")
    record = json.loads(path.read_text())
    return {c["nodeid"]: c for c in record["cases"]}


def _without_marks(case: dict[str, Any]) -> dict[str, Any]:
    kept = {k: v for k, v in case.items() if k not in MARKS}
    if kept.get("error"):
        kept["error"] = {**kept["error"], "details": {k: v for k, v in kept["error"]["details"].items()
                                                      if k not in {"request_id", "retry_wait_s", "usage", "batch",
                                                                   "batch_id", "custom_id", "batch_resumed",
                                                                   "batch_wait_s"}}}
    return kept


def test_a_batched_run_records_each_case_as_a_direct_run_and_the_cache_sits_above_the_batches(
    pytester: pytest.Pytester, run_dir: Path
) -> None:
    direct = pytester.runpytest(*args("direct"))
    direct.assert_outcomes(passed=3, failed=1)
    batched = pytester.runpytest(*args("batched", *FAST, "--groundeval-cache=cache"))
    batched.assert_outcomes(passed=3, failed=1)
    assert calls(run_dir, "POST /v1/messages") == 4 and calls(run_dir, "POST /v1/messages/batches") == 1
    one, two = cases(run_dir, "direct"), cases(run_dir, "batched")
    assert list(one) == list(two)
    for nodeid, case in one.items():
        assert _without_marks(two[nodeid]) == _without_marks(case), nodeid
        assert two[nodeid]["batch"] is True and case["batch"] is False
        assert two[nodeid]["usage"]["standard_cost_usd"] == pytest.approx(case["usage"]["cost_usd"])
        assert two[nodeid]["usage"]["cost_usd"] == pytest.approx(case["usage"]["cost_usd"] / 2)
    assert {c["outcome"] for c in two.values()} == {"passed", "truncated"}
    # Opus 4.8: 4 x (1000 in x $5 + 40 out x $25) / 1e6 = $0.024 at list price, half in a batch
    batched.stdout.fnmatch_lines([
        "batch: 1 batch(es) msgbatch_001; 4 request(s) sent by this run, 0 collected from an earlier run's "
        "batches; $0.0120 at batch prices ($0.0240 without batching)",
    ])
    # every answer a cache hit but the reply cut at max_tokens, which is never cached: it alone is sent
    # again, in a batch of one (a batch of one is sent at once, never after the send delay)
    one = ("--groundeval-batch", "--groundeval-batch-size=1", "--groundeval-batch-poll=0.01")
    again = pytester.runpytest(*args("again", *one, "--groundeval-cache=cache"))
    again.assert_outcomes(passed=3, failed=1)
    assert calls(run_dir, "POST /v1/messages/batches") == 2
    kept = cases(run_dir, "again").values()
    assert sorted((c["outcome"], c["cached"]) for c in kept) == [("passed", True)] * 3 + [("truncated", False)]
    assert all(c["batch"] for c in kept)


def test_a_rerun_collects_the_batch_an_earlier_run_left_out_and_pays_nothing_again(
    pytester: pytest.Pytester, run_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FAKE_NEVER_END", "1")  # the first run gives up waiting; its batch stays out
    first = pytester.runpytest(*args("runs", *FAST, "--groundeval-batch-max-wait=0.2"))
    first.assert_outcomes(errors=4)
    assert all(c["outcome"] == "infra_error" and "msgbatch_001" in c["message"]
               for c in cases(run_dir, "runs").values())
    monkeypatch.delenv("FAKE_NEVER_END")
    for path in (run_dir / "runs").glob("*.json"):
        path.rename(run_dir / f"{path.name}.first")
    again = pytester.runpytest(*args("runs", *FAST))
    again.assert_outcomes(passed=3, failed=1)
    assert calls(run_dir, "POST /v1/messages/batches") == 1  # nothing sent twice
    again.stdout.fnmatch_lines(["batch: 1 batch(es) msgbatch_001; 0 request(s) sent by this run, 4 collected*"])


def test_batch_mode_is_refused_for_multi_call_agents_and_knobs_need_it(pytester: pytest.Pytester,
                                                                       run_dir: Path) -> None:
    result = pytester.runpytest(*args("runs", "--groundeval-batch", "--groundeval-agent=baseline"))
    result.stderr.fnmatch_lines(["*--groundeval-batch: the agent 'baseline' does not make one provider model call*"])
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result = pytester.runpytest(*args("runs", "--groundeval-batch-size=10"))
    result.stderr.fnmatch_lines(["*--groundeval-batch-size applies only with --groundeval-batch*"])
    result = pytester.runpytest(*args("runs", "--groundeval-batch", "-n", "2"))
    result.stderr.fnmatch_lines(["*--groundeval-batch runs in one process*Drop -n*"])
    assert result.ret == pytest.ExitCode.USAGE_ERROR


def test_a_run_killed_after_sending_its_batch_is_resumed_without_sending_again(
    pytester: pytest.Pytester, run_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The killed run is a process of its own, forked from this one (SIGKILL: no clean-up of any kind).

    It polls its batch as any run does, sleeping for real: the fork gets the real ``time.sleep``
    back from the fake clock of this directory's tests.
    """
    monkeypatch.setattr(time, "sleep", REAL_SLEEP)
    monkeypatch.setenv("FAKE_NEVER_END", "1")
    journal = run_dir / "runs" / "groundeval-batches.jsonl"
    killed = ForkedPytest(run_dir, args("runs", *FAST))
    try:
        tick = threading.Event()
        for _ in range(1200):  # at most about 2 minutes for the run to start and send its batch
            if journal.exists() or killed.poll() is not None:
                break
            tick.wait(0.1)
        assert journal.exists(), "the run never journalled its batch"
    finally:
        killed.kill()  # SIGKILL: no clean-up of any kind
        killed.wait(300)
    assert killed.returncode == -9
    assert calls(run_dir, "POST /v1/messages/batches") == 1
    monkeypatch.delenv("FAKE_NEVER_END")
    again = pytester.runpytest(*args("runs", *FAST))
    again.assert_outcomes(passed=3, failed=1)
    assert calls(run_dir, "POST /v1/messages/batches") == 1  # the killed run's batch, collected: nothing paid twice


def test_x_stops_after_the_first_failure_and_the_rest_is_not_run(pytester: pytest.Pytester, run_dir: Path) -> None:
    result = pytester.runpytest(*args("runs", *FAST, "-x"))
    result.assert_outcomes(passed=1, failed=1)  # Clemente_Kreiger passes, Garrett_Thompson is cut off: -x stops
    assert calls(run_dir, "POST /v1/messages/batches") == 1  # the four requests went in one batch
    outcomes = {c["case_id"].rsplit("_", 1)[0]: c["outcome"] for c in cases(run_dir, "runs").values()}
    assert outcomes == {"Clemente_Kreiger": "passed", "Garrett_Thompson": "truncated", "Liz_Conn": "not_run",
                        "Max_Kris": "not_run"}
