"""One process's part of a run: its agent calls, each case run to its record, and when to stop.

A ``ProcessRun`` holds what a process that runs cases owns (a serial run, or one pytest-xdist
worker): the assembled task and agent (``run.assembly``), the executor that makes the agent
calls (``groundeval.execution``), the tally of calls in flight, the stop policy
(``run.stop_policy``) and the LangSmith stream. ``run`` takes one case's job: the agent's
warm-up before the first, the jobs of the cases this process runs next handed to the executor
(the look-ahead), the case's result, and what it means for the rest of the run (a ``Step``).

It never imports pytest: a front end turns a ``Step`` into its own terms (the pytest plugin: a
stop sets ``session.shouldstop``, a not-run case is a skip).

Before the first case, once per process, what start-up left alive (modules, classes, the collected
items) moves to the garbage collector's permanent generation (``freeze_start_up``): the full
collections that follow (pytest's ``gc.collect()`` at the session's end, the interpreter's at exit)
then no longer walk it.
"""

from __future__ import annotations

import contextlib
import gc
import os
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import TYPE_CHECKING

from groundeval.errors import ConfigError, RunStopError, SpendLimitReached
from groundeval.execution import CallTally, Executor, Job, effective_concurrency, make_executor
from groundeval.execution.outcome_policy import CaseRun, RunInfo, setup_failed
from groundeval.models import throttle
from groundeval.run.stop_policy import StopPolicy

if TYPE_CHECKING:
    from groundeval.reporting.langsmith import LangSmithStream
    from groundeval.run.assembly import Assembly
    from groundeval.run.settings import Settings

__all__ = ["ProcessRun", "Step", "freeze_start_up", "run_info"]

_frozen = False  # freeze_start_up ran in this process


def freeze_start_up() -> bool:
    """Move every object the collector tracks now to its permanent generation, once per process.

    ``gc.freeze()`` (Python's ``gc`` docs): frozen objects are never examined again by a
    collection, so a full collection afterwards walks only what the run itself allocated. Called
    before a process's first case, when the imports and the collection are done: pytest's two
    ``gc.collect()`` at the session's end and the interpreter's at exit then cost about 0.1 s less
    on a run of 64 cases (``bench/concurrency.py``, docs/scale/concurrency.md). Garbage that is
    already unreachable then (a few cycles from start-up) is kept until the process ends; a
    second session in the same process (pytester's in-process runs) freezes nothing more.

    Returns:
        True when this call froze the heap; False when an earlier call in this process did.
    """
    global _frozen
    if _frozen:
        return False
    _frozen = True
    gc.freeze()
    return True


@dataclass(frozen=True, slots=True)
class Step:
    """One case's result as the process ran it, and what it means for the rest of the run.

    Attributes:
        run: The finished case (its record; the exception of an excluded outcome), or None when
            the run was stopped before the case's call started (it did not run).
        stop: Why the run stops after this case (one line, for the summary), or None to go on.
        not_run: Why the case counts as not run although it has a record (a spend limit reached,
            a batched request the provider never ran), or the reason it did not run when ``run``
            is None; else None.
        spend_limit: True when ``stop`` is ``--groundeval-max-cost`` reached.
    """

    run: CaseRun | None
    stop: str | None = None
    not_run: str | None = None
    spend_limit: bool = False


def run_info(parts: Assembly, settings: Settings, run_id: str, worker: str | None = None) -> RunInfo:
    """The run-wide facts every case record of this process carries.

    Args:
        parts: The assembled run (its task, agent name and model).
        settings: The run's settings (``--groundeval-conversation``).
        run_id: The run's id, the same on every process.
        worker: This process's pytest-xdist worker id (``gw0``), or None.
    """
    from groundeval.records.conversation import task_version

    task = parts.task
    version = ""
    if settings.conversation == "reference":  # the prompt is rebuilt from the task's own distribution
        version = task_version(type(getattr(task, "inner", task)).__module__)
    return RunInfo(run_id=run_id, task=task.name, agent=parts.agent_name, model=parts.model, worker=worker,
                   conversation=settings.conversation, task_version=version)


class ProcessRun:
    """A process's cases, one after another: warm-up, look-ahead, the case's result, the stop policy.

    Args:
        parts: The assembled run (``run.assembly.assemble``).
        info: The run-wide facts (``run_info``).
        settings: The run's settings (``--groundeval-concurrency``, ``--groundeval-batch``).
        phase: Called with what the process is doing while it is not running a case (the agent's
            warm-up), then with None; or None.
        cuttable: A context manager factory the case's wait for its result runs under (a
            pytest-xdist worker's Ctrl-C cuts the call in flight there), or None; an attribute
            too, set once the front end installed its handler.

    Attributes:
        calls: This process's agent calls: in flight, peak, cut off by Ctrl-C.
        concurrency: Agent calls in flight at once (``execution.effective_concurrency``; a batch
            run's, as many as the batch executor starts ahead).
        executor: How this process's agent calls are made, or None when it has no agent.
        discarded_calls: Agent calls made ahead whose cases never ran (the run stopped).
        stream: The LangSmith stream, or None (``start``).
    """

    def __init__(
        self, parts: Assembly, info: RunInfo, settings: Settings, *,
        phase: Callable[[str | None], None] | None = None,
        cuttable: Callable[[], AbstractContextManager[object]] | None = None,
    ) -> None:
        self.parts = parts
        self.info = info
        self.settings = settings
        self.calls = CallTally()
        self.stop_policy = StopPolicy()  # answers and connection failures in this process
        self.concurrency = effective_concurrency(settings.concurrency, parts.agent)
        if settings.batch is not None:  # calls in flight: as many as the batch executor starts ahead
            from groundeval.execution.batch import BATCHES_AHEAD

            self.concurrency = BATCHES_AHEAD * settings.batch.size
        self.executor: Executor | None = None
        if parts.agent is not None:
            self.executor = make_executor(parts.task, parts.agent, info, self.concurrency, self.calls,
                                          batcher=parts.batcher)
        self.discarded_calls = 0
        self.stream: LangSmithStream | None = None
        self._warmed = False
        self._phase = phase
        self.cuttable = cuttable

    def start(self, max_cost_share: float | None = None) -> None:
        """Open this process's calls: the throttle's limit, the spend limit's share, the LangSmith stream.

        Args:
            max_cost_share: This process's share of ``--groundeval-max-cost``, USD
                (``run.spend_check.worker_share``), or None for no limit.
        """
        throttle.configure(self.concurrency)
        if max_cost_share is not None:
            from groundeval.models import spend

            spend.configure(max_cost_share)
        if os.environ.get("LANGSMITH_API_KEY"):  # imported only when a LangSmith key is set
            from groundeval.reporting.langsmith import LangSmithStream

            directions = dict(getattr(self.parts.task, "metric_directions", None) or {})
            self.stream = LangSmithStream.from_env(self.info, values=[k for k, d in directions.items() if d == "none"])

    def run(self, job: Job, ahead: Callable[[int], Sequence[Job]]) -> Step:
        """Run ``job``'s case through the executor (after the agent's warm-up) and apply the stop policy.

        Args:
            job: The case about to run.
            ahead: The jobs this process runs next, ``job``'s first, at most N of them (called
                with N, the executor's look-ahead); [] once no new call may start.

        Raises:
            KeyboardInterrupt: Ctrl-C while the case's call was awaited (``cuttable``'s cut included).
        """
        executor = self.executor
        if executor is None:
            problem = self.parts.agent_problem or ConfigError("the agent was not built on this process")
            failed = setup_failed(self.info, job.case, job.nodeid, RunStopError(str(problem)), "config_error")
            reason = f"groundeval: stopped after config_error on {job.case.case_id} (see the error above)"
            return Step(failed, stop=reason)
        if not self._warmed:
            self._warmed = True
            freeze_start_up()  # start-up is over: later full collections skip what it left
            warm_failure = self._warm_up(job)
            if warm_failure is not None:
                return warm_failure
        window = executor.lookahead
        if window:
            jobs = ahead(window)
            if jobs:
                executor.submit(jobs)
        with self.cuttable() if self.cuttable is not None else contextlib.nullcontext():
            run = executor.result(job)
        if run is None:
            return Step(None, not_run="not run: the run was stopped before this case's agent call started")
        if isinstance(run.exc, SpendLimitReached):  # no call was made: this case and the rest are not_run
            return Step(run, stop=f"groundeval: {run.exc}", not_run=f"not_run: {run.exc}", spend_limit=True)
        if run.record.outcome == "not_run" and run.exc is not None:  # a batched request the provider never ran
            return Step(run, not_run=run.record.message or "not_run")
        stop = self.stop_policy.after(run, job.case.case_id)  # run.stop_policy
        if self.stream is not None:  # LangSmith; never raises
            self.stream.record_case(run.record.model_dump(mode="json"))
        return Step(run, stop=stop)

    def _warm_up(self, job: Job) -> Step | None:
        """The agent's optional ``warmup()`` (imports, clients) before the first case is timed; a failure's step."""
        warmup = getattr(self.parts.agent, "warmup", None)
        if not callable(warmup):
            return None
        try:
            if self._phase is not None:
                self._phase("warming up the agent (imports, clients)")
            warmup()
        except Exception as exc:  # a ConfigError (a server that cannot start) is config_error
            outcome = "config_error" if isinstance(exc, ConfigError) else "agent_error"
            run = setup_failed(self.info, job.case, job.nodeid, exc, outcome)
            reason = f"the agent's warmup() raised {type(exc).__name__}: {exc}"
            if outcome == "config_error":
                reason = f"stopped after config_error on {job.case.case_id} (see the error above)"
            return Step(run, stop=f"groundeval: {reason}")
        finally:
            if self._phase is not None:
                self._phase(None)
        return None

    def cancel_ahead(self) -> None:
        """Let the executor start no further call; count the calls made whose cases will not run."""
        if self.executor is not None:
            self.discarded_calls += self.executor.close()

    def end(self) -> list[str]:
        """Close this process's calls: cancel those ahead, close the agent and the task, flush LangSmith.

        Calls cut off by Ctrl-C in the main thread count as discarded (paid, never scored). No
        call starts another attempt afterwards.

        Returns:
            What a ``close()`` that raised said (``Assembly.close``), for the front end to warn with.
        """
        self.cancel_ahead()
        problems = self.parts.close()
        self.discarded_calls += self.calls.interrupted
        self.calls.interrupted = 0
        throttle.configure(None)  # ends this run's calls: none of them starts another attempt
        if self.settings.max_cost is not None:
            from groundeval.models import spend

            spend.configure(None)
        if self.stream is not None:
            self.stream.close()  # bounded wait; warns once on failure, never raises
        return problems
