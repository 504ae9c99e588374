"""The frame every provider's ``Model`` shares: one client, one retry layer, one classification.

``ProviderModel`` holds what the Anthropic and OpenAI-compatible models have in common: reading
the shared options (``CallSettings``: ``max_tokens``, ``temperature``, ``max_retries``,
``timeout``), the ``http_client`` and ``sleep`` test seams, the SDK client built on first use with
``max_retries=0`` (``models.retry`` is the one retry layer), ``warmup``, the context-window
pre-flight, the spending limit (``models.spend``), the retried call with its failure
classification (``models.classify``), and the reading of a reply into a ``ModelResponse``,
including the ``RefusalError`` and ``TruncatedError`` of a reply that holds no whole answer. A
provider supplies the pieces that differ: configuration checks, the SDK client, the request
arguments, the call itself, the error classifier and the reading of the reply.

Nothing here imports an SDK: subclasses import theirs inside the methods that need it.
"""

from __future__ import annotations

import dataclasses
import importlib
import json
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from concurrent.futures import Future
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, ClassVar, Generic, TypeVar

from groundeval.errors import (
    AgentError,
    BatchNotRunError,
    CaseTooLargeError,
    ConfigError,
    InfraError,
    RefusalError,
    RunStopError,
    TruncatedError,
)
from groundeval.models.base import ModelRequest, ModelResponse, ModelRole, ToolCall
from groundeval.models.classify import BadResponse, advise
from groundeval.models.client_pool import ClientPool
from groundeval.models.pricing import CHARS_PER_TOKEN, batch_usage, context_window
from groundeval.models.retry import CallSettings, Completed, GaveUp, call_with_retries
from groundeval.models.transcript import failed_reply
from groundeval.scoring import Metric

if TYPE_CHECKING:
    import httpx2

    from groundeval.models.batch import BatchAPI, Batcher, BatchResult
    from groundeval.models.spend import SpendLimit

__all__ = ["ProviderModel", "Reply", "check_temperature"]

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


_REFUSAL_SHOWN = 200
"""Characters of a refusal text quoted in the failure message (the whole text is the raw output)."""


class ProviderModel(ABC, Generic[ClientT]):
    """Base of the models behind a provider's SDK: one (retried) call per ``generate``.

    Args:
        name: The model id to send; None takes the provider's ``default_model`` (a provider
            without one raises ``ConfigError``).
        role: ``agent`` or ``judge`` (recorded, and part of ``settings``).
        options: ``max_tokens``, ``temperature``, ``max_retries``, ``timeout`` (read by
            ``CallSettings.from_config``) and the provider's own (``base_url``).
        owner: Who uses the model, as messages name it (``the agent 'claude'``).
        hints: Advice the owner gives in messages: ``no_key`` (the whole message when the key is
            missing) and ``rejected_key`` (the fix when the key is rejected).
        http_client: An ``httpx2.Client`` for the SDK (tests pass one with a ``MockTransport``).
        sleep: Replacement for ``time.sleep`` between retries (tests).

    Raises:
        ConfigError: The provider's configuration check failed, or an option is out of range.
    """

    provider: str
    """The spec's provider prefix (``anthropic``)."""
    default_model: str | None = None
    stop_field = "stop_reason"
    """How the provider names the stop reason, in the ``TruncatedError`` message."""
    refusal_reasons: frozenset[str] = frozenset()
    """Stop reasons meaning the model declined to answer (``RefusalError``)."""
    base_url_hint = "--groundeval-base-url (an OpenAI-compatible root ends in /v1)"
    """Where the user sets the endpoint, named when it serves a web page instead of the API."""
    temperature_range: tuple[float, float] = (0.0, 1.0)
    """Sampling temperatures the provider accepts (inclusive)."""
    batch_api_class: ClassVar[str | None] = None
    """``module:class`` of the provider's batch endpoint (``models.batch.BatchAPI``), or None
    when the provider has no batch API (``--groundeval-batch`` is then a usage error)."""

    def __init__(
        self,
        name: str | None = None,
        *,
        role: ModelRole = "agent",
        options: Mapping[str, Any] | None = None,
        owner: str | None = None,
        hints: Mapping[str, str] | None = None,
        http_client: httpx2.Client | None = None,
        sleep: Callable[[float], None] | None = None,
    ) -> None:
        self.role: ModelRole = role
        self.options: dict[str, Any] = dict(options or {})
        self.owner = owner or f"the {role} model"
        self.hints: dict[str, str] = dict(hints or {})
        self.name: str | None = self._configure(name or self.default_model)
        settings = CallSettings.from_config(self, sleep)
        self.max_tokens, self.temperature, self.retry = settings.max_tokens, settings.temperature, settings.retry
        check_temperature(self.temperature, self.temperature_range, self.owner)
        self._http_client = http_client
        # one client shared by the threads of --groundeval-concurrency (models.client_pool)
        self._pool: ClientPool[ClientT] = ClientPool(self._make_client, owned=http_client is None)
        self._answered = False  # any real answer yet? (the HTML run stop only looks at the first call)
        self.batcher: Batcher | None = None  # batch mode (use_batches): requests go to the batch API

    @classmethod
    def takes_temperature(cls, name: str | None) -> bool:
        """False for a model that answers an explicit temperature with a 400 (then send none); True here."""
        del name
        return True

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
        probe._configure(name or cls.default_model)
        check_temperature(CallSettings.from_config(probe, None).temperature, cls.temperature_range, owner)

    @property
    def spec(self) -> str:
        """The canonical spec: ``<provider>/<model>`` (``@<base-url>`` where the provider has one)."""
        return f"{self.provider}/{self.name}"

    def settings(self) -> dict[str, Any]:
        """``spec``, ``role``, ``model``, ``max_tokens`` (tokens) and ``temperature`` (None: not sent)."""
        return {"spec": self.spec, "role": self.role, "model": self.name, "max_tokens": self.max_tokens,
                "temperature": self.temperature}

    @abstractmethod
    def _configure(self, name: str | None) -> str | None:
        """Check the provider's own settings (``self.options``), keep what it needs, return the model id.

        Raises:
            ConfigError: A required setting or key is missing.
        """

    @abstractmethod
    def _new_client(self, options: dict[str, Any]) -> ClientT:
        """Import the SDK and build its client with ``options`` (``max_retries``, ``http_client``)."""

    @abstractmethod
    def params(self, request: ModelRequest) -> dict[str, Any]:
        """The SDK call's arguments for a request (no timeout)."""

    @abstractmethod
    def _api_errors(self) -> tuple[type[BaseException], ...]:
        """The SDK's exception types that are attempt failures (imports the SDK)."""

    @abstractmethod
    def _call(self, params: dict[str, Any], timeout_s: float) -> Any:
        """Make one API call with ``params`` and an HTTP timeout of ``timeout_s`` seconds."""

    @abstractmethod
    def _check(self, value: Any) -> None:
        """Raise ``BadResponse`` when a successful call's value is not an answer of the API's shape."""

    @abstractmethod
    def _endpoint(self) -> str:
        """The API root the client talks to, without credentials (for messages)."""

    @abstractmethod
    def _classify(self, exc: BaseException, label: str, *, attempts: int, note: str) -> AgentError:
        """Turn the SDK exception of a failed call into the groundeval error that reports it."""

    @abstractmethod
    def _reply(self, request: ModelRequest, done: Completed[Any]) -> Reply:
        """Read the text, model, stop reason, usage, request id and tool calls from a response.

        Raises:
            AgentError: The response holds no answer at all.
        """

    @abstractmethod
    def _truncation_fix(self, stop_reason: str | None) -> str | None:
        """The advice for a reply cut off with ``stop_reason``, or None if it was not cut off."""

    # -- batch mode ------------------------------------------------------------------------------
    def batch_api(self) -> BatchAPI:
        """The provider's batch endpoint, over this model's SDK client.

        Raises:
            ConfigError: The provider has no batch API.
        """
        if self.batch_api_class is None:
            raise ConfigError(
                f"--groundeval-batch: {self.owner} ({self.spec}) has no provider batch API; batch mode serves "
                "anthropic/... and openai-compatible/... models. Leave --groundeval-batch out"
            )
        module, _, attr = self.batch_api_class.partition(":")
        api: BatchAPI = getattr(importlib.import_module(module), attr)(self)
        return api

    def use_batches(self, batcher: Batcher) -> None:
        """Send every later request through ``batcher`` (``models.batch``) instead of one call each."""
        self.batcher = batcher

    def max_tokens_for(self, request: ModelRequest) -> int:
        """The output limit of ``request``: its own, else the model's (tokens)."""
        return request.max_tokens or self.max_tokens

    # -- the shared client ---------------------------------------------------------------------
    def _make_client(self) -> ClientT:
        options: dict[str, Any] = {"max_retries": 0}
        if self._http_client is not None:
            options["http_client"] = self._http_client
        return self._new_client(options)

    def _sdk(self) -> ClientT:
        """The client of this attempt (checked out by ``_attempt``), else the shared one."""
        return self._pool.get()

    def _abandon(self, held: dict[str, Any]) -> None:
        """Retire the client of an attempt abandoned at the deadline (``ClientPool.retire``)."""
        held["abandoned"] = True
        client: ClientT | None = held.get("client")
        if client is not None:
            self._pool.retire(client)

    def warmup(self) -> None:
        """Import the SDK and build the client before the first call is timed."""
        self._sdk()

    def _attempt(self, params: dict[str, Any], timeout_s: float, html: list[int], held: dict[str, Any]) -> Any:
        """One call, with a 2xx that is not an answer turned into ``BadResponse``.

        ``held`` records the client this attempt checked out, so that ``_abandon`` retires that one.
        """
        client = self._pool.checkout()
        held["client"] = client
        try:
            with self._pool.pinned(client):
                value = self._call(params, timeout_s)
        except json.JSONDecodeError as exc:  # the SDK decodes a JSON content type and lets this out
            bad: BadResponse | None = BadResponse.from_text(exc.doc)
        else:  # the SDK hands back the text of a non-JSON content type as a str
            bad = BadResponse.from_text(value) if isinstance(value, str) else None
        finally:
            self._pool.checkin(client, abandoned=bool(held.get("abandoned")))
        if bad is not None:
            if bad.kind == "html":
                html.append(1)
            raise bad
        self._check(value)
        return value

    # -- a generation --------------------------------------------------------------------------
    def preflight(self, request: ModelRequest) -> None:
        """Refuse a request that clearly cannot fit the model's context window, before paying.

        The estimate is the request's characters / ``CHARS_PER_TOKEN`` (which undercounts JSON)
        plus its ``max_tokens``, against ``pricing.context_window(model)``; models of unknown
        context (any OpenAI-compatible model) are not checked.

        Raises:
            CaseTooLargeError: The estimate exceeds the window; ``details`` hold both numbers.
        """
        window = context_window(self.name)
        if window is None:
            return
        estimate = -(-request.chars // CHARS_PER_TOKEN)  # as pricing.estimate_tokens: rounded up
        max_tokens = self.max_tokens_for(request)
        if estimate + max_tokens > window:
            raise CaseTooLargeError(
                f"{request.label}: the case is too large for the model {self.name}: about {estimate:,} "
                f"prompt tokens (characters / {CHARS_PER_TOKEN}) plus max_tokens={max_tokens} exceed its "
                f"{window:,}-token context window; no call was made. Use a smaller case or a model with a "
                "larger window",
                attempts=0,
                details={"estimated_tokens": estimate, "context_tokens": window, "max_tokens": max_tokens},
            )

    def generate(self, request: ModelRequest) -> ModelResponse:
        """Send one request (retried on infrastructure errors) and return the answer.

        Returns:
            The answer text, ``usage`` with token counts and ``cost_usd``, ``attempts``,
            ``retry_wait_s`` (seconds), the stop reason and request id, and ``meta`` with
            ``max_tokens`` and ``temperature``.

        Raises:
            AuthError: The key was rejected, or the account or model refused (401/402/403).
            RunStopError: Unknown model (404), an invalid request (other 4xx), or every attempt
                of the first call got an HTML page (the base URL is a web site).
            CaseTooLargeError: The pre-flight estimate or the API says the request does not fit.
            InfraError: 429, 5xx, timeout, connection error or a 2xx that is not an answer,
                after the allowed retries, or the call outlived ``timeout``.
            RefusalError: The model declined to answer.
            TruncatedError: The reply was cut off; ``details`` holds the partial text, the stop
                reason and the usage.
            AgentError: A reply with no answer in it.
        """
        started_at = datetime.now(UTC).isoformat()
        start = time.perf_counter()
        try:
            response = self._spent(request)
        except AgentError as exc:
            self._keep_reply(exc, started_at, start)
            raise
        return dataclasses.replace(response, started_at=started_at, latency_s=round(time.perf_counter() - start, 6))

    def submit(self, request: ModelRequest) -> Future[ModelResponse]:
        """Batch mode: hand ``request`` to the batcher and return at once, without waiting for its batch.

        The pre-flight and the spending limit apply as in ``generate`` (the reservation is held
        until the result is in); the future completes, from the batcher's thread, with what
        ``generate`` would have returned or raised.

        Raises:
            ConfigError: The model is not in batch mode (``use_batches``).
        """
        batcher = self.batcher
        if batcher is None:
            raise ConfigError(f"{self.owner} ({self.spec}) submits requests only in batch mode (--groundeval-batch)")
        out: Future[ModelResponse] = Future()
        started_at = datetime.now(UTC).isoformat()
        start = time.perf_counter()
        try:
            params = self.params(request)
            self.preflight(request)
            held = self._reserve(request)
        except Exception as exc:  # what generate would raise before sending: too large, the spending limit
            if isinstance(exc, AgentError):
                self._keep_reply(exc, started_at, start)
            out.set_exception(exc)
            return out

        def finish(done: Future[BatchResult]) -> None:
            try:
                response = self._batch_reply(request, done.result(), batcher)
            except BaseException as exc:
                self._settle(held, exc)
                if isinstance(exc, AgentError):
                    self._keep_reply(exc, started_at, start)
                out.set_exception(exc)
                return
            self._settle(held, response)
            out.set_result(dataclasses.replace(response, started_at=started_at,
                                               latency_s=round(time.perf_counter() - start, 6)))

        batcher.submit(request.label, params).add_done_callback(finish)
        return out

    def _keep_reply(self, exc: AgentError, started_at: str, start: float) -> None:
        """A reply that came back but is no answer: kept in the conversation (``details["messages"]``)."""
        replied = isinstance(exc.details.get("partial_text"), str)
        if self.role == "agent" and replied and "messages" not in exc.details:
            reply = failed_reply(exc.details, started_at=started_at, latency_s=time.perf_counter() - start,
                                 attempts=exc.attempts)
            exc.details["messages"] = [reply]

    def _spent(self, request: ModelRequest) -> ModelResponse:
        """``generate`` without the call's timing: the pre-flight, the spending limit and the call."""
        errors = (*self._api_errors(), BadResponse)
        params = self.params(request)
        self.preflight(request)
        held = self._reserve(request)
        try:
            response = self._generate(request, params, errors)
        except BaseException as exc:
            self._settle(held, exc)
            raise
        self._settle(held, response)
        return response

    def _reserve(self, request: ModelRequest) -> tuple[SpendLimit, float] | None:
        """Set the call's highest likely cost aside under the spending limit, if any (``models.spend``).

        Raises:
            SpendLimitReached: The call could pass the limit; it is not made.
        """
        from groundeval.models import spend

        limit = spend.current()
        if limit is None:
            return None
        estimate = spend.highest_call_cost(self.name, request.chars, self.max_tokens_for(request))
        return limit, limit.reserve(estimate if estimate is not None else 0.0, request.label)  # at list price

    @staticmethod
    def _settle(held: tuple[SpendLimit, float] | None, outcome: ModelResponse | BaseException) -> None:
        """Replace the reservation by the call's real cost (a reply paid for but no answer carries its usage)."""
        if held is None:
            return
        limit, reserved = held
        if isinstance(outcome, ModelResponse):
            cost = outcome.usage.get("cost_usd")
            limit.settle(reserved, float(cost) if isinstance(cost, int | float) else None)
            return
        usage = outcome.details.get("usage") if isinstance(outcome, AgentError) else None
        cost = usage.get("cost_usd") if isinstance(usage, dict) else None
        limit.settle(reserved, float(cost) if isinstance(cost, int | float) else 0.0)

    def _generate(
        self, request: ModelRequest, params: dict[str, Any], errors: tuple[type[BaseException], ...]
    ) -> ModelResponse:
        """The retried call and its response (``generate`` without the spending limit)."""
        if self.batcher is not None:
            return self._batched(request, params, self.batcher)
        html: list[int] = []
        held: dict[str, Any] = {}  # the latest attempt's client, for _abandon

        def one(left: float) -> Any:
            held.clear()
            return self._attempt(params, left, html, held)

        try:
            done = call_with_retries(
                one, self.retry, errors=errors, advise=advise, abandon=lambda: self._abandon(held),
            )
        except GaveUp as gave_up:
            error = self._classify(gave_up.error, request.label, attempts=gave_up.attempts, note=gave_up.note)
            error.details["retry_wait_s"] = round(gave_up.waited_s, 3)
            if not self._answered and gave_up.attempts and len(html) == gave_up.attempts:
                error = RunStopError(
                    f"every call of the first case ({request.label}, {gave_up.attempts} attempts) got an HTML "
                    f"page from {self._endpoint()}, not the API: the base URL points at a web site. Check "
                    f"{self.base_url_hint}",
                    attempts=gave_up.attempts, details=error.details,
                )
            raise error from None  # the facts are in the message and details; the SDK chain is noise
        self._answered = True
        return self._response(request, done)

    def _batched(self, request: ModelRequest, params: dict[str, Any], batcher: Batcher) -> ModelResponse:
        """The request sent in a batch, its result read as a direct call's would be.

        Raises:
            BatchNotRunError: The batch was cancelled or the run stopped before it was sent.
            InfraError: The request expired, or was still processing after the longest wait.
            AgentError: As a direct call's error (``_classify``), or a refusal / truncation.
        """
        return self._batch_reply(request, batcher.result(request.label, params), batcher)

    def _batch_reply(self, request: ModelRequest, result: BatchResult, batcher: Batcher) -> ModelResponse:
        """A batched request's result read as a direct call's reply would be (see ``_batched``)."""
        marks: dict[str, Any] = {"batch": True, "batch_id": result.batch_id, "custom_id": result.custom_id,
                                 "batch_resumed": result.resumed, "batch_wait_s": result.waited_s}
        if result.kind == "succeeded":
            try:
                self._check(result.value)
            except BadResponse as bad:
                raise InfraError(f"{request.label}: batch {result.batch_id} returned {bad.what} for this request",
                                 attempts=1, details=marks) from None
            self._answered = True
            return self._response(request, Completed(result.value, 1, 0.0), batch=marks)
        raise self._batch_failure(request, result, batcher, marks)

    def _batch_failure(
        self, request: ModelRequest, result: BatchResult, batcher: Batcher, marks: dict[str, Any]
    ) -> AgentError:
        """The error of a batched request that has no answer (see ``_batched``)."""
        label, batch = request.label, result.batch_id
        api = batcher.api.name
        if result.kind == "errored" and result.error is not None:
            error = self._classify(result.error, label, attempts=1, note="")  # as a direct call's
            error.details.update(marks)
            return error
        if result.kind == "cancelled":
            return BatchNotRunError(f"{label}: batch {batch} was cancelled before the provider ran this request",
                                    attempts=0, details=marks)
        if result.kind == "abandoned":
            return BatchNotRunError(
                f"{label}: the run stopped while batch {batch} was out; run the same command again to collect its "
                f"results without paying again, or cancel batch {batch} at {api}", attempts=0, details=marks,
            )
        if result.kind == "not_sent":
            return BatchNotRunError(f"{label}: the run stopped before this request was sent in a batch",
                                    attempts=0, details=marks)
        if result.kind == "timed_out":
            waited = batcher.settings.max_wait_s
            return InfraError(
                f"{label}: batch {batch} was still processing after the longest wait ({waited:g} s, "
                "--groundeval-batch-max-wait); its results stay at the provider: run the same command again to "
                f"collect them without paying again, or cancel batch {batch} at {api}",
                attempts=1, details=marks,
            )
        return InfraError(
            f"{label}: the request {result.kind} in batch {batch} before {api} ran it (the provider's "
            "24-hour window ended); run again to send it in a new batch",
            attempts=1, details=marks,
        )

    def _response(
        self, request: ModelRequest, done: Completed[Any], *, batch: Mapping[str, Any] | None = None
    ) -> ModelResponse:
        reply = self._reply(request, done)
        if batch is not None:  # priced at the batch rate, with what a direct call would have cost
            reply = dataclasses.replace(reply, usage=batch_usage(reply.usage, reply.model))
        meta: dict[str, Any] = {
            "stop_reason": reply.stop_reason,
            "request_id": reply.request_id,
            "max_tokens": self.max_tokens_for(request),
            "temperature": self.temperature,
            "retry_wait_s": done.waited_s,
            **(batch or {}),
        }
        if reply.stop_reason in self.refusal_reasons or (reply.refusal and not reply.text):
            said = f"{self.stop_field}={reply.stop_reason}"
            if reply.refusal:  # the model's own words, kept as the case's raw output
                cut = "..." if len(reply.refusal) > _REFUSAL_SHOWN else ""
                said += f"; refusal: {reply.refusal[:_REFUSAL_SHOWN]!r}{cut}"
            raise RefusalError(
                f"{request.label}: the model declined to answer ({said}); it counts as an empty answer in the "
                "run's means",
                attempts=done.attempts,
                details={**meta, "model": reply.model, "usage": reply.usage,
                         "partial_text": reply.text or reply.refusal or ""},
            )
        fix = self._truncation_fix(reply.stop_reason)
        if fix is not None:
            raise TruncatedError(
                f"{request.label}: the answer was cut off ({self.stop_field}={reply.stop_reason}) at "
                f"{reply.usage['output_tokens']} output tokens with max_tokens={self.max_tokens_for(request)}; "
                f"it is not parsed (it counts as an empty answer in the run's means). {fix}",
                attempts=done.attempts,
                details={**meta, "model": reply.model, "usage": reply.usage, "partial_text": reply.text},
            )
        return ModelResponse(
            text=reply.text, model=reply.model, stop_reason=reply.stop_reason, usage=reply.usage,
            request_id=reply.request_id, attempts=done.attempts, retry_wait_s=done.waited_s,
            tool_calls=reply.tool_calls, meta=meta,
        )
