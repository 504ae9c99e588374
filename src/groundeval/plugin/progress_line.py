"""The status line's text: what the case records received so far add up to, and how it reads.

Pure functions over the records (as JSON dicts on the reports); ``groundeval.plugin.progress``
draws the line. Never the run's figures: the summary has those.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = ["Tally", "duration", "status_text"]


@dataclass(slots=True)
class Tally:
    """What the case records received so far add up to (never the run's figures: the summary has those).

    Attributes:
        done: Items with a record (trials counted).
        passed: Of those, ``passed``.
        excluded: Not counted in the means (errors, ``invalid_case``).
        cached: Answers from the cache or a replayed run.
        tokens: Tokens of the model calls made by this run (cached answers left out).
        spent_usd: USD of the model calls made by this run (unpriced calls add nothing).
        unpriced: Calls made by this run whose cost is unknown.
    """

    done: int = 0
    passed: int = 0
    excluded: int = 0
    cached: int = 0
    tokens: int = 0
    spent_usd: float = 0.0
    unpriced: int = 0
    seen: set[str] = field(default_factory=set)

    def add(self, nodeid: str, record: dict[str, Any]) -> None:
        """Count one case record (a JSON dict, as it travels on the report), once per node id."""
        if nodeid in self.seen:
            return
        self.seen.add(nodeid)
        self.done += 1
        self.passed += record.get("outcome") == "passed"
        self.excluded += not record.get("counted", True)
        if record.get("cached"):
            self.cached += 1
            return
        usage = record.get("usage") or {}
        self.tokens += sum(int(v) for k, v in usage.items() if k.endswith("_tokens") and isinstance(v, int | float))
        cost = usage.get("cost_usd")
        if isinstance(cost, int | float):
            self.spent_usd += float(cost)
        elif any(k.endswith("_tokens") for k in usage):
            self.unpriced += 1


def duration(seconds: float) -> str:
    """``45s``, ``1m05s`` or ``2h03m``."""
    seconds = int(seconds)
    if seconds < 60:
        return f"{seconds}s"
    if seconds < 3600:
        return f"{seconds // 60}m{seconds % 60:02d}s"
    return f"{seconds // 3600}h{seconds % 3600 // 60:02d}m"


def _tokens(n: int) -> str:
    return f"{n / 1e6:.1f}M" if n >= 1e6 else f"{n / 1e3:.1f}k" if n >= 1e3 else str(n)


def status_text(tally: Tally, total: int, live: dict[str, int] | None, elapsed_s: float,
                running_s: float | None, limit_usd: float | None = None) -> str:
    """The status line (one line, plain text).

    Args:
        tally: The records so far.
        total: Items selected (trials counted).
        live: Calls in flight and the limit summed over the processes that run cases, or None
            when calls are not concurrent.
        elapsed_s: Seconds since the run started.
        running_s: Seconds since the first item started, or None before it (for the ETA).
        limit_usd: ``--groundeval-max-cost``, shown beside the spend, or None.

    Returns:
        ``groundeval 12/48 done  9 passed  1 excluded  calls 4 in flight (limit 4)  cached 3
        12.3k tokens  $0.4200  elapsed 1m05s  ETA 3m10s``
    """
    parts = [f"groundeval {tally.done}/{total} done", f"{tally.passed} passed", f"{tally.excluded} excluded"]
    if live is not None:
        limit = f"limit {live['limit']}"
        if live["limit"] < live["ceiling"]:
            limit = f"limit cut to {live['limit']} of {live['ceiling']} by rate limiting"
        parts.append(f"calls {live['in_flight']} in flight ({limit})")
    if tally.cached:
        parts.append(f"cached {tally.cached}")
    if tally.tokens:
        parts.append(f"{_tokens(tally.tokens)} tokens")
    if tally.spent_usd or tally.tokens or limit_usd:
        spent = f"${tally.spent_usd:.4f}" + (f" of ${limit_usd:g}" if limit_usd else "")
        parts.append(spent + (f" (+{tally.unpriced} unpriced)" if tally.unpriced else ""))
    parts.append(f"elapsed {duration(elapsed_s)}")
    if running_s is not None and tally.done and total > tally.done:
        parts.append(f"ETA {duration(running_s / tally.done * (total - tally.done))}")
    return "  ".join(parts)
