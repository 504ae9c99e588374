"""The small API a provider implements: build the request, call, classify an error, read the reply.

A ``Provider`` is what differs between model services: its configuration check, its SDK client,
the request arguments, the call itself, how its errors and replies read, and (when it can) what
its server says about itself. Everything else a model call needs (the context pre-flight, the
spending limit, the retry layer and its deadline, the refusal and truncation checks, batch
routing, the response cache) is the one policy of ``models.policy.PolicyModel``, which composes
over a provider as an HTTP client composes over a transport. A new provider is one module here
(a ``Provider`` subclass, and its batch adapter beside it when the service has a batch API), one
line in ``models.providers.PROVIDERS`` and the extra that installs its SDK.

The provider owns its SDK client (``clients``, a ``models.client_pool.ClientPool`` shared by the
threads of ``--groundeval-concurrency``): the policy checks a client out for each attempt, and
``client()`` inside that attempt is the checked-out one.

Nothing here imports an SDK: subclasses import theirs inside the methods that need it.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, Generic, TypeVar

from groundeval.errors import AgentError, CaseTooLargeError, ConfigError
from groundeval.models.base import ModelRequest, ModelRole, ToolCall
from groundeval.models.client_pool import ClientPool
from groundeval.models.retry import Completed
from groundeval.scoring import Metric

if TYPE_CHECKING:
    import httpx2

__all__ = ["Provider", "Reply", "check_temperature"]

ClientT = TypeVar("ClientT")


@dataclass(frozen=True, slots=True)
class Reply:
    """What a provider's response says, before the refusal and truncation checks.

    Attributes:
        text: The answer text (possibly partial).
        model: Model id as the server reported it.
        stop_reason: Why generation stopped, as the provider names it.
        usage: Token counts and ``cost_usd`` (see the providers' ``usage``).
        request_id: The provider's request id, or None.
        refusal: The model's refusal text when the provider returns it apart from the answer
            (OpenAI's ``message.refusal``), else None.
        tool_calls: Tool calls the model asked for, in order.
    """

    text: str
    model: str | None
    stop_reason: str | None
    usage: dict[str, Metric]
    request_id: str | None
    refusal: str | None = None
    tool_calls: tuple[ToolCall, ...] = ()


def check_temperature(value: float | None, allowed: tuple[float, float], owner: str) -> None:
    """Refuse a sampling temperature the provider would reject on every call.

    Args:
        value: The temperature, or None (not sent).
        allowed: The provider's inclusive range.
        owner: Who asked, as messages name it (``the agent 'claude'``).

    Raises:
        ConfigError: ``value`` is outside ``allowed``; the message names the option, the value
            and the range.
    """
    low, high = allowed
    if value is not None and not low <= value <= high:
        raise ConfigError(
            f"--groundeval-temperature={value:g} is outside the range the API of {owner} accepts "
            f"({low:g} to {high:g}); give a value in that range or leave it out"
        )


class Provider(ABC, Generic[ClientT]):
    """One model service behind its SDK: the pieces of a call that differ between services.

    Args:
        name: The model id to send; None takes ``default_model`` (a provider without one raises
            ``ConfigError`` from ``configure``).
        role: ``agent`` or ``judge`` (a provider may name its files by it).
        options: The model's options; a provider reads its own (``base_url``, ``n_ctx``).
        owner: Who uses the model, as messages name it (``the agent 'claude'``).
        hints: Advice the owner gives in messages (``no_key``, ``rejected_key``, ``no_url``...).
        http_client: An ``httpx2.Client`` for the SDK (tests pass one with a ``MockTransport``).

    Raises:
        ConfigError: ``configure`` refused the settings (a missing SDK, key or setting).
    """

    name: ClassVar[str]
    """The spec's provider prefix (``anthropic``)."""
    default_model: ClassVar[str | None] = None
    """The model id used when a spec names none (None: the spec must name one)."""
    stop_field: ClassVar[str] = "stop_reason"
    """How the provider names the stop reason, in the ``TruncatedError`` message."""
    refusal_reasons: ClassVar[frozenset[str]] = frozenset()
    """Stop reasons meaning the model declined to answer (``RefusalError``)."""
    base_url_hint: ClassVar[str] = "--groundeval-base-url (an OpenAI-compatible root ends in /v1)"
    """Where the user sets the endpoint, named when it serves a web page instead of the API."""
    temperature_range: ClassVar[tuple[float, float]] = (0.0, 1.0)
    """Sampling temperatures the provider accepts (inclusive)."""
    batch_api_class: ClassVar[str | None] = None
    """``module:class`` of the provider's batch adapter (``models.batch_api.BatchAPI``, built with
    the provider), or None when the service has no batch API."""
    template_tokens: ClassVar[int] = 0
    """Tokens allowed for the chat template around the messages when a request is fitted to the
    server's context (``PolicyModel.fit``; a tokenizer endpoint counts raw text only)."""

    def __init__(
        self,
        name: str | None = None,
        *,
        role: ModelRole = "agent",
        options: Mapping[str, Any] | None = None,
        owner: str | None = None,
        hints: Mapping[str, str] | None = None,
        http_client: httpx2.Client | None = None,
    ) -> None:
        self.role: ModelRole = role
        self.options: dict[str, Any] = dict(options or {})
        self.owner = owner or f"the {role} model"
        self.hints: dict[str, str] = dict(hints or {})
        self.model: str | None = self.configure(name or self.default_model)
        self._http_client = http_client
        # one client shared by the threads of --groundeval-concurrency (models.client_pool)
        self.clients: ClientPool[ClientT] = ClientPool(self._make_client, owned=http_client is None)

    @classmethod
    def check(
        cls, name: str | None, *, options: Mapping[str, Any], owner: str, hints: Mapping[str, str] | None = None
    ) -> None:
        """Run the constructor's checks without building a client (no I/O).

        Raises:
            ConfigError: What the constructor would raise.
        """
        probe = cls.__new__(cls)
        probe.role, probe.options, probe.owner, probe.hints = "agent", dict(options), owner, dict(hints or {})
        probe.configure(name or cls.default_model)

    @classmethod
    def takes_temperature(cls, name: str | None) -> bool:
        """False for a model that answers an explicit temperature with a 400 (then send none); True here."""
        del name
        return True

    @property
    def spec(self) -> str:
        """The canonical spec: ``<provider>/<model>`` (``@<base-url>`` where the provider has one)."""
        return f"{self.name}/{self.model}"

    # -- the API every provider implements -----------------------------------------------------
    @abstractmethod
    def configure(self, name: str | None) -> str | None:
        """Check the provider's own settings (``self.options``), keep what it needs, return the model id.

        Raises:
            ConfigError: A required setting, SDK or key is missing.
        """

    @abstractmethod
    def new_client(self, options: dict[str, Any]) -> ClientT:
        """Import the SDK and build its client with ``options`` (``max_retries``, ``http_client``)."""

    @abstractmethod
    def params(self, request: ModelRequest, max_tokens: int, temperature: float | None) -> dict[str, Any]:
        """The SDK call's arguments for a request with its output limit (tokens) and temperature (no timeout)."""

    @abstractmethod
    def api_errors(self) -> tuple[type[BaseException], ...]:
        """The SDK's exception types that are attempt failures (imports the SDK)."""

    @abstractmethod
    def call(self, params: dict[str, Any], timeout_s: float) -> Any:
        """Make one API call with ``params`` and an HTTP timeout of ``timeout_s`` seconds (on ``client()``)."""

    @abstractmethod
    def check_value(self, value: Any) -> None:
        """Raise ``models.classify.BadResponse`` when a 2xx value is not an answer of the API's shape."""

    @abstractmethod
    def endpoint(self) -> str:
        """The API root the client talks to, without credentials (for messages)."""

    @abstractmethod
    def classify(self, exc: BaseException, label: str, *, attempts: int, note: str) -> AgentError:
        """Turn the SDK exception of a failed call into the groundeval error that reports it."""

    @abstractmethod
    def reply(self, request: ModelRequest, done: Completed[Any]) -> Reply:
        """Read the text, model, stop reason, usage, request id and tool calls from a response.

        Raises:
            AgentError: The response holds no answer at all.
        """

    @abstractmethod
    def truncation_fix(self, stop_reason: str | None) -> str | None:
        """The advice for a reply cut off with ``stop_reason``, or None if it was not cut off."""

    # -- what a provider may add (the defaults say nothing) ------------------------------------
    def context_tokens(self) -> int | None:
        """The context one request gets, tokens, when the server said; None: the price table's, if any."""
        return None

    def count_tokens(self, text: str) -> int | None:
        """Tokens the service's tokenizer makes of ``text``, or None when it has none to ask."""
        del text
        return None

    def server_meta(self) -> dict[str, Any]:
        """Facts of the model and its server recorded with every call (none by default)."""
        return {}

    def too_large_fix(self) -> str:
        """The advice of a request that does not fit the server's context."""
        return "Raise the server's context, lower --groundeval-max-tokens, or use a smaller case"

    def learn(self, error: CaseTooLargeError) -> None:
        """Keep what the service's own "too large" answer says (its context); nothing by default."""
        del error

    def before_call(self, request: ModelRequest) -> None:
        """Make the service ready for ``request`` (a managed server started and alive); nothing by default.

        Raises:
            AgentError: The service cannot take the request (``RunStopError``: its server exited).
        """
        del request

    def warmup(self) -> None:
        """Import the SDK and build the client before the first call is timed."""
        self.client()

    def close(self) -> None:
        """Release what the provider started (a managed server); nothing by default."""

    # -- the shared client ---------------------------------------------------------------------
    def _make_client(self) -> ClientT:
        options: dict[str, Any] = {"max_retries": 0}
        if self._http_client is not None:
            options["http_client"] = self._http_client
        return self.new_client(options)

    def client(self) -> ClientT:
        """The client of this attempt (checked out by the policy), else the shared one."""
        return self.clients.get()
