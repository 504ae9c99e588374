"""LangGraph write agent: ``langchain.agents.create_agent`` with the HealthChain FHIR tools.

Per case the agent gets the task's system prompt, the note as the user turn, and three tools
bound to the case's patient (``hc_tools.make_tools``: ``lookup_rxnorm``,
``build_medication_statement``, ``validate_medication_statement``). Its final message is the
MedicationStatement JSON. The whole tool-call trace is kept: one ``{"tool", "args", "result",
"ok"}`` per call, in order, also when the run stops early (it goes into the error's details).

How failures are reported:

* The graph reaches ``recursion_limit`` steps (each model turn and each tool round is one step)
  without a final answer: ``AgentLoopError`` (outcome ``agent_loop``).
* A tool raises: the exception becomes an error ``ToolMessage``
  (``{"ok": false, "error": "<Type>: <message>"}``, ``ToolErrorMiddleware``) and the model
  carries on; the trace marks the call ``ok: false``.
* A model reply stops at ``max_tokens``: ``TruncatedError`` before any tool call in that reply
  runs; a reply with ``stop_reason`` ``refusal``: ``RefusalError``.
* The case outlives ``timeout``: each model turn runs under what is left of the case's budget
  (``agents._retry.call_with_retries`` with the case's start), so a turn started with 1 s left
  is abandoned after about 1 s: ``InfraError`` whose details hold ``ran_s`` and ``timeout_s``.
* Anthropic API failures: retried by ``agents._retry`` (the chat model itself is built with
  ``max_retries=0``), then classified by ``agents._classify.classify_anthropic_error``
  (``InfraError``/``AuthError``/``AgentError``).

``langchain``, ``langgraph`` and ``langchain_anthropic`` are imported on first use only.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from groundeval.agent_io import AgentRequest, AgentResult
from groundeval.agents._classify import BadResponse, advise, classify_anthropic_error
from groundeval.agents._langgraph_trace import message_usage, tool_trace
from groundeval.agents._retry import CallSettings, GaveUp, RetryPolicy, call_with_retries
from groundeval.agents._single_call import check_temperature
from groundeval.agents.base import AgentConfig
from groundeval.agents.claude import DEFAULT_MODEL, TRUNCATED, ClaudeAgent
from groundeval.errors import AgentError, AgentLoopError, ConfigError, InfraError, RefusalError, TruncatedError
from groundeval.extras import require_extra

if TYPE_CHECKING:
    from langchain_core.language_models import BaseChatModel
    from langchain_core.messages import BaseMessage
    from langchain_core.tools import BaseTool

__all__ = [
    "DEFAULT_RECURSION_LIMIT",
    "NO_KEY_HINT",
    "LangGraphWriteAgent",
    "build_write_graph",
    "tool_trace",
]

DEFAULT_RECURSION_LIMIT = 25
"""Graph steps per case when ``recursion_limit`` is not given (LangGraph's own default)."""

NO_KEY_HINT = (
    "ANTHROPIC_API_KEY is not set: the agent 'langgraph' (the write task's default) needs it. "
    "Set the key, or run offline with --groundeval-agent=baseline-write (CLI: --agent baseline-write)."
)

ToolsFactory = Callable[[str], "list[BaseTool]"]


def _tool_error(exc: Exception, request: Any) -> str:
    """Content of the error ToolMessage that replaces a tool exception."""
    del request
    return json.dumps({"ok": False, "error": f"{type(exc).__name__}: {exc}"})


def _guard(case_id: str, policy: RetryPolicy, errors: tuple[type[BaseException], ...]) -> Any:
    """Middleware around every model call: retries on API errors, stops at ``max_tokens``."""
    from langchain.agents.middleware import AgentMiddleware
    from langchain_core.messages import AIMessage

    class ModelCallGuard(AgentMiddleware):
        def __init__(self) -> None:
            super().__init__()
            self.attempts = 0
            self.cut: AIMessage | None = None
            self.started = policy.clock()

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

            try:  # each turn is bounded by what is left of the case's budget (call_with_retries)
                done = call_with_retries(attempt, policy, errors=(*errors, BadResponse), advise=advise,
                                         started=self.started)
            except GaveUp as gave_up:
                self.attempts += gave_up.attempts
                raise
            self.attempts += done.attempts
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
    chat_model: BaseChatModel, tools: Sequence[BaseTool], system_prompt: str, middleware: Sequence[Any] = ()
) -> Any:
    """Build the agent graph with ``langchain.agents.create_agent``.

    Args:
        chat_model: Any LangChain chat model with ``bind_tools`` (ChatAnthropic, or the scripted
            ``groundeval.testing.ScriptedChatModel`` in tests).
        tools: The case's tools.
        system_prompt: The task's instructions.
        middleware: Extra middleware, outermost first (the model-call guard).

    Returns:
        The compiled graph; tool exceptions come back to the model as error messages.
    """
    from langchain.agents import create_agent
    from langchain.agents.middleware import ToolErrorMiddleware

    return create_agent(
        chat_model, list(tools), system_prompt=system_prompt,
        middleware=[*middleware, ToolErrorMiddleware(_tool_error)],
    )


class LangGraphWriteAgent:
    """Tool-using write agent on LangGraph (``create_agent``) with Claude via ``ChatAnthropic``.

    Args:
        config: ``model`` (default ``agents.claude.DEFAULT_MODEL``); options ``max_tokens``
            (tokens per reply), ``temperature`` (not sent when None), ``max_retries``,
            ``timeout`` (seconds: the wall-clock bound of the whole case; each model turn gets
            what is left of it, and a turn still running at the bound is abandoned) and
            ``recursion_limit`` (graph steps per case, default
            ``DEFAULT_RECURSION_LIMIT``).
        chat_model: A chat model to use instead of ChatAnthropic, or a function building one per
            request (tests pass ``ScriptedChatModel``); no API key is needed then.
        tools: ``patient_reference -> tools``; default ``hc_tools.make_tools`` over the site
            catalog.
        sleep: Replacement for ``time.sleep`` between retries (tests).

    Raises:
        ConfigError: No ``chat_model`` and ``ANTHROPIC_API_KEY`` is not set, or an option is out
            of range.
    """

    name = "langgraph"
    tasks: frozenset[str] = frozenset({"write"})
    requires: frozenset[str] = frozenset({"tools"})

    @classmethod
    def check_config(cls, config: AgentConfig) -> None:
        """Validate ``config`` without building the agent (the pytest-xdist controller calls this).

        Raises:
            ConfigError: The ``write`` extra is missing, ``ANTHROPIC_API_KEY`` is not set, or an
                option is out of range.
        """
        require_extra("write", "langchain", "the agent 'langgraph'")
        if not os.environ.get("ANTHROPIC_API_KEY"):
            raise ConfigError(NO_KEY_HINT)
        check_temperature(CallSettings.from_config(config, None).temperature, ClaudeAgent.temperature_range, cls.name)

    def __init__(
        self,
        config: AgentConfig | None = None,
        *,
        chat_model: Any = None,
        tools: ToolsFactory | None = None,
        sleep: Callable[[float], None] | None = None,
    ) -> None:
        config = config or AgentConfig()
        require_extra("write", "langchain", "the agent 'langgraph'")
        if chat_model is None and not os.environ.get("ANTHROPIC_API_KEY"):
            raise ConfigError(NO_KEY_HINT)
        self.settings = CallSettings.from_config(config, sleep)
        check_temperature(self.settings.temperature, ClaudeAgent.temperature_range, self.name)
        raw_limit = config.options.get("recursion_limit")
        try:
            self.recursion_limit = DEFAULT_RECURSION_LIMIT if raw_limit is None else int(raw_limit)
        except (TypeError, ValueError):
            self.recursion_limit = 0
        if self.recursion_limit < 2:
            raise ConfigError(f"agent option recursion_limit must be an integer >= 2, got {raw_limit!r}")
        self._chat_model = chat_model
        self._tools = tools
        default = None if chat_model is not None else DEFAULT_MODEL
        self.model: str | None = config.model or getattr(chat_model, "model_name", None) or default
        self._catalog: Any = None

    def _model_for(self, request: AgentRequest) -> BaseChatModel:
        if self._chat_model is None:
            from langchain_anthropic import ChatAnthropic

            kwargs: dict[str, Any] = {
                "model": self.model, "max_tokens": self.settings.max_tokens, "max_retries": 0,
                "timeout": self.settings.retry.timeout_s,
            }
            if self.settings.temperature is not None:
                kwargs["temperature"] = self.settings.temperature
            self._chat_model = ChatAnthropic(**kwargs)
        source = self._chat_model
        model: BaseChatModel = source(request) if callable(source) and not hasattr(source, "invoke") else source
        return model

    def _tools_for(self, patient_reference: str) -> list[BaseTool]:
        if self._tools is not None:
            return self._tools(patient_reference)
        from groundeval.hc_tools import make_tools
        from groundeval.terminology import Catalog

        if self._catalog is None:
            self._catalog = Catalog.load()
        return make_tools(self._catalog, patient_reference)

    def _api_errors(self, model: BaseChatModel) -> tuple[type[BaseException], ...]:
        if type(model).__module__.startswith("langchain_anthropic"):
            import anthropic

            return (anthropic.APIError,)
        return ()

    def _facts(self, state: dict[str, Any], guard: Any) -> dict[str, Any]:
        """What a stopped run leaves: its trace, tool-call count and the tokens already paid."""
        messages = [*state["messages"], *([guard.cut] if guard.cut is not None else [])]
        trace = tool_trace(messages)
        return {"trace": trace, "tool_calls": len(trace), "usage": message_usage(messages, self.model),
                "model": self.model}

    def warmup(self) -> None:
        """Import LangChain, LangGraph, the chat model and the tools (HealthChain) before timing.

        Called once per process before the first case, so the first case's ``latency_s`` is the
        agent's time, not several seconds of imports.
        """
        import langchain.agents  # noqa: F401
        import langgraph.errors  # noqa: F401

        import groundeval.hc_tools  # noqa: F401

        if self._chat_model is None:
            import langchain_anthropic  # noqa: F401
        if self._tools is None and self._catalog is None:
            from groundeval.terminology import Catalog

            self._catalog = Catalog.load()

    def run(self, request: AgentRequest) -> AgentResult:
        """Run the agent graph on one case.

        Returns:
            ``text``: the final reply's text (the MedicationStatement JSON); ``trace``: every tool
            call; ``attempts``: model calls, retries included; ``usage``: tokens summed over the
            replies and ``cost_usd``; ``meta``: ``stop_reason``, ``recursion_limit``,
            ``tool_calls``, ``model_turns``.

        Raises:
            AgentError: The request has no ``patient_reference`` in its context, or the API
                refused the request.
            AgentLoopError: The recursion limit was reached. Like every error raised here, its
                ``details`` hold ``trace``, ``tool_calls`` and ``usage`` (tokens already paid).
            TruncatedError: A reply stopped at ``max_tokens``.
            InfraError: Rate limit, overload, 5xx, timeout or connection error after retries.
        """
        from langchain_core.messages import AIMessage, HumanMessage
        from langgraph.errors import GraphRecursionError

        case = request.case_id
        reference = request.context.get("patient_reference")
        if not isinstance(reference, str) or not reference.strip():
            raise AgentError(
                f"{case}: the request context has no patient_reference; the 'langgraph' agent "
                "runs the write task (--groundeval-task=write)"
            )
        model = self._model_for(request)
        guard = _guard(case, self.settings.retry, self._api_errors(model))
        graph = build_write_graph(model, self._tools_for(reference), request.prompt.system, [guard])
        state: dict[str, Any] = {"messages": []}
        try:
            for chunk in graph.stream(
                {"messages": [HumanMessage(request.prompt.user)]},
                config={"recursion_limit": self.recursion_limit}, stream_mode="values",
            ):
                state = chunk
        except GraphRecursionError as exc:
            facts = self._facts(state, guard)
            trace = facts["trace"]
            last = trace[-1]["tool"] if trace else None
            raise AgentLoopError(
                f"{case}: no final answer within recursion_limit={self.recursion_limit} graph "
                f"steps ({guard.attempts} model calls, {len(trace)} tool calls, the last {last!r}); the agent "
                "is looping. Raise recursion_limit only if the trace shows progress",
                attempts=guard.attempts,
                details={"recursion_limit": self.recursion_limit, "limit": self.recursion_limit,
                         "model_calls": guard.attempts, "last_tool": last, **facts},
            ) from exc
        except GaveUp as gave_up:
            error = classify_anthropic_error(
                gave_up.error, case, attempts=guard.attempts, note=gave_up.note, model=self.model
            )
            error.details.update(self._facts(state, guard))
            raise error from gave_up.error
        except AgentError as exc:
            exc.attempts = exc.attempts or guard.attempts
            for key, value in self._facts(state, guard).items():
                exc.details.setdefault(key, value)
            raise
        messages: list[BaseMessage] = list(state["messages"])
        final = messages[-1] if messages else None
        if not isinstance(final, AIMessage):
            raise AgentError(f"{case}: the graph ended without a model reply")
        reported = final.response_metadata.get("model_name") or final.response_metadata.get("model")
        trace = tool_trace(messages)
        turns = sum(isinstance(m, AIMessage) for m in messages)
        return AgentResult(
            text=final.text,
            model=str(reported) if reported else self.model,
            usage=message_usage(messages, str(reported or self.model)),
            attempts=guard.attempts,
            trace=trace,
            meta={
                "stop_reason": final.response_metadata.get("stop_reason"),
                "recursion_limit": self.recursion_limit,
                "tool_calls": len(trace),
                "model_turns": turns,
            },
        )
