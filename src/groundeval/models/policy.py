"""The one policy of a model call, composed over a provider: ``PolicyModel(api)``.

A ``PolicyModel`` is the ``Model`` every agent and judge calls. It owns what is the same for
every provider: reading the shared options (``CallSettings``: ``max_tokens``, ``temperature``,
``max_retries``, ``timeout``), the context pre-flight (the price table's window, or the
server's context with the request fitted to it), the spending limit (``models.spend``), the
retried call and its deadline (``models.retry``) with the failure classification
(``models.classify``, through the provider's ``classify``), the ``RefusalError`` and
``TruncatedError`` of a reply that holds no whole answer, batch routing (``models.batch``) and
the model-response cache (``models.response_cache``, keyed by request, settings and role). The
provider (``models.providers.base.Provider``) builds the request, makes the call, classifies an
error and reads the reply, as an HTTP transport under a client.

Nothing here imports an SDK.
"""

from __future__ import annotations

import dataclasses
import importlib
import json
import time
from collections.abc import Callable, Mapping
from concurrent.futures import Future
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from groundeval.errors import (
    AgentError,
    CaseTooLargeError,
    ConfigError,
    InfraError,
    RefusalError,
    RunStopError,
    TruncatedError,
)
from groundeval.models.base import ModelRequest, ModelResponse, ModelRole
from groundeval.models.batch_routing import batch_failure
from groundeval.models.classify import BadResponse, advise
from groundeval.models.client_pool import ClientPool
from groundeval.models.preflight import ContextCheck
from groundeval.models.pricing import batch_usage
from groundeval.models.providers.base import Provider, check_temperature
from groundeval.models.retry import CallSettings, Completed, GaveUp, call_with_retries
from groundeval.models.transcript import failed_reply
from groundeval.scoring import Metric

if TYPE_CHECKING:
    from groundeval.models.batch import BatchAPI, Batcher, BatchResult
    from groundeval.models.response_cache import ResponseCache
    from groundeval.models.spend import SpendLimit

__all__ = ["PolicyModel"]

ClientT = TypeVar("ClientT")
T = TypeVar("T")

_REFUSAL_SHOWN = 200
"""Characters of a refusal text quoted in the failure message (the whole text is the raw output)."""


@dataclasses.dataclass(frozen=True, slots=True)
class _Options:
    options: Mapping[str, Any]


class PolicyModel(Generic[ClientT]):
    """A ``Model``: one (retried, priced, limited) call per ``generate``, over a provider.

    Args:
        api: The provider (``models.providers``), configured with the model id, role, options,
            owner and hints.
        sleep: Replacement for ``time.sleep`` between retries (tests).

    Attributes:
        api: The provider.
        role: ``agent`` or ``judge`` (recorded, and part of ``settings``).
        name: The model id sent.
        max_tokens: Output limit per call, tokens (a request may ask for another).
        temperature: Sampling temperature sent, or None (the provider's default).
        retry: The retry policy (retries, the call's time budget).
        batcher: The batcher of batch mode (``use_batches``), else None.
        single_call: False when the model's owner makes several calls per case (a tool-using
            agent's turns): batch mode refuses it.

    Raises:
        ConfigError: An option is out of range (``CallSettings``, the provider's temperatures).
    """

    def __init__(self, api: Provider[ClientT], *, sleep: Callable[[float], None] | None = None) -> None:
        self.api = api
        self.role: ModelRole = api.role
        self.options: dict[str, Any] = api.options
        self.owner = api.owner
        self.hints: dict[str, str] = api.hints
        settings = CallSettings.from_config(self, sleep)
        self.max_tokens, self.temperature, self.retry = settings.max_tokens, settings.temperature, settings.retry
        check_temperature(self.temperature, api.temperature_range, self.owner)
        self._answered = False  # any real answer yet? (the HTML run stop only looks at the first call)
        self.batcher: Batcher | None = None  # batch mode (use_batches): requests go to the batch API
        self.single_call = True  # False for a tool-using agent's model: its turns cannot wait on a batch
        self._cache: tuple[ResponseCache, dict[str, Any]] | None = None
        self._context = ContextCheck(api)

    @staticmethod
    def check(
        api: type[Provider[Any]], name: str | None, *, options: Mapping[str, Any], owner: str,
        hints: Mapping[str, str] | None = None,
    ) -> None:
        """Run the constructor's checks (the provider's and the options') without building a client.

        Raises:
            ConfigError: What ``PolicyModel(api(...))`` would raise.
        """
        api.check(name, options=options, owner=owner, hints=hints)
        check_temperature(CallSettings.from_config(_Options(options), None).temperature, api.temperature_range, owner)

    @property
    def name(self) -> str | None:
        """The model id sent to the provider."""
        return self.api.model

    @property
    def spec(self) -> str:
        """The canonical spec: ``<provider>/<model>`` (``@<base-url>`` where the provider has one)."""
        return self.api.spec

    @property
    def _pool(self) -> ClientPool[ClientT]:
        """The provider's shared SDK client (``Provider.clients``)."""
        return self.api.clients

    def settings(self) -> dict[str, Any]:
        """``spec``, ``role``, ``model``, ``max_tokens`` (tokens) and ``temperature`` (None: not sent)."""
        return {"spec": self.spec, "role": self.role, "model": self.name, "max_tokens": self.max_tokens,
                "temperature": self.temperature}

    def params(self, request: ModelRequest) -> dict[str, Any]:
        """The provider's SDK call arguments for a request (no timeout)."""
        return self.api.params(request, self.max_tokens_for(request), self.temperature)

    def max_tokens_for(self, request: ModelRequest) -> int:
        """The output limit of ``request``: its own, else the model's (tokens)."""
        return request.max_tokens or self.max_tokens

    def warmup(self) -> None:
        """Ready the provider (its SDK, client and server) before the first call is timed."""
        self.api.warmup()

    def close(self) -> None:
        """Release what the provider started (a managed server); safe to call more than once."""
        self.api.close()

    # -- the response cache --------------------------------------------------------------------
    def use_cache(self, cache: ResponseCache, **pins: Any) -> None:
        """Answer a request asked before from ``cache`` (``models.response_cache``), and keep new answers.

        Args:
            cache: The store of responses.
            **pins: Whatever else pins the answer (a prompt's SHA-256), added to the key beside
                ``settings()`` (spec, role, model, max_tokens, temperature).
        """
        self._cache = (cache, dict(pins))

    # -- batch mode ------------------------------------------------------------------------------
    def batch_api(self) -> BatchAPI:
        """The provider's batch adapter, over its SDK client.

        Raises:
            ConfigError: The provider has no batch API, or the model's owner makes several calls per
                case (``single_call`` False).
        """
        if not self.single_call:
            raise ConfigError(
                f"--groundeval-batch: {self.owner} does not make one provider model call per case (a tool-using "
                "agent would wait for a whole batch at every turn, hours per case). Batch mode serves the "
                "single-call agents: claude, openai-compatible. Drop --groundeval-batch"
            )
        if self.api.batch_api_class is None:
            raise ConfigError(
                f"--groundeval-batch: {self.owner} ({self.spec}) has no provider batch API; batch mode serves "
                "anthropic/... and openai-compatible/... models. Leave --groundeval-batch out"
            )
        module, _, attr = self.api.batch_api_class.partition(":")
        api: BatchAPI = getattr(importlib.import_module(module), attr)(self.api)
        return api

    def use_batches(self, batcher: Batcher) -> None:
        """Send every later request through ``batcher`` (``models.batch``) instead of one call each."""
        self.batcher = batcher

    # -- one attempt -----------------------------------------------------------------------------
    def _abandon(self, held: dict[str, Any]) -> None:
        """Retire the client of an attempt abandoned at the deadline (``ClientPool.retire``)."""
        held["abandoned"] = True
        client: Any = held.get("client")
        if client is not None:
            self.api.clients.retire(client)

    def _attempt(self, params: dict[str, Any], timeout_s: float, html: list[int], held: dict[str, Any]) -> Any:
        """One call, with a 2xx that is not an answer turned into ``BadResponse``.

        ``held`` records the client this attempt checked out, so that ``_abandon`` retires that one.
        """
        pool = self.api.clients
        client = pool.checkout()
        held["client"] = client
        try:
            with pool.pinned(client):
                value = self.api.call(params, timeout_s)
        except json.JSONDecodeError as exc:  # the SDK decodes a JSON content type and lets this out
            bad: BadResponse | None = BadResponse.from_text(exc.doc)
        else:  # the SDK hands back the text of a non-JSON content type as a str
            bad = BadResponse.from_text(value) if isinstance(value, str) else None
        finally:
            pool.checkin(client, abandoned=bool(held.get("abandoned")))
        if bad is not None:
            if bad.kind == "html":
                html.append(1)
            raise bad
        self.api.check_value(value)
        return value

    # -- the pre-flight ----------------------------------------------------------------------------
    def fit(self, request: ModelRequest) -> ModelRequest:
        """``request`` with the output limit its prompt leaves in the server's context (``ContextCheck.fit``).

        Raises:
            CaseTooLargeError: Fewer than ``min(max_tokens, MIN_OUTPUT_TOKENS)`` tokens are left.
        """
        return self._context.fit(request, self.max_tokens_for(request))

    def preflight(self, request: ModelRequest) -> None:
        """Refuse a request that clearly cannot fit the model's context, before paying (``ContextCheck.check``).

        Raises:
            CaseTooLargeError: The request does not fit; ``details`` hold the numbers.
        """
        self._context.check(request, self.max_tokens_for(request))

    # -- a generation --------------------------------------------------------------------------
    def generate(self, request: ModelRequest) -> ModelResponse:
        """Send one request (fitted to the server's context, retried on infrastructure errors).

        Returns:
            The answer text, ``usage`` with token counts and ``cost_usd``, ``attempts``,
            ``retry_wait_s`` (seconds), the stop reason and request id, and ``meta`` with
            ``max_tokens``, ``temperature`` and the provider's ``server_meta``. A cached answer
            (``use_cache``) has ``cached`` in its ``meta`` and no usage.

        Raises:
            AuthError: The key was rejected, or the account or model refused (401/402/403).
            RunStopError: Unknown model (404), an invalid request (other 4xx), every attempt of
                the first call got an HTML page (the base URL is a web site), or the provider's
                server exited.
            CaseTooLargeError: The pre-flight or the API says the request does not fit.
            InfraError: 429, 5xx, timeout, connection error or a 2xx that is not an answer,
                after the allowed retries, or the call outlived ``timeout``.
            RefusalError: The model declined to answer.
            TruncatedError: The reply was cut off; ``details`` holds the partial text, the stop
                reason and the usage.
            AgentError: A reply with no answer in it.
        """
        if self._cache is not None:
            cache, pins = self._cache
            hit = cache.get({**self.settings(), **pins}, request)
            if hit is not None:
                return hit
        self.api.before_call(request)
        try:
            response = self._timed(self.fit(request))
        except AgentError as exc:
            self._failed(exc)
            raise
        return self._finished(request, response)

    def submit(self, request: ModelRequest) -> Future[ModelResponse]:
        """Batch mode: hand ``request`` to the batcher and return at once, without waiting for its batch.

        The cache, the fit to the context, the pre-flight and the spending limit apply as in
        ``generate`` (the reservation is held until the result is in); the future completes, from
        the batcher's thread, with what ``generate`` would have returned or raised. A request
        waits on its future, not on a thread of its own.

        Raises:
            ConfigError: The model is not in batch mode (``use_batches``).
        """
        batcher = self.batcher
        if batcher is None:
            raise ConfigError(f"{self.owner} ({self.spec}) submits requests only in batch mode (--groundeval-batch)")
        out: Future[ModelResponse] = Future()
        if self._cache is not None:
            cache, pins = self._cache
            hit = cache.get({**self.settings(), **pins}, request)
            if hit is not None:
                out.set_result(hit)
                return out
        started_at = datetime.now(UTC).isoformat()
        start = time.perf_counter()
        try:
            self.api.before_call(request)
            request = self.fit(request)
            params = self.params(request)
            self.preflight(request)
            held = self._reserve(request)
        except Exception as exc:  # what generate raises before sending: too large, the spending limit
            if isinstance(exc, AgentError):
                self._keep_reply(exc, started_at, start)
                self._failed(exc)
            out.set_exception(exc)
            return out
        sent = request

        def finish(done: Future[BatchResult]) -> None:
            try:
                response = self._batch_reply(sent, done.result(), batcher)
            except BaseException as exc:
                self._settle(held, exc, None)
                if isinstance(exc, AgentError):
                    self._keep_reply(exc, started_at, start)
                    self._failed(exc)
                out.set_exception(exc)
                return
            self._settle(held, None, response.usage.get("cost_usd"))
            timed = dataclasses.replace(response, started_at=started_at,
                                        latency_s=round(time.perf_counter() - start, 6))
            out.set_result(self._finished(sent, timed))

        batcher.submit(sent.label, params).add_done_callback(finish)
        return out

    def _failed(self, exc: AgentError) -> None:
        """The provider's facts added to a failed call's details; a context it states kept for later cases."""
        if isinstance(exc, CaseTooLargeError):  # the server's own 400: its context, when stated, fits later cases
            self.api.learn(exc)
            exc.details = {**self.api.server_meta(), **exc.details}
            return
        facts = self.api.server_meta()
        if facts:
            exc.details = {**facts, **exc.details}

    def _finished(self, request: ModelRequest, response: ModelResponse) -> ModelResponse:
        """A response with the provider's facts in its ``meta``, kept in the response cache (``use_cache``)."""
        facts = self.api.server_meta()
        if facts:
            response = dataclasses.replace(response, meta={**response.meta, **facts})
        if self._cache is not None:
            cache, pins = self._cache
            cache.put({**self.settings(), **pins}, request, response)
        return response

    def _timed(self, request: ModelRequest) -> ModelResponse:
        """The call with its start and seconds; a reply that is no answer kept in the conversation."""
        started_at = datetime.now(UTC).isoformat()
        start = time.perf_counter()
        try:
            response = self._spent(request)
        except AgentError as exc:
            self._keep_reply(exc, started_at, start)
            raise
        return dataclasses.replace(response, started_at=started_at, latency_s=round(time.perf_counter() - start, 6))

    def _keep_reply(self, exc: AgentError, started_at: str, start: float) -> None:
        """A reply that came back but is no answer: kept in the conversation (``details["messages"]``)."""
        replied = isinstance(exc.details.get("partial_text"), str)
        if self.role == "agent" and replied and "messages" not in exc.details:
            reply = failed_reply(exc.details, started_at=started_at, latency_s=time.perf_counter() - start,
                                 attempts=exc.attempts)
            exc.details["messages"] = [reply]

    def _spent(self, request: ModelRequest) -> ModelResponse:
        """``generate`` without the call's timing: the pre-flight, the spending limit and the call."""
        errors = (*self.api.api_errors(), BadResponse)
        params = self.params(request)
        self.preflight(request)
        return self.limited(request, lambda: self._generate(request, params, errors), lambda r: r.usage.get("cost_usd"))

    def limited(self, request: ModelRequest, call: Callable[[], T], cost: Callable[[T], Metric | None]) -> T:
        """``call()`` under the run's spending limit (``models.spend``), when there is one.

        The request's highest cost at list price is reserved before the call and settled with
        what it cost after: ``cost(value)`` (USD; None keeps the estimate spent); a failure that
        was paid for (an ``AgentError`` whose ``details["usage"]`` has a ``cost_usd``) is settled
        at that cost, any other failure at 0. Also the guard of a model turn made by another
        client (the LangGraph agent's chat model).

        Raises:
            groundeval.errors.SpendLimitReached: The reservation would pass the limit; no call is made.
        """
        held = self._reserve(request)
        try:
            value = call()
        except BaseException as exc:
            self._settle(held, exc, None)
            raise
        self._settle(held, None, cost(value))
        return value

    def _reserve(self, request: ModelRequest) -> tuple[SpendLimit, float] | None:
        """Set the request's highest likely cost (USD, at list price) aside under the run's spending limit, if any.

        Raises:
            groundeval.errors.SpendLimitReached: The reservation would pass the limit.
        """
        from groundeval.models import spend

        limit = spend.current()
        if limit is None:
            return None
        estimate = spend.highest_call_cost(self.name, request.chars, self.max_tokens_for(request))
        return limit, limit.reserve(estimate if estimate is not None else 0.0, request.label)

    @staticmethod
    def _settle(held: tuple[SpendLimit, float] | None, failure: BaseException | None, spent: Metric | None) -> None:
        """Replace a reservation by what the call cost.

        ``spent`` (USD; None keeps the estimate spent) after an answer; after a failure, its
        ``details["usage"]["cost_usd"]`` when it was paid for (cut off, refused), else 0.
        """
        if held is None:
            return
        limit, reserved = held
        if failure is None:
            limit.settle(reserved, float(spent) if isinstance(spent, int | float) else None)
            return
        usage = failure.details.get("usage") if isinstance(failure, AgentError) else None
        paid = usage.get("cost_usd") if isinstance(usage, dict) else None
        limit.settle(reserved, float(paid) if isinstance(paid, int | float) else 0.0)

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
            error = self.api.classify(gave_up.error, request.label, attempts=gave_up.attempts, note=gave_up.note)
            error.details["retry_wait_s"] = round(gave_up.waited_s, 3)
            if not self._answered and gave_up.attempts and len(html) == gave_up.attempts:
                error = RunStopError(
                    f"every call of the first case ({request.label}, {gave_up.attempts} attempts) got an HTML "
                    f"page from {self.api.endpoint()}, not the API: the base URL points at a web site. Check "
                    f"{self.api.base_url_hint}",
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
            AgentError: As a direct call's error (``Provider.classify``), or a refusal / truncation.
        """
        return self._batch_reply(request, batcher.result(request.label, params), batcher)

    def _batch_reply(self, request: ModelRequest, result: BatchResult, batcher: Batcher) -> ModelResponse:
        """A batched request's result read as a direct call's reply would be (see ``_batched``)."""
        marks: dict[str, Any] = {"batch": True, "batch_id": result.batch_id, "custom_id": result.custom_id,
                                 "batch_resumed": result.resumed, "batch_wait_s": result.waited_s}
        if result.kind == "succeeded":
            try:
                self.api.check_value(result.value)
            except BadResponse as bad:
                raise InfraError(f"{request.label}: batch {result.batch_id} returned {bad.what} for this request",
                                 attempts=1, details=marks) from None
            self._answered = True
            return self._response(request, Completed(result.value, 1, 0.0), batch=marks)
        raise batch_failure(self.api, request, result, batcher, marks)

    def _response(
        self, request: ModelRequest, done: Completed[Any], *, batch: Mapping[str, Any] | None = None
    ) -> ModelResponse:
        reply = self.api.reply(request, done)
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
        if reply.stop_reason in self.api.refusal_reasons or (reply.refusal and not reply.text):
            said = f"{self.api.stop_field}={reply.stop_reason}"
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
        fix = self.api.truncation_fix(reply.stop_reason)
        if fix is not None:
            raise TruncatedError(
                f"{request.label}: the answer was cut off ({self.api.stop_field}={reply.stop_reason}) at "
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
