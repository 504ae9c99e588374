"""Item names of repeated trials: ``<case_id>[trial-<i>]`` (``--groundeval-trials``; 0-based)."""

from __future__ import annotations

import re

__all__ = ["split_trial", "trial_name"]

_TRIAL = re.compile(r"^(?P<case>.*)\[trial-(?P<trial>\d+)\]$")


def trial_name(case_id: str, trial: int) -> str:
    """The item name of trial ``trial`` (0-based) of a case: ``<case_id>[trial-<trial>]``."""
    return f"{case_id}[trial-{trial}]"


def split_trial(name: str) -> tuple[str, int | None]:
    """``(case_id, trial)`` from an item name or node id tail; trial None without the suffix."""
    match = _TRIAL.match(name)
    return (match["case"], int(match["trial"])) if match else (name, None)
