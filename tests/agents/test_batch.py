"""Batch mode in the model layer: requests go to fake batch APIs through the real SDKs."""

from __future__ import annotations

import json
import re
import threading
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from groundeval.errors import (
    AgentError,
    BatchNotRunError,
    ConfigError,
    InfraError,
    RunStopError,
    TruncatedError,
)
from groundeval.models import get_model
from groundeval.models.base import ModelRequest, ModelResponse
from groundeval.models.batch import Batcher, BatchJournal, BatchProgress, BatchSettings, custom_id
from groundeval.models.policy import PolicyModel
from groundeval.models.pricing import BATCH_DISCOUNT, batch_usage, cost_usd
from tests._fakes.fake_batches import FakeAnthropicBatches, FakeBatches, FakeOpenAIBatches

FAST = BatchSettings(size=100, send_delay_s=0.05, poll_s=0.01, max_wait_s=30.0)


def full(size: int, **kw: Any) -> BatchSettings:
    """Batches sent only when ``size`` requests are in (never by the send delay): their count is certain."""
    return BatchSettings(size=size, send_delay_s=300.0, poll_s=0.01, **kw)


def _model(fake: FakeBatches) -> PolicyModel[Any]:
    if isinstance(fake, FakeOpenAIBatches):
        return get_model("openai-compatible/qwen@http://127.0.0.1:9/v1", http_client=fake.client())
    return get_model("anthropic/claude-opus-4-8", http_client=fake.client())


def _batched(fake: FakeBatches, settings: BatchSettings = FAST, **kw: Any) -> tuple[PolicyModel[Any], Batcher]:
    model = _model(fake)
    batcher = Batcher(model.batch_api(), settings, **kw)
    model.use_batches(batcher)
    return model, batcher


def _ask(model: PolicyModel[Any], labels: list[str]) -> dict[str, ModelResponse | BaseException]:
    """Each label's request made at once from its own thread (as calls made ahead are)."""
    def one(label: str) -> ModelResponse | BaseException:
        try:
            return model.generate(ModelRequest.single(f"answer for {label}", system="Sys.", label=label))
        except AgentError as exc:
            return exc

    with ThreadPoolExecutor(len(labels)) as pool:
        return dict(zip(labels, pool.map(one, labels), strict=True))


@pytest.fixture(params=["anthropic", "openai"])
def fake(request: pytest.FixtureRequest, api_key: str) -> FakeBatches:
    return FakeAnthropicBatches() if request.param == "anthropic" else FakeOpenAIBatches()


def test_requests_fill_one_batch_and_each_call_gets_its_own_result_back(fake: FakeBatches) -> None:
    fake.polls_to_end = 3  # the batch takes several polls; its results come back in reverse order
    model, batcher = _batched(fake, full(6))
    labels = [f"case-{i}" for i in range(6)]
    got = _ask(model, labels)
    assert len(fake.created) == 1 and len(fake.requests(fake.created[0][0])) == 6
    for label in labels:
        response = got[label]
        assert isinstance(response, ModelResponse)
        assert response.text == f"answer for {label}"
        assert response.meta["batch"] is True and response.meta["batch_id"] == fake.created[0][0]
        assert response.meta["custom_id"].startswith(label.replace("-", "_") + "-") or label in response.meta["custom_id"]
    assert batcher.batches == {fake.created[0][0]: 6} and batcher.sent == 6
    batcher.close()


def test_a_batched_answer_is_priced_at_the_batch_rate_with_its_standard_cost(api_key: str) -> None:
    model, batcher = _batched(FakeAnthropicBatches())
    response = _ask(model, ["c1"])["c1"]
    assert isinstance(response, ModelResponse)
    standard = cost_usd("claude-opus-4-8", input_tokens=1000, output_tokens=40)
    assert standard is not None
    assert response.usage["standard_cost_usd"] == pytest.approx(standard)
    assert response.usage["cost_usd"] == pytest.approx(standard * BATCH_DISCOUNT)
    batcher.close()


def test_batch_usage_halves_the_cost_and_keeps_unknown_as_unknown() -> None:
    assert batch_usage({"input_tokens": 1, "cost_usd": 0.3}) == {"input_tokens": 1, "cost_usd": 0.15,
                                                                   "standard_cost_usd": 0.3}
    assert batch_usage({"cost_usd": None}) == {"cost_usd": None, "standard_cost_usd": None}
    done = {"cost_usd": 0.15, "standard_cost_usd": 0.3}
    assert batch_usage(done) == done  # never discounted twice


def test_the_batcher_hands_out_futures_and_no_thread_waits_for_them(fake: FakeBatches) -> None:
    """Six requests submitted from one thread: six futures, one batch, one batcher thread."""
    model, batcher = _batched(fake, full(6))
    before = threading.active_count()
    requests = [ModelRequest.single(f"answer for f{i}", system="Sys.", label=f"f{i}") for i in range(6)]
    futures = [batcher.submit(r.label, model.params(r)) for r in requests]
    assert all(isinstance(f, Future) for f in futures)
    assert threading.active_count() <= before + 1  # the batcher's own thread, nothing per request
    results = [f.result(timeout=30) for f in futures]
    assert [r.kind for r in results] == ["succeeded"] * 6 and len({r.custom_id for r in results}) == 6
    assert len(fake.created) == 1 and batcher.sent == 6
    batcher.close()


def test_a_request_cancelled_before_its_batch_is_sent_is_never_sent(fake: FakeBatches) -> None:
    model, batcher = _batched(fake, full(2))
    first, second, third = (ModelRequest.single(f"q{i}", label=f"c{i}") for i in range(3))
    dropped = batcher.submit(first.label, model.params(first))
    assert dropped.cancel()  # given up while the batch is still filling
    kept = [batcher.submit(r.label, model.params(r)) for r in (second, third)]
    assert [f.result(timeout=30).kind for f in kept] == ["succeeded", "succeeded"]
    assert [sorted(reqs) for _, reqs in fake.created] == [sorted(f.result().custom_id for f in kept)]
    batcher.close()


def test_the_batch_size_cuts_requests_into_several_batches(fake: FakeBatches) -> None:
    model, batcher = _batched(fake, full(2))
    got = _ask(model, [f"c{i}" for i in range(4)])
    assert [len(reqs) for _, reqs in fake.created] == [2, 2]
    assert all(isinstance(r, ModelResponse) for r in got.values())
    batcher.close()


def test_per_request_results_map_onto_the_outcome_policy(fake: FakeBatches) -> None:
    said: dict[str, dict[str, Any]] = {
        "ok": {"type": "succeeded", "text": "[]"},
        "cut": {"type": "succeeded", "text": "[{", "stop_reason": "max_tokens" if isinstance(
            fake, FakeAnthropicBatches) else "length"},
        "bad": {"type": "errored", "error_type": "invalid_request_error", "status": 400},
        "busy": {"type": "errored", "error_type": "overloaded_error" if isinstance(
            fake, FakeAnthropicBatches) else "server_error", "status": 503},
        "late": {"type": "expired"},
        "gone": {"type": "canceled"},
    }
    fake.answer = lambda cid, body: said[cid.split("-")[0]]
    model, batcher = _batched(fake, full(6))
    got = _ask(model, list(said))
    assert isinstance(got["ok"], ModelResponse)
    cut = got["cut"]
    assert isinstance(cut, TruncatedError) and cut.details["partial_text"] == "[{" and cut.details["batch"] is True
    assert isinstance(cut.details["usage"], dict) and "standard_cost_usd" in cut.details["usage"]  # paid, at batch rate
    assert type(got["bad"]) is RunStopError and got["bad"].outcome == "config_error"  # as a direct 400
    busy = got["busy"]
    assert type(busy) is InfraError and busy.outcome == "infra_error"  # as a direct 529 / 503
    batch_id = fake.created[0][0]
    late = got["late"]
    assert type(late) is InfraError and batch_id in str(late) and "expired" in str(late)
    gone = got["gone"]
    assert isinstance(gone, BatchNotRunError) and gone.outcome == "not_run" and batch_id in str(gone)
    batcher.close()


def test_a_batch_rejected_whole_answers_every_request_with_the_classified_error(api_key: str) -> None:
    anthropic = FakeAnthropicBatches(reject_create="invalid_request_error")
    model, batcher = _batched(anthropic)
    got = _ask(model, ["a", "b"])
    assert all(type(e) is RunStopError for e in got.values()) and anthropic.created == []
    batcher.close()
    openai = FakeOpenAIBatches(fail_batch="line 1: unknown parameter 'foo'")
    model, batcher = _batched(openai)
    failed = _ask(model, ["a"])["a"]
    assert type(failed) is RunStopError and "unknown parameter 'foo'" in str(failed)
    batcher.close()


def test_polls_that_fail_are_tried_again_and_progress_is_reported(fake: FakeBatches) -> None:
    fake.failing_polls, fake.polls_to_end = 3, 2
    seen: list[BatchProgress] = []
    model, batcher = _batched(fake, full(2), progress=seen.append)
    got = _ask(model, ["x", "y"])
    assert all(isinstance(r, ModelResponse) for r in got.values())
    assert fake.polls >= 5  # three failures, then two polls of the batch
    assert seen and seen[0].requests == 2 and seen[0].counts["processing"] == 2
    assert re.fullmatch(r"batch \S+: 2 requests, 0 succeeded, 0 errored, 2 processing, waited \dm\d\ds", seen[0].line())
    batcher.close()


def test_whatever_is_left_at_the_longest_wait_is_infra_error_naming_the_batch(api_key: str) -> None:
    fake = FakeAnthropicBatches(never_end=True)
    model, batcher = _batched(fake, BatchSettings(send_delay_s=0.01, poll_s=0.01, max_wait_s=0.05))
    error = _ask(model, ["slow"])["slow"]
    assert type(error) is InfraError and "msgbatch_001" in str(error) and "same command again" in str(error)
    batcher.close()


def test_a_model_without_a_batch_api_is_refused(api_key: str) -> None:
    model = get_model("anthropic/claude-opus-4-8")

    class NoBatches(type(model.api)):  # type: ignore[misc]
        batch_api_class = None

    with pytest.raises(ConfigError, match="has no provider batch API"):
        PolicyModel(NoBatches("claude-opus-4-8")).batch_api()


def test_custom_ids_are_safe_stable_and_tell_repeated_requests_apart() -> None:
    params = {"model": "m", "messages": [{"role": "user", "content": "x"}]}
    first = custom_id("extraction/case.01 #2", params)
    assert re.fullmatch(r"[A-Za-z0-9_-]{1,64}", first) and first == custom_id("extraction/case.01 #2", params)
    assert first != custom_id("extraction/case.01 #2", params, 1)
    assert first != custom_id("extraction/case.01 #2", {**params, "model": "n"})
    assert len(custom_id("x" * 200, params, 99_999)) <= 64


def test_a_rerun_collects_the_batches_an_interrupted_run_sent_and_sends_nothing_new(
    fake: FakeBatches, tmp_path: Path
) -> None:
    journal = tmp_path / "out" / "groundeval-batches.jsonl"
    settings = full(2, journal=journal)
    fake.never_end = True
    model, first = _batched(fake, settings)
    with ThreadPoolExecutor(2) as pool:  # the first run sends its batch and is then "killed"
        futures = [pool.submit(model.generate, ModelRequest.single(f"q{i}", label=f"c{i}")) for i in range(2)]
        while not journal.exists():
            first._cond.acquire()
            first._cond.wait(0.01)
            first._cond.release()
        first.close()
        for future in futures:
            assert isinstance(future.exception(), BatchNotRunError) or future.exception() is None
    entries = [json.loads(line) for line in journal.read_text().splitlines()]
    assert len(entries) == 1 and len(entries[0]["custom_ids"]) == 2
    assert BatchJournal(journal).load() == dict.fromkeys(entries[0]["custom_ids"], entries[0]["batch_id"])
    fake.never_end = False
    model, again = _batched(fake, settings)  # the same command, run again
    with ThreadPoolExecutor(2) as pool:
        answers = list(pool.map(model.generate, [ModelRequest.single(f"q{i}", label=f"c{i}") for i in range(2)]))
    assert [a.text for a in answers] == ["q0", "q1"]
    assert len(fake.created) == 1 and again.sent == 0  # nothing sent twice, nothing paid twice
    assert all(a.meta["batch_resumed"] is True for a in answers)
    assert again.resumed == {entries[0]["batch_id"]: 2}
    again.close()


def test_a_journalled_request_its_batch_did_not_run_is_sent_anew(api_key: str, tmp_path: Path) -> None:
    journal = tmp_path / "groundeval-batches.jsonl"
    params = get_model("anthropic/claude-opus-4-8").params(ModelRequest.single("q", label="c"))
    BatchJournal(journal).record("msgbatch_gone", "anthropic", [custom_id("c", params)])
    fake = FakeAnthropicBatches()
    model, batcher = _batched(fake, BatchSettings(send_delay_s=0.01, poll_s=0.01, journal=journal))
    answer = model.generate(ModelRequest.single("q", label="c"))  # msgbatch_gone: 404 at the fake
    assert answer.text == "q" and len(fake.created) == 1 and batcher.sent == 1
    batcher.close()


def test_a_run_that_stops_with_a_batch_out_says_how_to_resume_or_cancel(api_key: str) -> None:
    from groundeval.run.batch_mode import batch_lines

    fake = FakeAnthropicBatches(never_end=True)
    model, batcher = _batched(fake, BatchSettings(send_delay_s=0.01, poll_s=0.01))
    with ThreadPoolExecutor(1) as pool:
        waiting = pool.submit(model.generate, ModelRequest.single("q", label="c"))
        tick = threading.Event()
        while not batcher.out():
            tick.wait(0.01)
        batcher.close()  # the run's end: the waiting call is answered, the batch stays out
        assert isinstance(waiting.exception(), BatchNotRunError) and "msgbatch_001" in str(waiting.exception())
    (summary, left) = batch_lines([], batcher, interrupted=True)
    assert summary.startswith("batch: 1 batch(es) msgbatch_001; 1 request(s) sent by this run")
    assert left.startswith("batch: still out at the provider: msgbatch_001. Run the same command again")
    assert "POST /v1/messages/batches/<id>/cancel" in left


def test_a_rerun_sends_again_what_failed_for_a_retryable_reason_and_keeps_an_invalid_request(
    api_key: str, tmp_path: Path
) -> None:
    journal = tmp_path / "groundeval-batches.jsonl"
    said = {"busy": {"type": "errored", "error_type": "overloaded_error"},
            "bad": {"type": "errored", "error_type": "invalid_request_error"}}
    fake = FakeAnthropicBatches()  # the first batch answers as said; a later one answers "busy" with "now"
    fake.answer = lambda cid, body: (said[cid.split("-")[0]] if len(fake.created) == 1 or cid.startswith("bad")
                                     else {"type": "succeeded", "text": "now"})
    model, first = _batched(fake, full(2, journal=journal))
    got = _ask(model, ["busy", "bad"])
    assert type(got["busy"]) is InfraError and type(got["bad"]) is RunStopError
    first.close()
    model, again = _batched(fake, BatchSettings(send_delay_s=0.01, poll_s=0.01, journal=journal))
    got = _ask(model, ["busy", "bad"])
    answered = got["busy"]
    assert isinstance(answered, ModelResponse) and answered.text == "now"  # sent again, in a new batch
    assert type(got["bad"]) is RunStopError  # the same request would fail again: collected, not re-sent
    assert [len(reqs) for _, reqs in fake.created] == [2, 1] and again.sent == 1
    again.close()


def test_the_batch_executor_waits_on_futures_not_threads(api_key: str, tmp_path: Path) -> None:
    """A window of cases through the real ClaudeAgent (cached) in batch mode: one batch, no call thread."""
    from groundeval.agents.claude import ClaudeAgent
    from groundeval.agents.result_cache import CachingAgent
    from groundeval.execution import CallTally, Job, make_executor
    from groundeval.execution.outcome_policy import RunInfo
    from groundeval.models import throttle
    from groundeval.models.cache_store import ResultCache
    from groundeval.tasks.extraction.task import ExtractionTask

    throttle.configure(None)
    fake = FakeAnthropicBatches()
    task = ExtractionTask()
    files = sorted((Path(__file__).resolve().parents[2] / "fixtures" / "extraction").glob("*.json"))
    cases = [task.load_case(p) for p in files if not p.name.startswith("MANIFEST")][:4]
    jobs = [Job(f"groundeval/extraction::{c.case_id}", c) for c in cases]

    def run(agent: Any) -> tuple[list[Any], int, Any]:
        batcher = Batcher(agent.wrapped.backend.batch_api(), full(len(jobs)))
        agent.wrapped.backend.use_batches(batcher)
        calls = CallTally()
        executor = make_executor(task, agent, RunInfo(run_id="r", task="extraction", agent="claude", model=None), 1,
                                 calls, batcher)
        before = threading.active_count()
        executor.submit(jobs)
        assert threading.active_count() <= before + 1  # the batcher's thread; no thread per call
        runs = [executor.result(job) for job in jobs]
        assert executor.close() == 0
        return runs, calls.peak, executor

    claude = ClaudeAgent(http_client=fake.client())
    runs, peak, executor = run(CachingAgent(claude, ResultCache(tmp_path), spec="claude", options={}))
    assert getattr(executor, "_threads") == []  # noqa: B009  # the call threads were never started
    assert len(fake.created) == 1 and len(fake.requests(fake.created[0][0])) == len(jobs) and peak == len(jobs)
    records = [r.record for r in runs if r is not None]
    assert [r.case_id for r in records] == [c.case_id for c in cases]
    assert all(r.outcome != "not_run" and r.batch and not r.cached and r.started_at for r in records)
    # the same cases again: every answer comes from the cache, as finished futures; nothing is sent
    again, _, _ = run(CachingAgent(ClaudeAgent(http_client=fake.client()), ResultCache(tmp_path), spec="claude",
                                   options={}))
    assert len(fake.created) == 1 and all(r is not None and r.record.cached for r in again)


def test_an_agent_that_cannot_submit_has_its_batched_calls_made_ahead_in_threads(api_key: str) -> None:
    from groundeval.agents.base import FunctionAgent
    from groundeval.execution import CallTally, Job, make_executor
    from groundeval.execution.outcome_policy import RunInfo
    from groundeval.models import throttle
    from groundeval.tasks.extraction.task import ExtractionTask

    throttle.configure(None)
    fake = FakeAnthropicBatches()
    model, batcher = _batched(fake, full(3))
    task = ExtractionTask()
    files = sorted((Path(__file__).resolve().parents[2] / "fixtures" / "extraction").glob("*.json"))
    jobs = [Job(f"groundeval/extraction::{c.case_id}", c)
            for c in [task.load_case(p) for p in files if not p.name.startswith("MANIFEST")][:3]]
    agent = FunctionAgent(lambda r: model.generate(ModelRequest.single(r.prompt.user, label=r.case_id)).text, "fn")
    executor = make_executor(task, agent, RunInfo(run_id="r", task="extraction", agent="fn", model=None), 1,
                             CallTally(), batcher)
    executor.submit(jobs)
    runs = [executor.result(job) for job in jobs]
    assert len(getattr(executor, "_threads")) == 3  # noqa: B009  # one blocked call thread per request
    assert len(fake.created) == 1 and len(fake.requests(fake.created[0][0])) == 3
    assert all(r is not None and r.record.error is None for r in runs)
    executor.close()
