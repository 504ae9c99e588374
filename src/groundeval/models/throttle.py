"""How many model calls a process has in flight: at most N, fewer for a while after a rate limit.

``--groundeval-concurrency N`` makes the agent calls of upcoming cases in N threads. When the API
answers 429 (rate limited) or 529 (overloaded), sending N requests again at once would fail a
whole wave of cases, so the process limit is cut: additive increase, multiplicative decrease
(AIMD, as TCP congestion control does, RFC 5681 section 3.1):

* a rate-limit answer halves the limit (never below 1) and holds it there for the server's
  ``Retry-After`` or ``MIN_COOLDOWN_S``, whichever is longer;
* after that, each successful call raises the limit by one, up to N.

The call that was rate limited is retried by the one retry layer (``models.retry``), which
obeys ``Retry-After`` and the case's time budget. Slots are handed out first come, first served,
so no case waits behind later ones. One ``AdaptiveLimit`` serves the whole process
(``configure``/``current``); a serial run with ``--groundeval-concurrency 1`` has none.

A rate-limit answer also pauses the whole run (``CallRun.cool_down``): no request of the run is
sent until the server's ``Retry-After`` has passed (or, when it names none, the retry's own
backoff), in every thread, and under pytest-xdist in every worker (``share_cooldown``: a small file
in the out-dir named by the run id, which each worker reads before each request). Cutting the
number of calls in flight alone does not stop a wave: a 429 that comes back in 50 ms frees its
slot at once, and the next call meets the same limit. The pause is waited before a request is
sent and is bounded like the wait for a slot: a case's first request waits at most one
``--groundeval-timeout`` for it, a retry at most what is left of its case's bound (``CoolingDown``
otherwise: no request was sent).

A run's gate and pause obey its stop switch (``models.stop_switch``): once the run is stopped, a
call waiting for a slot or in the pause gives up (``CallsStopped``) and no request is sent.
"""

from __future__ import annotations

import collections
import contextlib
import os
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

from groundeval.models import stop_switch
from groundeval.models.stop_switch import CallsStopped, StopSwitch

__all__ = [
    "MIN_COOLDOWN_S",
    "AdaptiveLimit",
    "CallRun",
    "CoolingDown",
    "SlotTimeout",
    "active",
    "configure",
    "current",
    "is_rate_limit",
    "share_cooldown",
]

MIN_COOLDOWN_S = 5.0
"""Shortest time the cut limit holds after a rate-limit answer, seconds."""

RATE_LIMIT_STATUSES = frozenset({429, 529})
"""HTTP statuses that mean "send less": 429 Too Many Requests (RFC 6585), 529 Anthropic overloaded."""


class SlotTimeout(Exception):
    """No call slot came free in time: no request was sent for this attempt.

    Attributes:
        waited_s: How long the attempt waited for a slot, seconds.
        in_flight: Calls holding a slot when it gave up.
        limit: The limit then (cut by rate-limit answers).
        cuts: Rate-limit answers seen by then.
    """

    def __init__(self, waited_s: float, in_flight: int, limit: int, cuts: int) -> None:
        super().__init__(
            f"waited {waited_s:.1f} s for a concurrency slot; no request was sent ({in_flight} in flight, "
            f"limit {limit} after {cuts} rate-limit answers)"
        )
        self.waited_s = waited_s
        self.in_flight = in_flight
        self.limit = limit
        self.cuts = cuts


class CoolingDown(Exception):
    """The run's pause after a rate-limit answer outlasts what this attempt may wait: no request was sent.

    Attributes:
        left_s: Seconds of the pause still to run.
        bound_s: Seconds this attempt could still wait.
    """

    def __init__(self, left_s: float, bound_s: float) -> None:
        super().__init__(
            f"the run holds its requests for {left_s:.1f} s more after a rate-limit answer (Retry-After), past the "
            f"{bound_s:.1f} s this attempt could wait (--groundeval-timeout); no request was sent"
        )
        self.left_s = left_s
        self.bound_s = bound_s


_REAL_SLEEP = time.sleep
"""``time.sleep`` as this module found it: a pause with the real sleep waits on the stop switch instead,
so a stopped run does not wait out a Retry-After."""


def is_rate_limit(exc: BaseException) -> bool:
    """True when ``exc`` is an API answer 429 or 529 (the SDKs' ``status_code`` attribute)."""
    return getattr(exc, "status_code", None) in RATE_LIMIT_STATUSES


class AdaptiveLimit:
    """A counting gate whose size is cut on rate limits and grows back on successes.

    Args:
        ceiling: The most calls in flight (``--groundeval-concurrency``), at least 1.
        clock: Monotonic clock, seconds (a test seam).
        switch: The run's stop switch (waiters give up once it is thrown); a new one when None.

    Attributes:
        ceiling: The configured maximum.
        limit: The current maximum (between 1 and ``ceiling``).
        in_flight: Calls holding a slot now.
        cuts: Rate-limit answers seen (each halved the limit or kept it at 1).
        peak: The most calls that were ever in flight at once.
    """

    def __init__(
        self, ceiling: int, clock: Callable[[], float] = time.monotonic, *, switch: StopSwitch | None = None
    ) -> None:
        if ceiling < 1:
            raise ValueError(f"ceiling must be at least 1, got {ceiling}")
        self.ceiling = ceiling
        self.limit = ceiling
        self.in_flight = 0
        self.cuts = 0
        self.peak = 0
        self._clock = clock
        self._hold_until = 0.0
        self._cond = threading.Condition()
        self._queue: collections.deque[object] = collections.deque()  # waiters, first come first served
        self.switch = switch if switch is not None else StopSwitch()
        self.switch.on_stop(self.wake)

    def acquire(self, timeout_s: float) -> int:
        """Take a slot, waiting at most ``timeout_s`` seconds for one; first come, first served.

        Returns:
            The calls in flight once this one holds its slot (itself included).

        Raises:
            SlotTimeout: No slot came free in time (it says how long it waited).
            CallsStopped: The run was stopped (``stop_switch.stop_calls``) before a slot came free.
        """
        ticket = object()
        start = self._clock()
        with self._cond:
            self._queue.append(ticket)
            self._cond.notify_all()  # anyone watching the queue (tests) sees the new waiter
            try:
                ready = self._cond.wait_for(
                    lambda: self.switch.thrown() or (self._queue[0] is ticket and self.in_flight < self.limit),
                    timeout=max(timeout_s, 0.0),
                )
            finally:
                self._queue.remove(ticket)
                self._cond.notify_all()  # the next in line may go
            if self.switch.thrown():
                raise CallsStopped("the run was stopped before a concurrency slot came free; no request was sent")
            if not ready:
                waited = max(self._clock() - start, timeout_s)
                raise SlotTimeout(waited, self.in_flight, self.limit, self.cuts)
            self.in_flight += 1
            self.peak = max(self.peak, self.in_flight)
            return self.in_flight

    def wake(self) -> None:
        """Wake every waiter (they re-check the stop switch)."""
        with self._cond:
            self._cond.notify_all()

    def release(self, *, ok: bool) -> None:
        """Give a slot back; a success after the hold raises the limit by one (up to the ceiling)."""
        with self._cond:
            self.in_flight -= 1
            if ok and self.limit < self.ceiling and self._clock() >= self._hold_until:
                self.limit += 1
            self._cond.notify_all()

    def rate_limited(self, retry_after_s: float | None) -> None:
        """A 429/529 answer: halve the limit and hold it for ``max(retry_after_s, MIN_COOLDOWN_S)``."""
        with self._cond:
            self.cuts += 1
            self.limit = max(1, self.limit // 2)
            hold = max(retry_after_s or 0.0, MIN_COOLDOWN_S)
            self._hold_until = max(self._hold_until, self._clock() + hold)

    @contextlib.contextmanager
    def slot(self, timeout_s: float) -> Iterator[int]:
        """Hold a slot for one call; the slot counts as a success unless the block raised.

        Yields:
            The calls in flight once this one holds its slot (itself included).

        Raises:
            SlotTimeout: No slot came free within ``timeout_s`` seconds.
            CallsStopped: The run was stopped first.
        """
        in_flight = self.acquire(timeout_s)
        ok = False
        try:
            yield in_flight
            ok = True
        finally:
            self.release(ok=ok)


class CallRun:
    """One run's call gate and pause, under its stop switch (``configure`` starts a new one).

    Calls capture the ``CallRun`` they start under (``active``), so a call still in flight from
    an earlier run (a daemon thread after an interrupted run) obeys that run's stop, never the
    next run's.

    Args:
        gate: The run's ``AdaptiveLimit``, or None when calls are not concurrent.
        switch: The run's stop switch; the gate's, else a new one, when None.

    Attributes:
        gate: As given.
        switch: The run's ``StopSwitch``.
    """

    def __init__(self, gate: AdaptiveLimit | None, switch: StopSwitch | None = None) -> None:
        self.gate = gate
        self.switch = switch if switch is not None else gate.switch if gate is not None else StopSwitch()
        self._cool_lock = threading.Lock()
        self._cool_until = 0.0  # wall-clock instant (time.time) before which no request of the run is sent
        self._cool_file: Path | None = None  # shared with the run's other processes (share_cooldown)

    # -- the run's pause after a rate-limit answer ---------------------------------------------
    def share_cooldown(self, path: Path) -> None:
        """Keep the pause in ``path`` too, read and written by every process of the run (xdist workers).

        The path must name this run (its run id), so that no other run's pause is ever read.
        """
        self._cool_file = path

    def cool_down(self, seconds: float) -> float:
        """Send no request of the run for ``seconds`` from now (a longer pause already set stays).

        Returns:
            The wall-clock instant (``time.time``) the pause lasts until.
        """
        until = time.time() + max(seconds, 0.0)
        with self._cool_lock:
            self._cool_until = max(self._cool_until, until)
            until = self._cool_until
            path = self._cool_file
            if path is not None:
                until = max(until, _read_instant(path))
                try:  # written whole (a rename), so a reader never sees half a number
                    part = path.with_name(f"{path.name}.{os.getpid()}.{threading.get_ident()}")
                    part.write_text(repr(until))
                    os.replace(part, path)
                except OSError:
                    pass  # the pause still holds in this process
        return until

    def cooling_until(self) -> float:
        """The wall-clock instant before which no request of the run is sent (0.0: none)."""
        until = self._cool_until
        path = self._cool_file
        return max(until, _read_instant(path)) if path is not None else until

    def wait_cooldown(self, bound_s: float, sleep: Callable[[float], None], honoured: float = 0.0) -> float:
        """Wait until the run's pause has passed, at most ``bound_s`` seconds.

        Args:
            bound_s: The most this attempt may wait, seconds.
            sleep: Waits that many seconds (the retry policy's seam; the real ``time.sleep`` is
                replaced by a wait on the stop switch).
            honoured: A pause up to this instant was already waited by the caller (its own retry
                wait after the rate-limit answer it got), so it is not waited again.

        Returns:
            Seconds waited.

        Raises:
            CoolingDown: The pause lasts longer than ``bound_s``; nothing was waited.
            CallsStopped: The run was stopped during the wait.
        """
        waited = 0.0
        seen = honoured
        while True:
            until = self.cooling_until()
            left = until - time.time()
            if until <= seen or left <= 0:
                return waited
            if waited + left > bound_s:
                raise CoolingDown(left, max(bound_s - waited, 0.0))
            if sleep is _REAL_SLEEP:
                self.switch.wait(left)
            else:
                sleep(left)
            waited += left
            seen = until
            if self.stopped():
                raise CallsStopped("the run was stopped while it paused after a rate-limit answer; no request was sent")

    def stop(self) -> None:
        """Throw the run's stop switch: no call of this run starts; waiters for a slot wake and give up."""
        self.switch.stop()

    def stopped(self) -> bool:
        """True once the run's stop switch is thrown (``StopSwitch.stopped``)."""
        return self.switch.stopped()


def _read_instant(path: Path) -> float:
    """The instant a pause file holds, or 0.0 when it is missing or unreadable."""
    try:
        return float(path.read_text())
    except (OSError, ValueError):
        return 0.0


_run = CallRun(None, stop_switch.current())


def configure(ceiling: int | None) -> AdaptiveLimit | None:
    """Start this process's calls of a new run: a limit (None or 1: none) and a clear stop switch.

    The previous run's switch is thrown (``stop_switch.renew``): its calls still in flight start
    no further attempt.
    """
    global _run
    switch = stop_switch.renew()
    _run = CallRun(AdaptiveLimit(ceiling, switch=switch) if ceiling is not None and ceiling > 1 else None, switch)
    return _run.gate


def active() -> CallRun:
    """The current run's gate, pause and stop switch (a call captures it when it starts)."""
    return _run


def current() -> AdaptiveLimit | None:
    """This process's limit, or None when calls are not concurrent."""
    return _run.gate


def share_cooldown(path: Path) -> None:
    """Share the current run's pause after a rate-limit answer through ``path`` (one file per run id)."""
    _run.share_cooldown(path)
