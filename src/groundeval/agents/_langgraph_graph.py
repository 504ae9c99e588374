"""The LangGraph agent's graph: ``create_agent`` with a model-call guard and tool errors as messages.

Split from ``langgraph_agent`` (which re-exports ``build_write_graph``); LangChain is imported
inside the functions, so importing this module costs nothing.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from groundeval.agents._langgraph_history import history_check
from groundeval.agents.claude import TRUNCATED
from groundeval.errors import InfraError, RefusalError, TruncatedError
from groundeval.models.base import ModelRequest
from groundeval.models.classify import BadResponse, advise
from groundeval.models.retry import Completed, GaveUp, RetryPolicy, call_with_retries

if TYPE_CHECKING:
    from langchain_core.language_models import BaseChatModel
    from langchain_core.tools import BaseTool

    from groundeval.models.policy import PolicyModel

__all__ = ["build_write_graph", "model_call_guard", "tool_error", "turn_request"]


def tool_error(exc: Exception, request: Any) -> str | None:
    """Content of the error ToolMessage that replaces a tool exception; None lets an ``InfraError`` through.

    A tool that fails is the agent's to handle; a tool that cannot be reached (an MCP server whose
    connection dropped) ends the case as ``infra_error`` instead of being shown to the model.
    """
    del request
    if isinstance(exc, InfraError):
        return None
    return json.dumps({"ok": False, "error": f"{type(exc).__name__}: {exc}"})


def turn_request(request: Any, case_id: str) -> ModelRequest:
    """What one model turn sends, as a ``ModelRequest`` (its text, for the pre-flight and the spending limit).

    Args:
        request: LangChain's ``ModelRequest`` of the turn (``system_message``, ``messages``).
        case_id: The case, the request's label.
    """
    system = getattr(request, "system_message", None)
    messages = tuple(
        {"role": str(getattr(m, "type", "user")), "content": str(getattr(m, "content", ""))}
        for m in (getattr(request, "messages", None) or ())
    )
    return ModelRequest(messages=messages, system=str(getattr(system, "content", "") or ""), label=case_id)


def _turn_cost(done: Completed[Any], model: str | None) -> Any:
    """The list price of a turn's reply, USD (None when unknown)."""
    from langchain_core.messages import AIMessage

    from groundeval.agents._langgraph_trace import message_usage

    result = getattr(done.value, "result", [done.value])
    replies = [m for m in result if isinstance(m, AIMessage)]
    return message_usage(replies, model).get("cost_usd") if replies else None


def model_call_guard(
    case_id: str, policy: RetryPolicy, errors: tuple[type[BaseException], ...], model: PolicyModel[Any] | None = None,
) -> Any:
    """Middleware around every model call: pre-flight, spending limit, retries on API errors, stops at ``max_tokens``.

    With ``model`` (the agent's ``provider_model``, ``models.policy.PolicyModel``), each turn is
    checked against the model's context before it is sent (``PolicyModel.preflight``) and made
    under the run's spending limit (``PolicyModel.limited``), as a single-call agent's call is.
    Its ``calls`` list each model call's ``started_at`` (ISO-8601 UTC), ``latency_s`` (seconds,
    retries included) and ``attempts``, in order: one per model reply, for the conversation.
    """
    from langchain.agents.middleware import AgentMiddleware
    from langchain_core.messages import AIMessage

    class ModelCallGuard(AgentMiddleware):
        def __init__(self) -> None:
            super().__init__()
            self.attempts = 0
            self.cut: AIMessage | None = None
            self.started = policy.clock()
            self.calls: list[dict[str, Any]] = []  # each model call's start and seconds, in order

        def wrap_model_call(self, request: Any, handler: Callable[[Any], Any]) -> Any:
            ran = policy.clock() - self.started
            if ran >= policy.timeout_s:  # --groundeval-timeout bounds the whole case, every turn included
                raise InfraError(
                    f"{case_id}: the case ran {ran:.2f} s, its whole {policy.timeout_s:g} s bound "
                    "(--groundeval-timeout), before this model turn; raise it or simplify the case",
                    attempts=self.attempts, details={"ran_s": round(ran, 3), "timeout_s": policy.timeout_s},
                )
            def attempt(_left: float) -> Any:
                if not errors:  # a scripted model: its exceptions are the test's, let them through
                    return handler(request)
                try:
                    return handler(request)
                except errors:
                    raise
                except json.JSONDecodeError as exc:  # a 2xx body that is not JSON (cut off)
                    raise BadResponse.from_text(exc.doc) from exc
                except (AttributeError, TypeError) as exc:  # ChatAnthropic reading an HTML page or odd JSON
                    raise BadResponse(
                        "unreadable", f"a 2xx body ChatAnthropic could not read ({type(exc).__name__}: {exc}); "
                        "an HTML page or JSON that is not a Messages API answer",
                    ) from exc

            def turn() -> Completed[Any]:  # bounded by what is left of the case's budget (call_with_retries)
                return call_with_retries(attempt, policy, errors=(*errors, BadResponse), advise=advise,
                                         started=self.started)

            started_at = datetime.now(UTC).isoformat()
            began = policy.clock()
            try:
                if model is None:  # a scripted chat model: no provider behind it
                    done = turn()
                else:
                    sent = turn_request(request, case_id)
                    model.preflight(sent)
                    done = model.limited(sent, turn, lambda d: _turn_cost(d, model.name))
            except GaveUp as gave_up:
                self.attempts += gave_up.attempts
                raise
            self.attempts += done.attempts
            self.calls.append({"started_at": started_at, "latency_s": policy.clock() - began,
                               "attempts": done.attempts})
            result = getattr(done.value, "result", [done.value])
            message = next((m for m in reversed(result) if isinstance(m, AIMessage)), None)
            stop = None if message is None else message.response_metadata.get("stop_reason")
            if stop == "refusal":
                raise RefusalError(
                    f"{case_id}: the model declined to answer (stop_reason=refusal); it counts as an empty "
                    "answer in the run's means",
                    details={"stop_reason": stop, "partial_text": message.text if message else ""},
                )
            if stop in TRUNCATED:
                assert message is not None
                self.cut = message
                raise TruncatedError(
                    f"{case_id}: a model reply was cut off (stop_reason={stop}); its tool calls "
                    "were not run and nothing is scored. Raise --groundeval-max-tokens",
                    details={"stop_reason": stop, "partial_text": message.text,
                             "partial_tool_calls": len(message.tool_calls)},
                )
            return done.value

    return ModelCallGuard()


def build_write_graph(
    chat_model: BaseChatModel, tools: Sequence[BaseTool], system_prompt: str, middleware: Sequence[Any] = (),
    case_id: str = "",
) -> Any:
    """Build the agent graph with ``langchain.agents.create_agent``.

    Args:
        chat_model: Any LangChain chat model with ``bind_tools`` (ChatAnthropic, or the scripted
            ``groundeval.testing.ScriptedChatModel`` in tests).
        tools: The case's tools.
        system_prompt: The task's instructions.
        middleware: Extra middleware, outermost first (the model-call guard).
        case_id: The case, named by the history check's message.

    Returns:
        The compiled graph; tool exceptions come back to the model as error messages; the
        history check (``_langgraph_history.history_check``) runs innermost, on exactly the
        messages each model call would send, and raises ``HarnessError`` for a malformed one.
    """
    from langchain.agents import create_agent
    from langchain.agents.middleware import ToolErrorMiddleware

    return create_agent(
        chat_model, list(tools), system_prompt=system_prompt,
        middleware=[*middleware, ToolErrorMiddleware(tool_error), history_check(case_id)],
    )
