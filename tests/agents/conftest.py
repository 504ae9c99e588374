"""Offline doubles for the model-backed agents: a scripted Anthropic HTTP API and a fake clock.

The Claude agent is exercised through the real ``anthropic`` SDK; only its HTTP transport is
replaced (``httpx2.MockTransport``), so request building, response parsing and the SDK's error
classes are the real ones. No test here may sleep for real: ``time.sleep`` is replaced by a
function that fails the test, and agents get a recording ``sleep`` instead.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any

import httpx2
import pytest

FAKE_KEY = "sk-ant-api03-FAKEKEY-0123456789abcdefghij"

Reply = httpx2.Response | BaseException | Callable[[httpx2.Request], httpx2.Response]


def message(
    text: str = "[]",
    *,
    stop_reason: str = "end_turn",
    model: str = "claude-opus-4-8",
    input_tokens: int = 1200,
    output_tokens: int = 40,
    cache_creation: int = 0,
    cache_read: int = 0,
    request_id: str = "req_011ok",
) -> httpx2.Response:
    """A 200 Messages API response with the given text and usage."""
    body = {
        "id": "msg_01", "type": "message", "role": "assistant", "model": model,
        "content": [{"type": "text", "text": text}], "stop_reason": stop_reason, "stop_sequence": None,
        "usage": {
            "input_tokens": input_tokens, "output_tokens": output_tokens,
            "cache_creation_input_tokens": cache_creation, "cache_read_input_tokens": cache_read,
        },
    }
    return httpx2.Response(200, json=body, headers={"request-id": request_id})


def api_error(status: int, error_type: str, text: str = "", **headers: str) -> httpx2.Response:
    """An Anthropic error response (``{"type": "error", "error": {...}}``)."""
    body = {"type": "error", "error": {"type": error_type, "message": text or error_type}}
    head = {"request-id": f"req_{status}", **{k.replace("_", "-"): v for k, v in headers.items()}}
    return httpx2.Response(status, json=body, headers=head)


class ScriptedAPI:
    """A MockTransport handler that answers from a list, one reply per HTTP call.

    Attributes:
        requests: Every request received, in order (its count is the number of attempts).
    """

    def __init__(self, replies: list[Reply], *, repeat_last: bool = False) -> None:
        self.replies = list(replies)
        self.repeat_last = repeat_last
        self.requests: list[httpx2.Request] = []

    def __call__(self, request: httpx2.Request) -> httpx2.Response:
        self.requests.append(request)
        index = len(self.requests) - 1
        if index >= len(self.replies):
            if not self.repeat_last:
                raise AssertionError(f"unexpected HTTP call #{index + 1}")
            index = len(self.replies) - 1
        reply = self.replies[index]
        if isinstance(reply, BaseException):
            raise reply
        if callable(reply) and not isinstance(reply, httpx2.Response):
            return reply(request)
        return reply

    def client(self) -> httpx2.Client:
        """An ``httpx2.Client`` whose transport is this script."""
        return httpx2.Client(transport=httpx2.MockTransport(self))

    def body(self, n: int = 0) -> dict[str, Any]:
        """The JSON body of request ``n``."""
        return json.loads(self.requests[n].content)  # type: ignore[no-any-return]


@pytest.fixture(autouse=True)
def _no_real_sleep(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(seconds: float) -> None:
        raise AssertionError(f"a test tried to sleep {seconds} s for real")

    monkeypatch.setattr(time, "sleep", refuse)


@pytest.fixture
def api_key(monkeypatch: pytest.MonkeyPatch) -> str:
    """A fake ``ANTHROPIC_API_KEY`` (never valid anywhere)."""
    monkeypatch.setenv("ANTHROPIC_API_KEY", FAKE_KEY)
    return FAKE_KEY


@pytest.fixture
def sleeps() -> list[float]:
    """Records the waits an agent asked for (pass ``sleeps.append`` as its ``sleep``)."""
    return []
