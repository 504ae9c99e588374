"""Stream finished eval cases to LangSmith (on when ``LANGSMITH_API_KEY`` is set).

Each case becomes one LangSmith run in the project ``LANGSMITH_PROJECT`` (default
``groundeval``):

* the root run: name = case id, run type ``chain``; inputs = case id, task, prompt SHA-256 and
  fixture SHA-256 (never the prompt or the bundle); outputs = the raw answer, outcome, metrics
  and failure message; metadata = run id, task, agent, model, outcome, latency, attempts, usage
  (tokens, ``cost_usd``) and error type; an agent error becomes the run's ``error``;
* one child run of type ``tool`` per entry of ``AgentResult.trace`` (``{"tool", "args",
  "result", "ok"}``), in order; tool runs carry order, not timing (the trace has none).

Every string is passed through ``groundeval.redaction.redact`` and every field longer than
``MAX_FIELD_CHARS`` characters of JSON is cut, so secrets never leave the process and payloads
stay small.

Streaming never changes an outcome and never slows the eval: ``record_case`` only builds a small
dict and queues it; one daemon thread imports ``langsmith`` and posts batches
(``Client.multipart_ingest``, ``POST /runs/multipart``). The first failure (bad key, server error,
no network) stops streaming for the rest of the run; ``close`` waits at most ``timeout_s``
seconds and then emits a single ``LangSmithStreamWarning``. The plugin imports this module only
when ``LANGSMITH_API_KEY`` is set.
"""

from __future__ import annotations

import json
import logging
import os
import queue
import threading
import warnings
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from groundeval.extras import extra_missing_message, has_module
from groundeval.redaction import redact

if TYPE_CHECKING:
    from langsmith import Client
    from langsmith.run_trees import RunTree

    from groundeval.runner import RunInfo

__all__ = ["DEFAULT_PROJECT", "LangSmithStream", "LangSmithStreamWarning", "enabled"]

DEFAULT_PROJECT = "groundeval"
FLUSH_TIMEOUT_S = 5.0
"""Default wait for queued cases at the end of the run, seconds."""
MAX_FIELD_CHARS = 2_000
"""Longest JSON text kept for one input/output field, characters."""
MAX_BATCH_CASES = 20
"""Cases sent in one request at most."""
_OFF = frozenset({"false", "0", "no", "off"})
_LANGSMITH_LOGGERS = ("langsmith.client", "langsmith._internal._operations")

logger = logging.getLogger(__name__)


class LangSmithStreamWarning(UserWarning):
    """Streaming to LangSmith failed or timed out; the eval results are unaffected."""


def enabled(environ: Mapping[str, str] | None = None) -> bool:
    """True when ``LANGSMITH_API_KEY`` is set and ``LANGSMITH_TRACING`` is not ``false``/``0``/``no``/``off``."""
    env = os.environ if environ is None else environ
    return bool(env.get("LANGSMITH_API_KEY")) and env.get("LANGSMITH_TRACING", "").strip().lower() not in _OFF


class LangSmithStream:
    """Sends case records to LangSmith from one background thread; no method ever raises.

    Args:
        info: Run-wide facts (run id, task, agent, model) copied into every run's metadata.
        project: LangSmith project name.
    """

    def __init__(self, info: RunInfo, project: str = DEFAULT_PROJECT) -> None:
        self.info = info
        self.project = project
        self._queue: queue.SimpleQueue[dict[str, Any] | None] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self._cases = 0
        self._sent = 0
        self._error: str | None = None
        self._closed = False
        self._warned = False

    @classmethod
    def from_env(cls, info: RunInfo) -> LangSmithStream | None:
        """A stream for ``LANGSMITH_PROJECT`` when ``enabled()``, else None.

        Without the ``langsmith`` extra installed this returns None and emits one
        ``LangSmithStreamWarning`` naming the extra: streaming never stops an eval.
        """
        if not enabled():
            return None
        if not has_module("langsmith"):  # LANGSMITH_API_KEY set in an install without the extra
            what = "streaming to LangSmith (LANGSMITH_API_KEY is set)"
            warnings.warn(LangSmithStreamWarning(extra_missing_message("langsmith", "langsmith", what)), stacklevel=2)
            return None
        return cls(info, os.environ.get("LANGSMITH_PROJECT") or DEFAULT_PROJECT)

    @property
    def error(self) -> str | None:
        """The first failure (redacted, one line), or None."""
        return self._error

    @property
    def sent(self) -> int:
        """Cases accepted by the LangSmith API so far."""
        return self._sent

    def record_case(self, record: Mapping[str, Any], trace: Sequence[Mapping[str, Any]] | None = None) -> None:
        """Queue one finished case (a success or an error record) for sending.

        Args:
            record: The case record (``runner.evaluate`` or ``runner.error_record``).
            trace: The agent's tool calls; defaults to ``record["trace"]``.
        """
        if self._closed:
            return
        self._cases += 1
        if self._error is not None:
            return
        try:
            payload = case_payload(self.info, record, record.get("trace") if trace is None else trace)
            with self._lock:
                if self._thread is None:
                    self._thread = threading.Thread(target=self._run, name="groundeval-langsmith", daemon=True)
                    self._thread.start()
            self._queue.put(payload)
        except Exception as exc:
            self._fail(exc)

    def close(self, timeout_s: float = FLUSH_TIMEOUT_S) -> None:
        """Send what is queued, waiting at most ``timeout_s`` seconds; warn once if anything failed."""
        try:
            self._closed = True
            thread = self._thread
            if thread is not None:
                self._queue.put(None)
                thread.join(timeout_s)
                if thread.is_alive() and self._error is None:
                    self._error = f"cases were still being sent after {timeout_s:g} s"
            if self._error is not None:
                self._warn()
        except Exception:  # pragma: no cover - last line of defence
            logger.debug("closing the LangSmith stream failed", exc_info=True)

    # -- internals ----------------------------------------------------------------------------
    def _fail(self, exc: BaseException) -> None:
        """Keep the first failure (also the Client's ``tracing_error_callback``); stops streaming."""
        if self._error is None:
            lines = str(exc).strip().splitlines() or [""]
            first = redact(f"{type(exc).__name__}: {lines[0]}")
            self._error = first if len(first) <= 240 else f"{first[:240]}..."
        logger.debug("LangSmith streaming failed", exc_info=exc)

    def _warn(self) -> None:
        if self._warned:
            return
        self._warned = True
        message = (
            f"groundeval: streaming to LangSmith failed, {self._cases - self._sent} of {self._cases} case(s) "
            f"not recorded there ({self._error}). The eval results are unaffected; set LANGSMITH_TRACING=false "
            "or unset LANGSMITH_API_KEY to stop streaming."
        )
        try:
            warnings.warn(LangSmithStreamWarning(message), stacklevel=2)
        except Exception:  # warnings turned into errors: never let that break the run
            logger.warning(message)

    def _run(self) -> None:
        """Thread body: build the client, then post batches until the ``None`` sentinel."""
        quiet = _ThreadFilter(threading.get_ident())
        for name in _LANGSMITH_LOGGERS:  # the Client logs each failure itself; we warn once instead
            logging.getLogger(name).addFilter(quiet)
        try:
            client: Client | None = None
            done = False
            while not done:
                batch = [self._queue.get()]
                while len(batch) < MAX_BATCH_CASES:
                    try:
                        batch.append(self._queue.get_nowait())
                    except queue.Empty:
                        break
                done = None in batch
                cases = [case for case in batch if case is not None]
                if not cases or self._error is not None:
                    continue
                try:
                    client = client or self._client()
                    runs = [run.model_dump() for case in cases for run in _run_trees(case, self.project)]
                    client.multipart_ingest(create=runs)
                except Exception as exc:
                    self._fail(exc)
                if self._error is None:  # the Client reports HTTP failures through _fail
                    with self._lock:
                        self._sent += len(cases)
        except BaseException as exc:  # pragma: no cover - e.g. interpreter shutdown
            self._fail(exc)
        finally:
            for name in _LANGSMITH_LOGGERS:
                logging.getLogger(name).removeFilter(quiet)

    def _client(self) -> Client:
        """A synchronous Client (endpoint and key from ``LANGSMITH_ENDPOINT``/``LANGSMITH_API_KEY``).

        Few, short retries: a failure stops streaming anyway, and a dead endpoint must not keep
        the thread busy past the end of the run.
        """
        from langsmith import Client
        from urllib3.util.retry import Retry

        retry = Retry(
            total=1, backoff_factor=0.25, status_forcelist=[429, 500, 502, 503, 504], allowed_methods=None,
            raise_on_status=False, raise_on_redirect=False, respect_retry_after_header=False,
        )
        return Client(
            auto_batch_tracing=False, retry_config=retry, timeout_ms=(3_000, 10_000),
            tracing_error_callback=self._fail,
        )


class _ThreadFilter(logging.Filter):
    """Drops log records emitted by one thread (the stream's own)."""

    def __init__(self, ident: int) -> None:
        super().__init__()
        self.ident = ident

    def filter(self, record: logging.LogRecord) -> bool:
        """False for records from the stream's thread."""
        return record.thread != self.ident


def case_payload(info: RunInfo, record: Mapping[str, Any], trace: Sequence[Mapping[str, Any]] | None) -> dict[str, Any]:
    """The plain-dict description of one case's runs (no langsmith objects; cheap).

    Returns:
        ``{"name", "inputs", "outputs", "error", "metadata", "start_time", "end_time",
        "tools": [{"name", "inputs", "outputs", "error"}]}``; strings redacted, fields clipped.
    """
    error = record.get("error") or None
    end = datetime.now(UTC)
    latency_s = float(record.get("latency_s") or 0.0)
    outputs: dict[str, Any] = {"outcome": record.get("outcome")}
    if "raw_output" in record:
        outputs |= {
            "answer": record.get("raw_output"), "metrics": record.get("metrics"),
            "format_ok": record.get("format_ok"), "message": record.get("message") or None,
        }
    metadata = {
        "run_id": info.run_id, "task": info.task, "agent": info.agent, "model": record.get("model") or info.model,
        "outcome": record.get("outcome"), "latency_s": latency_s, "attempts": record.get("attempts"),
        "usage": record.get("usage") or {}, "error_type": error["type"] if error else None,
    }
    tools = []
    for entry in trace or ():
        ok = entry.get("ok")
        result = entry.get("result")
        tool_error = None
        if ok is False:
            detail = result.get("error") if isinstance(result, Mapping) else None
            tool_error = _clip(f"tool returned ok=false: {detail}" if detail else "tool returned ok=false")
        args = entry.get("args")
        tools.append({
            "name": str(entry.get("tool") or "tool"),
            "inputs": _clip(args) if isinstance(args, Mapping) else {"args": _clip(args)},
            "outputs": {"output": _clip(result), "ok": ok},
            "error": tool_error,
        })
    return {
        "name": redact(str(record.get("case_id"))),
        "inputs": _clip({
            "case_id": record.get("case_id"), "task": info.task,
            "prompt_sha256": record.get("prompt_sha256"), "fixture_sha256": record.get("fixture_sha256"),
        }),
        "outputs": {k: _clip(v) for k, v in outputs.items() if v is not None},
        "error": _clip(f"{error['type']}: {error['message']}") if error else None,
        "metadata": _clip(metadata),
        "start_time": end - timedelta(seconds=latency_s),
        "end_time": end,
        "tools": tools,
    }


def _clip(value: Any, limit: int = MAX_FIELD_CHARS) -> Any:
    """``value`` with every string redacted; cut to a string of ``limit`` characters if longer as JSON."""
    value = _redacted(value)
    text = value if isinstance(value, str) else json.dumps(value, default=str, ensure_ascii=False)
    if len(text) <= limit:
        return value
    cut = text[:limit]
    if isinstance(value, Mapping):  # inputs/outputs must stay objects
        return {"truncated": f"{cut}... [{len(text)} chars]"}
    return f"{cut}... [{len(text)} chars]"


def _redacted(value: Any) -> Any:
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, Mapping):
        return {redact(str(k)): _redacted(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_redacted(v) for v in value]
    return value


def _run_trees(case: Mapping[str, Any], project: str) -> list[RunTree]:
    """The root run and its tool runs for one ``case_payload``, finished and ready to post."""
    from langsmith.run_trees import RunTree

    root = RunTree(
        name=case["name"], run_type="chain", inputs=case["inputs"], project_name=project,
        start_time=case["start_time"], extra={"metadata": case["metadata"]}, tags=["groundeval"],
    )
    for i, tool in enumerate(case["tools"], start=1):
        at = case["start_time"] + timedelta(microseconds=i)
        root.create_child(
            tool["name"], "tool", inputs=tool["inputs"], outputs=tool["outputs"], error=tool["error"],
            start_time=at, end_time=at,
        )
    root.end(outputs=case["outputs"], error=case["error"], end_time=case["end_time"])
    return [root, *root.child_runs]
