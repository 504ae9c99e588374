"""How many model calls a process has in flight: at most N, fewer for a while after a rate limit.

``--groundeval-concurrency N`` makes the agent calls of upcoming cases in N threads. When the API
answers 429 (rate limited) or 529 (overloaded), sending N requests again at once would fail a
whole wave of cases, so the process limit is cut: additive increase, multiplicative decrease
(AIMD, as TCP congestion control does, RFC 5681 section 3.1):

* a rate-limit answer halves the limit (never below 1) and holds it there for the server's
  ``Retry-After`` or ``MIN_COOLDOWN_S``, whichever is longer;
* after that, each successful call raises the limit by one, up to N.

The call that was rate limited is retried by the one retry layer (``agents._retry``), which
obeys ``Retry-After`` and the case's time budget; waiting for a slot counts against that budget
too. One ``AdaptiveLimit`` serves the whole process (``configure``/``current``); a serial run
with ``--groundeval-concurrency 1`` has none, so nothing changes for it.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Iterator

__all__ = ["MIN_COOLDOWN_S", "AdaptiveLimit", "SlotTimeout", "configure", "current", "is_rate_limit"]

MIN_COOLDOWN_S = 5.0
"""Shortest time the cut limit holds after a rate-limit answer, seconds."""

RATE_LIMIT_STATUSES = frozenset({429, 529})
"""HTTP statuses that mean "send less": 429 Too Many Requests (RFC 6585), 529 Anthropic overloaded."""


class SlotTimeout(Exception):
    """No call slot came free before the case's time budget ran out."""


def is_rate_limit(exc: BaseException) -> bool:
    """True when ``exc`` is an API answer 429 or 529 (the SDKs' ``status_code`` attribute)."""
    return getattr(exc, "status_code", None) in RATE_LIMIT_STATUSES


class AdaptiveLimit:
    """A counting gate whose size is cut on rate limits and grows back on successes.

    Args:
        ceiling: The most calls in flight (``--groundeval-concurrency``), at least 1.
        clock: Monotonic clock, seconds (a test seam).

    Attributes:
        ceiling: The configured maximum.
        limit: The current maximum (between 1 and ``ceiling``).
        in_flight: Calls holding a slot now.
        cuts: Rate-limit answers seen (each halved the limit or kept it at 1).
        peak: The most calls that were ever in flight at once.
    """

    def __init__(self, ceiling: int, clock: Callable[[], float] = time.monotonic) -> None:
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

    def acquire(self, timeout_s: float) -> None:
        """Take a slot, waiting at most ``timeout_s`` seconds for one.

        Raises:
            SlotTimeout: No slot came free in time.
        """
        with self._cond:
            if not self._cond.wait_for(lambda: self.in_flight < self.limit, timeout=max(timeout_s, 0.0)):
                raise SlotTimeout(
                    f"no model-call slot came free in {timeout_s:.1f} s ({self.in_flight} in flight, limit "
                    f"{self.limit} after {self.cuts} rate-limit answers)"
                )
            self.in_flight += 1
            self.peak = max(self.peak, self.in_flight)

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
    def slot(self, timeout_s: float) -> Iterator[None]:
        """Hold a slot for one call; the slot counts as a success unless the block raised.

        Raises:
            SlotTimeout: No slot came free within ``timeout_s`` seconds.
        """
        self.acquire(timeout_s)
        ok = False
        try:
            yield
            ok = True
        finally:
            self.release(ok=ok)


_current: AdaptiveLimit | None = None


def configure(ceiling: int | None) -> AdaptiveLimit | None:
    """Set this process's limit (None or 1: no limit object, calls go straight through)."""
    global _current
    _current = AdaptiveLimit(ceiling) if ceiling is not None and ceiling > 1 else None
    return _current


def current() -> AdaptiveLimit | None:
    """This process's limit, or None when calls are not concurrent."""
    return _current
