"""The one fake Anthropic Messages API of the test suite: responses, errors, a script, a mocked Claude agent.

The Claude agent is exercised through the real ``anthropic`` SDK; only its HTTP transport is
replaced (``httpx2.MockTransport``), so request building, response parsing and the SDK's error
classes are the real ones.

This file is self-contained (no relative import, no pytest): pytester runs that need a Claude agent
with a scripted transport copy it into their directory with ``install`` and write an agent module
that does ``from fake_anthropic import message, mock_claude``, so that in-process, subprocess and
xdist-worker runs all import the same fake.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx2

FAKE_KEY = "sk-ant-api03-FAKEKEY-0123456789abcdefghij"
"""An ``ANTHROPIC_API_KEY`` that is never valid anywhere (shaped like a real one, for redaction tests)."""

Reply = httpx2.Response | BaseException | Callable[[httpx2.Request], httpx2.Response]


def message_body(
    text: str = "[]",
    *,
    stop_reason: str = "end_turn",
    model: str = "claude-opus-4-8",
    input_tokens: int = 1200,
    output_tokens: int = 40,
    cache_creation: int = 0,
    cache_read: int = 0,
) -> dict[str, Any]:
    """The JSON body of a Messages API reply with the given text and usage (tokens)."""
    return {
        "id": "msg_01", "type": "message", "role": "assistant", "model": model,
        "content": [{"type": "text", "text": text}], "stop_reason": stop_reason, "stop_sequence": None,
        "usage": {
            "input_tokens": input_tokens, "output_tokens": output_tokens,
            "cache_creation_input_tokens": cache_creation, "cache_read_input_tokens": cache_read,
        },
    }


def message(text: str = "[]", *, request_id: str = "req_011ok", **fields: Any) -> httpx2.Response:
    """A 200 Messages API response: ``message_body(text, **fields)`` with a ``request-id`` header."""
    return httpx2.Response(200, json=message_body(text, **fields), headers={"request-id": request_id})


def api_error(status: int, error_type: str, text: str = "", **headers: str) -> httpx2.Response:
    """An Anthropic error response (``{"type": "error", "error": {...}}``); ``retry_after="2"`` -> ``retry-after``."""
    body = {"type": "error", "error": {"type": error_type, "message": text or error_type}}
    head = {"request-id": f"req_{status}", **{k.replace("_", "-"): v for k, v in headers.items()}}
    return httpx2.Response(status, json=body, headers=head)


def prompt_of(request: httpx2.Request) -> tuple[str, str]:
    """``(system, user)`` text of a Messages API request (system blocks joined, the first user turn)."""
    body = json.loads(request.content)
    system = body.get("system", "")
    if isinstance(system, list):
        system = "".join(block.get("text", "") for block in system)
    return system, body["messages"][0]["content"]


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


def mock_claude(handler: Callable[[httpx2.Request], httpx2.Response]) -> type[Any]:
    """A ``ClaudeAgent`` subclass whose SDK client sends every request to ``handler``, with a no-op sleep.

    Use it as the agent of a plugin run: ``MockClaude = mock_claude(handler)`` in the agent module,
    then ``--groundeval-agent=<module>:MockClaude``.
    """
    from groundeval.agents.claude import ClaudeAgent

    class MockClaude(ClaudeAgent):
        def __init__(self, config: Any) -> None:
            client = httpx2.Client(transport=httpx2.MockTransport(handler))
            super().__init__(config, http_client=client, sleep=lambda seconds: None)

    return MockClaude


def install(directory: Path) -> Path:
    """Copy this file into ``directory`` (for a pytester run's agent module: ``from fake_anthropic import ...``)."""
    return Path(shutil.copy(__file__, directory / Path(__file__).name))
