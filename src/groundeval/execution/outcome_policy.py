"""What a finished agent call means for its case: the outcome policy, and the case's record.

``classify`` applies the outcome policy (``groundeval.records.outcomes``) by where an exception
came from, never by what a value holds:

* the task's ``check_case``, ``prompt``, ``context`` or ``truth`` raised (``execution.call.prepare``):
  a ``DatasetError`` means the case file is bad (``invalid_case``); anything else is
  ``harness_error``; either way the agent was never called (``unprepared``);
* the agent raised an ``AgentError``: its ``outcome`` (agent behaviour: scored as an empty answer;
  an ``InfraError``: excluded);
* a ``HarnessError`` came out of the agent call (groundeval's own code inside it, such as the
  LangGraph history check, refused to send a request): ``harness_error``;
* the agent raised anything else, or returned neither a ``str`` nor an ``AgentResult``:
  ``agent_error``;
* the task's ``parse``/``score`` (or ``score_result(case, truth, result) -> (Parsed, Score)``, which
  a task that scores more than the answer's text has: ``tasks.fhir_mode``) raised: ``harness_error``
  (the answer, usage and trace are kept);
  a ``ScorerModelError`` (the scorer's own model, an LLM judge, failed) is classed by its
  ``AgentError`` as an agent call's is (an ``InfraError``'s outcome, shown with its message);
* otherwise the scorer's verdict, or ``no_answer`` when the task found no answer in the text;
  for a tool-using agent (a trace, or an agent that requires ``tools``) of a task that declares
  ``lookups``, with the grounding metrics beside it (``groundeval.scorers.grounding``).

The call itself is ``execution.call``'s; a case that could not start (the agent's warm-up raised,
no agent on this process, a case file gone) is ``setup_failed``; one that never ran, ``not_run_record``.
"""

from __future__ import annotations

import hashlib
import traceback
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from groundeval.agent_io import AgentRequest, AgentResult
from groundeval.agents.base import Agent, agent_requires
from groundeval.datasets import Case
from groundeval.errors import AgentError, DatasetError, HarnessError, InfraError, ScorerModelError
from groundeval.execution.call import Attempt, Execution, prompt_hash
from groundeval.jsonable import jsonable
from groundeval.records.caps import cap_lines, cap_lists
from groundeval.records.conversation import cap_conversation, make_conversation
from groundeval.records.outcomes import OUTCOMES
from groundeval.records.run_record import MAX_RAW_OUTPUT_CHARS, CaseRecord
from groundeval.records.trial_ids import split_trial
from groundeval.redaction import clean
from groundeval.scorers.model_graded import GradeStage, grade_case
from groundeval.scoring import Metric, Parsed, Score
from groundeval.tasks.base import Task

__all__ = ["CaseRun", "RunInfo", "classify", "not_run_record", "setup_failed", "unprepared"]


@dataclass(slots=True)
class RunInfo:
    """Run-wide facts copied onto every case record and junit testcase.

    Attributes:
        run_id: Identifier shared by every process of the run.
        task: Task name.
        agent: Agent name.
        model: Model id requested (None for rule-based agents).
        worker: This process's xdist worker id (``gw0``), or None.
        conversation: ``--groundeval-conversation``: ``full`` keeps each case's prompt whole,
            ``reference`` keeps where to render it from (``groundeval.records.conversation``).
        task_version: The version of the distribution that ships the task (for prompt references).
    """

    run_id: str
    task: str
    agent: str
    model: str | None
    worker: str | None = None
    extra: dict[str, Metric] = field(default_factory=dict)
    conversation: str = "full"
    task_version: str = ""


@dataclass(frozen=True, slots=True)
class CaseRun:
    """A finished case: its record, and the exception to show when it is a pytest error.

    Attributes:
        record: The case record (built once; every output reads it).
        exc: The exception behind an excluded outcome (pytest shows it as the error), else None.
    """

    record: CaseRecord
    exc: BaseException | None = None


def _raw_fields(text: str) -> dict[str, Any]:
    """The raw answer, capped at ``MAX_RAW_OUTPUT_CHARS`` with its full length and hash."""
    fields: dict[str, Any] = {"raw_output": text, "raw_output_chars": len(text)}
    if len(text) > MAX_RAW_OUTPUT_CHARS:
        fields["raw_output"] = text[:MAX_RAW_OUTPUT_CHARS]
        fields["raw_output_sha256"] = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()
    return fields


def _error(exc: BaseException, *, with_traceback: bool) -> dict[str, Any]:
    details = dict(exc.details) if isinstance(exc, AgentError | HarnessError) else {}
    details.pop("partial_text", None)  # kept as the record's raw_output
    details.pop("trace", None)  # kept as the record's trace
    details.pop("messages", None)  # kept in the record's conversation
    tb = "".join(traceback.format_exception(exc)) if with_traceback else None
    return {"type": type(exc).__name__, "message": str(exc), "details": details, "traceback": tb}


def _record(
    info: RunInfo, case: Case, nodeid: str, outcome: str, fields: Mapping[str, Any], trial: int = 0
) -> CaseRecord:
    data = {
        "case_id": case.case_id, "nodeid": nodeid, "run_id": info.run_id, "task": info.task, "agent": info.agent,
        "source": case.source.name, "fixture_sha256": case.sha256, "meta": case.meta,
        "model": info.model, "worker": info.worker, **_capped(fields),
        "outcome": outcome, "counted": OUTCOMES[outcome].counted, "trial": trial,
    }
    return CaseRecord.model_validate(clean(jsonable(data)))


def _conversation(
    info: RunInfo, case: Case, request: AgentRequest, messages: Any, prompt_sha256: str,
) -> dict[str, Any]:
    """The case's conversation: the prompt the agent was sent (whole or by reference) and its messages."""
    reference = None
    if info.conversation == "reference" and case.sha256:
        reference = {
            "case_id": case.case_id, "source": case.source.name, "fixture_sha256": case.sha256, "task": info.task,
            "task_version": info.task_version, "prompt_sha256": prompt_sha256,
        }
    kept = [dict(m) for m in messages if isinstance(m, Mapping)] if isinstance(messages, list) else []
    return make_conversation(request.prompt, kept, mode=info.conversation, reference=reference)


def _capped(fields: Mapping[str, Any]) -> dict[str, Any]:
    """``fields`` with the answer's lists, strings and failure messages cut to a sample (``records.caps``)."""
    capped: dict[str, int] = {}
    out = dict(fields)
    for name in ("parsed", "details"):
        if name in out:
            out[name] = cap_lists(out[name], name, capped)
    if isinstance(out.get("message"), str):
        out["message"] = cap_lines(out["message"], "message", capped)
    error = out.get("error")
    if isinstance(error, dict):
        error = {**error, "details": cap_lists(error.get("details") or {}, "error.details", capped)}
        if isinstance(error.get("message"), str):
            error["message"] = cap_lines(error["message"], "error.message", capped)
        out["error"] = error
    if isinstance(out.get("conversation"), dict):
        out["conversation"] = cap_conversation(out["conversation"], capped)
    if capped:
        out["capped"] = capped
    return out


def _scored(parsed: Parsed, score: Score, truth: Any) -> dict[str, Any]:
    return {
        "parsed": parsed.value, "format_ok": parsed.format_ok, "parse_error": parsed.error,
        "answered": parsed.found, "truth": truth, "metrics": score.metrics, "details": score.details,
        "message": score.message,
    }


def _result_fields(execution: Execution, info: RunInfo) -> dict[str, Any]:
    result = execution.result
    return {
        **_raw_fields(result.text), "model": result.model or info.model, "prompt_sha256": execution.prompt_sha256,
        "latency_s": execution.latency_s, "attempts": result.attempts, "usage": result.usage,
        "trace": result.trace, "agent_meta": result.meta, "cached": result.cached,
        "batch": result.meta.get("batch") is True,  # the model layer's mark (--groundeval-batch)
    }


def classify(
    task: Task, agent: Agent, case: Case, info: RunInfo, nodeid: str, attempted: Attempt,
    grades: GradeStage | None = None,
) -> CaseRun:
    """The finished call ``attempted`` on ``case`` parsed, scored and classed; never raises for a case-level problem.

    Args:
        task: The task (parsing, scoring).
        agent: The agent under evaluation (whether it requires tools decides the grounding metrics).
        case: The loaded case.
        info: Run-wide facts copied onto the record.
        nodeid: The node id of the case's item (its trial is the request's).
        attempted: The agent call made for this case (``execution.call.attempt``), with the
            request it was sent and the truth derived before it.
        grades: Asks a model-graded scorer's questions (``execution.score_stage``: the run's
            concurrency); None asks them one after another here (``scorers.model_graded``).

    Returns:
        The ``CaseRun``: its record, and for excluded outcomes the exception to report.
    """
    request = attempted.request
    failure = attempted.error
    if isinstance(failure, AgentError):
        return _agent_failed(task, info, case, nodeid, attempted, failure)
    if failure is not None:  # SystemExit included: the agent's own code, unless groundeval's raised it
        sha = prompt_hash(request.prompt)
        kind = "harness_error" if isinstance(failure, HarnessError) else "agent_error"
        fields = {
            "prompt_sha256": sha, "latency_s": attempted.latency_s,
            "started_at": attempted.started_at, "error": _error(failure, with_traceback=True),
            "message": f"{kind}: {type(failure).__name__}: {failure}",
            "conversation": _conversation(info, case, request, [], sha),
        }
        return CaseRun(_record(info, case, nodeid, kind, fields, trial=request.trial), failure)
    execution = attempted.execution
    assert execution is not None  # an Attempt holds an execution or an error
    trial = request.trial
    fields = {**_result_fields(execution, info), "started_at": attempted.started_at,
              "conversation": _conversation(info, case, request, execution.result.messages, execution.prompt_sha256)}
    truth = attempted.truth
    try:
        score_result = getattr(task, "score_result", None)
        if callable(score_result):  # a task that reads the whole result (the FHIR server's facts)
            parsed, score = score_result(case, truth, execution.result, stage=grades)
        else:
            parsed = task.parse(case, execution.result.text)
            score = grade_case(task, case, truth, parsed, grades)
        if score.usage:  # the scorer's own model (a judge): its usage beside the agent's, by role
            fields["usage"] = {**execution.result.usage, **score.usage}
        plan = getattr(task, "lookups", None)
        if callable(plan) and (execution.result.trace or "tools" in agent_requires(agent)):
            from groundeval.scorers.grounding import with_grounding

            score = with_grounding(score, plan(case, truth, parsed), execution.result.trace)
    except ScorerModelError as exc:
        return _scorer_model_failed(info, case, nodeid, fields, trial, exc)
    except Exception as exc:
        fields["error"] = _error(exc, with_traceback=True)
        return CaseRun(_record(info, case, nodeid, "harness_error", fields, trial=trial), exc)
    fields.update(_scored(parsed, score, truth))
    outcome: str = score.outcome
    if not parsed.found:
        outcome = "no_answer"
        fields["message"] = f"no_answer: {parsed.error or 'no answer in the requested format'}"
    return CaseRun(_record(info, case, nodeid, outcome, fields, trial=trial))


def _scorer_model_failed(info: RunInfo, case: Case, nodeid: str, fields: dict[str, Any], trial: int,
                         exc: ScorerModelError) -> CaseRun:
    """Record a scorer's model failure: an ``InfraError`` keeps its outcome and stop policy, else ``harness_error``."""
    cause = exc.error
    outcome = cause.outcome if isinstance(cause, InfraError) else "harness_error"
    fields.update(error=_error(exc, with_traceback=False), message=f"{outcome}: {exc}",
                  usage={**(fields.get("usage") or {}), **exc.metrics})  # the scorer's model usage, by role
    return CaseRun(_record(info, case, nodeid, outcome, fields, trial=trial), exc)


def unprepared(info: RunInfo, case: Case, nodeid: str, exc: Exception, trial: int = 0) -> CaseRun:
    """The record of a case whose call could not be prepared (``prepare`` raised ``exc``); no agent call.

    A ``DatasetError`` (the task's checks refused the case file) is ``invalid_case``; anything
    else the task's ``check_case``, ``prompt``, ``context`` or ``truth`` raised is ``harness_error``.
    """
    if isinstance(exc, DatasetError):  # the case file is bad
        message = f"invalid_case: {exc.problem} (file: {exc.path})"  # the reason first, for the short summary
        fields: dict[str, Any] = {"error": _error(exc, with_traceback=False), "message": message}
        return CaseRun(_record(info, case, nodeid, "invalid_case", fields, trial=trial), exc)
    error = {"error": _error(exc, with_traceback=True)}
    return CaseRun(_record(info, case, nodeid, "harness_error", error, trial=trial), exc)


def _agent_failed(task: Task, info: RunInfo, case: Case, nodeid: str, attempted: Attempt, exc: AgentError) -> CaseRun:
    """Record an ``AgentError``: agent behaviour is scored as an empty answer; infrastructure is excluded."""
    request = attempted.request
    usage = exc.details.get("usage")
    sha = prompt_hash(request.prompt)
    fields: dict[str, Any] = {
        "prompt_sha256": sha, "latency_s": attempted.latency_s,
        "conversation": _conversation(info, case, request, exc.details.get("messages"), sha),
        "started_at": attempted.started_at, "attempts": exc.attempts,
        "usage": usage if isinstance(usage, Mapping) else {}, "model": exc.details.get("model") or info.model,
        "error": _error(exc, with_traceback=False), "message": f"{exc.outcome}: {exc}",
        "cached": getattr(exc, "cached", False) is True,  # a failure replayed from a cache or run record
        "batch": exc.details.get("batch") is True,  # the model layer's mark (--groundeval-batch)
    }
    partial = exc.details.get("partial_text")
    if isinstance(partial, str):
        fields.update(_raw_fields(partial))
    trace = exc.details.get("trace")
    if isinstance(trace, list):
        fields["trace"] = trace  # the tool calls made before the agent gave up
    if isinstance(exc, InfraError):
        return CaseRun(_record(info, case, nodeid, exc.outcome, fields, trial=request.trial), exc)
    truth = attempted.truth
    try:
        score_result = getattr(task, "score_result", None)
        if callable(score_result):  # what the failed call left behind (an access log) is scored beside the empty answer
            empty, score = score_result(case, truth, AgentResult(text="", meta=dict(exc.details)), answered=False)
        else:
            empty = task.parse(case, "")
            score = task.score(case, truth, empty)
    except Exception as harness_exc:
        fields["error"] = _error(harness_exc, with_traceback=True)
        return CaseRun(_record(info, case, nodeid, "harness_error", fields, trial=request.trial), harness_exc)
    scored = _scored(empty, score, truth)
    scored.update(answered=False, message=fields["message"], parsed=None, parse_error=None, format_ok=None)
    fields.update(scored)
    return CaseRun(_record(info, case, nodeid, exc.outcome, fields, trial=request.trial))


def setup_failed(info: RunInfo, case: Case, nodeid: str, exc: Exception, outcome: str, trial: int = 0) -> CaseRun:
    """The record of a case that could not start.

    Either the agent's ``warmup()`` raised (``agent_error``, with the traceback), the agent
    could not be built on this process (``config_error``), or the case file could not be read
    again when the case was about to run (``invalid_case``).
    """
    what = "warmup() raised " if outcome == "agent_error" else ""
    fields = {
        "message": f"{outcome}: {what}{type(exc).__name__}: {exc}" if what else f"{outcome}: {exc}",
        "error": _error(exc, with_traceback=bool(what)),
    }
    return CaseRun(_record(info, case, nodeid, outcome, fields, trial=trial), exc)


def not_run_record(info: RunInfo, nodeid: str, reason: str) -> CaseRecord:
    """The record of a selected case that never ran (the run stopped first)."""
    case_id, trial = split_trial(nodeid.rpartition("::")[2])
    return CaseRecord(
        case_id=case_id, nodeid=nodeid, run_id=info.run_id, task=info.task, agent=info.agent,
        model=info.model, trial=trial or 0,
        outcome="not_run", counted=False, message=f"not_run: {reason}",
    )
