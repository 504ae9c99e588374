"""``FhirServingAgent``: each case's record served over FHIR REST, the agent given the endpoint.

``--groundeval-fhir`` wraps the run's agent in this (``run.agent_setup.prepare_agent``, inside
the response cache, so a cached answer keeps the server facts it was made with). For every case:

1. the record the task serves (``request.context["fhir_record"]``, put there by
   ``tasks.fhir_mode.FhirModeTask``) is taken out of the context, so the agent never receives the
   file: it can read the record only over the API;
2. ``sandbox``: a ``FhirSandbox`` holding it starts on 127.0.0.1 with a fresh bearer token scoped to
   the case's patient; a URL: the record is loaded onto that server as one transaction under ids of
   the case's own (``remote_server.FhirServer``), and the agent reaches it through a recording
   proxy on 127.0.0.1 (``fhir.recording_proxy``) that checks the case's token and patient and logs
   every call, so both modes have the same access log;
3. the agent is called with ``request.fhir`` (``FhirEndpoint``: base URL, patient, token) and the
   prompt's ``{fhir_base_url}`` and ``{fhir_patient}`` filled in (the record keeps the prompt with
   the placeholders: ports and ids change from run to run);
4. when it returns or raises, the access log and what the server holds of the agent's writes are
   read (in the case's own terms), the server is stopped or the case removed from it, and these
   facts become ``meta["fhir"]`` of the result (or ``details["fhir"]`` of the error): the scorer
   (``scorers.fhir_access``) reads retrieval and writes from there, and a cached or replayed answer
   keeps them.

``meta["fhir"]``: ``{"mode": "sandbox" | "server", "record_sha256", "patient", "calls": [[method,
path?query, status, [Type/id returned...], refused], ...], "writes": [[interaction, Type/id],
...], "written": [resource...], "cleanup": "$expunge" | "DELETE" | None}``. JSON-safe; no URL,
port or token.

How failures are classed: a server that cannot start, or a user's server that refuses the case's
transaction, is ``RunStopError`` (``config_error``: no case could run); what the agent raises is
passed on unchanged with the facts added.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import secrets
import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from groundeval.agent_io import AgentRequest, AgentResult, FhirEndpoint, Prompt
from groundeval.agent_wrapper import AgentWrapper
from groundeval.errors import AgentError, RunStopError

__all__ = [
    "BASE_URL_PLACEHOLDER",
    "PATIENT_PLACEHOLDER",
    "RECORD_KEY",
    "RECORD_SHA_KEY",
    "FhirServingAgent",
    "Served",
    "record_sha256",
]

RECORD_KEY = "fhir_record"
"""The request context key holding the record to serve (a Bundle dict); never reaches the agent."""

RECORD_SHA_KEY = "fhir_record_sha256"
"""The request context key holding the served record's SHA-256 (part of the cache key; the agent sees it)."""

BASE_URL_PLACEHOLDER = "{fhir_base_url}"
"""Replaced in the prompt by the case's FHIR base URL when the agent is called."""

PATIENT_PLACEHOLDER = "{fhir_patient}"
"""Replaced in the prompt by the case's patient reference (``Patient/<id>`` as served)."""


def record_sha256(record: Mapping[str, Any]) -> str:
    """Hex SHA-256 of a record's canonical JSON (sorted keys, compact): the served state's identity."""
    text = json.dumps(record, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def _patient_id(record: Mapping[str, Any]) -> str:
    for entry in record.get("entry") or []:
        res = entry.get("resource") if isinstance(entry, Mapping) else None
        if isinstance(res, Mapping) and res.get("resourceType") == "Patient" and res.get("id"):
            return str(res["id"])
    raise ValueError("the served record holds no Patient with an id")


@dataclass
class Served:
    """What one case's serving saw, in the case's own terms.

    Attributes:
        mode: ``sandbox`` or ``server``.
        patient: The patient reference as the case holds it (``Patient/<id>``).
        calls: The access log: ``[method, path?query, status, [Type/id...], refused]`` per request,
            ``/metadata`` included (retrieval leaves it out).
        writes: ``[interaction, Type/id]`` per accepted create, update or delete.
        written: What the server holds after the agent stopped of each resource it created or
            updated (deleted ones absent).
        cleanup: How a user's server was cleaned (``$expunge`` or ``DELETE``), None for the sandbox.
    """

    mode: str
    patient: str
    calls: list[list[Any]] = dataclasses.field(default_factory=list)
    writes: list[list[str]] = dataclasses.field(default_factory=list)
    written: list[dict[str, Any]] = dataclasses.field(default_factory=list)
    cleanup: str | None = None

    def facts(self, sha: str) -> dict[str, Any]:
        """The JSON-safe ``meta["fhir"]`` (see the module docstring)."""
        return {"mode": self.mode, "record_sha256": sha, "patient": self.patient, "calls": self.calls,
                "writes": self.writes, "written": self.written, "cleanup": self.cleanup}


class FhirServingAgent(AgentWrapper):
    """Wraps an agent so that each case's record reaches it over FHIR REST (see the module docstring).

    Has the wrapped agent's ``name``, ``model``, ``requires``, ``tasks``, ``max_concurrency``,
    ``thread_safe`` and ``record_access``. Thread-safe when the wrapped agent is: each call has
    its own server (or its own ids on the user's server).

    Args:
        agent: The agent under evaluation.
        mode: ``sandbox`` or the base URL of the user's FHIR server.
        run_id: Part of the ids a case gets on the user's server (default: 8 random hex digits
            per process, so two runs, or two xdist workers, never share an id).
    """

    def __init__(self, agent: Any, mode: str, run_id: str | None = None) -> None:
        super().__init__(agent, (
            "requires", "tasks", "max_concurrency", "thread_safe", "record_access", "network_calls", "provider_model",
        ))
        self.mode = mode
        self.run_id = run_id or secrets.token_hex(4)  # with a counter: ids no other case or run holds
        self._seq = 0
        self._lock = threading.Lock()

    def warmup(self) -> None:
        """Import the R4B models the sandbox validates writes with, then the wrapped agent's ``warmup()``."""
        from fhir.resources.R4B import get_fhir_model_class

        get_fhir_model_class("MedicationStatement")
        super().warmup()

    def _next(self) -> int:
        with self._lock:
            self._seq += 1
            return self._seq

    def run(self, request: AgentRequest) -> AgentResult | str:
        """Serve the case's record, call the agent with its endpoint, collect the server's facts.

        Returns:
            The agent's result with ``meta["fhir"]`` set (a cached or replayed result is returned as
            it is); what the agent returned when that is not an answer.

        Raises:
            RunStopError: The server could not start or refused the case (``config_error``).
            AgentError: What the agent raised, with ``details["fhir"]`` set.
        """
        context = dict(request.context)
        record = context.pop(RECORD_KEY, None)
        if not isinstance(record, Mapping):
            from groundeval.registry.builtins import ANY_TASK  # every built-in task serves (tests/test_registry.py)

            raise RunStopError(
                f"{request.case_id}: --groundeval-fhir: the task gave no record to serve (context[{RECORD_KEY!r}]); "
                f"run a task that serves its record over FHIR ({', '.join(sorted(ANY_TASK))})"
            )
        sha = str(context.get(RECORD_SHA_KEY) or record_sha256(record))
        try:
            patient = f"Patient/{_patient_id(record)}"
        except ValueError as exc:
            raise RunStopError(f"{request.case_id}: --groundeval-fhir: {exc}") from None
        with self._serve(request.case_id, record, patient) as (endpoint, finish):
            served_request = dataclasses.replace(
                request, context=context, fhir=endpoint, prompt=_filled(request.prompt, endpoint))
            try:
                out: Any = self.wrapped.run(served_request)
            except AgentError as exc:
                exc.details["fhir"] = finish().facts(sha)
                raise
            except BaseException:
                finish()
                raise
            facts = finish().facts(sha)
        if isinstance(out, str):
            out = AgentResult(text=out)
        if not isinstance(out, AgentResult) or out.cached:
            unchanged: AgentResult | str = out
            return unchanged
        return dataclasses.replace(out, meta={**out.meta, "fhir": facts})

    @contextmanager
    def _serve(self, case_id: str, record: Mapping[str, Any], patient: str) -> Iterator[tuple[FhirEndpoint, Any]]:
        """Yield the endpoint and ``finish() -> Served`` (idempotent: it stops serving the first time)."""
        if self.mode == "sandbox":
            with _sandbox(case_id, record, patient) as pair:
                yield pair
            return
        from groundeval.fhir.remote_served import served_on_server

        with served_on_server(self.mode, f"{self.run_id}-{self._next()}", case_id, record, patient) as pair:
            yield pair


@contextmanager
def _sandbox(case_id: str, record: Mapping[str, Any], patient: str) -> Iterator[tuple[FhirEndpoint, Any]]:
    from groundeval.fhir.sandbox import FhirSandbox, new_token

    token = new_token()
    try:
        sandbox = FhirSandbox(dict(record), token=token, patient=patient)
        sandbox.__enter__()
    except (OSError, ValueError, TypeError) as exc:
        raise RunStopError(
            f"{case_id}: the case's FHIR sandbox (--groundeval-fhir=sandbox) could not start: {exc}; check that "
            "loopback sockets can be opened and that the record is a Bundle of resources with ids"
        ) from exc
    done: list[Served] = []

    def finish() -> Served:
        if done:
            return done[0]
        log = sandbox.access_log
        writes = sandbox.writes
        sandbox.__exit__(None, None, None)
        kept = []
        for write in writes:
            type_, _, id_ = write.reference.partition("/")
            res = sandbox.store.get(type_, id_)
            if write.interaction != "delete" and res is not None and res not in kept:
                kept.append(res)
        calls = [[e.method, _target(e.path, e.query), e.status, list(e.returned), e.refused] for e in log]
        done.append(Served("sandbox", patient, calls, [[w.interaction, w.reference] for w in writes], kept))
        return done[0]

    try:
        yield FhirEndpoint(base_url=sandbox.base_url, patient=patient, token=token), finish
    finally:
        finish()


def _target(path: str, query: tuple[tuple[str, str], ...]) -> str:
    from urllib.parse import urlencode

    return f"{path}?{urlencode(query)}" if query else path


def _filled(prompt: Prompt, endpoint: FhirEndpoint) -> Prompt:
    def fill(text: str) -> str:
        return text.replace(BASE_URL_PLACEHOLDER, endpoint.base_url).replace(PATIENT_PLACEHOLDER, endpoint.patient)

    return Prompt(system=fill(prompt.system), user=fill(prompt.user))
