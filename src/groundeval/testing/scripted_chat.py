"""A scripted LangChain chat model: drives a real LangGraph agent offline, no network, no key.

LangChain's own fake chat models raise ``NotImplementedError`` from ``bind_tools`` and
``FakeMessagesListChatModel`` silently wraps around its list. This subclass
returns itself from ``bind_tools``, plays its steps in order, fails loudly when they run out,
and gives every tool call a fresh id (LangGraph routes on ids; a repeated id breaks the loop).

A step is an ``AIMessage``, a plain string (a final text answer), or a function of the
messages the model was called with that returns either; functions let a script react to real
tool results (e.g. answer with the resource the build tool returned).

Import this module only where LangChain is wanted: it imports ``langchain_core`` at once.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any

from groundeval.extras import require_extra

require_extra("write", "langchain_core", "groundeval's scripted chat model")

from langchain_core.callbacks import CallbackManagerForLLMRun  # noqa: E402
from langchain_core.language_models.fake_chat_models import FakeMessagesListChatModel  # noqa: E402
from langchain_core.messages import AIMessage, BaseMessage, ToolMessage  # noqa: E402
from langchain_core.outputs import ChatGeneration, ChatResult  # noqa: E402
from pydantic import Field  # noqa: E402

__all__ = [
    "ScriptExhaustedError",
    "ScriptedChatModel",
    "Step",
    "answer_with_last_result",
    "call",
    "last_tool_result",
]

Step = AIMessage | str | Callable[[list[BaseMessage]], "AIMessage | str"]
"""One scripted model turn: a message, a final text, or a function of the conversation."""


class ScriptExhaustedError(RuntimeError):
    """The model was called more times than its script has steps (and ``repeat_last`` is off)."""


def call(name: str, **args: Any) -> AIMessage:
    """Return an ``AIMessage`` that calls one tool.

    Args:
        name: Tool name, e.g. ``"lookup_rxnorm"``.
        **args: The tool arguments (JSON-safe).

    Returns:
        A message with one tool call and no text; its id is assigned when it is played.
    """
    return AIMessage(content="", tool_calls=[{"name": name, "args": dict(args), "id": "pending"}])


def last_tool_result(messages: Sequence[BaseMessage], tool: str | None = None) -> Any:
    """Return the content of the latest ``ToolMessage`` (from ``tool`` if given), JSON-decoded.

    Args:
        messages: The conversation so far.
        tool: Tool name to look for, or None for any tool.

    Returns:
        The decoded JSON value, the raw string when it is not JSON, or None when no tool
        message matches.
    """
    for message in reversed(messages):
        if isinstance(message, ToolMessage) and (tool is None or message.name == tool):
            content = message.content
            if not isinstance(content, str):
                return content
            try:
                return json.loads(content)
            except json.JSONDecodeError:
                return content
    return None


def answer_with_last_result(
    tool: str, key: str | None = None
) -> Callable[[list[BaseMessage]], str]:
    """Step factory: answer with the JSON of the latest result of ``tool``.

    Args:
        tool: The tool whose result becomes the answer (e.g. ``"build_medication_statement"``).
        key: Take this key of the result object instead of the whole result.

    Returns:
        A step function producing the final answer text.
    """

    def step(messages: list[BaseMessage]) -> str:
        value = last_tool_result(messages, tool)
        if key is not None and isinstance(value, dict):
            value = value.get(key)
        return json.dumps(value)

    return step


class ScriptedChatModel(FakeMessagesListChatModel):
    """A fake chat model that plays scripted steps and supports ``bind_tools``.

    Attributes:
        steps: The turns to play, in order (``Step`` values).
        repeat_last: Replay the last step forever instead of raising when the script runs out
            (to provoke a recursion-limit stop).
        calls: How many times the model has been called.
        seen: The messages of every call, for assertions.
        bound_tools: Names of the tools passed to ``bind_tools`` (last call).
        model_name: Reported in ``response_metadata["model_name"]``.
    """

    responses: list[BaseMessage] = Field(default_factory=list)
    steps: list[Any] = Field(default_factory=list)
    repeat_last: bool = False
    calls: int = 0
    seen: list[list[BaseMessage]] = Field(default_factory=list)
    bound_tools: list[str] = Field(default_factory=list)
    model_name: str = "scripted"

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> ScriptedChatModel:
        """Record the tool names and return the model itself (the script decides the calls)."""
        del kwargs
        self.bound_tools = [str(getattr(t, "name", t)) for t in tools]
        return self

    def _next_step(self, messages: list[BaseMessage]) -> AIMessage:
        if self.calls >= len(self.steps):
            if not (self.repeat_last and self.steps):
                raise ScriptExhaustedError(
                    f"scripted model called {self.calls + 1} times but its script has "
                    f"{len(self.steps)} steps; add steps or set repeat_last=True"
                )
            step = self.steps[-1]
        else:
            step = self.steps[self.calls]
        if callable(step) and not isinstance(step, BaseMessage):
            step = step(messages)
        if isinstance(step, str):
            return AIMessage(content=step)
        if not isinstance(step, AIMessage):
            kind = type(step).__name__
            raise TypeError(f"a script step must give an AIMessage or str, got {kind}")
        return step

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        del stop, run_manager, kwargs
        step = self._next_step(list(messages))
        self.seen.append(list(messages))
        self.calls += 1
        tool_calls = [
            {**tc, "id": f"call_{self.calls}_{i}"} for i, tc in enumerate(step.tool_calls)
        ]
        metadata = {"model_name": self.model_name, **step.response_metadata}
        message = AIMessage(
            content=step.content,
            tool_calls=tool_calls,
            response_metadata=metadata,
            usage_metadata=step.usage_metadata,
        )
        return ChatResult(generations=[ChatGeneration(message=message)])

    @property
    def _llm_type(self) -> str:
        return "groundeval-scripted-chat-model"
