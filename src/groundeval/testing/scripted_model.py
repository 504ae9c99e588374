"""A scripted ``Model`` for tests and demos: replies come from a list or a function, no network."""

from __future__ import annotations

import dataclasses
import threading
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from typing import Any

from groundeval.errors import AgentError
from groundeval.models.base import ModelRequest, ModelResponse, ModelRole

__all__ = ["ScriptedModel"]

ModelScript = Sequence[str | BaseException] | Callable[[ModelRequest], str | ModelResponse]


class ScriptedModel:
    """A ``Model`` whose replies come from a script: what the real providers return, offline.

    Args:
        script: A sequence of replies used in order (an exception value is raised instead; running
            out raises ``AgentError``), or a function of the request returning the reply text or a
            whole ``ModelResponse``.
        role: ``agent`` or ``judge``.
        name: The model id it reports.
        max_tokens: Its output limit, tokens (recorded only).
        temperature: Its temperature (recorded only).

    Attributes:
        requests: Every request received, in order (to assert what was asked).
    """

    def __init__(
        self, script: ModelScript, *, role: ModelRole = "agent", name: str = "scripted-model",
        max_tokens: int = 1024, temperature: float | None = 0.0,
    ) -> None:
        self._script = script
        self._next = 0
        self._lock = threading.Lock()
        self.role: ModelRole = role
        self.name: str | None = name
        self.max_tokens = max_tokens
        self.temperature = temperature
        self.requests: list[ModelRequest] = []

    @property
    def spec(self) -> str:
        """``scripted/<name>``."""
        return f"scripted/{self.name}"

    def settings(self) -> dict[str, Any]:
        """``spec``, ``role``, ``model``, ``max_tokens`` and ``temperature``."""
        return {"spec": self.spec, "role": self.role, "model": self.name, "max_tokens": self.max_tokens,
                "temperature": self.temperature}

    def generate(self, request: ModelRequest) -> ModelResponse:
        """The next scripted reply (or the function's), with zero usage and cost.

        Raises:
            AgentError: The sequence ran out, or the scripted exception.
        """
        started_at = datetime.now(UTC).isoformat()
        start = time.perf_counter()
        with self._lock:
            self.requests.append(request)
        reply: str | BaseException | ModelResponse
        if callable(self._script):  # outside the lock: concurrent calls (a judge's, an agent's) overlap
            reply = self._script(request)
        else:
            with self._lock:
                if self._next >= len(self._script):
                    raise AgentError(
                        f"{request.label}: the scripted model ran out of replies after {self._next}", attempts=1
                    )
                reply = self._script[self._next]
                self._next += 1
        if isinstance(reply, BaseException):
            raise reply
        latency = round(time.perf_counter() - start, 6)
        if isinstance(reply, ModelResponse):
            return reply if reply.started_at is not None else dataclasses.replace(
                reply, started_at=started_at, latency_s=latency)
        usage: dict[str, Any] = {"input_tokens": 0, "output_tokens": 0, "cache_creation_input_tokens": 0,
                                 "cache_read_input_tokens": 0, "cost_usd": 0.0}
        return ModelResponse(text=reply, model=self.name, stop_reason="end_turn", usage=usage,
                             meta={"max_tokens": self.max_tokens, "temperature": self.temperature},
                             started_at=started_at, latency_s=latency)
