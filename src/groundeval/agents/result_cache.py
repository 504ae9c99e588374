"""The agent-result cache (``--groundeval-cache DIR``): the agent wrapper that answers from it.

Each result is stored under a key of (agent spec, agent name, model, the SHA-256 of the full
request: system and user prompt, request context, the task's tools and facts, every agent option
that changes the answer, and the trial index). A rerun with the same key makes no model call; its
``AgentResult`` has ``cached=True``. This caches what an agent answered, whatever it did to answer
(one model call, a tool loop, no model at all); a model's own replies are cached by request in
``groundeval.models.response_cache``.

What is cached:

* answers (an ``AgentResult`` or a ``str``), whatever they score;
* agent-behaviour failures of the model itself, ``RefusalError`` and ``AgentLoopError``: they
  are the model's answer to this request, and replaying them keeps the outcome;

never: a ``TruncatedError`` (a reply cut at ``max_tokens`` or the context window holds no whole
answer; sampled again, or with a higher limit, it may fit, so the next run asks again, and an
entry of one stored by an earlier version is read as a miss), an ``InfraError`` (rate limits,
timeouts, a rejected key: nothing about the answer), a plain ``AgentError`` (an agent's own
"could not answer" may be transient) or any other exception.

The entries live in the cache directory's SQLite store (``groundeval.models.cache_store``: WAL,
safe across threads and processes, redacted before writing, a bad file or entry a warning, never a
crash).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping
from concurrent.futures import Future
from typing import Any

from groundeval.agent_io import AgentRequest, AgentResult
from groundeval.agent_wrapper import AgentWrapper
from groundeval.errors import AgentError
from groundeval.models.cache_store import CACHEABLE_ERRORS, NEVER_REPLAYED, SCHEMA_VERSION, ResultCache, canonical
from groundeval.models.retry import CALL_POLICY_OPTIONS

__all__ = ["NON_ANSWER_OPTIONS", "CachingAgent", "cache_key", "rebuild_error"]

NON_ANSWER_OPTIONS = frozenset(CALL_POLICY_OPTIONS)
"""Agent options left out of the key: they bound the call, they do not change the answer."""
_BEHAVIOUR_ERRORS: dict[str, type[AgentError]] = {**CACHEABLE_ERRORS, **NEVER_REPLAYED, "AgentError": AgentError}


def cache_key(
    *,
    agent_spec: str,
    agent_name: str,
    model: str | None,
    options: Mapping[str, Any],
    request: AgentRequest,
    task_facts: Mapping[str, Any] | None = None,
) -> str:
    """The cache key of one request: hex SHA-256 of its canonical JSON.

    Args:
        agent_spec: The agent spec as given (``claude``, ``pkg.module:attr``).
        agent_name: The agent's ``name``.
        model: The model id the agent will call (its resolved default included), or None.
        options: Agent options (``temperature``, ``max_tokens`` (tokens), ``base_url``, ...);
            those in ``NON_ANSWER_OPTIONS`` are left out.
        request: The request: its system and user prompt, context, task and trial index go in (a
            record served over FHIR by its SHA-256, ``context["fhir_record_sha256"]``, not whole).
        task_facts: What else shapes the answer: the task's tool names and facts (catalog hash).

    Returns:
        64 hex characters.
    """
    context = request.context
    if "fhir_record_sha256" in context:  # --groundeval-fhir: the served record counts by its SHA-256 (fhir.serving)
        context = {k: v for k, v in context.items() if k != "fhir_record"}
    payload = {
        "v": SCHEMA_VERSION, "agent_spec": agent_spec, "agent": agent_name, "model": model,
        "options": {k: v for k, v in sorted(options.items()) if k not in NON_ANSWER_OPTIONS},
        "task": request.task, "system": request.prompt.system, "user": request.prompt.user,
        "context": context, "trial": request.trial, "task_facts": dict(task_facts or {}),
    }
    return hashlib.sha256(canonical(payload).encode("utf-8", "surrogatepass")).hexdigest()


def rebuild_error(type_name: str, message: str, attempts: int | None, details: Mapping[str, Any]) -> AgentError:
    """Rebuild a stored agent-behaviour failure as its own class, marked ``cached``.

    Args:
        type_name: The class name (``TruncatedError``, ``RefusalError``, ``AgentLoopError``, ``AgentError``).
        message: The original message.
        attempts: Model calls the original made.
        details: The original ``details`` (``partial_text``, ``usage``, ``trace``, ...).

    Raises:
        KeyError: ``type_name`` is not an agent-behaviour failure.
    """
    exc = _BEHAVIOUR_ERRORS[type_name](message, attempts=attempts, details=dict(details))
    exc.cached = True  # type: ignore[attr-defined]  # read by the runner into CaseRecord.cached
    return exc


class CachingAgent(AgentWrapper):
    """Wraps an agent: answers from the cache when it can, else calls the agent and stores its answer.

    Has the wrapped agent's ``name``, ``model``, ``provider_model``, ``requires``, ``tasks`` and
    ``max_concurrency``, and delegates ``warmup()`` and ``close()``, so tasks, scorers and the runner
    see the same agent. Thread-safe (``--groundeval-concurrency`` calls it from several threads).

    Args:
        agent: The agent to wrap.
        cache: The store.
        spec: The agent spec as given (part of the key).
        options: The agent options (part of the key, less ``NON_ANSWER_OPTIONS``).
        task_facts: The task's tool names and facts (part of the key).
    """

    def __init__(
        self,
        agent: Any,
        cache: ResultCache,
        *,
        spec: str,
        options: Mapping[str, Any],
        task_facts: Mapping[str, Any] | None = None,
    ) -> None:
        super().__init__(
            agent, ("requires", "tasks", "max_concurrency", "thread_safe", "network_calls", "provider_model"))
        self.cache = cache
        self.spec = spec
        self.options = dict(options)
        self.task_facts = dict(task_facts or {})

    def key(self, request: AgentRequest) -> str:
        """The cache key of ``request`` for this agent (see ``cache_key``)."""
        return cache_key(
            agent_spec=self.spec, agent_name=self.name, model=self.model, options=self.options,
            request=request, task_facts=self.task_facts,
        )

    @property
    def submit(self) -> Callable[[AgentRequest], Future[AgentResult]] | None:
        """``submit_cached`` when the wrapped agent can submit a request without waiting (batch mode), else None."""
        return self.submit_cached if callable(getattr(self.wrapped, "submit", None)) else None

    def submit_cached(self, request: AgentRequest) -> Future[AgentResult]:
        """As ``run``, without waiting: a hit is a finished future; a miss is the wrapped agent's ``submit``.

        Its answer (or cacheable failure) is stored when it comes in.
        """
        key = self.key(request)
        out: Future[AgentResult] = Future()
        try:
            hit = self._hit(key)
        except AgentError as exc:
            out.set_exception(exc)
            return out
        if hit is not None:
            out.set_result(hit)
            return out

        def finish(done: Future[Any]) -> None:
            try:
                out.set_result(self._store(key, done.result()))
            except BaseException as exc:
                self._store_failure(key, exc)
                out.set_exception(exc)

        self.wrapped.submit(request).add_done_callback(finish)
        return out

    def _hit(self, key: str) -> AgentResult | None:
        """The cached answer under ``key`` (``cached=True``), or None.

        Raises:
            AgentError: A cached agent-behaviour failure, re-raised as its own class.
        """
        entry = self.cache.get(key)
        if entry is not None and entry["kind"] == "error" and entry["type"] in NEVER_REPLAYED:
            entry = None  # a cut reply stored by an earlier version: asked again
        if entry is None:
            return None
        if entry["kind"] == "error":
            raise rebuild_error(entry["type"], entry["message"], entry.get("attempts"), entry["details"])
        return AgentResult(
            text=entry["text"], model=entry.get("model"), usage=entry["usage"], attempts=entry.get("attempts") or 0,
            trace=entry["trace"], meta=entry["meta"], cached=True,
            messages=[m for m in entry.get("messages") or [] if isinstance(m, dict)],
        )

    def _store_failure(self, key: str, exc: BaseException) -> None:
        """Store an agent-behaviour failure that is the model's answer (``CACHEABLE_ERRORS``, exact classes)."""
        if isinstance(exc, AgentError) and type(exc) is CACHEABLE_ERRORS.get(type(exc).__name__):
            self.cache.put(key, {
                "kind": "error", "type": type(exc).__name__, "message": str(exc), "attempts": exc.attempts,
                "details": exc.details,
            }, agent=self.name, model=self.model)

    def _store(self, key: str, out: Any) -> Any:
        """Store an answer (a ``str`` becomes an ``AgentResult``); anything else is returned unstored."""
        if isinstance(out, str):
            out = AgentResult(text=out)
        if not isinstance(out, AgentResult):
            return out  # not an answer: the runner reports the wrong type; nothing is stored
        self.cache.put(key, {
            "kind": "result", "text": out.text, "model": out.model, "usage": out.usage, "attempts": out.attempts,
            "trace": out.trace, "meta": out.meta, "messages": out.messages,
        }, agent=self.name, model=self.model)
        return out

    def run(self, request: AgentRequest) -> AgentResult:
        """Answer from the cache (``cached=True``), or call the wrapped agent and store its answer.

        Returns:
            An ``AgentResult``, or whatever the wrapped agent returned when that is not a
            ``str``/``AgentResult`` (the runner reports it; nothing is stored).

        Raises:
            AgentError: A cached agent-behaviour failure, re-raised as its own class, or what the
                wrapped agent raised.
        """
        key = self.key(request)
        hit = self._hit(key)
        if hit is not None:
            return hit
        try:
            out: Any = self.wrapped.run(request)
        except AgentError as exc:
            self._store_failure(key, exc)
            raise
        stored: AgentResult = self._store(key, out)  # or not an answer: the runner reports the wrong type
        return stored
