"""Item names of repeated trials and counterfactual twins.

A trial is ``<case_id>[trial-<i>]`` (``--groundeval-trials``; 0-based); a counterfactual twin of a
case is the case ``<case_id>[cf-<perturbation>]`` (``--groundeval-counterfactual``), whose trials
are ``<case_id>[cf-<perturbation>][trial-<i>]``.
"""

from __future__ import annotations

import re

__all__ = ["split_trial", "split_twin", "trial_name", "twin_name"]

_TRIAL = re.compile(r"^(?P<case>.*)\[trial-(?P<trial>\d+)\]$")
_TWIN = re.compile(r"^(?P<case>.*)\[cf-(?P<kind>[a-z0-9][a-z0-9-]*)\]$")


def trial_name(case_id: str, trial: int) -> str:
    """The item name of trial ``trial`` (0-based) of a case: ``<case_id>[trial-<trial>]``."""
    return f"{case_id}[trial-{trial}]"


def split_trial(name: str) -> tuple[str, int | None]:
    """``(case_id, trial)`` from an item name or node id tail; trial None without the suffix."""
    match = _TRIAL.match(name)
    return (match["case"], int(match["trial"])) if match else (name, None)


def twin_name(case_id: str, kind: str) -> str:
    """The case id of the twin of ``case_id`` made by perturbation ``kind``: ``<case_id>[cf-<kind>]``."""
    return f"{case_id}[cf-{kind}]"


def split_twin(case_id: str) -> tuple[str, str | None]:
    """``(original case id, perturbation)`` of a twin's case id; perturbation None for an original case."""
    match = _TWIN.match(case_id)
    return (match["case"], match["kind"]) if match else (case_id, None)
