"""Exceptions raised by groundeval.

The tree::

    GroundevalError            base class; never raised directly
    ├── ConfigError            a bad option or ini value (the plugin turns it into pytest.UsageError)
    ├── DatasetError           a case file that cannot be used: invalid JSON, not a Bundle,
    │                          no Patient or several Patients, a write case failing its schema
    └── AgentError             the agent could not produce an answer: a pytest *error*, not a failure
        ├── AgentLoopError     a tool-using agent hit its recursion limit (outcome ``agent_loop``)
        ├── TruncatedError     the model stopped at ``max_tokens`` (outcome ``truncated``)
        └── InfraError         rate limit (429), overload (529), 5xx, timeout, connection error
                               (outcome ``infra_error``); excluded from scored means
            └── AuthError      missing or rejected API key (401/403); stops the whole run once

Every message names the case or file, the offending value and the fix.
"""

from __future__ import annotations

__all__ = [
    "AgentError",
    "AgentLoopError",
    "AuthError",
    "ConfigError",
    "DatasetError",
    "GroundevalError",
    "InfraError",
    "TruncatedError",
]


class GroundevalError(Exception):
    """Base class of every error groundeval raises on purpose."""


class ConfigError(GroundevalError):
    """An option, ini value or agent spec is invalid; the message says which and how to fix it."""


class DatasetError(GroundevalError):
    """A case file cannot be turned into an eval case.

    Attributes:
        path: The offending file.
    """

    def __init__(self, path: str, problem: str) -> None:
        self.path = path
        self.problem = problem
        super().__init__(f"{path}: {problem}")


class AgentError(GroundevalError):
    """The agent failed to answer. Reported as a pytest error, never as a wrong answer.

    Attributes:
        outcome: The run-record outcome this error maps to (``error`` by default).
        attempts: How many model calls were made before giving up, when known.
        details: JSON-safe facts recorded with the case (status code, request id, partial text).
    """

    outcome = "error"

    def __init__(
        self, message: str, *, attempts: int | None = None, details: dict[str, object] | None = None
    ) -> None:
        super().__init__(message)
        self.attempts = attempts
        self.details: dict[str, object] = dict(details or {})


class AgentLoopError(AgentError):
    """A tool-using agent stopped at its recursion limit before giving a final answer."""

    outcome = "agent_loop"


class TruncatedError(AgentError):
    """The model stopped because it reached ``max_tokens``; the partial text is in ``details``."""

    outcome = "truncated"


class InfraError(AgentError):
    """The model API could not be reached or refused service (429, 529, 5xx, timeout, network)."""

    outcome = "infra_error"


class AuthError(InfraError):
    """The API key is missing or was rejected; nothing else in the run can succeed."""

    outcome = "auth_error"
