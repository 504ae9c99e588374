"""The serial executor: each agent call is made when its item runs, in the main thread."""

from __future__ import annotations

from collections.abc import Sequence

from groundeval.execution.base import ExecutionContext, Job
from groundeval.execution.outcome_policy import CaseRun

__all__ = ["SerialExecutor"]


class SerialExecutor:
    """Makes each call when its item runs (``--groundeval-concurrency 1``; agents not thread-safe).

    Args:
        context: The task, agent, run facts, case files and call tally.

    Attributes:
        lookahead: Always 0: ``submit`` is never needed.
    """

    def __init__(self, context: ExecutionContext) -> None:
        self.context = context
        self.lookahead = 0

    def submit(self, jobs: Sequence[Job]) -> None:
        """Nothing is made ahead."""

    def result(self, job: Job) -> CaseRun | None:
        """Run ``job`` now: its call in this thread, then parsing and scoring; None once the run stopped."""
        case = self.context.open(job)
        if isinstance(case, CaseRun):
            return case
        return self.context.run_now(job, case)

    def close(self) -> int:
        """No call is ever left behind: 0."""
        return 0
