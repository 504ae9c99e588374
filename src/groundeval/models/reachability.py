"""When a model (an agent's or a judge's) looks unreachable: one rule, kept once.

A process's first calls to a model that all fail to connect (no response came back: an
``InfraError`` with ``connection=True``, or an agent's own exception raised from a refused
connection or a failed name lookup, ``errors.connection_failure``), with no answer yet, say the
endpoint, network or key is wrong: after ``UNREACHABLE_AFTER`` of them the run stops. A burst of
429/529 is rate limiting, not an unreachable API: it stops nothing, and one answer ends the watch.

``Reachability`` counts both; the run's stop policy (``run.stop_policy.StopPolicy``) extends it
for an agent's cases, and the model-graded scorer (``scorers.model_graded``) keeps one per judge.
Thread-safe: a judge's calls of one case run concurrently (``execution.score_stage``).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field

__all__ = ["UNREACHABLE_AFTER", "Reachability"]

UNREACHABLE_AFTER = 3
"""Connection-level failures with no answer yet after which a model looks unreachable and the run stops."""


@dataclass
class Reachability:
    """Counts a model's answers and its connection failures before the first answer.

    Attributes:
        answered: Calls that returned an answer (or a verdict).
        unreachable: Connection-level failures before the first answer.
    """

    answered: int = 0
    unreachable: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def note_answer(self) -> None:
        """Count one answer (after it, connection failures no longer count)."""
        with self._lock:
            self.answered += 1

    def note_failure(self, connection: bool) -> bool:
        """Count one failed call; True when it makes ``UNREACHABLE_AFTER`` connection failures with no answer.

        Args:
            connection: True when no response came back (``InfraError.connection``,
                ``errors.connection_failure``).
        """
        with self._lock:
            if not connection or self.answered:
                return False
            self.unreachable += 1
            return self.unreachable >= UNREACHABLE_AFTER
