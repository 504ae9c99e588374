"""Faults at the transport level, over both SDKs against a raw loopback server.

Each test provokes one fault and checks the class it is reported as (and so its outcome):
a trickling server, 2xx bodies that are not answers, an HTML page at the base URL, connection
failures, refusals, out-of-range temperatures, cases too large for the model, and credentials
in the base URL. No test asserts on elapsed time or races the machine: a case bound is far above
what the harness needs, and the fault it cuts holds far longer.
"""

from __future__ import annotations

import base64
import dataclasses
import json
import socket
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from groundeval.agent_io import AgentRequest, Prompt
from groundeval.agents._single_call import SingleCallAgent
from groundeval.agents.base import AgentConfig
from groundeval.agents.claude import ClaudeAgent
from groundeval.agents.openai_compat import OpenAICompatibleAgent
from groundeval.errors import (
    CaseTooLargeError,
    ConfigError,
    InfraError,
    RefusalError,
    RunStopError,
)
from groundeval.models.classify import too_large
from groundeval.redaction import redact, strip_userinfo
from tests._fakes.fake_anthropic import FAKE_KEY, message_body
from tests._fakes.fake_openai import completion_body
from tests._fakes.loopback import Answer, Loopback, serve

REQUEST = AgentRequest(case_id="c1", task="extraction", prompt=Prompt(system="Rules.", user="Bundle: {}"))
HTML = Answer(200, b"<!DOCTYPE html><html><head><title>Welcome</title></head><body>Hi</body></html>", "text/html")

MakeAgent = Callable[..., SingleCallAgent]


@pytest.fixture
def loop() -> Iterator[Loopback]:
    yield from serve(lambda path, body: Answer.json(500, {"error": {"message": "no plan"}}))


@pytest.fixture(params=["claude", "openai"])
def make(request: pytest.FixtureRequest, loop: Loopback, monkeypatch: pytest.MonkeyPatch,
         sleeps: list[float]) -> MakeAgent:
    """Build the agent of one SDK path, talking to ``loop``."""
    monkeypatch.setenv("ANTHROPIC_API_KEY", FAKE_KEY)
    monkeypatch.setenv("ANTHROPIC_BASE_URL", loop.root)

    def build(**options: Any) -> SingleCallAgent:
        if request.param == "claude":
            return ClaudeAgent(AgentConfig(options=options), sleep=sleeps.append)
        config = AgentConfig(model="m", options={"base_url": f"{loop.root}/v1", **options})
        return OpenAICompatibleAgent(config, sleep=sleeps.append)

    build.sdk = request.param  # type: ignore[attr-defined]
    return build


def answer_for(make: MakeAgent, text: str = "[]") -> Answer:
    body = message_body(text) if make.sdk == "claude" else completion_body(text)  # type: ignore[attr-defined]
    return Answer.json(200, body)


# -- 1. deadlines ---------------------------------------------------------------------------

BOUND_S = 2.0
"""The case bound of the deadline tests: far above what the harness needs to send the request on a
busy machine (tens of ms), while the fault holds much longer (``TRICKLE_GAP_S`` per byte)."""
TRICKLE_GAP_S = 0.25
"""Seconds between the bytes of a trickled answer: a few hundred bytes take over a minute."""

def test_a_trickling_server_is_cut_off_at_the_case_bound(make: MakeAgent, loop: Loopback) -> None:
    full = answer_for(make)
    full.gap_s = TRICKLE_GAP_S  # every read succeeds; the whole answer would take over a minute
    loop.plan = lambda path, body: full
    agent = make(timeout=BOUND_S, max_retries=2)
    agent.warmup()  # as the plugin does before the first case: the SDK client is built outside the bound
    with pytest.raises(InfraError, match=rf"the case ran \d+\.\d+ s and was stopped at its {BOUND_S:g} s bound") as info:
        agent.run(REQUEST)
    error = info.value
    assert error.outcome == "infra_error" and error.attempts == 1 and len(loop.requests) == 1
    ran = error.details["ran_s"]
    assert error.details["timeout_s"] == BOUND_S and isinstance(ran, float) and ran >= BOUND_S
    assert not error.connection  # bytes were coming back: the API is reachable


def test_the_agent_answers_again_after_an_abandoned_attempt(make: MakeAgent, loop: Loopback) -> None:
    slow = answer_for(make)
    slow.gap_s = TRICKLE_GAP_S
    answers = [slow, answer_for(make, '[{"rxnorm_code": "1", "display": "x"}]')]
    loop.plan = lambda path, body: answers[min(len(loop.requests), 2) - 1]
    agent = make(timeout=BOUND_S)
    with pytest.raises(InfraError, match="stopped at its"):
        agent.run(REQUEST)
    agent.retry = dataclasses.replace(agent.retry, timeout_s=600.0)  # the answer is instant: no bound to race
    assert agent.run(REQUEST).text == '[{"rxnorm_code": "1", "display": "x"}]'  # a fresh client


# -- 2. 2xx responses that are not answers ---------------------------------------------------

@pytest.mark.parametrize(
    ("answer", "kind", "says"),
    [
        (Answer(200, b'{"id": "msg_01", "type": "mess'), "not_json", "a body that is not valid JSON"),
        (Answer.json(200, {"hello": "world"}), "shape", "JSON that is not a"),
        (Answer.json(200, [1, 2]), "shape", "not valid JSON|JSON that is not a"),
        (Answer(200, b"upstream connect error", "text/plain"), "not_json", "not valid JSON"),
    ],
)
def test_a_2xx_that_is_not_an_answer_is_retried_then_an_infra_error(
    make: MakeAgent, loop: Loopback, sleeps: list[float], answer: Answer, kind: str, says: str
) -> None:
    loop.plan = lambda path, body: answer
    with pytest.raises(InfraError, match=says) as info:
        make(max_retries=1).run(REQUEST)
    error = info.value
    assert type(error) is InfraError and error.outcome == "infra_error"
    assert error.attempts == 2 and len(loop.requests) == 2 and len(sleeps) == 1
    assert error.details["bad_response"] in (kind, "not_json", "shape")


@pytest.mark.parametrize("content_type", ["text/html", "application/json"])
def test_html_on_every_call_of_the_first_case_stops_the_run_naming_the_url(
    make: MakeAgent, loop: Loopback, content_type: str
) -> None:
    page = Answer(200, HTML.body, content_type)  # some servers label their error page JSON
    loop.plan = lambda path, body: page
    with pytest.raises(RunStopError, match=r"got an HTML page from http://127\.0\.0\.1:") as info:
        make(max_retries=1).run(REQUEST)
    assert info.value.outcome == "config_error" and info.value.attempts == 2
    hint = "ANTHROPIC_BASE_URL" if make.sdk == "claude" else "--groundeval-base-url"  # type: ignore[attr-defined]
    wrong = "--groundeval-base-url" if make.sdk == "claude" else "ANTHROPIC_BASE_URL"  # type: ignore[attr-defined]
    assert loop.root in str(info.value) and hint in str(info.value) and wrong not in str(info.value)
    assert "\n" not in str(info.value)


def test_html_after_a_real_answer_is_only_an_infra_error(make: MakeAgent, loop: Loopback) -> None:
    answers = [answer_for(make), HTML]
    loop.plan = lambda path, body: answers[min(len(loop.requests), 2) - 1]
    agent = make(max_retries=0)
    assert agent.run(REQUEST).text == "[]"
    with pytest.raises(InfraError, match="an HTML page") as info:
        agent.run(REQUEST)
    assert type(info.value) is InfraError and info.value.details["bad_response"] == "html"
    hint = "ANTHROPIC_BASE_URL" if make.sdk == "claude" else "--groundeval-base-url"  # type: ignore[attr-defined]
    assert f"check {hint}" in str(info.value)


# -- 3. classification -----------------------------------------------------------------------

def test_only_connection_failures_are_flagged_connection(make: MakeAgent, loop: Loopback) -> None:
    loop.plan = lambda path, body: Answer.json(503, {"error": {"message": "loading"}})
    with pytest.raises(InfraError) as info:
        make(max_retries=0).run(REQUEST)
    assert not info.value.connection  # a 503 came back


def test_nothing_listening_is_a_connection_infra_error(monkeypatch: pytest.MonkeyPatch, sleeps: list[float]) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]  # closed again when the block ends: nobody listens there
    monkeypatch.setenv("ANTHROPIC_API_KEY", FAKE_KEY)
    monkeypatch.setenv("ANTHROPIC_BASE_URL", f"http://127.0.0.1:{port}")
    for agent in (ClaudeAgent(AgentConfig(options={"max_retries": 0}), sleep=sleeps.append),
                  OpenAICompatibleAgent(AgentConfig(model="m", options={"base_url": f"http://127.0.0.1:{port}/v1",
                                                                        "max_retries": 0}))):
        with pytest.raises(InfraError, match="cannot reach") as info:
            agent.run(REQUEST)
        assert info.value.connection and type(info.value) is InfraError


def test_a_refusal_stop_reason_is_a_refusal(make: MakeAgent, loop: Loopback) -> None:
    if make.sdk == "claude":  # type: ignore[attr-defined]
        body = message_body("", stop_reason="refusal")
    else:
        body = completion_body("", finish="content_filter")
    loop.plan = lambda path, req: Answer.json(200, body)
    with pytest.raises(RefusalError, match="c1: the model declined to answer") as info:
        make().run(REQUEST)
    assert info.value.outcome == "refusal" and len(loop.requests) == 1


def test_an_openai_refusal_with_null_content_is_a_refusal_with_its_text_kept(loop: Loopback) -> None:
    body = completion_body("", finish="stop")
    body["choices"][0]["message"] = {"role": "assistant", "content": None,
                                     "refusal": "I can't help with listing this patient's medications."}
    loop.plan = lambda path, req: Answer.json(200, body)
    agent = OpenAICompatibleAgent(AgentConfig(model="m", options={"base_url": loop.root + "/v1", "max_retries": 0}))
    with pytest.raises(RefusalError, match="refusal: \"I can't help with listing") as info:
        agent.run(REQUEST)
    assert info.value.outcome == "refusal"
    assert info.value.details["partial_text"] == "I can't help with listing this patient's medications."


def test_a_case_far_over_the_context_window_is_refused_before_any_call(
    monkeypatch: pytest.MonkeyPatch, loop: Loopback
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", FAKE_KEY)
    monkeypatch.setenv("ANTHROPIC_BASE_URL", loop.root)
    big = AgentRequest(case_id="big", task="extraction", prompt=Prompt(system="Rules.", user="x" * 800_004))
    with pytest.raises(CaseTooLargeError, match="big: the case is too large for the model claude-opus-4-8") as info:
        ClaudeAgent().run(big)
    assert loop.requests == [] and info.value.attempts == 0
    assert info.value.details == {"estimated_tokens": 200_003, "context_tokens": 200_000, "max_tokens": 4096}
    # a model of unknown context (open weights) is not pre-checked: the server decides
    loop.plan = lambda path, body: Answer.json(200, completion_body())
    agent = OpenAICompatibleAgent(AgentConfig(model="m", options={"base_url": f"{loop.root}/v1"}))
    assert agent.run(big).text == "[]"


@pytest.mark.parametrize(
    ("message", "large"),
    [
        ("prompt is too long: 212345 tokens > 200000 maximum", True),
        ("input length and `max_tokens` exceed context limit: 198000 + 4096 > 200000, decrease input length", True),
        ("This model's maximum context length is 8192 tokens. However, you requested 9000 tokens", True),
        ("context_length_exceeded", True),
        ("max_tokens: 100000 > 64000, which is the maximum allowed number of output tokens", False),
        ("temperature: Input should be less than or equal to 1", False),
        ("Unrecognized request argument supplied: top_k", False),
    ],
)
def test_too_large_tells_size_errors_from_invalid_parameters(message: str, large: bool) -> None:
    assert too_large(message) is large


# -- 4. temperature ranges -------------------------------------------------------------------

@pytest.mark.parametrize(
    ("agent", "value", "ok"),
    [("claude", 1.5, False), ("claude", -0.5, False), ("claude", 1.0, True),
     ("openai", 2.5, False), ("openai", 1.5, True), ("openai", 0.0, True)],
)
def test_a_temperature_outside_the_provider_range_is_a_config_error(
    monkeypatch: pytest.MonkeyPatch, agent: str, value: float, ok: bool
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", FAKE_KEY)
    cls, config = ((ClaudeAgent, AgentConfig(options={"temperature": value})) if agent == "claude" else
                   (OpenAICompatibleAgent, AgentConfig(model="m", options={"base_url": "http://h/v1",
                                                                           "temperature": value})))
    if ok:
        assert cls(config).temperature == value
        return
    high = "1" if agent == "claude" else "2"
    with pytest.raises(ConfigError, match=rf"--groundeval-temperature={value:g} is outside .* \(0 to {high}\)"):
        cls(config)


# -- 9. credentials in the base URL ----------------------------------------------------------

def test_credentials_in_the_base_url_never_reach_messages_or_metadata(loop: Loopback, sleeps: list[float]) -> None:
    def echo(path: str, body: dict[str, Any]) -> Answer:
        auth = loop.requests[-1][1].get("Authorization", "")
        return Answer.json(401, {"error": {"message": f"bad credentials in header Authorization: {auth}"}})

    loop.plan = echo
    url = loop.root.replace("http://", "http://alice:s3cret-pw@") + "/v1"
    agent = OpenAICompatibleAgent(AgentConfig(model="m", options={"base_url": url, "max_retries": 0}),
                                  sleep=sleeps.append)
    assert agent.base_url == f"{loop.root}/v1"
    with pytest.raises(RunStopError) as info:
        agent.run(REQUEST)
    text = str(info.value) + json.dumps(info.value.details)
    token = base64.b64encode(b"alice:s3cret-pw").decode()
    assert "s3cret-pw" not in text and token not in text and "alice:" not in text
    assert loop.root in text


def test_a_basic_auth_header_echoed_in_an_error_body_is_redacted(loop: Loopback, sleeps: list[float]) -> None:
    token = base64.b64encode(b"bob:hunter22").decode()
    loop.plan = lambda path, body: Answer.json(400, {"error": {"message": f"rejected Authorization: Basic {token}"}})
    agent = OpenAICompatibleAgent(AgentConfig(model="m", options={"base_url": f"{loop.root}/v1"}))
    with pytest.raises(RunStopError) as info:
        agent.run(REQUEST)
    text = str(info.value) + json.dumps(info.value.details)
    assert token not in text and "Basic [redacted]" in text


@pytest.mark.parametrize(
    ("url", "stripped"),
    [
        ("http://user:pass@host:8000/v1", "http://host:8000/v1"),
        ("https://tok@gateway.example/v1?x=1", "https://gateway.example/v1?x=1"),
        ("http://127.0.0.1:8000/v1", "http://127.0.0.1:8000/v1"),
        ("not a url", "not a url"),
    ],
)
def test_strip_userinfo(url: str, stripped: str) -> None:
    assert strip_userinfo(url) == stripped


def test_redact_hides_tokens_and_given_secrets() -> None:
    assert redact("Authorization: Bearer sk-abc.def and pw=xyz1", ["xyz1"]) == (
        "Authorization: Bearer [redacted] and pw=[redacted]"
    )


def test_an_abandoned_attempt_closes_the_shared_client_only_when_no_other_call_uses_it(api_key: str) -> None:
    class Client:
        def __init__(self) -> None:
            self.closed = False

        def close(self) -> None:
            self.closed = True

    model = ClaudeAgent(AgentConfig()).backend  # the client pool is the model layer's
    built: list[Client] = []

    def new_client(options: dict[str, Any]) -> Client:
        built.append(Client())
        return built[-1]

    model.api.new_client = new_client  # type: ignore[method-assign]  # the pool builds through its provider
    first = model._pool.checkout()  # the call that will be abandoned
    beside = model._pool.checkout()  # another case's call on the same client (--groundeval-concurrency)
    assert first is beside and len(built) == 1
    held: dict[str, Any] = {"client": first}
    model._abandon(held)
    assert not built[0].closed  # the call beside it is still reading from it
    after = model._pool.checkout()
    assert after is not first and len(built) == 2  # new calls get a new client
    model._pool.checkin(beside)
    assert built[0].closed  # only the abandoned attempt held it: closed, its sockets with it
    model._pool.checkin(first, abandoned=True)  # the abandoned attempt ends later: nothing breaks
    model._pool.checkin(after)
    assert not built[1].closed
