"""Wires a task, an agent and a case together; never looks at the values.

Both steps run in an item's setup, so any exception (agent, API, harness) is a pytest *error*;
the call phase only reports the verdict ``evaluate`` computed, so a *failure* always means a wrong
answer. ``call_agent`` is the one seam between a case and its agent result:
caching, replay, repeated trials and concurrency wrap it without touching tasks or scorers.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import date, datetime
from datetime import time as time_
from typing import Any

from groundeval.agents.base import Agent
from groundeval.datasets import Case
from groundeval.errors import AgentError, InfraError
from groundeval.pricing import total_cost
from groundeval.records import AgentRequest, AgentResult, Metric, Prompt
from groundeval.tasks.base import Task
from groundeval.tracing import redact

__all__ = [
    "Execution",
    "RunInfo",
    "call_agent",
    "error_record",
    "evaluate",
    "jsonable",
    "junit_properties",
    "summarize",
    "warm_up",
]


@dataclass(frozen=True, slots=True)
class Execution:
    """An agent's answer to one case.

    Attributes:
        prompt_sha256: Hex SHA-256 of the system and user parts joined by a blank line.
        result: The agent's result.
        latency_s: Wall time of the agent call, seconds.
    """

    prompt_sha256: str
    result: AgentResult
    latency_s: float


@dataclass(slots=True)
class RunInfo:
    """Run-wide facts copied onto every case record and junit testcase.

    Attributes:
        run_id: Identifier shared by every process of the run.
        task: Task name.
        agent: Agent name.
        model: Model id requested (None for rule-based agents).
    """

    run_id: str
    task: str
    agent: str
    model: str | None
    extra: dict[str, Metric] = field(default_factory=dict)


def prompt_hash(prompt: Prompt) -> str:
    """Hex SHA-256 of the prompt text (system and user parts)."""
    return hashlib.sha256(prompt.text.encode("utf-8")).hexdigest()


def warm_up(agent: Agent) -> None:
    """Call the agent's optional ``warmup()`` (imports, clients) outside any case's timing."""
    warmup = getattr(agent, "warmup", None)
    if callable(warmup):
        warmup()


def call_agent(task: Task, agent: Agent, case: Case) -> Execution:
    """Render the prompt and run the agent once.

    Raises:
        AgentError: Whatever the agent raised (its subclasses carry the outcome class).
        Exception: Any other exception from the agent is a harness/agent bug and propagates.
    """
    prompt = task.prompt(case)
    request = AgentRequest(case_id=case.case_id, task=task.name, prompt=prompt, context=task.context(case))
    start = time.perf_counter()
    result = agent.run(request)
    latency = time.perf_counter() - start
    if not isinstance(result, AgentResult):
        raise AgentError(
            f"{case.case_id}: agent {agent.name!r} returned {type(result).__name__}, "
            "expected an AgentResult"
        )
    return Execution(prompt_sha256=prompt_hash(prompt), result=result, latency_s=round(latency, 6))


def _base(info: RunInfo, case: Case, nodeid: str) -> dict[str, Any]:
    return {
        "case_id": case.case_id,
        "nodeid": nodeid,
        "source": case.source.name,
        "fixture_sha256": case.sha256,
        "meta": case.meta,
        "agent": info.agent,
    }


def evaluate(task: Task, info: RunInfo, case: Case, execution: Execution, nodeid: str) -> dict[str, Any]:
    """Derive the truth, parse and score one answer; return the JSON-safe case record."""
    truth = task.truth(case)
    parsed = task.parse(case, execution.result.text)
    score = task.score(case, truth, parsed)
    result = execution.result
    record: dict[str, Any] = jsonable({
        **_base(info, case, nodeid),
        "outcome": score.outcome,
        "model": result.model or info.model,
        "prompt_sha256": execution.prompt_sha256,
        "raw_output": result.text,
        "parsed": parsed.value,
        "format_ok": parsed.format_ok,
        "parse_error": parsed.error,
        "truth": truth,
        "metrics": score.metrics,
        "details": score.details,
        "message": score.message,
        "latency_s": execution.latency_s,
        "attempts": result.attempts,
        "usage": result.usage,
        "trace": result.trace,
        "agent_meta": result.meta,
        "error": None,
    })
    return record


def error_record(
    info: RunInfo,
    case: Case,
    nodeid: str,
    exc: BaseException,
    latency_s: float,
    *,
    task: Task | None = None,
    execution: Execution | None = None,
) -> dict[str, Any]:
    """Return the case record of a case whose agent call or scoring raised ``exc``.

    Tokens an agent paid for before failing (``details["usage"]``, e.g. a reply truncated at
    ``max_tokens``) are lifted into the record's ``usage`` so run totals and cost include them.
    When the agent did answer (``execution``) and the harness then failed, the answer, usage and
    trace are kept. When the agent itself failed to answer (any exception from the agent other
    than an ``InfraError``: a loop, a truncation, a crash, an ``AgentError``), the metrics of an
    empty answer are recorded (needs ``task``), so the run's means count the case: an agent
    cannot raise its scores by giving up on hard cases.
    """
    outcome = exc.outcome if isinstance(exc, AgentError) else "error"
    details = exc.details if isinstance(exc, AgentError) else {}
    attempts = exc.attempts if isinstance(exc, AgentError) else None
    usage = details.get("usage")
    record: dict[str, Any] = {
        **_base(info, case, nodeid),
        "outcome": outcome,
        "model": details.get("model") or info.model,
        "latency_s": round(latency_s, 6),
        "attempts": attempts,
        "usage": usage if isinstance(usage, Mapping) else {},
        "error": {"type": type(exc).__name__, "message": str(exc), "details": details},
    }
    if execution is not None:
        result = execution.result
        record.update(
            model=result.model or info.model, prompt_sha256=execution.prompt_sha256, raw_output=result.text,
            usage=result.usage, attempts=result.attempts, trace=result.trace, agent_meta=result.meta,
        )
    if task is not None and execution is None and not isinstance(exc, InfraError):
        try:
            empty = task.score(case, task.truth(case), task.parse(case, ""))
        except Exception:
            pass
        else:
            record.update(metrics=empty.metrics, scored_as="empty answer")
    scrubbed: dict[str, Any] = jsonable(record)
    return scrubbed


def junit_properties(record: Mapping[str, Any], info: RunInfo) -> list[tuple[str, Metric]]:
    """Flatten a case record into junit ``(name, primitive)`` properties.

    Run metadata (task, agent, model, run_id) is repeated on every testcase because suite-level
    properties are lost under pytest-xdist (pytest-dev/pytest#7767).
    """
    props: list[tuple[str, Metric]] = [
        ("task", info.task),
        ("agent", info.agent),
        ("model", str(record.get("model") or info.model or "")),
        ("run_id", info.run_id),
        ("outcome", record["outcome"]),
    ]
    for key, value in (record.get("metrics") or {}).items():
        props.append((key, _primitive(value)))
    if "format_ok" in record:
        props.append(("format_ok", bool(record["format_ok"])))
    props.append(("latency_s", round(float(record.get("latency_s") or 0.0), 3)))
    if record.get("attempts") is not None:
        props.append(("attempts", int(record["attempts"])))
    for key, value in (record.get("usage") or {}).items():
        props.append((key, _primitive(value)))
    facts = dict(record.get("agent_meta") or (record.get("error") or {}).get("details") or {})
    if "tool_calls" not in facts and record.get("trace"):
        facts["tool_calls"] = len(record["trace"])  # agents that keep a trace but no count
    for key in ("stop_reason", "request_id", "tool_calls"):
        props.append((key, _primitive(facts.get(key))))
    if record.get("error"):
        props.append(("error_type", record["error"]["type"]))
    return [(k, redact(v) if isinstance(v, str) else v) for k, v in props if v is not None]


def _primitive(value: object) -> Metric:
    """Coerce a value to str/int/float/bool/None (execnet and junit safe; pytest-dev/pytest-xdist#552).

    Decimal and numeric scalars become float, dates and datetimes ISO-8601 strings, containers
    a JSON string, anything else ``str(value)``.
    """
    if value is None or isinstance(value, bool | int | float | str):
        return value
    if isinstance(value, date | datetime | time_):
        return value.isoformat()
    if isinstance(value, Mapping | list | tuple):
        return json.dumps(jsonable(value), sort_keys=True)
    try:
        return float(value)  # type: ignore[arg-type]  # Decimal and numpy scalars
    except (TypeError, ValueError):
        return str(value)


def jsonable(value: Any) -> Any:
    """Return ``value`` with every leaf made JSON- and execnet-safe (see ``_primitive``)."""
    if isinstance(value, Mapping):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        return [jsonable(v) for v in value]
    if hasattr(value, "model_dump"):
        return jsonable(value.model_dump(mode="json"))
    return _primitive(value)


def summarize(task: Task, records: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    """Aggregate case records: outcome counts, scored-case means, tokens and cost.

    Returns:
        ``{"cases", "counts": {outcome: n}, "scored", "excluded", "metrics": {...},
        "usage": {token totals, "cost_usd"}}``. Metrics cover every record that has metrics:
        the scored cases, and agent failures scored as empty answers; infrastructure errors and
        harness errors have none and are counted in ``excluded``. ``cost_usd`` is None when any
        record with usage has no known cost.
    """
    records = list(records)
    counts: dict[str, int] = {}
    for rec in records:
        counts[rec["outcome"]] = counts.get(rec["outcome"], 0) + 1
    scored = [r for r in records if r.get("metrics")]
    usage: dict[str, Metric] = {}
    for rec in records:
        for key, value in (rec.get("usage") or {}).items():
            if key == "cost_usd":
                continue
            if isinstance(value, int | float) and not isinstance(value, bool):
                usage[key] = (usage.get(key) or 0) + value  # type: ignore[operator]
    used = [r["usage"] for r in records if r.get("usage")]
    if used:
        usage["cost_usd"] = total_cost(u.get("cost_usd") for u in used)  # missing = unknown
    return {
        "cases": len(records),
        "counts": dict(sorted(counts.items())),
        "scored": len(scored),
        "excluded": len(records) - len(scored),
        "metrics": task.aggregate([r["metrics"] for r in scored]),
        "usage": usage,
    }


def ordered(records: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """Records sorted by case id (workers finish in any order)."""
    return sorted(records, key=lambda r: str(r["case_id"]))
