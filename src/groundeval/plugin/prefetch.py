"""Agent calls made ahead of their items, at most N at once (``--groundeval-concurrency N``).

pytest runs items one by one; a model call takes seconds. When an item's setup asks for its
case, the session hands this module the items that will run next on this process (the rest of
the collection on a serial run; the worker's queue under pytest-xdist) and their agent calls are
started in N threads. Each item then waits only for its own call, and everything else (scoring,
the stop policy, reports, junit, the run record) still happens in the item, in collection order,
on the main thread. So a run reads exactly as a serial run; only the wall time changes.

The threads are daemons fed from a queue rather than a ``concurrent.futures.ThreadPoolExecutor``:
the executor's threads are joined at interpreter exit, so after ``-x`` or Ctrl-C the process
would wait for every model call still in flight. Once the run stops (``throttle.stop_calls``: a
signal, the stop policy, -x) no queued call starts: they are cancelled (never paid for); calls in
flight finish unobserved (with ``--groundeval-cache`` their answers are stored for the next run)
and are counted in the run record's ``dropped_calls``.

``CallTally`` counts every agent call of the process, made ahead or not: how many are in flight,
the most that ever were at once (the concurrency a run reached, which the summary states), and
how many a Ctrl-C cut off in the main thread.
"""

from __future__ import annotations

import functools
import queue
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import CancelledError, Future
from dataclasses import dataclass
from typing import Any

import pytest

from groundeval.agent_io import AgentRequest
from groundeval.datasets import Case
from groundeval.models import throttle
from groundeval.plugin.thread_output import Printed, captured, replay
from groundeval.runner import Attempt

__all__ = ["LOOKAHEAD_PER_SLOT", "Ahead", "CallTally", "Prefetcher", "effective_concurrency", "upcoming"]


class CallTally:
    """The agent calls of one process: in flight now, the most at once, and cut off by Ctrl-C.

    Attributes:
        now: Calls in flight.
        peak: The most calls that were ever in flight at once (0 before the first call).
        made: Calls started.
        interrupted: Calls a ``KeyboardInterrupt`` (Ctrl-C, a signal) cut off in the calling thread.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.now = 0
        self.peak = 0
        self.made = 0
        self.interrupted = 0

    def run(self, call: Callable[[AgentRequest, Any], Attempt], request: AgentRequest, truth: Any) -> Attempt:
        """Make ``call(request, truth)``, counted."""
        with self._lock:
            self.now += 1
            self.made += 1
            self.peak = max(self.peak, self.now)
        try:
            return call(request, truth)
        except BaseException:  # only KeyboardInterrupt gets out of runner.attempt
            with self._lock:
                self.interrupted += 1
            raise
        finally:
            with self._lock:
                self.now -= 1

LOOKAHEAD_PER_SLOT = 4
"""Items queued ahead per call slot: enough that no slot idles behind one slow case."""


@dataclass(frozen=True, slots=True)
class Ahead:
    """An item whose agent call may be made ahead: its node id and a way to prepare its call.

    Attributes:
        nodeid: The item's node id.
        prepare: Builds the item's request and ground truth (``runner.prepare``); may raise, and
            then the call is left to the item, which reports the task's error itself.
    """

    nodeid: str
    prepare: Callable[[], tuple[AgentRequest, Any]]


class Prefetcher:
    """Makes agent calls in ``workers`` daemon threads, in the order they were submitted.

    Args:
        call: Makes one agent call on a request (with the truth carried along) and keeps what it
            returned or raised (``runner.attempt`` bound to the agent); it must not raise.
        workers: Threads, i.e. the most calls in flight at once (at least 2).

    Attributes:
        started: Calls that started in a thread.
        cancelled: Calls cancelled before they started (``cancel``).
    """

    def __init__(self, call: Callable[[AgentRequest, Any], Attempt], workers: int) -> None:
        self._call = call
        self._run = throttle.active()  # the run's stop switch: once thrown, no queued call starts
        self._queue: queue.SimpleQueue[tuple[AgentRequest, Any, Future[Attempt]] | None] = queue.SimpleQueue()
        self._futures: dict[str, Future[Attempt]] = {}
        self._printed: dict[Future[Attempt], Printed] = {}  # what each finished call printed
        self._lock = threading.Lock()
        self.started = 0
        self.cancelled = 0
        self.workers = workers
        self._threads = [
            threading.Thread(target=self._work, name=f"groundeval-call-{i}", daemon=True) for i in range(workers)
        ]
        for thread in self._threads:
            thread.start()

    def _work(self) -> None:
        while (job := self._queue.get()) is not None:
            request, truth, future = job
            if self._run.stopped() and future.cancel():  # the run stopped: never called
                with self._lock:
                    self.cancelled += 1
                continue
            if not future.set_running_or_notify_cancel():
                continue  # cancelled while queued: never called
            with self._lock:
                self.started += 1
            try:
                with captured() as printed:  # what the agent prints goes to its own case (thread_output)
                    result = self._call(request, truth)
                self._printed[future] = printed
                future.set_result(result)
            except BaseException as exc:  # the call keeps what the agent raises; this is a harness bug
                future.set_exception(exc)

    def submit(self, upcoming: Iterable[Ahead]) -> None:
        """Queue the calls of ``upcoming`` items that were not queued yet, in order."""
        for item in upcoming:
            if item.nodeid in self._futures:
                continue
            try:
                request, truth = item.prepare()
            except Exception:
                continue  # the item prepares the call itself and reports the task's error
            future: Future[Attempt] = Future()
            self._futures[item.nodeid] = future
            self._queue.put((request, truth, future))

    def take(self, nodeid: str) -> Attempt | None:
        """Wait for the call made ahead for ``nodeid``; None when none was queued or it was cancelled.

        What the agent printed during the call is written, redacted, to the current streams, so
        pytest captures it into this item's report (``thread_output.replay``).

        Raises:
            KeyboardInterrupt: Ctrl-C while waiting (the call stays listed, for ``cancel`` to count).
            BaseException: A failure inside the call machinery itself (a harness bug).
        """
        future = self._futures.pop(nodeid, None)
        if future is None:
            return None
        try:
            result = future.result()
        except CancelledError:
            return None
        except KeyboardInterrupt:
            self._futures[nodeid] = future  # in flight and never reported: cancel() counts it
            raise
        printed = self._printed.pop(future, None)
        if printed is not None:
            replay(printed)
        return result

    def cancel(self) -> int:
        """Cancel every call not started yet and stop the threads; return how many were in flight or done.

        The calls in flight go on in their daemon threads; their results are dropped.
        """
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
        for _ in self._threads:
            self._queue.put(None)
        return unreported


def upcoming(
    prepare_case: Callable[[Case, int], tuple[AgentRequest, Any]], order: Sequence[Any],
    position: Mapping[str, int], nodeid: str, session: pytest.Session, window: int, *, worker: bool,
) -> list[Ahead]:
    """The item ``nodeid`` and the next ones this process will run, at most ``window`` in all.

    Serially the next ones are the rest of the collection (``order``, the process's eval items
    in collection order); on an xdist worker, the item after this one and the worker's queue
    (xdist hands a worker its items a few at a time, so N is per worker, over the items it has
    been handed). ``prepare_case(case, trial)`` prepares an item's call (loading its case file).
    """
    if worker:
        indices = _worker_queue(session.config)
        nxt = [session.items[i] for i in indices[: window - 1] if 0 <= i < len(session.items)]
    else:
        at = position.get(nodeid, len(order))
        nxt = list(order[at + 1 : at + window])
    current = [order[position[nodeid]]] if nodeid in position else []
    return [
        Ahead(item.nodeid, functools.partial(prepare_case, item.case, item.trial))
        for item in current + nxt
        if hasattr(item, "case") and hasattr(item, "trial")
    ]


def _worker_queue(config: pytest.Config) -> list[int]:
    """Indices of the items an xdist worker will run next (after the current one), in order.

    pytest-xdist's ``WorkerInteractor`` holds them (``nextitem_index`` and the ``torun`` queue);
    it has no public accessor, so this reads them defensively and returns [] if they change.
    """
    for plugin in config.pluginmanager.get_plugins():
        torun = getattr(plugin, "torun", None)
        if torun is None or not hasattr(plugin, "nextitem_index"):
            continue
        try:
            with torun.lock() as queued:
                pending = list(queued)
            nxt = plugin.nextitem_index
        except Exception:  # pragma: no cover - a pytest-xdist that changed its internals
            return []
        return [i for i in [nxt, *pending] if isinstance(i, int) and not isinstance(i, bool)]
    return []


def effective_concurrency(option: int | None, agent: object, default: int) -> int:
    """Agent calls in flight at once in a process.

    ``option`` (``--groundeval-concurrency``) when given; else ``default`` for an agent that
    declares ``thread_safe = True`` (the built-in ones) and 1 for any other, since calling an
    agent of your own from threads could change its answers. Either is lowered to the agent's
    ``max_concurrency`` when it declares one.
    """
    wanted = option
    if wanted is None:
        wanted = default if getattr(agent, "thread_safe", False) is True else 1
    cap = getattr(agent, "max_concurrency", None)
    return min(wanted, cap) if isinstance(cap, int) and not isinstance(cap, bool) and cap >= 1 else wanted
