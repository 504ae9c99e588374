"""Under pytest-xdist, keep each worker's queue long enough for the agent calls it makes ahead.

A worker can call ahead only for the items pytest-xdist has handed it (``execution.threaded``, ``plugin.upcoming``).
xdist's ``LoadScheduling`` hands out a quarter of each worker's share at first and then tops a
worker up only when its queue runs low, and not at all while the worker "seems to be doing
long-running tests" (an item of 0.1 s or more with two still queued). An eval item waits for a
model call, so it always looks long-running: each worker kept two items queued, called ahead for
two or three, and ``-n 2`` at ``--groundeval-concurrency 16`` ran slower than a serial run.

``AheadLoadScheduling`` is ``LoadScheduling`` with one more rule: a worker's queue is topped up
to ``ahead`` items (N calls x ``LOOKAHEAD_PER_SLOT``), but never beyond its fair share of what is
left (the items not yet run, divided by the workers), so the last items still spread over every
worker. Everything else (the first chunk, crashes, rescheduling, shutdown) is xdist's.
"""

from __future__ import annotations

from typing import Any

from xdist.scheduler import LoadScheduling

__all__ = ["AheadLoadScheduling"]


class AheadLoadScheduling(LoadScheduling):  # type: ignore[misc]  # xdist ships no type information
    """``LoadScheduling`` that keeps ``ahead`` items queued at each worker while its share allows.

    Args:
        config: The controller's pytest config.
        log: xdist's log producer.
        ahead: Items a worker should have queued (its calls made ahead), at least 2.
    """

    def __init__(self, config: Any, log: Any = None, *, ahead: int) -> None:
        super().__init__(config, log)
        self.ahead = max(2, ahead)

    def check_schedule(self, node: Any, duration: float = 0) -> None:
        """Top ``node``'s queue up to ``ahead`` items (within its fair share), then apply xdist's rule."""
        if self.pending and not node.shutting_down:
            queued = self.node2pending[node]
            left = len(self.pending) + sum(len(p) for p in self.node2pending.values())
            fair = max(2, left // max(len(self.node2pending), 1))
            short = min(self.ahead, fair) - len(queued)
            if short > 0:
                self._send_tests(node, short)
        super().check_schedule(node, duration)
