"""``--groundeval-batch``: the run's model requests go to the provider's batch API.

The run's part is small: refuse what batch mode cannot serve (several processes, an agent
that declares no provider model), hand the agent's model a ``models.batch.Batcher``, pass a
batch's progress on while it is out, and summarise the batches at the end. A model-graded task's
judge model (``scorers.model_graded.ModelGrader``) on the agent's batch API shares that batcher
(``batch_judge``): the executor's score stage asks a case's judge questions from its own threads,
so they fill batches beside the agent's requests. The batching itself is
the model layer's (``models.batch``) and the calls are made by the batch executor
(``execution.batch``), so that a batch fills with the requests of the cases this process runs
next while each item still reports on its own, in collection order.

Why one process: a batch is already run in parallel by the provider, so pytest-xdist workers
would only split the requests into smaller batches, each worker with its own journal to resume;
``-n`` with ``--groundeval-batch`` is a usage error rather than a run that might pay twice.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from groundeval.agents.base import declared_provider_model
from groundeval.errors import ConfigError

if TYPE_CHECKING:
    from groundeval.models.batch import Batcher, BatchSettings
    from groundeval.models.policy import PolicyModel
    from groundeval.records.run_record import CaseRecord

__all__ = ["NO_XDIST", "batch_judge", "batch_lines", "judge_model", "provider_model", "start_batches"]

NO_XDIST = (
    "--groundeval-batch runs in one process: the provider runs each batch in parallel already, and workers "
    "would only split it into smaller batches. Drop -n (or pass -n 0)"
)
"""The usage error of ``--groundeval-batch`` with pytest-xdist workers."""


def provider_model(agent: Any, spec: str) -> PolicyModel[Any]:
    """The provider model ``agent`` declares (``provider_model``: ``agents.base.Agent``; wrappers forward it).

    Raises:
        ConfigError: The agent declares none: it makes several model calls per case, or none.
    """
    model: PolicyModel[Any] | None = declared_provider_model(agent)
    if model is None:
        raise ConfigError(
            f"--groundeval-batch: the agent {spec!r} does not make one provider model call per case (a tool-using "
            "agent would wait for a whole batch at every turn, hours per case; a baseline or replay calls no "
            "model). Batch mode serves the single-call agents: claude, openai-compatible. Drop --groundeval-batch"
        )
    return model


def judge_model(task: Any) -> Any | None:
    """The model a task's judge asks: the task's ``grader_model`` declaration (a task wrapper forwards it).

    None for a task with no model judge (a rule-based judge, a task that grades by rule).
    """
    return getattr(task, "grader_model", None)


def batch_judge(task: Any, batcher: Batcher) -> bool:
    """Send the task's judge calls through ``batcher`` too when its judge's model is on the same batch API.

    The same API is the same provider class at the same endpoint (``base_url`` of an
    OpenAI-compatible server): the batcher's requests go out over the agent's client. A judge
    on another provider or endpoint, or whose model has no batch API (``local/<gguf>``), is
    called directly, as without ``--groundeval-batch``.

    Returns:
        True when the judge's calls now go in batches.
    """
    from groundeval.models.policy import PolicyModel

    model = judge_model(task)
    agent_api = getattr(batcher.api, "api", None)  # the provider whose client sends the batches
    if not isinstance(model, PolicyModel):
        return False
    judge: PolicyModel[Any] = model
    if judge.batcher is not None or judge.api.batch_api_class is None:
        return False
    if type(judge.api) is not type(agent_api) or getattr(judge.api, "base_url", None) != getattr(
            agent_api, "base_url", None):
        return False
    judge.use_batches(batcher)
    return True


def start_batches(
    agent: Any, spec: str, settings: BatchSettings, show: Callable[[str], None] | None = None, task: Any = None,
) -> Batcher:
    """Put the agent's model in batch mode, and ``task``'s judge model when it can share it (``batch_judge``).

    Args:
        agent: The agent, built and wrapped.
        spec: The agent spec as given (for the message).
        settings: The batch knobs (``--groundeval-batch-*``).
        show: Called with a line while a batch is out (``waiting for ...``: the status line), or None.
        task: The run's task, whose model judge joins the batches (``batch_judge``), or None.

    Raises:
        ConfigError: See ``provider_model``; or the provider has no batch API.
    """
    from groundeval.models import stop_switch
    from groundeval.models.batch import Batcher

    model = provider_model(agent, spec)

    def progress(state: Any) -> None:
        if show is not None:
            show(f"waiting for {state.line()}")

    batcher = Batcher(model.batch_api(), settings, progress=progress, stopped=stop_switch.calls_stopped)
    model.use_batches(batcher)
    if task is not None:
        batch_judge(task, batcher)
    return batcher


def batch_lines(records: Iterable[CaseRecord], batcher: Batcher | None, *, interrupted: bool) -> list[str]:
    """The summary's batch lines: batch ids, requests sent, their cost and the cost without batching.

    A record is batched when its ``agent_meta`` (an answer) or its error's details (no answer)
    carry the ``batch`` mark; the costs are the records' own (``usage.cost_usd`` at the batch
    rate, ``usage.standard_cost_usd``), summed, None when any is unknown.
    """
    from groundeval.models.pricing import total_cost

    batched = [r for r in records if r.batch]
    ids: dict[str, None] = {}
    for record in batched:
        marks = record.agent_meta if record.agent_meta.get("batch") else (record.error.details if record.error else {})
        batch_id = marks.get("batch_id")
        if isinstance(batch_id, str):
            ids[batch_id] = None
    if batcher is not None:  # batches sent or collected, including those whose cases never reported
        ids.update(dict.fromkeys([*batcher.batches, *batcher.resumed]))
    lines: list[str] = []
    if batcher is not None or batched:
        sent = batcher.sent if batcher is not None else 0
        resumed = sum(batcher.resumed.values()) if batcher is not None else 0
        paid = [r for r in batched if r.usage and not r.cached]
        cost = total_cost(r.usage.get("cost_usd") for r in paid)
        standard = total_cost(r.usage.get("standard_cost_usd") for r in paid)
        money = ("cost unknown" if cost is None else f"${cost:.4f} at batch prices") + (
            "" if standard is None else f" (${standard:.4f} without batching)")
        lines.append(f"batch: {len(ids)} batch(es) {', '.join(ids) or '-'}; {sent} request(s) sent by this run, "
                     f"{resumed} collected from an earlier run's batches; {money}")
    out = batcher.out() if batcher is not None else []
    if interrupted and out:
        lines.append(
            f"batch: still out at the provider: {', '.join(out)}. Run the same command again to collect their results "
            "without paying again (the out-dir's groundeval-batches.jsonl lists them), or cancel them at the "
            "provider (Anthropic: POST /v1/messages/batches/<id>/cancel; OpenAI: POST /v1/batches/<id>/cancel)"
        )
    return lines
