"""What a finished case means for the rest of the run, in this process.

A case whose outcome stops the run (``auth_error``, ``config_error``: ``records.outcomes``) stops
it; so do the first ``UNREACHABLE_AFTER`` cases of a process all failing to connect with no answer
yet (an ``InfraError`` that never reached the API, or an agent's own exception raised from a
refused connection or a failed name lookup: ``errors.connection_failure``). A burst of 429/529 is
rate limiting, not an unreachable API: it stops nothing.
"""

from __future__ import annotations

from dataclasses import dataclass

from groundeval.errors import InfraError, connection_failure
from groundeval.records.outcomes import OUTCOMES
from groundeval.runner import CaseRun

__all__ = ["UNREACHABLE_AFTER", "StopPolicy"]

UNREACHABLE_AFTER = 3
"""Connection-level failures on a process's first cases, with no answer yet, after which the run stops."""


@dataclass
class StopPolicy:
    """Counts this process's answers and connection failures, and says when the run must stop.

    Attributes:
        answered: Agent calls that returned an answer (or a verdict) in this process.
        unreachable: Connection-level failures before the first answer.
    """

    answered: int = 0
    unreachable: int = 0

    def after(self, run: CaseRun, case_id: str) -> str | None:
        """The reason the run stops after this case (one line, for the summary), or None to go on."""
        exc = run.exc
        if run.record.answered or run.record.outcome in ("passed", "partial", "failed"):
            self.answered += 1
        if OUTCOMES[run.record.outcome].stops_run and exc is not None:
            return f"groundeval: stopped after {run.record.outcome} on {case_id} (see the error above)"
        if exc is not None and self.answered == 0 and connection_failure(exc):
            self.unreachable += 1
            if self.unreachable >= UNREACHABLE_AFTER:
                what = "the model API" if isinstance(exc, InfraError) else "what the agent connects to"
                return (f"groundeval: the first {UNREACHABLE_AFTER} cases all failed to connect and none was "
                        f"answered: {what} looks unreachable; check the endpoint and network")
        return None
