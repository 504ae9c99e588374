"""Helpers of the summary reading tests: a criterion, the scorer's verdict on it, mention statuses."""

from __future__ import annotations

from typing import Any

from groundeval.tasks.summary.judge import BaselineJudge
from groundeval.tasks.summary.reading import read
from groundeval.tasks.summary.scorer import hedged_verdict, rule_verdict

JUDGE = BaselineJudge()


def criterion(ctype: str, names: list[str], *, kind: str = "must_mention", alternatives: list[str] | None = None,
              values: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """A rubric criterion of ``ctype`` naming ``names`` (``must_not_state``: points -1)."""
    points = -1 if kind == "must_not_state" else 1
    return {"id": f"{ctype}:x", "kind": kind, "type": ctype, "points": points, "safety": False,
            "statement": "s", "names": names, "alternatives": alternatives or [], "values": values or []}


def decided(item: dict[str, Any], summary: str) -> bool:
    """The scorer's verdict on one criterion: hedge, then rule, then the baseline judge."""
    if hedged_verdict(item, summary) is not None:
        return item["kind"] == "must_not_state"
    ruled = rule_verdict(item, summary)
    return ruled if ruled is not None else JUDGE.decide(item, summary, label="t").met


def status(summary: str, phrase: str) -> list[str]:
    """The status of every mention of ``phrase`` in ``summary``."""
    return [m.status for m in read(summary, [phrase])]
