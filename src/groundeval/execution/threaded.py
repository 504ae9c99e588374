"""The threaded executor: agent calls made ahead of their items, at most N at once.

pytest runs items one by one; a model call takes seconds. Before each item runs, the session
hands the executor the jobs this process runs next (the rest of the collection on a serial run;
the worker's queue under pytest-xdist) and their agent calls are started in N threads. Each item
then waits only for its own call, and everything else (scoring, the stop policy, reports, junit,
the run record) still happens in the item, in collection order, on the main thread. So a run
reads exactly as a serial run; only the wall time changes.

The first call on a process goes alone: calls go ahead (``lookahead`` above 0) only once a call
has returned, whatever its outcome (a wrong answer, no answer, a truncated reply), unless it never
reached the server. So a rejected key, an unknown model or an unreachable API stops the run after
one call (three when unreachable), as in a serial run, instead of N. An agent that declares
``network_calls = False`` (the rule-based baselines, replay, a scripted agent) has no key, model or
API to be wrong, so its calls go ahead from the first one.

The threads are daemons fed from a queue rather than a ``concurrent.futures.ThreadPoolExecutor``:
the executor's threads are joined at interpreter exit, so after ``-x`` or Ctrl-C the process
would wait for every model call still in flight. Once the run stops (``stop_switch.stop_calls``: a
signal, the stop policy, -x) no queued call starts: they are cancelled (never paid for); calls in
flight finish unobserved (with ``--groundeval-cache`` their answers are stored for the next run)
and ``close`` counts them, for the run record's ``dropped_calls``.

What an agent prints during a call made ahead is captured per call and written, redacted, into the
item's own output when the item takes its result (``execution.thread_output``).

A model-graded scorer's judge questions are asked ahead too, in the thread that made the case's
agent call, right after it (``ExecutionContext.grade_ahead``, through the score stage): the judge
calls of several cases then overlap, and the item finds its verdicts ready.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Sequence
from concurrent.futures import CancelledError, Future

from groundeval.agent_io import AgentRequest
from groundeval.errors import InfraError
from groundeval.execution.base import ExecutionContext, Job
from groundeval.execution.call import Attempt
from groundeval.execution.outcome_policy import CaseRun
from groundeval.execution.thread_output import Printed, captured, replay
from groundeval.models import stop_switch
from groundeval.scorers.model_graded import JudgeError, Verdict

__all__ = ["LOOKAHEAD_PER_SLOT", "ThreadedExecutor"]

LOOKAHEAD_PER_SLOT = 4
"""Items queued ahead per call slot: enough that no slot idles behind one slow case."""


class ThreadedExecutor:
    """Makes agent calls ahead of their items in ``workers`` daemon threads, in the order submitted.

    Args:
        context: The task, agent, run facts, case files and call tally.
        workers: Threads, i.e. the most calls in flight at once (at least 2).

    Attributes:
        lookahead: 0 until a call has returned on this process (the first call goes alone, unless
            the agent declares ``network_calls = False``) and after ``close``; else ``workers`` x
            ``LOOKAHEAD_PER_SLOT``.
        workers: Threads once started.
        started: Calls that started in a thread.
        cancelled: Calls cancelled before they started (the run stopped).
    """

    def __init__(self, context: ExecutionContext, workers: int) -> None:
        self.context = context
        self.workers = workers
        self.started = 0
        self.cancelled = 0
        # A call returned here (not a connection failure), or the agent makes no network call:
        # calls may go ahead.
        self._fan_out = getattr(context.agent, "network_calls", True) is False
        self._closed = False
        self.lookahead = workers * LOOKAHEAD_PER_SLOT if self._fan_out else 0
        self._run: stop_switch.StopSwitch | None = None  # the run's stop switch, captured when threads start
        self._queue: queue.SimpleQueue[tuple[Job, AgentRequest, object, Future[Attempt]] | None] = queue.SimpleQueue()
        self._futures: dict[str, Future[Attempt]] = {}
        self._printed: dict[Future[Attempt], Printed] = {}  # what each finished call printed
        self._graded: dict[Future[Attempt], dict[str, Verdict | JudgeError]] = {}  # judge verdicts asked ahead
        self._lock = threading.Lock()
        self._threads: list[threading.Thread] = []

    def _start(self) -> None:
        self._run = stop_switch.current()  # once thrown, no queued call starts
        self._threads = [
            threading.Thread(target=self._work, name=f"groundeval-call-{i}", daemon=True) for i in range(self.workers)
        ]
        for thread in self._threads:
            thread.start()

    def _work(self) -> None:
        run = self._run
        assert run is not None
        while (job := self._queue.get()) is not None:
            item, request, truth, future = job
            if future.cancelled():
                continue  # cancelled while queued (close): never called, counted there
            if run.stopped() and future.cancel():  # the run stopped: never called
                with self._lock:
                    self.cancelled += 1
                continue
            if not future.set_running_or_notify_cancel():
                continue  # cancelled while queued: never called
            with self._lock:
                self.started += 1
            try:
                with captured() as printed:  # what the agent prints goes to its own case
                    result = self.context.call(request, truth)
                    ahead = None if run.stopped() else self.context.grade_ahead(item, result)
                self._printed[future] = printed
                if ahead is not None:
                    self._graded[future] = ahead
                future.set_result(result)
            except BaseException as exc:  # the call keeps what the agent raises; this is a harness bug
                future.set_exception(exc)

    def submit(self, jobs: Sequence[Job]) -> None:
        """Queue the calls of ``jobs`` not queued yet, in order (none before the first call returned)."""
        if not self._fan_out or self._closed:
            return
        if not self._threads:
            self._start()
        for job in jobs:
            if job.nodeid in self._futures:
                continue
            try:
                request, truth = self.context.prepare(job)
            except Exception:
                continue  # the item prepares the call itself and reports the task's error
            future: Future[Attempt] = Future()
            self._futures[job.nodeid] = future
            self._queue.put((job, request, truth, future))

    def result(self, job: Job) -> CaseRun | None:
        """Wait for ``job``'s call made ahead (or make it now) and run the case to its record."""
        case = self.context.open(job)
        if isinstance(case, CaseRun):
            return case
        future = self._futures.get(job.nodeid)
        attempted = self._take(job)
        ahead = None if future is None else self._graded.pop(future, None)
        run = self.context.run_now(job, case) if attempted is None else self.context.finish(job, case, attempted, ahead)
        if run is not None and run.record.started_at is not None:
            exc = run.exc
            if not (isinstance(exc, InfraError) and exc.connection):
                self._fan_out = True  # a call reached the server and returned, whatever its outcome
                self.lookahead = 0 if self._closed else self.workers * LOOKAHEAD_PER_SLOT
        return run

    def _take(self, job: Job) -> Attempt | None:
        """Wait for the call made ahead for ``job``; None when none was queued or it was cancelled.

        What the agent printed during the call is written, redacted, to the current streams, so
        pytest captures it into this item's report (``thread_output.replay``).

        Raises:
            KeyboardInterrupt: Ctrl-C while waiting (the call stays listed, for ``close`` to count).
            BaseException: A failure inside the call machinery itself (a harness bug).
        """
        future = self._futures.pop(job.nodeid, None)
        if future is None:
            return None
        try:
            result = future.result()
        except CancelledError:
            return None
        except KeyboardInterrupt:
            self._futures[job.nodeid] = future  # in flight and never reported: close() counts it
            raise
        printed = self._printed.pop(future, None)
        if printed is not None:
            replay(printed)
        return result

    def close(self) -> int:
        """Cancel every call not started yet and stop the threads; return how many were in flight or done.

        The calls in flight go on in their daemon threads; their results are dropped. No call
        goes ahead after this.
        """
        self._closed = True
        self.lookahead = 0
        unreported = 0
        for future in self._futures.values():
            if future.cancelled():
                continue  # a worker thread cancelled it at the stop, and counted it
            if future.cancel():
                with self._lock:
                    self.cancelled += 1
            else:
                unreported += 1
        self._futures.clear()
        self._printed.clear()
        self._graded.clear()
        for _ in self._threads:
            self._queue.put(None)
        self._threads = []
        return unreported
