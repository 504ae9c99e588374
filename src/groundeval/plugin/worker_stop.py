"""Ctrl-C on a pytest-xdist worker: cut the agent call in flight and report its case as not run.

A Ctrl-C reaches a worker in one of two ways: the terminal sends SIGINT to the whole process
group (controller and workers), or only the controller is signalled (``kill -INT``), and it
writes ``INTERRUPT`` into the run's stop file (``plugin.signals``). Either way the worker's call in
flight (a model call can hold for minutes) must end now, and the case it belonged to is
``not_run`` (excluded, counted), never a worker crash: a worker that lets a ``KeyboardInterrupt``
out of its session is reported by pytest-xdist as "crashed" (a failed test in junit and on the
terminal) for a case the run record calls not run.

So on a worker (``WorkerStop``): the first SIGINT stops the run's calls (``stop_switch.stop_calls``)
and, only while the main thread waits for an agent call (``cuttable``), raises ``CallCut`` there;
anywhere else (between cases, in pytest's reporting) it raises nothing and the worker simply
starts no further case. A second SIGINT is absorbed; a third aborts. A daemon thread watches the
stop file and, once the controller wrote ``INTERRUPT`` there, sends the worker that SIGINT itself.
A SIGTERM stop (an empty stop file) stays graceful: the calls in flight finish.
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from groundeval.models import stop_switch

__all__ = ["INTERRUPT", "CallCut", "WorkerStop"]

INTERRUPT = "INTERRUPT"
"""What the controller writes into the stop file when a SIGINT stopped the run: cut calls in flight."""

WATCH_INTERVAL_S = 0.2
"""How often the worker looks for the controller's stop file, seconds (one ``stat`` each time)."""


class CallCut(KeyboardInterrupt):
    """A SIGINT cut the agent call this worker's main thread waited for (its case is not run).

    A ``KeyboardInterrupt``, so that the call machinery lets it through and counts the call as
    cut off (``execution.base.CallTally``, ``ThreadedExecutor.close``): paid for, never scored.
    """


class WorkerStop:
    """A worker's SIGINT handler and stop-file watcher (installed at session start, restored at its end).

    Args:
        stop_file: The run's stop file (``GroundevalSession.stop_file``).

    Attributes:
        reason: Why the worker stopped (None until a SIGINT or the controller's ``INTERRUPT``).
    """

    def __init__(self, stop_file: Path) -> None:
        self.stop_file = stop_file
        self.reason: str | None = None
        self.signals = 0
        self._cuttable = False
        self._previous: Any = None
        self._installed = False
        self._done = threading.Event()

    def install(self) -> None:
        """Take SIGINT where its handler is the default (main thread only) and start the watcher."""
        if threading.current_thread() is not threading.main_thread():
            return
        if signal.getsignal(signal.SIGINT) is not signal.default_int_handler:
            return  # SIGINT ignored (a background job) or someone else's handler: leave it
        self._previous = signal.signal(signal.SIGINT, self._on_signal)
        self._installed = True
        threading.Thread(target=self._watch, name="groundeval-stop-watch", daemon=True).start()

    def restore(self) -> None:
        """Stop the watcher and put the previous SIGINT handler back."""
        self._done.set()
        if self._installed and threading.current_thread() is threading.main_thread():
            signal.signal(signal.SIGINT, self._previous)
            self._installed = False

    @contextlib.contextmanager
    def cuttable(self) -> Iterator[None]:
        """While inside, a SIGINT raises ``CallCut`` in the main thread (it waits for an agent call)."""
        self._cuttable = True
        try:
            if self.reason is not None:
                raise CallCut(self.reason)  # the SIGINT came just before: cut at once
            yield
        finally:
            self._cuttable = False

    def _watch(self) -> None:
        """Until ``restore``: once the controller wrote ``INTERRUPT`` into the stop file, SIGINT this worker."""
        while not self._done.wait(WATCH_INTERVAL_S):
            try:
                interrupt = self.stop_file.read_text(encoding="utf-8").strip() == INTERRUPT
            except OSError:
                continue  # no stop file yet
            if interrupt and self.signals == 0:
                os.kill(os.getpid(), signal.SIGINT)
            if self.stop_file.exists():
                return  # the run is stopping: nothing more to watch

    def _on_signal(self, signum: int, frame: Any) -> None:
        """First SIGINT: stop the calls, cut the one waited for. Second: absorbed. Third: abort."""
        self.signals += 1
        if self.signals >= 3:
            raise KeyboardInterrupt("interrupted by signal SIGINT")
        if self.signals == 2:
            return
        self.reason = "interrupted by signal SIGINT"
        stop_switch.stop_calls()
        if self._cuttable:
            raise CallCut(self.reason)
