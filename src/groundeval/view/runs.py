"""The run records a viewer shows: read once from a directory, and the filters over their cases."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from groundeval.records.run_record import CaseRecord, RunRecord
from groundeval.records.trial_ids import split_twin

__all__ = ["Runs", "case_matches", "load_runs"]


@dataclass(frozen=True, slots=True)
class Runs:
    """The run records of a directory, newest first.

    Attributes:
        records: ``run_id`` -> its record.
        skipped: Files that are not run records, each with why (shown on the runs page).
    """

    records: dict[str, RunRecord]
    skipped: list[tuple[str, str]]


def load_runs(directory: Path) -> Runs:
    """Read every ``*.json`` run record under ``directory``, its subdirectories included.

    ``runs/a`` and ``runs/b``, as docs/ci/compare.md writes them, are found from ``runs``; files that
    are not run records are listed as skipped, by their path under ``directory``.
    """
    records: list[RunRecord] = []
    skipped: list[tuple[str, str]] = []
    for path in sorted(directory.rglob("*.json")):
        try:
            records.append(RunRecord.model_validate_json(path.read_text(encoding="utf-8")))
        except (OSError, ValueError, ValidationError) as exc:
            skipped.append((str(path.relative_to(directory)), _why_skipped(path, exc)))
    records.sort(key=lambda r: r.started_at, reverse=True)
    return Runs({r.run_id: r for r in records}, skipped)


def _why_skipped(path: Path, exc: Exception) -> str:
    """One line saying why ``path`` is not a run record, and what a run record is."""
    if isinstance(exc, OSError):
        return f"cannot be read ({exc.strerror or exc})"
    if isinstance(exc, ValidationError):
        errors = exc.errors()
        if any(e.get("type") == "json_invalid" for e in errors):
            return "not valid JSON; a run record is the <run_id>.json a groundeval run writes"
        missing = [str(e["loc"][0]) for e in errors if e.get("type") == "missing" and len(e["loc"]) == 1]
        if missing:
            return (f"not a groundeval run record (no {', '.join(missing[:4])}"
                    f"{', ...' if len(missing) > 4 else ''}); move other JSON files out of the runs directory")
        if not errors:
            return f"not a valid run record: {exc}"
        where = ".".join(str(p) for p in errors[0]["loc"])
        return f"not a valid run record: {where}: {errors[0]['msg']} ({len(errors)} problem(s))"
    return f"not valid JSON or text: {str(exc).splitlines()[0]}"


def case_matches(case: CaseRecord, *, outcome: str, metric: str, below: float | None, text: str) -> bool:
    """True when ``case`` passes the case-list filters.

    Args:
        case: The case record.
        outcome: Its outcome must be this one (empty: any).
        metric: The per-case metric to filter on (empty: none).
        below: With ``metric``: keep cases whose value is below this (None: cases that have the metric).
        text: Case-insensitive text to find in the case id, message, raw answer or conversation (empty: any).
    """
    if outcome and case.outcome != outcome:
        return False
    if metric:
        value = case.metrics.get(metric)
        if not isinstance(value, int | float) or isinstance(value, bool):
            return False
        if below is not None and not value < below:
            return False
    if text:
        needle = text.lower()
        hay = [case.case_id, case.message, case.raw_output or ""]
        if case.conversation is not None:
            hay += [m.content or "" for m in case.conversation.messages]
        if not any(needle in h.lower() for h in hay):
            return False
    return True


def twins_of(run: RunRecord, case: CaseRecord) -> list[tuple[int, CaseRecord]]:
    """The other members of ``case``'s counterfactual family in ``run`` (same trial), with their index."""
    base = split_twin(case.case_id)[0]
    return [
        (i, c)
        for i, c in enumerate(run.cases)
        if c is not case and split_twin(c.case_id)[0] == base and c.trial == case.trial
    ]


def pretty(value: Any) -> str:
    """``value`` as indented JSON (for the answer, the truth and the details)."""
    return json.dumps(value, indent=2, ensure_ascii=False, default=str)
