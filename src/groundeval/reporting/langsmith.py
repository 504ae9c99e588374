"""Stream finished eval cases to LangSmith as one experiment (on when ``LANGSMITH_API_KEY`` is set).

All cases of a run go into one LangSmith project (an experiment) named ``groundeval-<run_id>``
(``LANGSMITH_PROJECT``, when set, is used as the prefix instead of ``groundeval``). Every
pytest-xdist worker shares the run id, so all workers write into the same experiment: each
process creates it with ``upsert=True`` and gets the same project back. Per case:

* the root run: name = case id, run type ``chain``; inputs = case id, task, prompt SHA-256 and
  fixture SHA-256 (never the prompt or the bundle); outputs = the raw answer, outcome, metrics
  and failure message; metadata = run id, task, agent, model, outcome, latency, attempts, usage
  (tokens, ``cost_usd``) and error type; an agent error becomes the run's ``error``;
* one child run of type ``tool`` per entry of the record's ``trace`` (``{"tool", "args",
  "result", "ok"}``, e.g. the LangGraph agent's tool calls), in order; they carry order, not timing;
* feedback on the root run, only for counted cases (``groundeval.records.outcomes``), one key
  per metric of the case record whose value is a number or a boolean (the task's own
  ``metric_names``, whatever the task; not-applicable ``None`` and text values are left out).
  LangSmith charts a feedback ``score`` as a fraction in [0, 1], so only fractions go as scores
  (``feedback_scores``): ``passed`` (1/0 from the outcome), booleans (1/0) and rates (floats in
  [0, 1]). Counts (integers: ``tp``, ``dimensions_passed``), values a task marks as such
  (``metric_directions`` ``"none"``: the write task's ``dose_mg``, ``daily_total_mg``) and any
  number outside [0, 1] go as the feedback's ``value`` with a ``comment`` saying what it is
  (``feedback_values``), never as a score.

Every string is passed through ``groundeval.redaction.redact`` and every field longer than
``MAX_FIELD_CHARS`` characters of JSON is cut the way the run record cuts a string
(``groundeval.records.caps.cut_text``), so secrets never leave the process and payloads stay small.

Sending uses the langsmith client's own background batching (``Client(auto_batch_tracing=True)``:
runs and feedback are queued and posted to ``/runs/multipart`` by the client's thread);
``record_case`` only builds and queues. The first call of a process makes two short synchronous
requests (``GET /info``, ``POST /sessions``), bounded by the client timeouts below. ``close``
calls ``Client.flush(timeout=...)``. The first failure (bad key, server error, no network) stops
streaming for the rest of the process and shows up as one ``LangSmithStreamWarning``. No method
raises. The plugin imports this module only when ``LANGSMITH_API_KEY`` is set; without it
nothing touches the network.
"""

from __future__ import annotations

import json
import logging
import os
import threading
import warnings
from collections.abc import Collection, Mapping, Sequence
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from groundeval.extras import extra_missing_message, has_module
from groundeval.records.caps import MAX_CHARS, cut_text
from groundeval.redaction import clean, clean_text, redact

if TYPE_CHECKING:
    from langsmith import Client
    from langsmith.run_trees import RunTree

    from groundeval.execution.outcome_policy import RunInfo

__all__ = [
    "DEFAULT_PROJECT",
    "LangSmithStream",
    "LangSmithStreamWarning",
    "case_payload",
    "enabled",
    "experiment_name",
    "feedback_scores",
    "feedback_values",
]

DEFAULT_PROJECT = "groundeval"
FLUSH_TIMEOUT_S = 5.0
"""Default wait for queued runs and feedback at the end of the run, seconds."""
MAX_FIELD_CHARS = MAX_CHARS
"""Longest JSON text kept for one input/output field, characters (the record's string cap, ``records.caps``)."""
_OFF = frozenset({"false", "0", "no", "off"})
_DAEMON_ENV = "LANGSMITH_USE_DAEMON"

logger = logging.getLogger(__name__)


class LangSmithStreamWarning(UserWarning):
    """Streaming to LangSmith failed or timed out; the eval results are unaffected."""


def enabled(environ: Mapping[str, str] | None = None) -> bool:
    """True when ``LANGSMITH_API_KEY`` is set and ``LANGSMITH_TRACING`` is not ``false``/``0``/``no``/``off``."""
    env = os.environ if environ is None else environ
    return bool(env.get("LANGSMITH_API_KEY")) and env.get("LANGSMITH_TRACING", "").strip().lower() not in _OFF


def experiment_name(run_id: str, prefix: str = DEFAULT_PROJECT) -> str:
    """The LangSmith project (experiment) of a run: ``<prefix>-<run_id>``."""
    return f"{prefix}-{run_id}"


def _is_score(value: bool | int | float, is_value: bool) -> bool:
    """A boolean, or a float in [0, 1] that the task does not mark as a value: a fraction LangSmith can chart."""
    if isinstance(value, bool):
        return True
    return isinstance(value, float) and not is_value and 0.0 <= value <= 1.0


def _numbers(record: Mapping[str, Any]) -> dict[str, bool | int | float]:
    """The numeric and boolean metrics of a counted case record, in order; ``{}`` for any other."""
    if not record.get("counted"):
        return {}
    metrics = record.get("metrics") or {}
    return {k: v for k, v in metrics.items() if k != "passed" and isinstance(v, bool | int | float)}


def feedback_scores(record: Mapping[str, Any], values: Collection[str] = ()) -> dict[str, float]:
    """Feedback key -> score in [0, 1] for a counted case record; ``{}`` for an excluded or not-run case.

    ``passed`` is 1/0 from the outcome; then every metric of the record that is a fraction, in its
    order: booleans as 1/0 and floats in [0, 1], except the metrics named in ``values`` (a task's
    ``metric_directions`` ``"none"``: doses, values in their own units).
    """
    if not record.get("counted"):
        return {}
    scores = {"passed": 1.0 if record.get("outcome") == "passed" else 0.0}
    for key, value in _numbers(record).items():
        if _is_score(value, key in values):
            scores[key] = float(value)
    return scores


def feedback_values(record: Mapping[str, Any], values: Collection[str] = ()) -> dict[str, tuple[int | float, str]]:
    """Feedback key -> (value, comment) for the numeric metrics that are not scores (see ``feedback_scores``).

    Counts (integers), the metrics named in ``values`` and any number outside [0, 1], each with a
    comment saying why it is a value (``"a count, not a score"``, ``"a value in the metric's own
    units, not a score"``); ``{}`` for an excluded or not-run case.
    """
    out: dict[str, tuple[int | float, str]] = {}
    for key, value in _numbers(record).items():
        if _is_score(value, key in values):
            continue
        if isinstance(value, int) and key not in values:
            out[key] = (value, f"{key} = {value}: a count, not a score")
        else:
            out[key] = (value, f"{key} = {value}: a value in the metric's own units, not a score")
    return out


class _Quiet(logging.Filter):
    """Drops the langsmith client's own failure logs while a stream is open (it warns once instead)."""

    def filter(self, record: logging.LogRecord) -> bool:
        """False for every record (attached only to langsmith's loggers)."""
        return False


_LANGSMITH_LOGGERS = ("langsmith.client", "langsmith._internal._background_thread", "langsmith._internal._operations")


class LangSmithStream:
    """Sends case records to LangSmith through the client's background batching; no method raises.

    Args:
        info: Run-wide facts (run id, task, agent, model) copied into every run's metadata.
        project: The experiment (LangSmith project) name.
        client: A ``langsmith.Client`` to use (tests); by default one is built on first use.
        values: Metrics sent as feedback values, never as scores, whatever their number (the
            task's ``metric_directions`` ``"none"``; see ``feedback_values``).
    """

    def __init__(
        self, info: RunInfo, project: str, client: Client | None = None, values: Collection[str] = ()
    ) -> None:
        self.info = info
        self.project = project
        self.values = frozenset(values)
        self._client: Client | None = client
        self._project_id: str | None = None
        self._lock = threading.Lock()
        self._cases = 0
        self._queued = 0
        self._error: str | None = None
        self._closed = False
        self._warned = False
        self._quiet = _Quiet()
        for name in _LANGSMITH_LOGGERS:
            logging.getLogger(name).addFilter(self._quiet)

    @classmethod
    def from_env(cls, info: RunInfo, values: Collection[str] = ()) -> LangSmithStream | None:
        """A stream into ``experiment_name(info.run_id, LANGSMITH_PROJECT)`` when ``enabled()``, else None.

        ``values``: as for the constructor.

        Without the ``langsmith`` extra installed this returns None and emits one
        ``LangSmithStreamWarning`` naming the extra: streaming never stops an eval.
        """
        if not enabled():
            return None
        if not has_module("langsmith"):  # LANGSMITH_API_KEY set in an install without the extra
            what = "streaming to LangSmith (LANGSMITH_API_KEY is set)"
            warnings.warn(LangSmithStreamWarning(extra_missing_message("langsmith", "langsmith", what)), stacklevel=2)
            return None
        project = experiment_name(info.run_id, os.environ.get("LANGSMITH_PROJECT") or DEFAULT_PROJECT)
        return cls(info, project, values=values)

    @property
    def error(self) -> str | None:
        """The first failure (redacted, one line), or None."""
        return self._error

    @property
    def queued(self) -> int:
        """Cases handed to the client's batch queue so far."""
        return self._queued

    def record_case(self, record: Mapping[str, Any], trace: Sequence[Mapping[str, Any]] | None = None) -> None:
        """Queue one finished case: its run, its tool runs and its feedback.

        Args:
            record: ``CaseRecord.model_dump(mode="json")`` (with ``"trace"`` inside).
            trace: The agent's tool calls; defaults to ``record["trace"]``.
        """
        if self._closed:
            return
        self._cases += 1
        if self._error is not None:
            return
        try:
            with self._lock:
                client, project_id = self._setup()
                payload = case_payload(self.info, record, record.get("trace") if trace is None else trace)
                runs = _run_trees(payload, self.project, client)
                for run in runs:
                    run.post()
                root = runs[0]
                for key, score in feedback_scores(record, self.values).items():
                    client.create_feedback(root.id, key, score=score, trace_id=root.id, session_id=project_id)
                for key, (value, comment) in feedback_values(record, self.values).items():
                    client.create_feedback(root.id, key, value=value, comment=comment, trace_id=root.id,
                                           session_id=project_id)
                self._queued += 1
        except Exception as exc:
            self._fail(exc)

    def close(self, timeout_s: float = FLUSH_TIMEOUT_S) -> None:
        """Flush the client's queue, waiting at most ``timeout_s`` seconds; warn once if anything failed."""
        try:
            if self._closed:
                return
            self._closed = True
            client = self._client
            if client is not None and self._queued:
                client.flush(timeout=timeout_s)
                queue = getattr(client, "tracing_queue", None)
                if queue is not None and queue.unfinished_tasks and self._error is None:
                    self._error = f"runs were still being sent after {timeout_s:g} s"
            if self._error is not None:
                self._warn()
        except Exception:  # pragma: no cover - last line of defence
            logger.debug("closing the LangSmith stream failed", exc_info=True)
        finally:
            if self._error is None:  # else the client may still log each failed batch: stay quiet
                for name in _LANGSMITH_LOGGERS:
                    logging.getLogger(name).removeFilter(self._quiet)

    # -- internals ----------------------------------------------------------------------------
    def _setup(self) -> tuple[Client, str]:
        """The client and the experiment's project id (created on the first case of the process)."""
        if self._client is None:
            self._client = _make_client(self._fail)
        if self._project_id is None:
            project = self._client.create_project(
                self.project, upsert=True, description="groundeval run", metadata={
                    "run_id": self.info.run_id, "task": self.info.task, "agent": self.info.agent,
                    "model": self.info.model,
                },
            )
            self._project_id = str(project.id)
        return self._client, self._project_id

    def _fail(self, exc: BaseException) -> None:
        """Keep the first failure (also the Client's ``tracing_error_callback``); stops streaming."""
        if self._error is None:
            lines = str(exc).strip().splitlines() or [""]
            first = clean_text(f"{type(exc).__name__}: {lines[0]}")  # shown on the terminal: no control character
            self._error = first if len(first) <= 240 else f"{first[:240]}..."
        logger.debug("LangSmith streaming failed", exc_info=exc)

    def _warn(self) -> None:
        if self._warned:
            return
        self._warned = True
        message = (
            f"groundeval: streaming to LangSmith failed, some of {self._cases} case(s) may not be recorded in "
            f"experiment {self.project!r} ({self._error}). The eval results are unaffected; set "
            "LANGSMITH_TRACING=false or unset LANGSMITH_API_KEY to stop streaming."
        )
        try:
            warnings.warn(LangSmithStreamWarning(message), stacklevel=2)
        except Exception:  # warnings turned into errors: never let that break the run
            logger.warning(message)


def _make_client(on_error: Any) -> Client:
    """A batching Client (endpoint and key from ``LANGSMITH_ENDPOINT``/``LANGSMITH_API_KEY``).

    Few, short retries and short timeouts: a failure stops streaming anyway, and a dead endpoint
    must not hold up the first case or the end of the run.
    """
    from langsmith import Client, utils as ls_utils
    from urllib3.util.retry import Retry

    retry = Retry(
        total=1, backoff_factor=0.25, status_forcelist=[429, 500, 502, 503, 504], allowed_methods=None,
        raise_on_status=False, raise_on_redirect=False, respect_retry_after_header=False,
    )
    # The client's batching thread is not a daemon by default and drains its queue after the main
    # thread ends: against a hung server that held the process for a minute after the run.
    # LANGSMITH_USE_DAEMON=true (read once, in the constructor) makes it a daemon; what is still
    # queued after close() is then dropped, and close() has said so in its warning.
    previous = os.environ.get(_DAEMON_ENV)
    os.environ.setdefault(_DAEMON_ENV, "true")
    ls_utils.get_env_var.cache_clear()  # type: ignore[attr-defined]  # langsmith caches env reads
    try:
        return Client(
            auto_batch_tracing=True, retry_config=retry, timeout_ms=(3_000, 10_000), tracing_error_callback=on_error,
        )
    finally:
        if previous is None:
            os.environ.pop(_DAEMON_ENV, None)
        ls_utils.get_env_var.cache_clear()  # type: ignore[attr-defined]


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
    value = clean(value)
    text = value if isinstance(value, str) else json.dumps(value, default=str, ensure_ascii=False)
    if len(text) <= limit:
        return value
    cut = cut_text(text, limit)
    return {"truncated": cut} if isinstance(value, Mapping) else cut  # inputs/outputs must stay objects


def _run_trees(case: Mapping[str, Any], project: str, client: Client) -> list[RunTree]:
    """The root run and its tool runs for one ``case_payload``, finished and ready to post."""
    from langsmith.run_trees import RunTree

    root = RunTree(
        name=case["name"], run_type="chain", inputs=case["inputs"], project_name=project, ls_client=client,
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
