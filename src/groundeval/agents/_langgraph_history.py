"""The LangGraph agent's history check: every tool result follows its tool call, every tool call is answered.

The Messages API refuses a history in which a ``tool_result`` block does not answer a ``tool_use``
of the assistant message right before it, or in which an assistant's ``tool_use`` is not answered
in the next message (Anthropic, "Tool use: handling tool results"; OpenAI's chat completions
likewise require each ``tool`` message to answer a ``tool_calls`` id of the assistant message
before it). Such a refusal is a 400, which the model layer classes as ``config_error`` and which
stops the whole run; and a lenient provider would answer a history that no longer says which
result belongs to which call. A malformed history can only come from groundeval's own graph (or
a middleware it installs), so it is a harness bug: ``history_check`` raises ``HarnessError``
(outcome ``harness_error``: excluded from the means, counted) before the request is sent.

LangChain is imported inside ``history_check``, so importing this module costs nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from groundeval.errors import HarnessError

__all__ = ["history_check", "history_fault"]


def _kind(message: Any) -> str:
    return str(getattr(message, "type", type(message).__name__))


def history_fault(messages: Sequence[Any]) -> tuple[int, str] | None:
    """The first place where ``messages`` break the tool-call pairing, or None when they keep it.

    Args:
        messages: LangChain messages in order (``human``, ``ai`` with ``tool_calls``, ``tool``
            with ``tool_call_id``, ``system``).

    Returns:
        ``(index, problem)``: the 0-based index of the offending message and what is wrong with it;
        None for a well-formed history. The rules: the messages right after an ``ai`` message with
        tool calls are ``tool`` messages answering exactly those calls, each once, before any other
        message (and before the history ends); a ``tool`` message anywhere else answers nothing.
    """
    open_ids: dict[str, int] = {}  # tool call id -> index of the ai message that made it
    for index, message in enumerate(messages):
        kind = _kind(message)
        if kind == "tool":
            call_id = getattr(message, "tool_call_id", None)
            if call_id not in open_ids:
                return index, (f"a tool result (tool_call_id={call_id!r}) that answers no tool call of the "
                               "assistant message right before it")
            del open_ids[call_id]
            continue
        if open_ids:
            missing = sorted(open_ids)
            return index, (f"a {kind} message before the tool call(s) {missing} of message "
                           f"{open_ids[missing[0]]} were answered")
        if kind == "ai":
            ids = [str(call.get("id")) for call in getattr(message, "tool_calls", None) or []]
            if len(set(ids)) != len(ids):
                return index, f"an assistant message with a repeated tool call id among {ids}"
            open_ids = dict.fromkeys(ids, index)
    if open_ids:
        missing = sorted(open_ids)
        return len(messages), f"the history ends before the tool call(s) {missing} were answered"
    return None


def history_check(case_id: str) -> Any:
    """Middleware run innermost, right before each model call: refuses a malformed history.

    Args:
        case_id: The case, for the message.

    Returns:
        A LangChain ``AgentMiddleware`` whose ``wrap_model_call`` raises ``HarnessError`` (details:
        ``message_index``, ``message_count``, ``problem``) instead of sending a history that
        ``history_fault`` finds malformed.
    """
    from langchain.agents.middleware import AgentMiddleware

    class HistoryCheck(AgentMiddleware):
        def wrap_model_call(self, request: Any, handler: Callable[[Any], Any]) -> Any:
            messages = list(request.messages)
            fault = history_fault(messages)
            if fault is not None:
                index, problem = fault
                raise HarnessError(
                    f"{case_id}: the LangGraph history to send has {problem} (message {index} of "
                    f"{len(messages)}); the request was not sent. This is a bug in groundeval's agent "
                    "graph or a middleware it runs: please report it with this case",
                    details={"message_index": index, "message_count": len(messages), "problem": problem},
                )
            return handler(request)

    return HistoryCheck()
