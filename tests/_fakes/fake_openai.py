"""The one fake OpenAI-compatible chat-completions server of the test suite (vLLM, llama.cpp, Ollama style).

``ChatServer`` listens on 127.0.0.1 (``url`` ends in ``/v1``, as the agent's ``--groundeval-base-url``
does) and answers each request from ``replies`` (the last one repeats; a callable computes the reply
from the request body). It is the raw loopback server of ``loopback.py`` underneath, so the fault
tests and these share one HTTP implementation; it is started and stopped as a context manager.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from .loopback import Answer, Loopback

Reply = tuple[int, dict[str, Any], dict[str, str]]
"""``(status, JSON body, headers)``."""
Responder = Callable[[dict[str, Any]], Reply]
"""Computes the reply from the request's JSON body."""


def completion_body(text: str = "[]", *, finish: str = "stop", prompt: int = 900, out: int = 30,
                    cached: int | None = 0, model: str = "llama-3.3-70b-instruct") -> dict[str, Any]:
    """A ``chat.completion`` body with the given text, finish reason and usage (tokens; ``cached=None``: no details)."""
    usage: dict[str, Any] = {"prompt_tokens": prompt, "completion_tokens": out, "total_tokens": prompt + out}
    if cached is not None:
        usage["prompt_tokens_details"] = {"cached_tokens": cached}
    return {
        "id": "chatcmpl-1", "object": "chat.completion", "created": 1764400000, "model": model,
        "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": finish}],
        "usage": usage,
    }


def completion(text: str = "[]", *, request_id: str = "req-local-1", **fields: Any) -> Reply:
    """A 200 reply: ``completion_body(text, **fields)`` with an ``x-request-id`` header."""
    return 200, completion_body(text, **fields), {"x-request-id": request_id}


def error(status: int, message: str, **headers: str) -> Reply:
    """An OpenAI-style error reply; ``retry_after="2"`` becomes a ``retry-after`` header."""
    return status, {"error": {"message": message, "type": "server_error", "code": None}}, headers


class ChatServer:
    """A chat-completions server answering from ``replies`` (the last one repeats).

    Attributes:
        url: The base URL, ``http://127.0.0.1:<port>/v1``.
        replies: What to answer, in order; a ``Responder`` is called with the request body.
    """

    def __init__(self, replies: list[Reply | Responder] | None = None) -> None:
        self.replies: list[Reply | Responder] = replies if replies is not None else [completion()]
        self._loop = Loopback(self._answer)
        self.url = f"{self._loop.root}/v1"

    @property
    def requests(self) -> list[dict[str, Any]]:
        """Every request received: ``{"path", "headers", "body"}``."""
        return [{"path": path, "headers": headers, "body": body} for path, headers, body in self._loop.requests]

    @property
    def bodies(self) -> list[dict[str, Any]]:
        """The JSON body of every request received."""
        return [body for _, _, body in self._loop.requests]

    def _answer(self, path: str, body: dict[str, Any]) -> Answer:
        reply = self.replies[min(len(self._loop.requests), len(self.replies)) - 1]
        if callable(reply):
            reply = reply(body)
        status, data, headers = reply
        return Answer.json(status, data, **headers)

    def __enter__(self) -> ChatServer:
        self._loop.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        self._loop.__exit__(*exc)


def serve_chat(replies: list[Reply | Responder] | None = None) -> Iterator[ChatServer]:
    """Fixture body: a started ``ChatServer``, stopped when the test ends."""
    with ChatServer(replies) as server:
        yield server
