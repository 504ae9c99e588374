"""LangGraph agent: ``langchain.agents.create_agent`` with the HealthChain FHIR tools.

Per case the agent gets the task's system prompt, the task's user turn, and the tools the task
declares for the case (``AgentRequest.tools``, from ``Task.case_tools``), for the built-in tasks:

* a Bundle task (extraction, reconcile, labs, summary): the read-only tools of
  ``fhir.read_tools.make_read_tools`` (``get_resources``, ``resolve_reference``, ``lookup_code``,
  and ``get_observations`` over a Bundle with Observations) over the case's Bundle;
* the write task: three tools bound to the patient (``tasks.write.tools.make_tools``:
  ``lookup_rxnorm``, ``build_medication_statement``, ``validate_medication_statement``).

Its final message is the answer (the medication list, the MedicationStatement JSON). The agent adds
nothing to the prompt: whether the Bundle is also pasted there is the task's choice (extraction's
``bundle_in_prompt``). ``langgraph-fhir`` (``LangGraphFHIRAgent``) is the same agent pinned to the
read tools: it requires the ``fhir_bundle`` capability, so on a task without a Bundle it stops
before any case. The whole tool-call trace is kept: one ``{"tool", "args", "result", "ok"}`` per
call, in order, also when the run stops early (it goes into the error's details).

How failures are reported:

* The graph reaches ``recursion_limit`` steps (each model turn and each tool round is one step)
  without a final answer: ``AgentLoopError`` (outcome ``agent_loop``).
* A tool raises: the exception becomes an error ``ToolMessage``
  (``{"ok": false, "error": "<Type>: <message>"}``, ``ToolErrorMiddleware``) and the model
  carries on; the trace marks the call ``ok: false``.
* The history about to be sent breaks the tool-call pairing (a tool result not right after its
  tool call, a tool call left unanswered): ``HarnessError`` (outcome ``harness_error``), no request
  sent (``_langgraph_history``).
* A model reply stops at ``max_tokens``: ``TruncatedError`` before any tool call in that reply
  runs; a reply with ``stop_reason`` ``refusal``: ``RefusalError``.
* The case outlives ``timeout``: each model turn runs under what is left of the case's budget
  (``models.retry.call_with_retries`` with the case's start), so a turn started with 1 s left
  is abandoned after about 1 s: ``InfraError`` whose details hold ``ran_s`` and ``timeout_s``.
* Anthropic API failures: retried by ``models.retry`` (the chat model itself is built with
  ``max_retries=0``), then classified by ``models.classify.classify_anthropic_error``
  (``InfraError``/``AuthError``/``AgentError``).
* The model policy: the agent's ``provider_model`` is the ``anthropic`` model of the same spec
  and options (``models.policy.PolicyModel``), and every turn goes through its pre-flight (a turn
  too large for the model's context is ``CaseTooLargeError`` before it is sent) and the run's
  spending limit (``--groundeval-max-cost``: each turn reserved at list price and settled at its
  reply's price). The turn itself is made by ``ChatAnthropic`` (LangChain binds the tools and
  reads the tool calls in its own terms), so the policy wraps that call rather than making it:
  the retries, deadline, classification, refusal and truncation rules are the same functions a
  single-call agent's call goes through, applied here by ``_langgraph_graph.model_call_guard``.
  With a chat model passed in (tests' ``ScriptedChatModel``) there is no provider and
  ``provider_model`` is None.

``langchain``, ``langgraph`` and ``langchain_anthropic`` are imported on first use only.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from groundeval.agent_io import AgentRequest, AgentResult
from groundeval.agents._case_tools import RequestToolsFactory, bundle_tools, request_tools
from groundeval.agents._langgraph_graph import build_write_graph, model_call_guard
from groundeval.agents._langgraph_trace import conversation, message_usage, tool_trace
from groundeval.agents.base import AgentConfig, offline_hint
from groundeval.agents.claude import DEFAULT_MODEL, REJECTED_KEY_HINT
from groundeval.errors import AgentError, AgentLoopError, ConfigError
from groundeval.extras import EXTRAS, require_extra
from groundeval.models import get_model
from groundeval.models.classify import classify_anthropic_error
from groundeval.models.providers.anthropic import AnthropicProvider
from groundeval.models.providers.base import check_temperature
from groundeval.models.retry import CallSettings, GaveUp

if TYPE_CHECKING:
    from langchain_core.language_models import BaseChatModel
    from langchain_core.messages import BaseMessage
    from langchain_core.tools import BaseTool

    from groundeval.models.policy import PolicyModel

__all__ = [
    "DEFAULT_RECURSION_LIMIT",
    "NO_KEY_HINT",
    "LangGraphAgent",
    "LangGraphFHIRAgent",
    "LangGraphWriteAgent",
    "build_write_graph",
    "tool_trace",
]

DEFAULT_RECURSION_LIMIT = 25
"""Graph steps per case when ``recursion_limit`` is not given (LangGraph's own default)."""

NO_KEY_HINT = (
    "ANTHROPIC_API_KEY is not set: the LangGraph agents (langgraph, langgraph-fhir, langgraph-mcp, langgraph-rest) "
    "need it. "
    f"Set the key, or {offline_hint()}."
)



def _require_write(name: str) -> None:
    """Raise the one-line ``ConfigError`` naming the ``write`` extra when one of its modules is missing."""
    for module in EXTRAS["write"]:
        require_extra("write", module, f"the agent {name!r}")


class LangGraphAgent:
    """Tool-using agent on LangGraph (``create_agent``) with Claude via ``ChatAnthropic``.

    Runs any task that provides ``tools``, with the tools the task declares for the case
    (``AgentRequest.tools``: the read tools over a Bundle task's record, the write task's three).

    Args:
        config: ``model`` (default ``agents.claude.DEFAULT_MODEL``); options ``max_tokens``
            (tokens per reply), ``temperature`` (not sent when None), ``max_retries``,
            ``timeout`` (seconds: the wall-clock bound of the whole case; each model turn gets
            what is left of it, and a turn still running at the bound is abandoned) and
            ``recursion_limit`` (graph steps per case, default
            ``DEFAULT_RECURSION_LIMIT``).
        chat_model: A chat model to use instead of ChatAnthropic, or a function building one per
            request (tests pass ``ScriptedChatModel``); no API key is needed then.
        tools: ``request -> tools`` instead of the case's own (``request.tools()``; tests wrap
            or replace them).
        sleep: Replacement for ``time.sleep`` between retries (tests).

    Raises:
        ConfigError: No ``chat_model`` and ``ANTHROPIC_API_KEY`` is not set, or an option is out
            of range.
    """

    thread_safe = True
    """Safe to call from several threads at once (``--groundeval-concurrency`` defaults to 4)."""

    name = "langgraph"
    requires: frozenset[str] = frozenset({"tools"})
    tool_transport = "inprocess"
    """It builds the case's tools in its own process (``groundeval.agents.base.check_tool_transport``)."""

    @classmethod
    def check_config(cls, config: AgentConfig) -> None:
        """Validate ``config`` without building the agent (the pytest-xdist controller calls this).

        Raises:
            ConfigError: The ``write`` extra is missing, ``ANTHROPIC_API_KEY`` is not set, or an
                option is out of range.
        """
        _require_write(cls.name)
        if not os.environ.get("ANTHROPIC_API_KEY"):
            raise ConfigError(NO_KEY_HINT)
        temperature = CallSettings.from_config(config, None).temperature
        check_temperature(temperature, AnthropicProvider.temperature_range, f"the agent {cls.name!r}")

    def __init__(
        self,
        config: AgentConfig | None = None,
        *,
        chat_model: Any = None,
        tools: RequestToolsFactory | None = None,
        sleep: Callable[[float], None] | None = None,
    ) -> None:
        config = config or AgentConfig()
        _require_write(self.name)
        if chat_model is None and not os.environ.get("ANTHROPIC_API_KEY"):
            raise ConfigError(NO_KEY_HINT)
        self.settings = CallSettings.from_config(config, sleep)
        check_temperature(self.settings.temperature, AnthropicProvider.temperature_range, f"the agent {self.name!r}")
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
        # the model whose policy every turn goes through (pre-flight, spending limit); None with a chat model passed in
        self.provider_model: PolicyModel[Any] | None = None
        if chat_model is None:
            self.provider_model = get_model(
                f"anthropic/{self.model}", "agent", options=config.options, owner=f"the agent {self.name!r}",
                hints={"no_key": NO_KEY_HINT, "rejected_key": REJECTED_KEY_HINT}, sleep=sleep,
            )
            self.provider_model.single_call = False  # several turns per case: batch mode refuses it

    def _model_for(self, request: AgentRequest) -> BaseChatModel:
        if self._chat_model is None:
            from groundeval.models.chat import chat_model

            self._chat_model = chat_model(f"anthropic/{self.model}", self.settings)
        source = self._chat_model
        model: BaseChatModel = source(request) if callable(source) and not hasattr(source, "invoke") else source
        return model

    def _site_catalog(self) -> Any:
        if self._catalog is None:
            from groundeval.terminology import Catalog

            self._catalog = Catalog.load()
        return self._catalog

    def _tools_for(self, request: AgentRequest) -> list[BaseTool]:
        """The case's tools as its task declares them (``agents._case_tools.request_tools``).

        Raises:
            AgentError: The task's tools cannot be built for the case (a Bundle that is not valid
                FHIR R4B), or a request built without a task has neither a Bundle nor a patient.
        """
        return request_tools(request, self._site_catalog, f"the {self.name!r} agent", self._tools)

    def _stream_config(self) -> dict[str, Any]:
        """The graph's run config: ``recursion_limit``."""
        return {"recursion_limit": self.recursion_limit}

    def _api_errors(self, model: BaseChatModel) -> tuple[type[BaseException], ...]:
        from groundeval.models.chat import api_errors

        return api_errors(model)

    def _facts(self, state: dict[str, Any], guard: Any) -> dict[str, Any]:
        """What a stopped run leaves: its trace, tool-call count and the tokens already paid."""
        messages = [*state["messages"], *([guard.cut] if guard.cut is not None else [])]
        trace = tool_trace(messages)
        return {"trace": trace, "tool_calls": len(trace), "usage": message_usage(messages, self.model),
                "model": self.model, "messages": conversation(messages, guard.calls, self.model)}

    def warmup(self) -> None:
        """Import LangChain, LangGraph, the chat model and the tools (HealthChain) before timing.

        Called once per process before the first case, so the first case's ``latency_s`` is the
        agent's time, not several seconds of imports.
        """
        import langchain.agents  # noqa: F401
        import langgraph.errors  # noqa: F401

        import groundeval.tasks.write.tools  # noqa: F401
        from groundeval._healthchain import module

        module("healthchain.tools")  # the read tools' FHIRToolkit (HealthChain, fhir.resources)
        if self._chat_model is None:
            from groundeval.models.chat import import_provider

            import_provider("anthropic")
        if self._tools is None:
            self._site_catalog()

    def run(self, request: AgentRequest) -> AgentResult:
        """Run the agent graph on one case.

        Returns:
            ``text``: the final reply's text (the task's answer: a medication list, a
            MedicationStatement); ``trace``: every tool call; ``messages``: every model reply
            (with its call's timing and usage) and tool result; ``attempts``: model calls,
            retries included; ``usage``: tokens summed over the replies and ``cost_usd``;
            ``meta``: ``stop_reason``, ``recursion_limit``, ``tool_calls``, ``model_turns``.

        Raises:
            AgentError: The request context has neither a ``bundle`` nor a ``patient_reference``
                (see ``_tools_for``), the Bundle is not valid FHIR R4B, or the API refused the
                request.
            AgentLoopError: The recursion limit was reached. Like every error raised here, its
                ``details`` hold ``trace``, ``tool_calls`` and ``usage`` (tokens already paid).
            TruncatedError: A reply stopped at ``max_tokens``.
            InfraError: Rate limit, overload, 5xx, timeout or connection error after retries.
        """
        from langchain_core.messages import AIMessage, HumanMessage
        from langgraph.errors import GraphRecursionError

        case = request.case_id
        tools = self._tools_for(request)
        model = self._model_for(request)
        guard = model_call_guard(case, self.settings.retry, self._api_errors(model), self.provider_model)
        graph = build_write_graph(model, tools, request.prompt.system, [guard], case_id=case)
        state: dict[str, Any] = {"messages": []}
        try:
            for chunk in graph.stream(
                {"messages": [HumanMessage(request.prompt.user)]},
                config=self._stream_config(), stream_mode="values",
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
                gave_up.error, case, attempts=guard.attempts, note=gave_up.note, model=self.model,
                key_hint=REJECTED_KEY_HINT,
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
            messages=conversation(messages, guard.calls, str(reported or self.model)),
            meta={
                "stop_reason": final.response_metadata.get("stop_reason"),
                "recursion_limit": self.recursion_limit,
                "tool_calls": len(trace),
                "model_turns": turns,
            },
        )


LangGraphWriteAgent = LangGraphAgent
"""The class's name from when it ran the write task only (kept for ``module:attribute`` specs)."""


class LangGraphFHIRAgent(LangGraphAgent):
    """``langgraph-fhir``: the LangGraph agent pinned to the read-only FHIR tools.

    Requires ``fhir_bundle`` as well as ``tools``, so on a task whose context holds no Bundle
    (write) the run stops with a usage error before any case, instead of failing every case.
    """

    name = "langgraph-fhir"
    requires: frozenset[str] = frozenset({"tools", "fhir_bundle"})

    def _tools_for(self, request: AgentRequest) -> list[BaseTool]:
        """The case's read tools: the task's (it provides ``fhir_bundle``), or over a hand-built request's Bundle.

        Raises:
            AgentError: No Bundle, or it is not valid FHIR R4B.
        """
        if self._tools is not None or request.tools is not None:
            return super()._tools_for(request)
        return bundle_tools(request.case_id, request.context, self._site_catalog, f"the {self.name!r} agent")
