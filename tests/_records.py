"""Run records built in the test: small, explicit, no eval run."""

from __future__ import annotations

from typing import Any

from groundeval.records.run_record import Aggregate, CaseRecord, RunRecord


def case(case_id: str, outcome: str = "passed", run_id: str = "run-a", task: str = "extraction",
         f1: float | None = None, sha: str = "sha-1", **extra: Any) -> CaseRecord:
    counted = outcome not in ("infra_error", "agent_error", "harness_error", "not_run", "case_too_large")
    metrics: dict[str, Any] = {}
    if counted and task == "extraction":
        value = (1.0 if outcome == "passed" else 0.5 if outcome == "partial" else 0.0) if f1 is None else f1
        metrics = {"precision": value, "recall": 1.0, "f1": value, "display_accuracy": 1.0, "tp": 1}
    fields: dict[str, Any] = {
        "case_id": case_id, "nodeid": f"groundeval/{task}::{case_id}", "run_id": run_id, "task": task,
        "agent": "scripted", "outcome": outcome, "counted": counted, "answered": counted,
        "fixture_sha256": sha, "metrics": metrics, "source": f"{case_id}.json",
    }
    fields.update(extra)
    return CaseRecord.model_validate(fields)


def run(cases: list[CaseRecord], run_id: str = "run-a", task: str = "extraction", version: str = "0.1.0",
        **extra: Any) -> RunRecord:
    counted = [c for c in cases if c.counted]
    n = len(counted)
    counts: dict[str, int] = {}
    for c in cases:
        counts[c.outcome] = counts.get(c.outcome, 0) + 1
    f1s = [v for c in counted for v in [c.metrics.get("f1")] if isinstance(v, float)]
    agg = Aggregate(
        selected=len(cases), cases=len(cases), counts=counts, counted=n, excluded=len(cases) - n,
        pass_rate=sum(c.outcome == "passed" for c in counted) / n if n else None,
        answer_rate=1.0 if n else None,
        metrics={"micro_f1": sum(f1s) / len(f1s), "macro_f1": sum(f1s) / len(f1s)} if f1s else {},
    )
    fields: dict[str, Any] = {
        "run_id": run_id, "task": task, "agent": "scripted", "model": None, "started_at": "2026-12-01T00:00:00Z",
        "complete": True, "packages": {"groundeval": version}, "cases": cases, "aggregate": agg,
        "settings": {"task_options": {"min_f1": 1.0}},
    }
    fields.update(extra)
    return RunRecord.model_validate(fields)
