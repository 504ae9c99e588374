"""The price table and the retry layer, without any SDK."""

from __future__ import annotations

import threading

import httpx2
import pytest

from groundeval.agents.base import AgentConfig
from groundeval.errors import ConfigError
from groundeval.models.classify import advise, parse_retry_after
from groundeval.models.pricing import PRICES, cost_usd, price_for
from groundeval.models.retry import (
    CallSettings,
    DeadlineExceeded,
    GaveUp,
    RetryPolicy,
    call_with_retries,
    within,
)


@pytest.mark.parametrize(
    ("model", "family"),
    [
        ("claude-opus-4-8", "Claude Opus 4.8"),
        ("claude-opus-4-8-20260528", "Claude Opus 4.8"),
        ("claude-opus-4-20250514", "Claude Opus 4"),
        ("claude-opus-4-1@20250805", "Claude Opus 4.1"),
        ("anthropic.claude-opus-4-1-20250805-v1:0", "Claude Opus 4.1"),
        ("claude-sonnet-5-5[1m]", "Claude Sonnet 5.5"),
        ("claude-haiku-4-5-20251001", "Claude Haiku 4.5"),
        ("claude-3-5-haiku-20241022", "Claude Haiku 3.5"),
        ("claude-3-7-sonnet-latest", "Claude Sonnet 3.7"),
    ],
)
def test_model_ids_find_their_family(model: str, family: str) -> None:
    price = price_for(model)
    assert price is not None and price.family == family


@pytest.mark.parametrize("model", [None, "", "claude-opus-4-9", "llama-3.3-70b", "gpt-6", "my-own-finetune"])
def test_unknown_models_price_as_none_never_zero(model: str | None) -> None:
    assert price_for(model) is None
    assert cost_usd(model, input_tokens=1000, output_tokens=10) is None


def test_cost_of_one_call_with_cache_writes_and_reads() -> None:
    # Opus 4.8: $5 input, $25 output, $6.25 5m write, $10 1h write, $0.50 read per MTok.
    cost = cost_usd("claude-opus-4-8", input_tokens=2_000, output_tokens=400, cache_creation_input_tokens=3_000,
                    cache_read_input_tokens=10_000, cache_write_1h_tokens=1_000)
    assert cost == pytest.approx((2_000 * 5 + 400 * 25 + 2_000 * 6.25 + 1_000 * 10 + 10_000 * 0.5) / 1e6)
    assert cost_usd("claude-opus-4-8", input_tokens=None, output_tokens=1) is None


def test_long_prompt_rates_apply_to_the_whole_request() -> None:
    short = cost_usd("claude-haiku-5-5", input_tokens=100_000, output_tokens=1_000)
    long = cost_usd("claude-haiku-5-5", input_tokens=90_000, output_tokens=1_000, cache_read_input_tokens=10_001)
    assert short == pytest.approx((100_000 * 0.10 + 1_000 * 0.50) / 1e6)
    assert long == pytest.approx((90_000 * 0.50 + 1_000 * 2.50 + 10_001 * 0.05) / 1e6)


def test_every_rate_card_is_internally_consistent() -> None:
    for stem, price in PRICES.items():
        for card in filter(None, (price.standard, price.long_prompt)):
            assert card.cache_read < card.input < card.cache_write_5m < card.cache_write_1h, stem
            assert card.output > card.input, stem
        assert (price.long_prompt is None) == (price.long_prompt_over is None), stem


class FakeClock:
    def __init__(self) -> None:
        self.now = 0.0
        self.slept: list[float] = []

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.now += seconds


class Flaky(Exception):
    pass


def policy(clock: FakeClock, **kw: float) -> RetryPolicy:
    return RetryPolicy(sleep=clock.sleep, clock=clock, **kw)  # type: ignore[arg-type]


def test_retries_count_attempts_and_pass_the_remaining_budget_as_timeout() -> None:
    clock, seen = FakeClock(), []

    def call(left: float) -> str:
        seen.append(left)
        clock.now += 1.0
        if len(seen) < 3:
            raise Flaky
        return "ok"

    done = call_with_retries(call, policy(clock, timeout_s=100), errors=(Flaky,), advise=lambda e: (True, 5.0))
    assert (done.value, done.attempts, done.waited_s) == ("ok", 3, 10.0)
    assert seen == [100.0, 94.0, 88.0]


def test_gives_up_when_retries_run_out_or_the_error_is_final() -> None:
    clock = FakeClock()
    with pytest.raises(GaveUp) as info:
        call_with_retries(lambda left: (_ for _ in ()).throw(Flaky()), policy(clock, max_retries=2),
                          errors=(Flaky,), advise=lambda e: (True, None))
    assert info.value.attempts == 3 and "no retries left" in info.value.note and len(clock.slept) == 2
    assert 0.375 <= clock.slept[0] <= 0.5 and 0.75 <= clock.slept[1] <= 1.0  # backoff with jitter
    with pytest.raises(GaveUp) as info:
        call_with_retries(lambda left: (_ for _ in ()).throw(Flaky()), policy(clock),
                          errors=(Flaky,), advise=lambda e: (False, None))
    assert info.value.attempts == 1 and info.value.note == ""


def test_a_wait_past_the_budget_is_not_started() -> None:
    clock = FakeClock()
    with pytest.raises(GaveUp) as info:
        call_with_retries(lambda left: (_ for _ in ()).throw(Flaky()), policy(clock, timeout_s=60),
                          errors=(Flaky,), advise=lambda e: (True, 171.0))
    assert clock.slept == [] and info.value.attempts == 1
    assert info.value.note == ("the server asked to wait 171 s but the case had run 0.0 s of its 60 s bound "
                               "(--groundeval-timeout)")


def test_the_last_note_says_how_long_the_case_ran_and_its_bound() -> None:
    clock = FakeClock()

    def call(left: float) -> str:
        clock.now += 3.0  # each attempt times out after 3 s
        raise Flaky

    with pytest.raises(GaveUp) as info:
        call_with_retries(call, policy(clock, timeout_s=100, max_retries=1), errors=(Flaky,),
                          advise=lambda e: (True, 1.0))
    assert info.value.note == "no retries left (max_retries=1); the case ran 7.0 s of its 100 s bound"


def test_an_attempt_still_running_at_the_bound_is_abandoned() -> None:
    release, abandoned = threading.Event(), []
    try:
        with pytest.raises(GaveUp) as info:
            call_with_retries(lambda left: release.wait(30), RetryPolicy(timeout_s=0.05), errors=(Flaky,),
                              advise=lambda e: (True, None), abandon=lambda: abandoned.append(True))
    finally:
        release.set()
    error = info.value.error
    assert isinstance(error, DeadlineExceeded) and error.bound_s == 0.05 and error.ran_s >= 0.05
    assert abandoned == [True] and info.value.attempts == 1
    assert "was stopped at its 0.05 s bound (--groundeval-timeout)" in info.value.note


def test_within_returns_and_raises_what_the_call_did() -> None:
    assert within(lambda: 42, 5.0) == 42
    empty: dict[str, int] = {}
    with pytest.raises(KeyError):
        within(lambda: empty["x"], 5.0)


def test_other_exceptions_are_bugs_and_propagate() -> None:
    empty: dict[str, int] = {}
    with pytest.raises(KeyError):
        call_with_retries(lambda left: empty["x"], RetryPolicy(), errors=(Flaky,), advise=lambda e: (True, None))


def response(status: int, **headers: str) -> httpx2.Response:
    return httpx2.Response(status, headers={k.replace("_", "-"): v for k, v in headers.items()},
                           request=httpx2.Request("POST", "https://example.invalid/v1/messages"))


class StatusError(Exception):
    def __init__(self, status: int, **headers: str) -> None:
        self.status_code = status
        self.response = response(status, **headers)


@pytest.mark.parametrize(
    ("status", "headers", "expected"),
    [
        (429, {"retry_after": "30"}, (True, 30.0)),
        (429, {"retry_after_ms": "1500"}, (True, 1.5)),
        (529, {}, (True, None)),
        (503, {"retry_after": "0"}, (True, None)),
        (408, {}, (True, None)),
        (400, {}, (False, None)),
        (400, {"x_should_retry": "true"}, (True, None)),
        (500, {"x_should_retry": "false"}, (False, None)),
        (401, {"x_should_retry": "true"}, (False, None)),
    ],
)
def test_advise_follows_the_sdk_retry_policy(status: int, headers: dict[str, str], expected: tuple[bool, float | None]) -> None:
    assert advise(StatusError(status, **headers)) == expected


def test_retry_after_as_an_http_date() -> None:
    wait = parse_retry_after({"retry-after": "Wed, 21 Oct 2015 07:28:00 GMT"})
    assert wait is not None and wait < 0  # in the past: the caller backs off instead
    assert parse_retry_after({"retry-after": "soon"}) is None and parse_retry_after(None) is None


def test_call_settings_defaults_and_validation() -> None:
    settings = CallSettings.from_config(AgentConfig(options={"max_tokens": None, "timeout": None}))
    assert (settings.max_tokens, settings.temperature) == (4096, None)
    assert (settings.retry.max_retries, settings.retry.timeout_s) == (2, 600.0)
    with pytest.raises(ConfigError, match="max_tokens >= 1"):
        CallSettings.from_config(AgentConfig(options={"max_tokens": 0}))


def test_a_case_that_never_gets_a_call_slot_sends_nothing() -> None:
    from groundeval.models import throttle

    gate = throttle.configure(2)
    assert gate is not None
    try:
        gate.rate_limited(None)  # limit 2 -> 1
        gate.acquire(1.0)  # another case's call holds the only slot
        calls: list[float] = []
        with pytest.raises(GaveUp) as info:
            call_with_retries(lambda left: calls.append(left), RetryPolicy(timeout_s=0.05), errors=(Flaky,),
                              advise=lambda e: (True, None))
        assert calls == [] and info.value.attempts == 0  # never called: no slot came free within 0.05 s
        assert isinstance(info.value.error, throttle.SlotTimeout)
        assert "for a concurrency slot; no request was sent" in info.value.note
        gate.release(ok=True)
        assert call_with_retries(lambda left: "answer", RetryPolicy(timeout_s=5.0), errors=(Flaky,),
                                 advise=lambda e: (True, None)).value == "answer"
    finally:
        throttle.configure(None)


def test_a_rate_limit_answer_cuts_the_process_limit() -> None:
    from groundeval.models import throttle

    class Limited(Flaky):
        status_code = 429

    gate = throttle.configure(8)
    assert gate is not None
    answers: list[BaseException | str] = [Limited("429"), "answer"]

    def call(left: float) -> str:
        item = answers.pop(0)
        if isinstance(item, BaseException):
            raise item
        return item

    try:
        done = call_with_retries(call, RetryPolicy(timeout_s=5.0, sleep=lambda s: None), errors=(Flaky,),
                                 advise=lambda e: (True, 0.0))
        assert done.value == "answer" and done.attempts == 2
        assert gate.cuts == 1 and gate.limit == 4  # halved, held for the cooldown
    finally:
        throttle.configure(None)
