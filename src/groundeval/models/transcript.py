"""What a model call leaves in the conversation: one message per reply, with the call's facts.

The model layer is where every agent call passes, so the conversation a case record keeps
(``groundeval.records.conversation``) is written here, from the ``ModelResponse`` (or the facts of
a reply that failed: cut off, refused) and never re-derived later. A message is a plain JSON-safe
dict so it crosses threads, the response cache and pytest-xdist unchanged:

* a model reply: ``{"role": "assistant", "content": str, "tool_calls": [{"id", "name", "args"}],
  "call": {"started_at", "latency_s", "usage", "attempts", "stop_reason", "model", "request_id"}}``;
* a tool result: ``{"role": "tool", "tool_call_id", "name", "content": str, "ok": bool}``.

``started_at`` is ISO-8601 UTC, ``latency_s`` seconds (retries and their waits included),
``usage`` the call's tokens and ``cost_usd`` as ``ModelResponse.usage``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from groundeval.models.base import ModelResponse, ToolCall

__all__ = ["call_facts", "failed_reply", "reply_message", "tool_calls"]


def call_facts(
    *,
    started_at: str | None,
    latency_s: float | None,
    usage: Mapping[str, Any] | None,
    attempts: int | None,
    stop_reason: str | None,
    model: str | None,
    request_id: str | None = None,
) -> dict[str, Any]:
    """The facts of one model call, as a message's ``call`` holds them."""
    return {
        "started_at": started_at,
        "latency_s": None if latency_s is None else round(latency_s, 6),
        "usage": dict(usage or {}),
        "attempts": attempts,
        "stop_reason": stop_reason,
        "model": model,
        "request_id": request_id,
    }


def tool_calls(calls: tuple[ToolCall, ...] | list[Any]) -> list[dict[str, Any]]:
    """Tool calls as ``{"id", "name", "args"}`` dicts (from ``ToolCall`` or LangChain's dicts)."""
    out = []
    for call in calls:
        if isinstance(call, ToolCall):
            out.append({"id": call.id, "name": call.name, "args": dict(call.args)})
        else:
            out.append({"id": str(call.get("id")), "name": str(call.get("name")), "args": dict(call.get("args") or {})})
    return out


def reply_message(response: ModelResponse) -> dict[str, Any]:
    """The assistant message of a finished call (``ModelResponse.started_at``/``latency_s`` set by the model)."""
    return {
        "role": "assistant",
        "content": response.text,
        "tool_calls": tool_calls(response.tool_calls),
        "call": call_facts(
            started_at=response.started_at,
            latency_s=response.latency_s,
            usage=response.usage,
            attempts=response.attempts,
            stop_reason=response.stop_reason,
            model=response.model,
            request_id=response.request_id,
        ),
    }


def failed_reply(
    details: Mapping[str, Any], *, started_at: str, latency_s: float, attempts: int | None
) -> dict[str, Any]:
    """The assistant message of a reply that came back but is not an answer (cut off, refused).

    Args:
        details: The error's details (``partial_text``, ``usage``, ``stop_reason``, ``model``,
            ``request_id``), as ``models.policy.PolicyModel`` raises them.
        started_at: When the call started, ISO-8601 UTC.
        latency_s: Seconds it took, retries included.
        attempts: Calls made, retries included.
    """
    usage = details.get("usage")
    return {
        "role": "assistant",
        "content": str(details.get("partial_text") or ""),
        "tool_calls": [],
        "call": call_facts(
            started_at=started_at,
            latency_s=latency_s,
            usage=usage if isinstance(usage, Mapping) else None,
            attempts=attempts,
            stop_reason=details.get("stop_reason"),
            model=details.get("model"),
            request_id=details.get("request_id"),
        ),
    }
