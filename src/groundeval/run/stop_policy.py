"""What a finished case means for the rest of the run, in this process.

A case whose outcome stops the run (``auth_error``, ``config_error``: ``records.outcomes``) stops
it; so do the first ``UNREACHABLE_AFTER`` cases of a process all failing to connect with no answer
yet: the one unreachable rule of every model (``models.reachability``), which a judge keeps too.
"""

from __future__ import annotations

from dataclasses import dataclass

from groundeval.errors import InfraError, connection_failure
from groundeval.execution.outcome_policy import CaseRun
from groundeval.models.reachability import UNREACHABLE_AFTER, Reachability
from groundeval.records.outcomes import OUTCOMES

__all__ = ["UNREACHABLE_AFTER", "StopPolicy"]


@dataclass
class StopPolicy(Reachability):
    """Counts this process's answers and connection failures, and says when the run must stop.

    Attributes:
        answered: Agent calls that returned an answer (or a verdict) in this process.
        unreachable: Connection-level failures before the first answer.
    """

    def after(self, run: CaseRun, case_id: str) -> str | None:
        """The reason the run stops after this case (one line, for the summary), or None to go on."""
        exc = run.exc
        if run.record.answered or run.record.outcome in ("passed", "partial", "failed"):
            self.note_answer()
        if OUTCOMES[run.record.outcome].stops_run and exc is not None:
            return f"groundeval: stopped after {run.record.outcome} on {case_id} (see the error above)"
        if exc is not None and connection_failure(exc) and self.note_failure(connection=True):
            what = "the model API" if isinstance(exc, InfraError) else "what the agent connects to"
            return (f"groundeval: the first {UNREACHABLE_AFTER} cases all failed to connect and none was "
                    f"answered: {what} looks unreachable; check the endpoint and network")
        return None
