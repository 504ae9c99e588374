"""Exceptions raised by groundeval.

The tree (each class's ``outcome`` is the run-record outcome it maps to; the outcome policy, what
counts in the means and what pytest shows, is ``groundeval.records.outcomes.POLICY``)::

    GroundevalError              base class; never raised directly
    ├── ConfigError              a bad option, ini value or agent/task spec (pytest.UsageError)
    ├── DatasetError             a case file that cannot be used: unreadable, not JSON, not a
    │                            Bundle, no/several Patients, a write case failing its schema
    ├── SpendLimitReached        the next model call could pass ``--groundeval-max-cost``: no call
    │                            is made, the run stops, the case and those after it are ``not_run``
    ├── HarnessError             groundeval's own code, running inside an agent call, found a
    │                            state it must never send (a tool result not following its tool
    │                            call in a LangGraph history) (``harness_error``): a pytest
    │                            *error*, excluded from the means and counted
    └── AgentError               the agent did not answer (outcome ``no_answer``): a pytest
        │                        *failure*, scored as an empty answer
        ├── AgentLoopError       a tool-using agent hit its recursion limit (``agent_loop``)
        ├── TruncatedError       the model stopped at ``max_tokens`` (``truncated``)
        ├── RefusalError         the model declined to answer (``refusal``)
        └── InfraError           the model API failed: retries exhausted on 429/529/5xx, a
            │                    timeout, a connection error, a garbled response
            │                    (``infra_error``): a pytest *error*, excluded from the means
            ├── BatchNotRunError     a batched request the provider never ran (``not_run``)
            ├── CaseTooLargeError    the API refused this case's content as too large for the
            │                        model (a 400 "prompt is too long") (``case_too_large``)
            └── RunStopError     no later case can succeed: 404 unknown model, 400 invalid
                │                request parameters (``config_error``); the run stops at once
                └── AuthError    missing or rejected API key (401/403) (``auth_error``)

Any other exception raised by an agent's ``run`` is outcome ``agent_error`` (pytest error, excluded,
with the agent's traceback); so is a value of the wrong type returned by it
(``AgentReturnedWrongType``, a ``GroundevalError`` and a ``TypeError``, shown as its message alone); any exception
raised by groundeval while rendering the prompt, deriving the truth, parsing, scoring or
recording is ``harness_error`` (pytest error, excluded, with the full traceback).

Every message names the case or file, the offending value and the fix.
"""

from __future__ import annotations

import difflib
import socket
from collections.abc import Iterable

__all__ = [
    "AgentError",
    "AgentLoopError",
    "AgentReturnedWrongType",
    "AuthError",
    "BatchNotRunError",
    "CaseTooLargeError",
    "ConfigError",
    "DatasetError",
    "GroundevalError",
    "HarnessError",
    "InfraError",
    "RefusalError",
    "RunStopError",
    "ScorerModelError",
    "SpendLimitReached",
    "TruncatedError",
    "closest",
    "connection_failure",
    "did_you_mean",
]


class GroundevalError(Exception):
    """Base class of every error groundeval raises on purpose."""


class ConfigError(GroundevalError):
    """An option, ini value or agent spec is invalid; the message says which and how to fix it."""


class DatasetError(GroundevalError):
    """A case file cannot be turned into an eval case.

    Attributes:
        path: The offending file.
        problem: What is wrong with it and how to fix it.
    """

    def __init__(self, path: str, problem: str) -> None:
        self.path = path
        self.problem = problem
        super().__init__(f"{path}: {problem}")


class SpendLimitReached(GroundevalError):
    """The next model call could take the run past ``--groundeval-max-cost``; it was not made.

    Attributes:
        limit_usd: The limit, USD (this process's share under pytest-xdist).
        spent_usd: What this process's calls cost so far, USD.
        estimate_usd: The refused call's estimated highest cost, USD.
    """

    def __init__(self, message: str, *, limit_usd: float, spent_usd: float, estimate_usd: float) -> None:
        super().__init__(message)
        self.limit_usd = limit_usd
        self.spent_usd = spent_usd
        self.estimate_usd = estimate_usd


class AgentError(GroundevalError):
    """The agent did not produce an answer: a pytest *failure*, scored as an empty answer.

    Raise it from your own agent when it cannot answer a case. Subclasses refine the outcome;
    ``InfraError`` and its subclasses are not the agent's doing and are excluded from the means.

    Attributes:
        outcome: The run-record outcome this error maps to.
        attempts: How many model calls were made before giving up, when known.
        details: JSON-safe facts recorded with the case (status code, request id, partial text,
            ``usage`` of tokens already paid for).
    """

    outcome = "no_answer"

    def __init__(
        self, message: str, *, attempts: int | None = None, details: dict[str, object] | None = None
    ) -> None:
        super().__init__(message)
        self.attempts = attempts
        self.details: dict[str, object] = dict(details or {})


class AgentReturnedWrongType(GroundevalError, TypeError):
    """An agent's ``run`` returned something other than a ``str`` or an ``AgentResult`` (``agent_error``).

    The report shows its message alone, one line per case: the frames that raised it are
    groundeval's check of the returned value, not the agent's code.
    """


class AgentLoopError(AgentError):
    """A tool-using agent stopped at its recursion limit before giving a final answer.

    ``details`` carries ``model_calls``, ``last_tool`` and ``limit`` (graph steps).
    """

    outcome = "agent_loop"


class TruncatedError(AgentError):
    """The model stopped because it reached ``max_tokens``; the partial text is in ``details``."""

    outcome = "truncated"


class RefusalError(AgentError):
    """The model declined to answer (a ``refusal`` stop reason or a content filter)."""

    outcome = "refusal"


class InfraError(AgentError):
    """The model API could not be reached or did not serve the request.

    Attributes:
        connection: True when no HTTP response came back at all (connection refused, DNS, TLS,
            no response before the deadline). Only these count toward the "API unreachable"
            stop; a burst of 429/529 is rate limiting, not an unreachable API.
    """

    outcome = "infra_error"

    def __init__(
        self,
        message: str,
        *,
        attempts: int | None = None,
        details: dict[str, object] | None = None,
        connection: bool = False,
    ) -> None:
        super().__init__(message, attempts=attempts, details=details)
        self.connection = connection


class CaseTooLargeError(InfraError):
    """The API refused this case's prompt as larger than the model's context window."""

    outcome = "case_too_large"


class RunStopError(InfraError):
    """A configuration no later case can survive (unknown model id, invalid request parameters).

    The run stops at once with this message; cases not yet run are recorded as ``not_run``.
    """

    outcome = "config_error"


class BatchNotRunError(InfraError):
    """A batched request the provider never ran: its batch was cancelled, or the run stopped first.

    The case is recorded as ``not_run`` (``--groundeval-batch``); nothing was paid for it.
    """

    outcome = "not_run"


class AuthError(RunStopError):
    """The API key is missing or was rejected; nothing else in the run can succeed."""

    outcome = "auth_error"


class HarnessError(GroundevalError):
    """A bug in groundeval's own code found while an agent call was under way (outcome ``harness_error``).

    Raised by the harness parts an agent call runs through (the LangGraph agent's history check,
    ``agents._langgraph_history``), never by the agent's own code: the runner records the case as
    ``harness_error`` (pytest error, excluded from the means, counted, with the traceback), not as
    ``agent_error``, and the request is never sent.

    Attributes:
        details: JSON-safe facts about the fault (the offending message's index and role, ...).
    """

    outcome = "harness_error"

    def __init__(self, message: str, details: dict[str, object] | None = None) -> None:
        super().__init__(message)
        self.details: dict[str, object] = dict(details or {})


class ScorerModelError(GroundevalError):
    """A scorer's own model call (an LLM judge) failed, or its reply could not be used.

    The runner classes the case by ``error`` as it classes an agent call's failure: an
    ``InfraError`` gives its outcome (``infra_error``; ``config_error`` and ``auth_error`` stop the
    run), shown with its message, excluded from the means and counted; with no ``error`` (an
    unusable reply) or another ``AgentError`` the case is a ``harness_error``. Never a wrong answer.

    Attributes:
        error: The model layer's ``AgentError``, or None.
        metrics: The scorer's own model usage up to the failure, by role (``judge_calls`` counts
            the calls made, the failed one included: ``scorers.model_graded.role_usage``), kept in
            the case's ``usage``.
    """

    def __init__(self, message: str, error: AgentError | None = None,
                 metrics: dict[str, object] | None = None) -> None:
        super().__init__(message)
        self.error = error
        self.metrics: dict[str, object] = dict(metrics or {})


def closest(word: str, choices: Iterable[str]) -> str | None:
    """The choice closest to ``word`` (difflib ratio at least 0.6), or None."""
    found = difflib.get_close_matches(word, list(choices), n=1, cutoff=0.6)
    return found[0] if found else None


def did_you_mean(word: str, choices: Iterable[str]) -> str:
    """``" (did you mean extraction?)"``, or ``""`` when nothing is close."""
    near = closest(word, choices)
    return f" (did you mean {near}?)" if near else ""


def connection_failure(exc: BaseException) -> bool:
    """True when ``exc`` is, or was raised from, a failure to connect at all.

    An ``InfraError`` says so itself (``connection``). Any other exception (a custom agent's own
    HTTP client: urllib, requests, httpx) counts when it or an exception in its chain
    (``__cause__``, ``__context__``) is Python's ``ConnectionError`` (refused, reset, aborted) or a
    name lookup failure (``socket.gaierror``): the libraries wrap those, and keep them in the chain.
    A timeout or an HTTP error status is not a failure to connect.
    """
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, InfraError):
            return current.connection
        if isinstance(current, ConnectionError | socket.gaierror):
            return True
        current = current.__cause__ or current.__context__
    return False
