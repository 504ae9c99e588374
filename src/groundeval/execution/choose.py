"""Which executor a process gets, and how many agent calls it may have in flight."""

from __future__ import annotations

from typing import TYPE_CHECKING

from groundeval.agents.base import Agent
from groundeval.execution.base import CallTally, CaseFiles, ExecutionContext
from groundeval.execution.outcome_policy import RunInfo
from groundeval.execution.protocol import Executor
from groundeval.execution.score_stage import ScoreStage
from groundeval.execution.serial import SerialExecutor
from groundeval.execution.threaded import LOOKAHEAD_PER_SLOT, ThreadedExecutor
from groundeval.tasks.base import Task

if TYPE_CHECKING:
    from groundeval.models.batch import Batcher

__all__ = ["DEFAULT_CONCURRENCY", "effective_concurrency", "make_executor"]

DEFAULT_CONCURRENCY = 4
"""Agent calls in flight at once per process for agents that declare ``thread_safe = True``."""


def effective_concurrency(option: int | None, agent: object, default: int = DEFAULT_CONCURRENCY) -> int:
    """Agent calls in flight at once in a process.

    ``option`` (``--groundeval-concurrency``) when given; else ``default`` for an agent that
    declares ``thread_safe = True`` (the built-in ones) and 1 for any other, since calling an
    agent of your own from threads could change its answers. Either is lowered to the agent's
    ``max_concurrency`` when it declares one.
    """
    wanted = option
    if wanted is None:
        wanted = default if getattr(agent, "thread_safe", False) is True else 1
    cap = getattr(agent, "max_concurrency", None)
    return min(wanted, cap) if isinstance(cap, int) and not isinstance(cap, bool) and cap >= 1 else wanted


def make_executor(
    task: Task, agent: Agent, info: RunInfo, concurrency: int, calls: CallTally, batcher: Batcher | None = None
) -> Executor:
    """The executor of a process: serial at ``concurrency`` 1, threaded above, batch with a batcher.

    A batch executor (``execution.batch``) is chosen by ``--groundeval-batch``: the agent's model
    is then in batch mode and ``batcher`` is its batcher; ``concurrency`` is not used.

    Args:
        task: The run's task.
        agent: The agent, built (``make_agent``) and prepared (cache, replay).
        info: Run-wide facts copied onto every record.
        concurrency: Agent calls in flight at once (``effective_concurrency``); a model-graded
            scorer's judge calls of one case are bounded by it too (``execution.score_stage``).
        calls: The process's call tally, which the session reports from.
        batcher: The batcher of the agent's model (``--groundeval-batch``), or None.
    """
    grades = ScoreStage(concurrency)  # a judge's calls: the same bound as the agent's
    if batcher is not None:  # the requests hold their prompts; re-reading a case file is cheap next to a batch
        context = ExecutionContext(task, agent, info, CaseFiles(task, keep=LOOKAHEAD_PER_SLOT * 16 + 4), calls,
                                   grades)
        from groundeval.execution.batch import BatchExecutor

        return BatchExecutor(context, batcher)
    files = CaseFiles(task, keep=concurrency * LOOKAHEAD_PER_SLOT + 4)  # the window ahead, and a case's trials
    context = ExecutionContext(task, agent, info, files, calls, grades)
    if concurrency > 1:
        return ThreadedExecutor(context, concurrency)
    return SerialExecutor(context)
