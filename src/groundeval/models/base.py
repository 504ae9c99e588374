"""The model layer's protocol: ``Model``, ``ModelRequest``, ``ModelResponse``, ``ModelRole``.

What a model is asked (``ModelRequest``), what it answers (``ModelResponse``) and who asks
(``ModelRole``).

Every model call groundeval makes, an agent's or a judge's, goes through a ``Model``: one retry
layer (``models.retry``), one failure classification (``models.classify``), one price table
(``models.pricing``), one spending limit (``models.spend``) and one redaction of what is written
(``groundeval.redaction``). A ``Model`` is made from a spec string by ``models.get_model``
(``anthropic/claude-opus-4-8``, ``openai-compatible/<name>@<base-url>``): a ``models.policy.PolicyModel``
over one of ``models.providers``; the scripted model for tests is in ``groundeval.testing``.

Nothing here imports a provider SDK.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, runtime_checkable

from groundeval.scoring import Metric

__all__ = ["ROLES", "Message", "Model", "ModelRequest", "ModelResponse", "ModelRole", "ToolCall"]

ModelRole = Literal["agent", "judge"]
"""Why a model is called: to answer a case (``agent``) or to grade an answer (``judge``). The role
is recorded in the run record with the model's spec and settings, and it keys the response cache."""

ROLES: tuple[ModelRole, ...] = ("agent", "judge")

Message = dict[str, Any]
"""One turn: ``{"role": "user" | "assistant", "content": str}`` (the system prompt is apart)."""


@dataclass(frozen=True, slots=True)
class ToolCall:
    """A tool call the model asked for.

    Attributes:
        id: The provider's id of the call.
        name: The tool's name.
        args: The arguments, as the JSON object the model wrote.
    """

    id: str
    name: str
    args: dict[str, Any]


@dataclass(frozen=True, slots=True)
class ModelRequest:
    """One generation asked of a model.

    Attributes:
        messages: The conversation, oldest first (``Message`` dicts); at least one user turn.
        system: Fixed instructions (the provider's system prompt; empty for none). Providers
            that cache prompt prefixes mark it cacheable.
        tools: Tool definitions in the provider-neutral JSON-schema form
            ``{"name", "description", "input_schema"}``; empty for none.
        max_tokens: Output limit for this request, tokens; None takes the model's setting.
        label: What the request is for (a case id, ``<case>/judge/<criterion>``), used in error
            messages and as the spending limit's label; never sent to the provider.
    """

    messages: tuple[Message, ...]
    system: str = ""
    tools: tuple[dict[str, Any], ...] = ()
    max_tokens: int | None = None
    label: str = ""

    @classmethod
    def single(cls, user: str, *, system: str = "", label: str = "", max_tokens: int | None = None) -> ModelRequest:
        """A one-turn request: ``system`` instructions and one ``user`` message."""
        return cls(messages=({"role": "user", "content": user},), system=system, label=label, max_tokens=max_tokens)

    @property
    def chars(self) -> int:
        """Characters of the system prompt and every message's text (for estimates)."""
        return len(self.system) + sum(len(str(m.get("content", ""))) for m in self.messages)


@dataclass(frozen=True, slots=True)
class ModelResponse:
    """What a model answered and what it cost.

    Attributes:
        text: The answer text (the text blocks joined).
        model: The model id as the provider reported it.
        stop_reason: Why generation stopped, in the provider's own words (``end_turn``,
            ``stop``, ``tool_use``...).
        usage: ``input_tokens``, ``output_tokens``, ``cache_creation_input_tokens``,
            ``cache_read_input_tokens`` (tokens) and ``cost_usd`` (USD; None when unknown).
        request_id: The provider's request id, or None.
        attempts: Calls made, retries included.
        retry_wait_s: Seconds spent waiting between attempts.
        tool_calls: Tool calls the model asked for, in order.
        meta: Other JSON-safe facts of the call (``max_tokens``, ``temperature``).
        started_at: When ``Model.generate`` started the call, ISO-8601 UTC (None from a model
            that does not say).
        latency_s: Seconds ``Model.generate`` took, retries and their waits included (None likewise).
    """

    text: str
    model: str | None
    stop_reason: str | None
    usage: dict[str, Metric]
    request_id: str | None = None
    attempts: int = 1
    retry_wait_s: float = 0.0
    tool_calls: tuple[ToolCall, ...] = ()
    meta: dict[str, Any] = field(default_factory=dict)
    started_at: str | None = None
    latency_s: float | None = None


@runtime_checkable
class Model(Protocol):
    """A model groundeval can call: one provider, one model id, one role, fixed settings.

    Implementations: ``models.policy.PolicyModel`` (over a provider of ``models.providers``),
    ``groundeval.testing.ScriptedModel``. Make one with ``models.get_model(spec, role=...)``.

    Attributes:
        spec: The canonical spec it was made from (``anthropic/claude-opus-4-8``).
        role: ``agent`` or ``judge``.
        name: The model id sent to the provider.
        max_tokens: Output limit per call, tokens (a request may ask for less or more).
        temperature: Sampling temperature sent, or None for the provider's default.
    """

    spec: str
    role: ModelRole
    name: str | None
    max_tokens: int
    temperature: float | None

    def generate(self, request: ModelRequest) -> ModelResponse:
        """Send ``request`` (retried on infrastructure errors) and return the answer.

        Raises:
            groundeval.errors.AgentError: Its subclasses say why there is no answer:
                ``AuthError`` (key rejected), ``RunStopError`` (a request no case can survive),
                ``CaseTooLargeError``, ``InfraError`` (rate limits, 5xx, timeouts after the
                retries), ``RefusalError``, ``TruncatedError`` (cut off at ``max_tokens``).
        """
        ...

    def settings(self) -> dict[str, Any]:
        """The JSON-safe facts that pin this model's behaviour.

        Returns:
            ``spec``, ``role``, ``model``, ``max_tokens``, ``temperature`` (recorded in the run
            record and part of cache keys).
        """
        ...
