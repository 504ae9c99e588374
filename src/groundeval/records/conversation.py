"""A case's conversation: what the agent was sent and every message that came back.

The runner keeps it on the case record (``CaseRecord.conversation``), built once from the request
the agent got (the task's system and user prompt) and the messages the agent's model calls left
(``AgentResult.messages``, written by the model layer: ``groundeval.models.transcript``), so it is
captured where the calls pass and never re-derived later. A rule-based agent makes no model call:
its conversation is the prompt alone, and its answer is the record's ``raw_output``.

Two ways to keep the prompt (``--groundeval-conversation``):

* ``full`` (the default): the system and user prompt are the first two messages;
* ``reference``: for records of real patients, the prompt's text is left out and the case keeps a
  ``PromptReference`` instead (the case file's name and SHA-256, the task and the version of the
  package that ships it, the task options are the run's ``settings.task_options``, and the
  prompt's SHA-256); ``groundeval.tasks.prompt_reference.render_prompt`` renders it again from the
  case file, exactly, or says why it cannot. The messages after the prompt (replies, tool
  results) are kept in either mode, as the raw answer and the tool trace always were (docs/reference/privacy.md).

Caps (``groundeval.records.caps``): each message's text keeps its first
``MAX_MESSAGE_CHARS`` characters, a conversation its first ``MAX_MESSAGES`` messages, and each
tool call's arguments the caps of ``parsed``; what was cut is in the record's ``capped`` by path
(``conversation.messages[1].content`` -> characters). Every string passes through
``redaction.clean`` with the rest of the record.
"""

from __future__ import annotations

from functools import cache
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from groundeval.records.caps import cap_lists, cut_text

if TYPE_CHECKING:
    from groundeval.agent_io import Prompt

__all__ = [
    "MAX_MESSAGES",
    "MAX_MESSAGE_CHARS",
    "MODES",
    "Conversation",
    "ConversationMessage",
    "ModelCall",
    "PromptReference",
    "cap_conversation",
    "make_conversation",
    "task_version",
]

MODES = ("full", "reference")
"""The values of ``--groundeval-conversation``."""
MAX_MESSAGE_CHARS = 200_000
"""Most characters of one message's text kept in a case record (the raw answer's limit)."""
MAX_MESSAGES = 200
"""Most messages of one conversation kept in a case record (prompt included)."""


class ModelCall(BaseModel):
    """The facts of the model call that produced a reply.

    Attributes:
        started_at: When the call started, ISO-8601 UTC (None when the model did not say).
        latency_s: Seconds it took, retries and their waits included.
        usage: Its tokens (``input_tokens``, ``output_tokens``, ...) and ``cost_usd`` (USD, None when unpriced).
        attempts: Calls made for it, retries included.
        stop_reason: Why generation stopped, in the provider's words.
        model: The model id the provider reported.
        request_id: The provider's request id.
    """

    model_config = ConfigDict(frozen=True)

    started_at: str | None = None
    latency_s: float | None = None
    usage: dict[str, Any] = Field(default_factory=dict)
    attempts: int | None = None
    stop_reason: str | None = None
    model: str | None = None
    request_id: str | None = None


class ConversationMessage(BaseModel):
    """One message: the prompt's two, a model reply, or a tool result.

    Attributes:
        role: ``system``, ``user``, ``assistant`` or ``tool``.
        content: Its text (a tool result as the model read it).
        tool_calls: A reply's tool calls, each ``{"id", "name", "args"}``.
        tool_call_id: A tool result's call id.
        name: A tool result's tool name.
        ok: A tool result: False when the tool failed.
        call: A reply's model call (``ModelCall``).
    """

    model_config = ConfigDict(frozen=True)

    role: str
    content: str | None = None
    tool_calls: list[dict[str, Any]] = Field(default_factory=list)
    tool_call_id: str | None = None
    name: str | None = None
    ok: bool | None = None
    call: ModelCall | None = None


class PromptReference(BaseModel):
    """Where a prompt kept by reference is rendered again from (``render_prompt``).

    Attributes:
        case_id: The case (a counterfactual twin's own id: its record change is re-applied).
        source: The case file's name.
        fixture_sha256: Hex SHA-256 of the case file's bytes when the run read it.
        task: The task's name.
        task_version: The version of the distribution that ships the task (groundeval's for a built-in one).
        prompt_sha256: Hex SHA-256 of the prompt's text (system and user parts), as ``CaseRecord.prompt_sha256``.
    """

    model_config = ConfigDict(frozen=True)

    case_id: str
    source: str
    fixture_sha256: str
    task: str
    task_version: str
    prompt_sha256: str


class Conversation(BaseModel):
    """A case's conversation (see the module docstring).

    Attributes:
        prompt: ``full`` (the prompt is the first messages) or ``reference`` (``reference`` holds
            where to render it from).
        reference: The prompt's reference in ``reference`` mode, else None.
        messages: The messages in order: in ``full`` mode the system prompt (when the task has
            one) and the user prompt first, then each reply and tool result.
    """

    model_config = ConfigDict(frozen=True)

    prompt: Literal["full", "reference"] = "full"
    reference: PromptReference | None = None
    messages: list[ConversationMessage] = Field(default_factory=list)

    @property
    def replies(self) -> list[ConversationMessage]:
        """The messages after the prompt."""
        return (
            [m for m in self.messages if m.role not in ("system", "user")]
            if self.prompt == "full"
            else list(self.messages)
        )


def make_conversation(
    prompt: Prompt,
    messages: list[dict[str, Any]],
    *,
    mode: str,
    reference: dict[str, Any] | None,
) -> dict[str, Any]:
    """The JSON of a case's conversation, before capping and cleaning (the runner calls it).

    Args:
        prompt: The prompt the agent was sent.
        messages: The agent's messages after the prompt (``AgentResult.messages``).
        mode: ``full`` or ``reference``.
        reference: The ``PromptReference`` fields for ``reference`` mode (None when the case has
            no file to render from: the prompt is then kept whole).
    """
    if mode == "reference" and reference is not None:
        return {"prompt": "reference", "reference": reference, "messages": list(messages)}
    head = ([{"role": "system", "content": prompt.system}] if prompt.system else []) + [
        {"role": "user", "content": prompt.user}
    ]
    return {"prompt": "full", "reference": None, "messages": [*head, *messages]}


def cap_conversation(conversation: dict[str, Any], capped: dict[str, int]) -> dict[str, Any]:
    """``conversation`` with its messages, their texts and tool arguments cut (see the module docstring).

    Fills ``capped`` with ``path -> full length`` for each cut.
    """
    messages = list(conversation.get("messages") or [])
    if len(messages) > MAX_MESSAGES:
        capped["conversation.messages"] = len(messages)
        messages = messages[:MAX_MESSAGES]
    out = []
    for i, message in enumerate(messages):
        message = dict(message)
        content = message.get("content")
        if isinstance(content, str) and len(content) > MAX_MESSAGE_CHARS:
            capped[f"conversation.messages[{i}].content"] = len(content)
            message["content"] = cut_text(content, MAX_MESSAGE_CHARS)
        if message.get("tool_calls"):
            message["tool_calls"] = cap_lists(message["tool_calls"], f"conversation.messages[{i}].tool_calls", capped)
        out.append(message)
    return {**conversation, "messages": out}


@cache
def task_version(module: str) -> str:
    """The version of the installed distribution that ships ``module`` (a task's ``__module__``).

    Returns:
        E.g. ``0.1.0``; ``unknown`` for a module no installed distribution ships (a file of the
        user's own, run from its folder).
    """
    from importlib import metadata

    top = module.split(".")[0]
    for dist in [top, *metadata.packages_distributions().get(top, [])]:  # an editable install maps no module
        try:
            return metadata.version(dist)
        except metadata.PackageNotFoundError:
            continue
    return "unknown"
