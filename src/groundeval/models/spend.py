"""The run's spending limit (``--groundeval-max-cost``): no model call that could pass it is made.

Before each model call the agent asks for the call's highest likely cost: its prompt tokens,
estimated from the prompt's characters at ``CHARS_PER_TOKEN_LOW`` (fewer characters per token than
any real text has on average, so the estimate is high), plus ``max_tokens`` of output, at the
model's list price (``groundeval.models.pricing``). The call goes ahead only if what was spent, what
calls in flight may still cost and this estimate stay within the limit; otherwise
``SpendLimitReached`` is raised and the run stops (the cases not started are ``not_run``). When
the call returns, its reservation is replaced by its real cost.

One ``SpendLimit`` serves a process (``configure``/``current``), as ``groundeval.models.throttle`` does for
call slots; under pytest-xdist each worker gets an equal share of the limit, so the run as a
whole stays within it.
"""

from __future__ import annotations

import threading

from groundeval.errors import SpendLimitReached
from groundeval.models.pricing import cost_usd

__all__ = ["CHARS_PER_TOKEN_LOW", "SpendLimit", "configure", "current", "highest_call_cost"]

CHARS_PER_TOKEN_LOW = 2
"""Characters per token assumed for the spend estimate: half of ``pricing.CHARS_PER_TOKEN``. Claude's
tokenizer averages about 3.5 characters per token on English and about 3 on FHIR JSON; 2 overstates
the tokens of any such prompt, so a call is refused a little early rather than let past the limit."""


def highest_call_cost(model: str | None, prompt_chars: int, max_tokens: int) -> float | None:
    """The most one call is likely to cost, USD; None for an unpriced model.

    ``prompt_chars / CHARS_PER_TOKEN_LOW`` input tokens (uncached) plus ``max_tokens`` output
    tokens, at the model's list price (``pricing.cost_usd``).
    """
    prompt_tokens = -(-prompt_chars // CHARS_PER_TOKEN_LOW)
    return cost_usd(model, input_tokens=prompt_tokens, output_tokens=max_tokens)


class SpendLimit:
    """Money this process may still commit to model calls.

    Args:
        limit_usd: The limit, USD (greater than 0).

    Attributes:
        limit_usd: The limit.
        spent_usd: Cost of the calls that returned, USD (an unpriced return keeps its estimate).
        reserved_usd: Estimates of the calls in flight, USD.
        calls: Calls that returned.
    """

    def __init__(self, limit_usd: float) -> None:
        self.limit_usd = limit_usd
        self.spent_usd = 0.0
        self.reserved_usd = 0.0
        self.calls = 0
        self._lock = threading.Lock()

    def reserve(self, estimate_usd: float, case_id: str) -> float:
        """Set ``estimate_usd`` aside for a call of ``case_id``, or refuse it.

        Returns:
            The amount reserved (give it back to ``settle``).

        Raises:
            SpendLimitReached: Spent, reserved and this estimate would pass the limit.
        """
        with self._lock:
            if self.spent_usd + self.reserved_usd + estimate_usd > self.limit_usd:
                raise SpendLimitReached(
                    f"--groundeval-max-cost {self.limit_usd:g} USD reached: ${self.spent_usd:.4f} spent, "
                    f"${self.reserved_usd:.4f} reserved for calls in flight, limit ${self.limit_usd:.4f}; the next "
                    f"call ({case_id}) could cost up to ${estimate_usd:.4f}; it was not made. Raise the limit or "
                    "run fewer cases (--groundeval-limit, -k); --groundeval-cache keeps what was paid for",
                    limit_usd=self.limit_usd, spent_usd=self.spent_usd, estimate_usd=estimate_usd,
                )
            self.reserved_usd += estimate_usd
            return estimate_usd

    def settle(self, reserved_usd: float, cost: float | None) -> None:
        """A call returned (or failed): its real cost replaces its reservation (None: the estimate stays spent)."""
        with self._lock:
            self.reserved_usd = max(0.0, self.reserved_usd - reserved_usd)
            self.spent_usd += reserved_usd if cost is None else float(cost)
            self.calls += 1


_current: SpendLimit | None = None


def configure(limit_usd: float | None) -> SpendLimit | None:
    """Set this process's limit (None: no limit)."""
    global _current
    _current = SpendLimit(limit_usd) if limit_usd is not None else None
    return _current


def current() -> SpendLimit | None:
    """This process's limit, or None."""
    return _current
