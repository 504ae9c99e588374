"""A response cache for agent results (``--groundeval-cache DIR``), and the agent wrapper that uses it.

Each result is stored under a key of (agent spec, agent name, model, the SHA-256 of the full
request: system and user prompt, request context, the task's tools and facts, every agent option
that changes the answer, and the trial index). A rerun with the same key makes no model call; its
``AgentResult`` has ``cached=True``.

What is cached:

* answers (an ``AgentResult`` or a ``str``), whatever they score;
* agent-behaviour failures of the model itself, ``RefusalError`` and ``AgentLoopError``: they
  are the model's answer to this request, and replaying them keeps the outcome;

never: a ``TruncatedError`` (a reply cut at ``max_tokens`` or the context window holds no whole
answer; sampled again, or with a higher limit, it may fit, so the next run asks again, and an
entry of one stored by an earlier version is read as a miss), an ``InfraError`` (rate limits,
timeouts, a rejected key: nothing about the answer), a plain ``AgentError`` (an agent's own
"could not answer" may be transient) or any other exception.

Secrets never reach the file: an entry passes through the same redaction as every other output
(``groundeval.redaction``) before it is stored: the answer text through ``redact`` (secret
environment values, URL credentials, echoed ``Basic``/``Bearer`` tokens), everything else
(message, usage, trace, meta, details) through ``clean``. The runner scores the answer after the
same ``redact`` (``execution.call.call_agent``), and ``redact`` of a redacted text changes nothing, so an
answer read back from the cache is scored exactly as it was when it was first made.

The store is one SQLite file (standard library ``sqlite3``) in WAL mode, so several pytest-xdist
workers and two runs can share a directory: each operation opens its own connection with a busy
timeout, and writes are single ``INSERT OR REPLACE`` statements (short transactions; the last
writer of a key wins, and any of them is a valid answer). A corrupt database file, a bad entry or
a schema from another groundeval version is ignored with one ``CacheWarning`` per process: the run
goes on without the cache (or without that entry), never crashes.

Source for WAL: https://www.sqlite.org/wal.html (readers and one writer run concurrently;
``busy_timeout``: https://www.sqlite.org/pragma.html#pragma_busy_timeout).
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import threading
import warnings
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from groundeval.agent_io import AgentRequest, AgentResult
from groundeval.errors import AgentError, AgentLoopError, RefusalError, TruncatedError
from groundeval.models.retry import CALL_POLICY_OPTIONS
from groundeval.redaction import clean, redact

__all__ = [
    "CACHEABLE_ERRORS",
    "CACHE_FILE",
    "NON_ANSWER_OPTIONS",
    "CacheWarning",
    "CachingAgent",
    "ResultCache",
    "cache_key",
    "rebuild_error",
]

SCHEMA_VERSION = 1
"""Stored in SQLite's ``user_version``; a file with another value is not read."""
CACHE_FILE = f"groundeval-results-v{SCHEMA_VERSION}.sqlite3"
"""The database file inside the cache directory."""
BUSY_TIMEOUT_S = 30.0
"""How long an operation waits for another process's write lock, seconds."""
NON_ANSWER_OPTIONS = frozenset(CALL_POLICY_OPTIONS)
"""Agent options left out of the key: they bound the call, they do not change the answer."""
CACHEABLE_ERRORS: dict[str, type[AgentError]] = {"RefusalError": RefusalError, "AgentLoopError": AgentLoopError}
"""Agent-behaviour failures that are the model's answer, by class name (exact classes only)."""
NEVER_REPLAYED: dict[str, type[AgentError]] = {"TruncatedError": TruncatedError}
"""Failures an earlier version stored that are read as a miss: a cut reply is asked again."""
_BEHAVIOUR_ERRORS: dict[str, type[AgentError]] = {**CACHEABLE_ERRORS, **NEVER_REPLAYED, "AgentError": AgentError}
_COLUMNS = ("key", "agent", "model", "created_at", "value")


class CacheWarning(UserWarning):
    """The response cache could not be read or written; the run goes on without it."""


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"), default=str)


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
    return hashlib.sha256(_canonical(payload).encode("utf-8", "surrogatepass")).hexdigest()


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


class ResultCache:
    """The SQLite store under a cache directory; safe across threads and processes.

    Args:
        directory: The cache directory (created on first write); the file is ``CACHE_FILE``.
    """

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.path = directory / CACHE_FILE
        self._lock = threading.Lock()
        self._ready = False
        self._disabled = False
        self._warned = False

    def _warn(self, problem: str) -> None:
        with self._lock:
            if self._warned:
                return
            self._warned = True
        warnings.warn(f"groundeval cache {self.path}: {problem}", CacheWarning, stacklevel=3)

    def _connect(self) -> sqlite3.Connection:
        con = sqlite3.connect(self.path, timeout=BUSY_TIMEOUT_S, isolation_level=None)
        con.execute(f"PRAGMA busy_timeout = {int(BUSY_TIMEOUT_S * 1000)}")
        return con

    def _open(self) -> bool:
        """Create or check the database once per process; False when the cache is off."""
        if self._ready or self._disabled:
            return self._ready
        with self._lock:
            if self._ready or self._disabled:
                return self._ready
            try:
                self.directory.mkdir(parents=True, exist_ok=True)
                con = self._connect()
                try:
                    self._prepare(con)
                finally:
                    con.close()
            except (sqlite3.Error, OSError, _SchemaMismatch) as exc:
                self._disabled = True
                problem = str(exc) if isinstance(exc, _SchemaMismatch) else f"{type(exc).__name__}: {exc}"
                if isinstance(exc, OSError) or not self.path.is_file():
                    fix = f"; give --groundeval-cache a writable directory (not {self.directory})"
                else:
                    fix = f"; delete {self.path} to start a new cache"
                warnings.warn(
                    f"groundeval cache {self.path}: {problem}; running without the cache{fix}",
                    CacheWarning, stacklevel=4,
                )
                self._warned = True
                return False
            self._ready = True
            return True

    @staticmethod
    def _prepare(con: sqlite3.Connection) -> None:
        mode = con.execute("PRAGMA journal_mode = WAL").fetchone()[0]
        if str(mode).lower() != "wal":
            raise sqlite3.OperationalError(f"journal_mode is {mode!r}, not WAL")
        version = con.execute("PRAGMA user_version").fetchone()[0]
        if version not in (0, SCHEMA_VERSION):
            raise _SchemaMismatch(f"schema version {version}, this groundeval reads {SCHEMA_VERSION}")
        con.execute("BEGIN IMMEDIATE")
        try:
            con.execute(
                "CREATE TABLE IF NOT EXISTS results (key TEXT PRIMARY KEY, agent TEXT, model TEXT, "
                "created_at TEXT, value TEXT NOT NULL)"
            )
            columns = tuple(row[1] for row in con.execute("PRAGMA table_info(results)"))
            if columns != _COLUMNS:
                raise _SchemaMismatch(f"table results has columns {columns}, expected {_COLUMNS}")
            con.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
            con.execute("COMMIT")
        except BaseException:
            con.execute("ROLLBACK")
            raise

    def get(self, key: str) -> dict[str, Any] | None:
        """The stored entry for ``key`` (a JSON object), or None for a miss or an unreadable entry."""
        if not self._open():
            return None
        try:
            con = self._connect()
            try:
                row = con.execute("SELECT value FROM results WHERE key = ?", (key,)).fetchone()
            finally:
                con.close()
        except sqlite3.Error as exc:
            self._warn(f"cannot read ({type(exc).__name__}: {exc}); that case calls the agent")
            return None
        if row is None:
            return None
        try:
            entry = json.loads(row[0])
            _check_entry(entry)
        except (TypeError, ValueError) as exc:
            self._warn(f"entry {key[:12]} is unreadable ({exc}); ignored, the agent is called and the entry replaced")
            return None
        result: dict[str, Any] = entry
        return result

    def put(self, key: str, entry: Mapping[str, Any], *, agent: str, model: str | None) -> None:
        """Store ``entry`` under ``key`` (replacing any); a failure warns once and is otherwise ignored."""
        if not self._open():
            return
        try:
            value = _canonical(_redacted(entry))
            con = self._connect()
            try:
                con.execute(
                    "INSERT OR REPLACE INTO results (key, agent, model, created_at, value) VALUES (?, ?, ?, ?, ?)",
                    (key, agent, model, datetime.now(UTC).isoformat(), value),
                )
            finally:
                con.close()
        except (sqlite3.Error, TypeError, ValueError) as exc:
            self._warn(f"cannot write ({type(exc).__name__}: {exc}); results of this run are not cached")


def _redacted(entry: Mapping[str, Any]) -> dict[str, Any]:
    """The entry as stored: the answer text through ``redact``, every other string through ``clean``.

    The text keeps its control characters (only secrets go), so it parses as the runner parsed it.
    """
    stored: dict[str, Any] = {k: v if k == "text" else clean(v) for k, v in entry.items()}
    if isinstance(stored.get("text"), str):
        stored["text"] = redact(stored["text"])
    return stored


class _SchemaMismatch(Exception):
    """The database was made by another groundeval version."""


def _check_entry(entry: Any) -> None:
    """Raise ValueError unless ``entry`` is a stored result, agent-behaviour failure or model response.

    A ``response`` entry is a model's reply stored by ``models.response_cache`` (a judge's).
    """
    if not isinstance(entry, dict):
        raise ValueError("not a JSON object")
    kind = entry.get("kind")
    if kind == "result":
        if not isinstance(entry.get("text"), str):
            raise ValueError("a result without text")
        for name, shape in (("usage", dict), ("trace", list), ("meta", dict)):
            if not isinstance(entry.get(name), shape):
                raise ValueError(f"{name} is not a {shape.__name__}")
    elif kind == "response":
        if not isinstance(entry.get("text"), str) or not isinstance(entry.get("usage"), dict):
            raise ValueError("a response without text or usage")
    elif kind == "error":
        if entry.get("type") not in {**CACHEABLE_ERRORS, **NEVER_REPLAYED} or not isinstance(entry.get("message"), str):
            raise ValueError(f"error entry of type {entry.get('type')!r}")
        if not isinstance(entry.get("details"), dict):
            raise ValueError("error details are not an object")
    else:
        raise ValueError(f"unknown kind {kind!r}")


class CachingAgent:
    """Wraps an agent: answers from the cache when it can, else calls the agent and stores its answer.

    Has the wrapped agent's ``name``, ``model``, ``requires``, ``tasks`` and ``max_concurrency``,
    and delegates ``warmup()`` and ``close()``, so tasks, scorers and the runner see the same agent. Thread-safe
    (``--groundeval-concurrency`` calls it from several threads).

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
        self.wrapped = agent
        self.cache = cache
        self.spec = spec
        self.options = dict(options)
        self.task_facts = dict(task_facts or {})
        self.name: str = agent.name
        self.model: str | None = getattr(agent, "model", None)
        for attr in ("requires", "tasks", "max_concurrency", "thread_safe", "network_calls", "provider_model"):
            if getattr(agent, attr, None) is not None:
                setattr(self, attr, getattr(agent, attr))

    def warmup(self) -> None:
        """The wrapped agent's ``warmup()``, if it has one."""
        warmup = getattr(self.wrapped, "warmup", None)
        if callable(warmup):
            warmup()

    def close(self) -> None:
        """The wrapped agent's ``close()``, if it has one."""
        close = getattr(self.wrapped, "close", None)
        if callable(close):
            close()

    def key(self, request: AgentRequest) -> str:
        """The cache key of ``request`` for this agent (see ``cache_key``)."""
        return cache_key(
            agent_spec=self.spec, agent_name=self.name, model=self.model, options=self.options,
            request=request, task_facts=self.task_facts,
        )

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
        entry = self.cache.get(key)
        if entry is not None and entry["kind"] == "error" and entry["type"] in NEVER_REPLAYED:
            entry = None  # a cut reply stored by an earlier version: asked again
        if entry is not None:
            if entry["kind"] == "error":
                raise rebuild_error(entry["type"], entry["message"], entry.get("attempts"), entry["details"])
            return AgentResult(
                text=entry["text"], model=entry.get("model"), usage=entry["usage"], attempts=entry.get("attempts") or 0,
                trace=entry["trace"], meta=entry["meta"], cached=True,
                messages=[m for m in entry.get("messages") or [] if isinstance(m, dict)],
            )
        try:
            out: Any = self.wrapped.run(request)
        except AgentError as exc:
            if type(exc).__name__ in CACHEABLE_ERRORS and type(exc) is CACHEABLE_ERRORS[type(exc).__name__]:
                self.cache.put(key, {
                    "kind": "error", "type": type(exc).__name__, "message": str(exc), "attempts": exc.attempts,
                    "details": exc.details,
                }, agent=self.name, model=self.model)
            raise
        if isinstance(out, str):
            out = AgentResult(text=out)
        if not isinstance(out, AgentResult):
            wrong: AgentResult = out  # not an answer: the runner reports the wrong type; nothing is stored
            return wrong
        self.cache.put(key, {
            "kind": "result", "text": out.text, "model": out.model, "usage": out.usage, "attempts": out.attempts,
            "trace": out.trace, "meta": out.meta, "messages": out.messages,
        }, agent=self.name, model=self.model)
        return out
