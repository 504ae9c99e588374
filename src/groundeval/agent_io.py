"""What an agent is asked and what it answers: ``Prompt``, ``AgentRequest``, ``AgentResult``.

Frozen dataclasses (in-memory records); ``usage`` values are primitives so they can go into junit
properties and cross pytest-xdist's execnet channel unchanged.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from groundeval.scoring import Metric

__all__ = ["AgentRequest", "AgentResult", "FhirEndpoint", "Prompt", "ToolServer"]


@dataclass(frozen=True, slots=True)
class Prompt:
    """What an agent is asked.

    Attributes:
        system: Fixed instructions shared by every case of a task (cacheable prefix).
        user: The case-specific content (a bundle, a note) and the answer format reminder.
    """

    system: str
    user: str

    @property
    def text(self) -> str:
        """System and user parts joined, for agents without a system role."""
        return f"{self.system}\n\n{self.user}"


@dataclass(frozen=True, slots=True)
class ToolServer:
    """Where a case's tools are served over the Model Context Protocol (``--groundeval-tools=mcp``).

    Attributes:
        url: The case's MCP server, Streamable HTTP on loopback (``http://127.0.0.1:<port>/mcp``);
            it serves only this case's data and is stopped when the case ends.
        stdio_command: A command that speaks MCP over its stdin/stdout for agents that start their
            own server (``[python, "-m", "groundeval.mcp_server.stdio", url]``): it relays to
            ``url``, so its calls are traced like any other.
        tools: The names of the tools the server offers, in order.
    """

    url: str
    stdio_command: tuple[str, ...] = ()
    tools: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class FhirEndpoint:
    """Where a case's record is served over the FHIR R4 REST API (``--groundeval-fhir``).

    Attributes:
        base_url: The FHIR base URL (``http://127.0.0.1:<port>/fhir`` for the sandbox, or the user's
            server); resource URLs are ``{base_url}/{type}/{id}`` (https://hl7.org/fhir/R4/http.html).
        patient: The case's patient as a FHIR reference, ``"Patient/<id>"``.
        token: The case's bearer token, sent as ``Authorization: Bearer <token>``; another case's
            token is refused. Never written to a record, log or terminal (left out of ``repr``).
    """

    base_url: str
    patient: str
    token: str = field(default="", repr=False)


@dataclass(frozen=True, slots=True)
class AgentRequest:
    """One call from a case to an agent.

    Attributes:
        case_id: The case's identifier (for logs and traces only; agents must not look up data by it).
        task: The task name, e.g. ``"extraction"``.
        prompt: The rendered prompt.
        context: Task-provided, agent-visible facts beyond the prompt (e.g. the patient reference
            for the write task); JSON-safe.
        trial: 0-based trial index under ``--groundeval-trials`` (0 without it); part of a
            response cache's key, so each trial is its own sample.
        tool_server: With ``--groundeval-tools=mcp``, the case's MCP server (its URL and stdio
            command); None when tools are handed over in-process. Not part of a cache key (the
            port changes from run to run; the tools it serves come from ``context``).
        fhir: With ``--groundeval-fhir``, the FHIR server holding the case's record (base URL,
            patient reference, bearer token); None otherwise. Not part of a cache key (the port
            and token change from run to run).
        tools: Builds the case's tools as the task declares them (``Task.case_tools(case)``: a list
            of LangChain tools), called only by an agent or tool server that uses tools; None when
            the task offers none, or the request was built without a task. Not part of a cache key
            (the task's tool names and facts are).
    """

    case_id: str
    task: str
    prompt: Prompt
    context: dict[str, Any] = field(default_factory=dict)
    trial: int = 0
    tool_server: ToolServer | None = None
    fhir: FhirEndpoint | None = None
    tools: Callable[[], list[Any]] | None = field(default=None, compare=False, repr=False)


@dataclass(frozen=True, slots=True)
class AgentResult:
    """An agent's answer and what it cost.

    Attributes:
        text: The raw final answer text, exactly as produced.
        model: The model id as reported by the provider, or None for rule-based agents.
        usage: Token counts and cost (``input_tokens``, ``output_tokens``,
            ``cache_creation_input_tokens``, ``cache_read_input_tokens``: tokens;
            ``cost_usd``: USD or None when the price is unknown).
        attempts: Model calls made, retries included (0 for rule-based agents).
        trace: Tool calls in order, each ``{"tool", "args", "result", "ok"}``.
        meta: Other JSON-safe facts (``stop_reason``, ``request_id``).
        cached: True when the result came from a response cache or a replayed run record, so
            no model call was made for it.
        messages: The conversation after the prompt, as the model layer saw it: each model reply
            (``{"role": "assistant", "content", "tool_calls", "call"}``, ``call`` holding that
            call's ``started_at``, ``latency_s``, ``usage``, ``attempts``, ``stop_reason``,
            ``model``) and each tool result (``{"role": "tool", "tool_call_id", "name",
            "content", "ok"}``), in order (``groundeval.records.conversation``). Empty for an agent
            that reports none (a rule-based one: its answer is the record's ``raw_output``).
    """

    text: str
    model: str | None = None
    usage: dict[str, Metric] = field(default_factory=dict)
    attempts: int = 0
    trace: list[dict[str, Any]] = field(default_factory=list)
    meta: dict[str, Any] = field(default_factory=dict)
    cached: bool = False
    messages: list[dict[str, Any]] = field(default_factory=list)
