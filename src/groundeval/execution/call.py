"""One agent call on one case: the request, the call, and what it returned or raised.

* ``prepare``: the task's checks of the case, then its request (``request_for``) and ground
  truth, all before the agent runs, so a bad case file never costs a call and nothing the agent
  does can change the truth;
* ``attempt``: the call, made once, keeping whatever the agent returned or raised (``Attempt``),
  with its start time and wall time; safe to run in a thread;
* ``call_agent``: the call itself: a ``str`` answer becomes an ``AgentResult``, None is no
  answer, any other type is the agent's error, and the answer's secrets are redacted before
  anything reads it.

Retries and the case's deadline (``--groundeval-timeout``) are the model layer's, under
``agent.run`` (``models.retry``). What a finished call means for the case (its outcome and record)
is ``execution.outcome_policy``'s; when the calls are made (now, ahead in threads, in a batch) is
the executors' (``execution.protocol``).
"""

from __future__ import annotations

import dataclasses
import hashlib
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from groundeval.agent_io import AgentRequest, AgentResult, Prompt
from groundeval.agents.base import Agent
from groundeval.datasets import Case
from groundeval.errors import AgentError, AgentReturnedWrongType
from groundeval.records.trial_ids import split_twin
from groundeval.redaction import redact
from groundeval.tasks.base import Task, tools_of

__all__ = ["Attempt", "Execution", "attempt", "call_agent", "prepare", "prompt_hash", "request_for"]


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


def prompt_hash(prompt: Prompt) -> str:
    """Hex SHA-256 of the prompt text (system and user parts)."""
    return hashlib.sha256(prompt.text.encode("utf-8", "surrogatepass")).hexdigest()


def request_for(task: Task, case: Case, trial: int = 0) -> AgentRequest:
    """The request an agent gets for ``case`` (trial ``trial``): the task's prompt and context.

    A counterfactual twin (``<case_id>[cf-<perturbation>]``) is asked under its original's case id:
    nothing an agent receives tells a twin from its original but the changed record itself (the
    item's node id and the case record keep the twin's identity). ``tools`` builds the case's tools
    as the task declares them (``tasks.base.tools_of``), for the agents that use tools.
    """
    return AgentRequest(
        case_id=split_twin(case.case_id)[0], task=task.name, prompt=task.prompt(case), context=task.context(case),
        trial=trial, tools=tools_of(task, case),
    )


def call_agent(agent: Agent, request: AgentRequest) -> Execution:
    """Run the agent once on ``request``; a ``str`` answer becomes ``AgentResult(text=...)``.

    The answer's secrets are redacted here, before it is parsed (``redaction.redact``: secret
    environment values, URL credentials, echoed ``Basic``/``Bearer`` tokens), so the text that is
    scored is the text the run record and ``--groundeval-cache`` keep, and a cached or replayed
    answer re-scores exactly as it scored when it was first made (``redact`` is idempotent).

    Raises:
        AgentError: Whatever the agent raised (its class carries the outcome), or the agent
            returned None (no answer: ``no_answer``, counted).
        AgentReturnedWrongType: The agent returned neither a str nor an AgentResult.
        BaseException: Anything else the agent raised propagates unchanged.
    """
    start = time.perf_counter()
    out: Any = agent.run(request)
    latency = time.perf_counter() - start
    if out is None or (isinstance(out, AgentResult) and out.text is None):
        # Python's "no answer": a failed case scored as empty, never excluded (else an agent could
        # raise its means by returning None on the cases it would fail)
        raise AgentError(f"{request.case_id}: agent {agent.name!r} returned None: no answer")
    if isinstance(out, str):
        out = AgentResult(text=out)
    if not isinstance(out, AgentResult):
        raise AgentReturnedWrongType(
            f"{request.case_id}: agent {agent.name!r} returned {type(out).__name__}; "
            "return a str or a groundeval.AgentResult"
        )
    if not isinstance(out.text, str):
        raise AgentReturnedWrongType(
            f"{request.case_id}: agent {agent.name!r} returned an AgentResult whose text is "
            f"{type(out.text).__name__}; AgentResult.text must be the answer as a str"
        )
    text = redact(out.text)  # the text scored is the text every output and the cache keep
    if text != out.text:
        out = dataclasses.replace(out, text=text)
    return Execution(prompt_sha256=prompt_hash(request.prompt), result=out, latency_s=round(latency, 6))


@dataclass(frozen=True, slots=True)
class Attempt:
    """One agent call on a request, finished: its ``Execution`` or what it raised.

    Attributes:
        request: The request the agent got.
        truth: The task's ground truth for the case, derived before the call, so nothing the
            agent does to its request (a tool that edits the Bundle it was handed) can change it.
        execution: The answer, or None when the call raised.
        error: What the agent raised (``AgentError`` or anything else), or None.
        latency_s: Wall time of the call, seconds.
        started_at: When the call started, ISO-8601 UTC.
    """

    request: AgentRequest
    truth: Any
    execution: Execution | None
    error: BaseException | None
    latency_s: float
    started_at: str


def prepare(task: Task, case: Case, trial: int = 0) -> tuple[AgentRequest, Any]:
    """Check ``case`` (the task's optional ``check_case``), then build its request and ground truth.

    All three happen before the agent runs, so a bad case file never costs an agent call.

    Raises:
        DatasetError: The case file failed the task's checks (``invalid_case``).
        Exception: Whatever else the task's ``check_case``, ``prompt``, ``context`` or ``truth``
            raised (a harness error).
    """
    check = getattr(task, "check_case", None)
    if callable(check):
        check(case)
    return request_for(task, case, trial), task.truth(case)


def attempt(agent: Agent, request: AgentRequest, truth: Any = None) -> Attempt:
    """Call the agent once and keep whatever it returned or raised (safe to run in a thread).

    ``truth`` (from ``prepare``) is carried along untouched, for scoring (``execution.outcome_policy``).

    Raises:
        KeyboardInterrupt: Ctrl-C during the call; everything else is kept in the ``Attempt``.
    """
    started_at = datetime.now(UTC).isoformat()
    start = time.perf_counter()
    try:
        execution = call_agent(agent, request)
    except KeyboardInterrupt:
        raise
    except BaseException as exc:  # SystemExit included: the agent's own code, never the run's end
        return Attempt(request, truth, None, exc, round(time.perf_counter() - start, 6), started_at)
    return Attempt(request, truth, execution, None, execution.latency_s, started_at)
