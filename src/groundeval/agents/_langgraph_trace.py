"""What a LangGraph conversation leaves: the tool-call trace and the tokens paid for.

Split from ``langgraph_agent`` (which re-exports ``tool_trace``); LangChain is imported inside
the functions, so importing this module costs nothing.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any

from groundeval.models.pricing import total_cost
from groundeval.models.providers.anthropic import anthropic_usage
from groundeval.models.transcript import call_facts, tool_calls
from groundeval.scoring import Metric

if TYPE_CHECKING:
    from langchain_core.messages import BaseMessage

__all__ = ["conversation", "message_usage", "tool_trace"]


def _decode(content: object) -> Any:
    """A tool message's content as JSON when it is JSON text, else unchanged."""
    if isinstance(content, str):
        try:
            return json.loads(content)
        except json.JSONDecodeError:
            return content
    return content


def tool_trace(messages: Sequence[BaseMessage]) -> list[dict[str, Any]]:
    """Pair every tool call of the conversation with its result.

    Args:
        messages: The agent's messages (``AIMessage`` tool calls, ``ToolMessage`` results).

    Returns:
        One dict per tool call, in call order: ``tool`` (name), ``args`` (as the model sent
        them), ``result`` (decoded JSON, or text; None when the call never ran) and ``ok``
        (False when the tool message has status ``error``, the result says ``"ok": false``, or
        the call never ran).
    """
    from langchain_core.messages import AIMessage, ToolMessage

    calls: list[Any] = []
    results: dict[str, ToolMessage] = {}
    for message in messages:
        if isinstance(message, AIMessage):
            calls.extend(message.tool_calls)
        elif isinstance(message, ToolMessage):
            results[message.tool_call_id] = message
    trace = []
    for call in calls:
        done = results.get(str(call.get("id")))
        result = None if done is None else _decode(done.content)
        ok = done is not None and done.status != "error" and not (
            isinstance(result, dict) and result.get("ok") is False
        )
        trace.append({"tool": call["name"], "args": call.get("args", {}), "result": result, "ok": ok})
    return trace


def message_usage(messages: Sequence[BaseMessage], model: str | None) -> dict[str, Metric]:
    """Token counts summed over the model replies, and their list price (None when unknown).

    Returns:
        ``input_tokens``, ``output_tokens``, ``cache_creation_input_tokens``,
        ``cache_read_input_tokens`` (tokens) and ``cost_usd`` (USD, None when any reply is
        unpriced); empty when no reply carried usage.
    """
    from langchain_core.messages import AIMessage

    totals: dict[str, Metric] = {}
    costs: list[Metric] = []
    source: str | None = None
    for message in messages:
        if not isinstance(message, AIMessage):
            continue
        raw = message.response_metadata.get("usage")
        if isinstance(raw, dict):  # the Anthropic usage object, as ChatAnthropic passes it on
            fields = {k: SimpleNamespace(**v) if isinstance(v, dict) else v for k, v in raw.items()}
        elif message.usage_metadata:
            meta = message.usage_metadata
            details: dict[str, Any] = dict(meta.get("input_token_details") or {})
            cached = int(details.get("cache_read") or 0) + int(details.get("cache_creation") or 0)
            fields = {
                "input_tokens": meta["input_tokens"] - cached, "output_tokens": meta["output_tokens"],
                "cache_read_input_tokens": details.get("cache_read"),
                "cache_creation_input_tokens": details.get("cache_creation"),
            }
        else:
            continue
        usage = anthropic_usage(model, SimpleNamespace(**fields))
        costs.append(usage.pop("cost_usd"))
        if isinstance(found := usage.pop("price_source", None), str):
            source = found
        for key, value in usage.items():
            totals[key] = int(totals.get(key) or 0) + int(value or 0)
    if costs:
        totals["cost_usd"] = total_cost(costs)
    if source is not None and totals.get("cost_usd") is not None:  # where the prices came from (pricing.priced)
        totals["price_source"] = source
    return totals


def _text(content: object) -> str:
    """A message's content as text (LangChain content blocks joined; other values as JSON)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = [b if isinstance(b, str) else str(b.get("text", "")) for b in content
                 if isinstance(b, str) or (isinstance(b, dict) and b.get("type") == "text")]
        return "".join(parts)
    return json.dumps(content, ensure_ascii=False, default=str)


def conversation(
    messages: Sequence[BaseMessage], calls: Sequence[dict[str, Any]], model: str | None
) -> list[dict[str, Any]]:
    """The graph's messages after the prompt, as ``AgentResult.messages`` holds them (``models.transcript``).

    Args:
        messages: The graph state's messages; the first human message is the prompt (the case
            record keeps it apart) and is left out.
        calls: The model-call guard's ``calls``: each reply's ``started_at``, ``latency_s`` and
            ``attempts``, in reply order.
        model: The model id, for each reply's price.

    Returns:
        One dict per reply (with its call's timing and usage) and per tool result, in order.
    """
    from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

    out: list[dict[str, Any]] = []
    replies = 0
    prompt_seen = False
    for message in messages:
        if isinstance(message, HumanMessage) and not prompt_seen:
            prompt_seen = True
            continue
        if isinstance(message, AIMessage):
            timing = calls[replies] if replies < len(calls) else {}
            replies += 1
            reported = message.response_metadata.get("model_name") or message.response_metadata.get("model")
            out.append({
                "role": "assistant", "content": _text(message.content), "tool_calls": tool_calls(message.tool_calls),
                "call": call_facts(
                    started_at=timing.get("started_at"), latency_s=timing.get("latency_s"),
                    usage=message_usage([message], str(reported or model)), attempts=timing.get("attempts"),
                    stop_reason=message.response_metadata.get("stop_reason"), model=str(reported or model),
                    request_id=message.response_metadata.get("id"),
                ),
            })
        elif isinstance(message, ToolMessage):
            result = _decode(message.content)
            ok = message.status != "error" and not (isinstance(result, dict) and result.get("ok") is False)
            out.append({"role": "tool", "tool_call_id": message.tool_call_id, "name": message.name,
                        "content": _text(message.content), "ok": ok})
        else:
            out.append({"role": "user" if isinstance(message, HumanMessage) else str(message.type),
                        "content": _text(message.content)})
    return out
