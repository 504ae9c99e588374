"""What the HTML report shows of one case: its group, its rerun command, its answer beside its truth.

Read from the case records only (nothing is rescored). Task-independent: an answer or a truth
that is a list of items (or a mapping holding one such list, as ``{"medications": [...]}``) is
shown item by item, each as its code and display, and an item named in the case's ``details``
(``missing``, ``extra``, ``mismatches``/``display_mismatches``) is highlighted; anything else is
shown as indented JSON, capped.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from groundeval.records.outcomes import OUTCOMES
from groundeval.records.run_record import CaseRecord

__all__ = ["GROUPS", "RAW_CAP", "case_detail", "group_of"]

GROUPS: tuple[tuple[str, str], ...] = (
    ("failed", "failed (wrong or no answer)"),
    ("partial", "partial credit"),
    ("errors", "errors (excluded from the means)"),
    ("not_run", "not run"),
    ("passed", "passed"),
)
"""Report groups in the order shown: failures first, passes last."""

RAW_CAP = 4000
"""Characters of a raw answer, a JSON value or a tool result shown in a case's details."""

MISMATCH_KEYS = ("mismatches", "display_mismatches")


def group_of(outcome: str) -> str:
    """The report group of an outcome (``GROUPS``)."""
    if outcome in ("passed", "partial", "not_run"):
        return outcome
    rule = OUTCOMES.get(outcome)
    return "failed" if rule is not None and rule.counted else "errors"


def _cap(text: str, cap: int = RAW_CAP) -> str:
    return text if len(text) <= cap else text[:cap] + f"\n... ({len(text) - cap:,} more characters in the run record)"


def item_code(item: Mapping[str, Any]) -> str:
    """An item's code: ``codes`` joined by ``/``, else ``rxnorm_code`` or ``code`` (empty when none)."""
    codes = item.get("codes")
    if isinstance(codes, list) and codes:
        return "/".join(str(c) for c in codes)
    return str(item.get("rxnorm_code") or item.get("code") or "")


def _entries(value: object) -> list[Mapping[str, Any]] | None:
    """The items of an answer or truth that is a list of mappings (or a mapping holding exactly one)."""
    if isinstance(value, list) and all(isinstance(i, Mapping) for i in value):
        return list(value)
    if isinstance(value, Mapping):
        lists = [v for v in value.values() if isinstance(v, list) and all(isinstance(i, Mapping) for i in v)]
        if len(lists) == 1:
            return list(lists[0])
    return None


def _label(item: Mapping[str, Any]) -> str:
    text = item.get("display") or item.get("text")
    if not text and isinstance(item.get("displays"), Mapping):
        shown = [d for ds in item["displays"].values() for d in (ds if isinstance(ds, list) else [ds])]
        text = shown[0] if shown else ""
    code = item_code(item)
    label = f"{code}  {text or ''}".strip()
    return label or json.dumps(item, ensure_ascii=False, default=str)[:200]


def _codes(details: Mapping[str, Any], *keys: str) -> set[str]:
    found = [d for key in keys for d in details.get(key) or [] if isinstance(d, Mapping)]
    return {item_code(d) for d in found if item_code(d)}


def _side(value: object, marks: dict[str, str]) -> dict[str, Any]:
    """One column: items with their highlight class, or capped JSON."""
    entries = _entries(value)
    if entries is None:
        if value is None:
            return {"entries": [], "json": "", "listed": False}
        return {"entries": [], "json": _cap(json.dumps(value, indent=2, ensure_ascii=False, default=str)),
                "listed": False}
    items = []
    for item in entries:
        code = item_code(item)
        mark = next((cls for c, cls in marks.items() if c and (c == code or c in code.split("/"))), "")
        items.append({"label": _label(item), "mark": mark})
    return {"entries": items, "json": "", "listed": True}


def _trace(case: CaseRecord) -> list[dict[str, str]]:
    out = []
    for step in case.trace:
        args = json.dumps(step.get("args"), ensure_ascii=False, default=str)
        result = step.get("result")
        shown = result if isinstance(result, str) else json.dumps(result, ensure_ascii=False, default=str)
        out.append({"tool": str(step.get("tool", "?")), "args": _cap(args, 400), "result": _cap(shown, 600),
                    "ok": "ok" if step.get("ok", True) else "error"})
    return out


def case_detail(case: CaseRecord, trials: Sequence[CaseRecord], rerun: str) -> dict[str, Any]:
    """What a case's ``<details>`` shows.

    Args:
        case: The case record (one trial).
        trials: Every record of the same case id (its trials), in trial order.
        rerun: The command prefix that reruns one node id (``pytest --groundeval-task=... ``).

    Returns:
        ``nodeid``, ``rerun`` (the full command), ``message``, ``answer`` and ``truth`` (each
        ``{"entries": [{"label", "mark"}], "json"}``; marks are ``missing``, ``extra``,
        ``mismatch``), ``raw`` (capped), ``raw_note``, ``parse_error``, ``trace`` and ``trials``.
    """
    details = case.details
    missing = _codes(details, "missing")
    extra = _codes(details, "extra")
    mismatched = _codes(details, *MISMATCH_KEYS)
    truth_marks = {**{c: "mismatch" for c in mismatched}, **{c: "missing" for c in missing}}
    answer_marks = {**{c: "mismatch" for c in mismatched}, **{c: "extra" for c in extra}}
    raw = case.raw_output or ""
    note = ""
    if case.raw_output_chars and case.raw_output_chars > len(raw):
        note = f"the record keeps {len(raw):,} of {case.raw_output_chars:,} characters"
    error = f"{case.error.type}: {case.error.message}" if case.error else ""
    return {
        "nodeid": case.nodeid,
        "rerun": f'{rerun} "{case.nodeid}"',
        "message": case.message or error,
        "error": error if error and error not in (case.message or "") else "",
        "answer": _side(case.parsed, answer_marks),
        "truth": _side(case.truth, truth_marks),
        "raw": _cap(raw),
        "raw_note": note,
        "parse_error": case.parse_error or "",
        "trace": _trace(case),
        "trials": [{"trial": t.trial, "outcome": t.outcome, "message": (t.message or "").splitlines()[0][:160]
                    if t.message else ""} for t in trials] if len(trials) > 1 else [],
    }
