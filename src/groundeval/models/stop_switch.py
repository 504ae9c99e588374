"""The run's stop switch: once it is thrown, no model call of the run starts.

A run is stopped by a signal (``plugin.signals``, ``plugin.worker_stop``), the stop policy, ``-x``
or ``--maxfail``, the spending limit, or, on a pytest-xdist worker, the controller's stop file
(``watch_stop``). From then on no model call starts, whether it was waiting for a call slot
(``models.throttle``), between two retries (``models.retry``), queued ahead in an executor's
threads (``execution.threaded``) or not yet sent in a batch (``models.batch``); calls already in
flight finish.

One ``StopSwitch`` serves a run of a process; ``renew`` (called when a run's calls are configured,
``throttle.configure``) throws the previous run's switch and starts a clear one. Calls capture the
switch they start under (``current``), so a call still in flight from an earlier run obeys that
run's stop, never the next run's.

This module imports nothing of groundeval, so the stop path (a signal handler on a worker) costs
no more than the standard library's ``threading``. ``stop_calls`` is safe in a signal handler.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

__all__ = ["CallsStopped", "StopSwitch", "calls_stopped", "current", "renew", "stop_calls", "watch_stop"]


class CallsStopped(Exception):
    """The run was stopped before this call was sent (``stop_calls``): no request was sent."""


class StopSwitch:
    """One run's stop switch: thrown once, it stays thrown.

    A thrown switch wakes whatever registered with ``on_stop`` (a call gate's waiters), and
    ``wait`` returns at once, so a paused call does not wait out its pause.
    """

    def __init__(self) -> None:
        self._event = threading.Event()
        self._checks: list[Callable[[], bool]] = []
        self._wakers: list[Callable[[], None]] = []

    def stop(self) -> None:
        """No call of this run starts from now on; everything registered with ``on_stop`` is woken."""
        self._event.set()
        for wake in list(self._wakers):
            wake()

    def on_stop(self, wake: Callable[[], None]) -> None:
        """Call ``wake()`` whenever the switch is thrown (it must not block)."""
        self._wakers.append(wake)

    def watch(self, check: Callable[[], bool]) -> None:
        """Also count the run as stopped once ``check()`` is true (an xdist worker's stop file)."""
        self._checks.append(check)

    def thrown(self) -> bool:
        """True once ``stop`` was called (the ``watch`` checks are not consulted: no I/O, lock-free)."""
        return self._event.is_set()

    def stopped(self) -> bool:
        """True once ``stop`` was called or a ``watch`` check says so (then it stays true)."""
        if self._event.is_set():
            return True
        if any(check() for check in self._checks):
            self.stop()
            return True
        return False

    def wait(self, seconds: float) -> bool:
        """Wait ``seconds``, or less when the switch is thrown meanwhile; True when it was thrown."""
        return self._event.wait(max(seconds, 0.0))


_switch = StopSwitch()


def renew() -> StopSwitch:
    """Throw the current run's switch (its calls still in flight start no further attempt) and start a clear one."""
    global _switch
    _switch.stop()
    _switch = StopSwitch()
    return _switch


def current() -> StopSwitch:
    """The current run's switch (a call captures it when it starts)."""
    return _switch


def stop_calls() -> None:
    """Stop the current run's model calls: none starts from now on (safe in a signal handler)."""
    _switch.stop()


def watch_stop(check: Callable[[], bool]) -> None:
    """Also treat the current run's calls as stopped once ``check()`` is true."""
    _switch.watch(check)


def calls_stopped() -> bool:
    """True once the current run's calls were stopped (``stop_calls``, a ``watch_stop`` check)."""
    return _switch.stopped()
