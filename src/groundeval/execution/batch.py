"""The batch executor (``--groundeval-batch``): the calls of many items wait on one provider batch.

The agent's model is in batch mode (``models.batch``): its ``generate`` hands the request to the
model's ``Batcher`` and blocks until that request's result is back. So the executor is the
threaded one with enough threads that batches fill: every call of the window (``BATCHES_AHEAD``
batches' worth) is started at once, each blocks on its own custom id, and the batcher sends them
together. Everything below
``agent.run`` stays where it is for every executor: the response cache (a hit sends nothing), the
spend limit, redaction, the outcome classes (``ProviderModel`` reads a batch result as it reads a
direct reply); results come back in any order, and each item still takes its own, in collection
order.

Two points differ from the threaded executor, on purpose:

* **No lone first call.** Waiting for a whole batch cycle (minutes to hours) before fanning out
  would double a run's wall time, and it protects nothing here: a rejected key or an unreachable
  API fails the one batch create, an unknown model comes back as an errored result for each
  request, which the provider does not bill.
* **``close`` cancels nothing at the provider.** A batch already sent goes on; the batcher answers
  the calls still waiting (``abandoned``) and the journal keeps the batch, so the same command run
  again collects its results instead of paying again (the summary names the batches still out and
  how to cancel them).
"""

from __future__ import annotations

from collections.abc import Sequence

from groundeval.execution.base import ExecutionContext, Job
from groundeval.execution.outcome_policy import CaseRun
from groundeval.execution.threaded import ThreadedExecutor
from groundeval.models.batch import Batcher

__all__ = ["BATCHES_AHEAD", "BatchExecutor"]

BATCHES_AHEAD = 2
"""Batches' worth of calls started ahead: while one batch is out, the next one fills and goes out
too, so a run of 1,008 cases at ``--groundeval-batch-size 1000`` waits for one batch cycle, not two.
Each call waiting holds its request (the case's prompt) in memory: the batch size bounds that."""


class BatchExecutor(ThreadedExecutor):
    """Starts the calls of a whole window at once; the model's batcher sends them as batches.

    Args:
        context: The task, agent, run facts, case files and call tally.
        batcher: The batcher of the agent's model (``ProviderModel.use_batches``).

    Attributes:
        lookahead: ``BATCHES_AHEAD`` batches' worth of jobs from the first item on; 0 after ``close``.
    """

    def __init__(self, context: ExecutionContext, batcher: Batcher) -> None:
        super().__init__(context, max(2, BATCHES_AHEAD * batcher.size))
        self.batcher = batcher
        self._fan_out = True
        self.lookahead = BATCHES_AHEAD * batcher.size

    def submit(self, jobs: Sequence[Job]) -> None:
        """Queue the calls of ``jobs``; the first window decides the threads (no more than its jobs)."""
        if not self._threads and not self._closed:
            self.workers = max(2, min(self.workers, len(jobs)))
        super().submit(jobs)

    def result(self, job: Job) -> CaseRun | None:
        """Wait for ``job``'s result from its batch, and run the case to its record."""
        run = super().result(job)
        self.lookahead = 0 if self._closed else BATCHES_AHEAD * self.batcher.size
        return run

    def close(self) -> int:
        """Start no further call; answer the calls still waiting; the batches out stay at the provider."""
        dropped = super().close()
        self.batcher.close()
        return dropped
