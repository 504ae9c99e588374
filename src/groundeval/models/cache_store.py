"""The SQLite store under a cache directory (``--groundeval-cache DIR``): entries by key, redacted.

Two caches keep their entries here, each under its own keys: the agent-result cache
(``groundeval.agents.result_cache``: an agent's answers and its agent-behaviour failures, entries
of kind ``result`` and ``error``) and the model-response cache (``groundeval.models.response_cache``:
a model's replies, entries of kind ``response``). The store knows the shape of each kind, not
what goes into a key.

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

import json
import sqlite3
import threading
import warnings
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from groundeval.errors import AgentError, AgentLoopError, RefusalError, TruncatedError
from groundeval.redaction import clean, redact

__all__ = [
    "CACHEABLE_ERRORS",
    "CACHE_FILE",
    "NEVER_REPLAYED",
    "SCHEMA_VERSION",
    "CacheWarning",
    "ResultCache",
    "canonical",
]

SCHEMA_VERSION = 1
"""Stored in SQLite's ``user_version``; a file with another value is not read."""
CACHE_FILE = f"groundeval-results-v{SCHEMA_VERSION}.sqlite3"
"""The database file inside the cache directory."""
BUSY_TIMEOUT_S = 30.0
"""How long an operation waits for another process's write lock, seconds."""
CACHEABLE_ERRORS: dict[str, type[AgentError]] = {"RefusalError": RefusalError, "AgentLoopError": AgentLoopError}
"""Agent-behaviour failures that are the model's answer, by class name (exact classes only): an
entry of kind ``error`` holds one of these (``agents.result_cache`` stores and replays them)."""
NEVER_REPLAYED: dict[str, type[AgentError]] = {"TruncatedError": TruncatedError}
"""Failures an earlier version stored that are read as a miss: a cut reply is asked again."""
_COLUMNS = ("key", "agent", "model", "created_at", "value")


class CacheWarning(UserWarning):
    """The cache could not be read or written; the run goes on without it."""


def canonical(value: Any) -> str:
    """``value`` as canonical JSON (sorted keys, no spaces, ``str`` for anything else): what keys hash."""
    return json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"), default=str)


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
            value = canonical(_redacted(entry))
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
