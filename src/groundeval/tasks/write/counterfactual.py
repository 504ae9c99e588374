"""The write task's counterfactual twin (``--groundeval-counterfactual``): the note's frequency changed.

``note-frequency`` (replaces): the note's one stated daily frequency (``FREQUENCIES``: "once daily"
becomes "twice daily", "twice daily" "three times daily", ...) is rewritten, and the case's
structured statement with it (``dosage.frequency`` and ``dosage.daily_total``, the dose times the
new frequency). The case file's schema (``write.cases.WriteCase``) then checks the changed
statement, daily total included, and the task's truth is derived from it as for any case; the
twin exists only when the truth's frequency and daily total moved exactly so and nothing else did.
A note with no such phrase, or with it twice, or a dosage with a range, a ``frequency_max`` or a
period other than one day, has no twin.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping
from typing import Any

from pydantic import ValidationError

from groundeval.datasets import Case
from groundeval.tasks.counterfactual import make_twin
from groundeval.tasks.write.cases import WriteCase

__all__ = ["FREQUENCIES", "PERTURBATIONS", "counterfactual", "observe"]

PERTURBATIONS: tuple[str, ...] = ("note-frequency",)
"""The write task's perturbations."""

FREQUENCIES: tuple[tuple[str, int, str, int], ...] = (
    ("once daily", 1, "twice daily", 2),
    ("twice daily", 2, "three times daily", 3),
    ("twice a day", 2, "three times a day", 3),
    ("three times daily", 3, "twice daily", 2),
    ("four times daily", 4, "three times daily", 3),
)
"""(phrase in the note, its administrations per day, the phrase it becomes, the new number), in the order tried."""


def observe(probe: Mapping[str, Any], parsed: Any) -> dict[str, Any]:
    """``{"frequency": Timing.repeat.frequency}`` of the answer's dosages.

    Args:
        probe: A twin's probe (``{"field": "frequency"}``).
        parsed: The parsed MedicationStatement (a dict) as the case record keeps it, or None.

    Returns:
        The one frequency its dosages give; several different ones (a hedged answer) as a sorted
        list, which never equals the truth's one number; None when no dosage gives one.
    """
    del probe
    dosage = parsed.get("dosage") if isinstance(parsed, dict) else None
    found = set()
    for each in dosage if isinstance(dosage, list) else []:
        timing = each.get("timing") if isinstance(each, dict) else None
        repeat = timing.get("repeat") if isinstance(timing, dict) else None
        value = repeat.get("frequency") if isinstance(repeat, dict) else None
        if isinstance(value, int | float) and not isinstance(value, bool):
            found.add(value)
    return {"frequency": None if not found else next(iter(found)) if len(found) == 1 else sorted(found)}


def counterfactual(case: Case, kind: str, truth: Callable[[Case], Mapping[str, Any]]) -> Case | None:
    """The ``note-frequency`` twin of ``case``, or None when its note and dosage do not fit.

    Args:
        case: A loaded write case (``data``: the case file's JSON).
        kind: ``"note-frequency"``.
        truth: The task's truth over a case.

    Raises:
        ValueError: ``kind`` is not one of ``PERTURBATIONS``.
    """
    if kind not in PERTURBATIONS:
        raise ValueError(f"unknown write perturbation {kind!r}; known: {', '.join(PERTURBATIONS)}")
    note = str(case.data.get("note") or "")
    dosage = (case.data.get("expected") or {}).get("dosage")
    if not isinstance(dosage, dict) or dosage.get("dose") is None or dosage.get("period") != 1 \
            or dosage.get("period_unit") != "d" or dosage.get("frequency_max") or dosage.get("period_max"):
        return None
    for phrase, old, new_phrase, new in FREQUENCIES:
        if note.lower().count(phrase) != 1 or dosage.get("frequency") != old:
            continue
        at = note.lower().index(phrase)
        data = copy.deepcopy(case.data)
        data["note"] = note[:at] + new_phrase + note[at + len(phrase):]
        changed = data["expected"]["dosage"]
        changed["frequency"] = new
        changed["daily_total"] = {"value": changed["dose"]["value"] * new, "unit": changed["dose"]["unit"]}
        try:
            WriteCase.model_validate(data)
        except ValidationError:
            return None
        twin = make_twin(case, kind, data, effect="replaces", change=f"note: {phrase!r} -> {new_phrase!r}",
                         probe={"field": "frequency"}, original={"frequency": old}, twin={"frequency": new})
        if not _moved(truth(case), truth(twin), old, new):
            return None
        return twin
    return None


def _moved(before: Mapping[str, Any], after: Mapping[str, Any], old: int, new: int) -> bool:
    """True when only the truth's frequency (``old`` -> ``new``) and daily totals changed, in proportion."""
    a, b = before.get("dosage") or {}, after.get("dosage") or {}
    moved = {"frequency", "daily_total", "daily_total_mg"}
    same = {k: v for k, v in a.items() if k not in moved} == {k: v for k, v in b.items() if k not in moved}
    totals = a.get("daily_total_mg") and b.get("daily_total_mg")
    scaled = bool(totals) and abs(b["daily_total_mg"] * old - a["daily_total_mg"] * new) < 1e-6 * b["daily_total_mg"]
    rest = {k: v for k, v in before.items() if k != "dosage"} == {k: v for k, v in after.items() if k != "dosage"}
    return a.get("frequency") == old and b.get("frequency") == new and same and scaled and rest
