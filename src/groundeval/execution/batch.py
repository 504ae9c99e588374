"""The batch executor (``--groundeval-batch``): the calls of many items wait on one provider batch.

The agent's model is in batch mode (``models.batch``): each request goes to the model's
``Batcher`` and its result completes a ``concurrent.futures.Future``. The executor submits the
calls of a window (``BATCHES_AHEAD`` batches' worth) at once through the agent's optional
``submit(request) -> Future`` (``SingleCallAgent.submit``, through ``--groundeval-cache``'s
``CachingAgent``), so the batcher sends them together; each item then waits on its own future, on
the main thread. A thousand requests out in a batch are a thousand futures: no thread waits for
them but the main thread, for the item it runs. An agent without ``submit`` has its calls made
ahead in threads, one per call of the window, each blocking on its request's future.

Everything below the call stays where it is for every executor: the cache (a hit is a finished
future and sends nothing), the pre-flight and the spending limit (a request's reservation is held
until its result is in), redaction, the outcome classes (``PolicyModel`` reads a batch result
as it reads a direct reply); results come back in any order, and each item still takes its own,
in collection order.

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

import dataclasses
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from datetime import UTC, datetime
from typing import Any

from groundeval.agent_io import AgentRequest
from groundeval.execution.base import CallTally, ExecutionContext, Job
from groundeval.execution.call import Attempt, attempt
from groundeval.execution.outcome_policy import CaseRun
from groundeval.execution.threaded import ThreadedExecutor
from groundeval.models import stop_switch
from groundeval.models.batch import Batcher

__all__ = ["BATCHES_AHEAD", "BatchExecutor"]

BATCHES_AHEAD = 2
"""Batches' worth of calls started ahead: while one batch is out, the next one fills and goes out
too, so a run of 1,008 cases at ``--groundeval-batch-size 1000`` waits for one batch cycle, not two.
Each call waiting holds its request (the case's prompt) in memory: the batch size bounds that."""


class _Answered:
    """The agent as ``execution.call.attempt`` sees it once a submitted call has finished: ``run`` gives its outcome."""

    def __init__(self, name: str, model: str | None, future: Future[Any]) -> None:
        self.name = name
        self.model = model
        self._future = future

    def run(self, request: AgentRequest) -> Any:
        del request  # the call was submitted with it
        return self._future.result()


class _Submitted:
    """One call submitted ahead: its request, truth, future and timing (counted in the ``CallTally``)."""

    def __init__(self, submit: Callable[[AgentRequest], Future[Any]], request: AgentRequest, truth: Any,
                 calls: CallTally) -> None:
        self.request = request
        self.truth = truth
        self.started_at = datetime.now(UTC).isoformat()
        self.start = time.perf_counter()
        self.finished: float | None = None
        calls.begin()
        try:
            self.future = submit(request)
        except Exception as exc:  # the agent's own code raised before anything was sent: its outcome
            self.future = Future()
            self.future.set_exception(exc)

        def done(_: Future[Any]) -> None:
            self.finished = time.perf_counter()
            calls.end()

        self.future.add_done_callback(done)

    def attempt(self, name: str, model: str | None) -> Attempt:
        """Wait for the call's outcome (in this thread) and keep it as ``execution.call.attempt`` would.

        Raises:
            KeyboardInterrupt: Ctrl-C while waiting.
        """
        self.future.exception()  # waits; the outcome itself is read by execution.call.attempt
        kept = attempt(_Answered(name, model, self.future), self.request, self.truth)
        latency = round((self.finished or time.perf_counter()) - self.start, 6)
        execution = kept.execution
        if execution is not None:
            execution = dataclasses.replace(execution, latency_s=latency)
        return Attempt(self.request, self.truth, execution, kept.error, latency, self.started_at)


class BatchExecutor(ThreadedExecutor):
    """Submits the calls of a whole window at once; the model's batcher sends them as batches.

    Args:
        context: The task, agent, run facts, case files and call tally.
        batcher: The batcher of the agent's model (``PolicyModel.use_batches``).

    Attributes:
        lookahead: ``BATCHES_AHEAD`` batches' worth of jobs from the first item on; 0 after ``close``.
    """

    def __init__(self, context: ExecutionContext, batcher: Batcher) -> None:
        super().__init__(context, max(2, BATCHES_AHEAD * batcher.size))
        self.batcher = batcher
        self._fan_out = True
        self.lookahead = BATCHES_AHEAD * batcher.size
        submit = getattr(context.agent, "submit", None)
        self._submit: Callable[[AgentRequest], Future[Any]] | None = submit if callable(submit) else None
        self._sent: dict[str, _Submitted] = {}

    def submit(self, jobs: Sequence[Job]) -> None:
        """Submit the calls of ``jobs`` not submitted yet, in order (in threads when the agent cannot submit)."""
        if self._submit is None:
            if not self._threads and not self._closed:
                self.workers = max(2, min(self.workers, len(jobs)))  # the first window decides the threads
            super().submit(jobs)
            return
        if self._closed:
            return
        for job in jobs:
            if job.nodeid in self._sent:
                continue
            if stop_switch.calls_stopped():
                return  # no call starts once the run is stopped
            try:
                request, truth = self.context.prepare(job)
            except Exception:
                continue  # the item prepares the call itself and reports the task's error
            self._sent[job.nodeid] = _Submitted(self._submit, request, truth, self.context.calls)
            self.started += 1

    def result(self, job: Job) -> CaseRun | None:
        """Wait for ``job``'s result from its batch, and run the case to its record."""
        run = super().result(job) if self._submit is None else self._finish(job)
        self.lookahead = 0 if self._closed else BATCHES_AHEAD * self.batcher.size
        return run

    def _finish(self, job: Job) -> CaseRun | None:
        case = self.context.open(job)
        if isinstance(case, CaseRun):
            return case
        sent = self._sent.pop(job.nodeid, None)
        if sent is None:
            return self.context.run_now(job, case)
        try:
            attempted = sent.attempt(self.context.agent.name, getattr(self.context.agent, "model", None))
        except KeyboardInterrupt:
            self._sent[job.nodeid] = sent  # in flight and never reported: close() counts it
            raise
        return self.context.finish(job, case, attempted)

    def close(self) -> int:
        """Start no further call; answer the calls still waiting; the batches out stay at the provider.

        Returns:
            Calls submitted (or made ahead) whose results will not be handed back.
        """
        dropped = super().close() + len(self._sent)
        self._sent.clear()
        self.batcher.close()
        return dropped
