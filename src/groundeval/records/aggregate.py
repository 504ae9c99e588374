"""A run's aggregate: computed once from its case records, read by every output.

Outcome counts, the pass and answer rates (over the counted cases, and over every case that
ran: ``groundeval.records.scope.ran``, which leaves out ``invalid_case`` and ``not_run``), the task's own
means, tokens and cost, and the trial statistics (``groundeval.records.trial_stats``). Counterfactual
twins (``--groundeval-counterfactual``) are kept apart: every figure above is over the original
cases, and the twins give ``Aggregate.counterfactual`` (``groundeval.records.sensitivity``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Protocol

from groundeval.models.base import ROLES
from groundeval.models.pricing import total_cost
from groundeval.records.fhir_figures import FHIR_STATEMENT, fhir_figures, fhir_text
from groundeval.records.grounding import GROUNDING_STATEMENT, grounding_figures, grounding_text
from groundeval.records.run_record import Aggregate, CaseRecord
from groundeval.records.scope import ran_outcome_count, statements
from groundeval.records.sensitivity import COUNTERFACTUAL_STATEMENT, is_twin, sensitivity_text, with_counterfactual
from groundeval.records.trial_stats import with_trial_stats
from groundeval.scoring import Metric

__all__ = ["AggregatingTask", "summarize"]


class AggregatingTask(Protocol):
    """What a run's aggregate asks of its task (every ``groundeval.tasks.base.Task`` has it).

    A structural type, so that run records (this floor) do not import the tasks above them. A
    task's scorer may also declare ``spend_metrics`` (read with ``getattr``).
    """

    def aggregate(self, metrics: Sequence[Mapping[str, Metric]]) -> dict[str, Metric]:
        """Combine the per-case metrics of the counted cases into run-level numbers."""
        ...


def _spend(task: AggregatingTask, records: Sequence[CaseRecord]) -> dict[str, Metric]:
    """The scorer's ``spend_metrics`` (e.g. a judge's calls) summed over every case, excluded ones too."""
    keys = getattr(getattr(task, "scorer", None), "spend_metrics", ())
    return {k: sum(int(v) for r in records if isinstance(v := r.metrics.get(k), int | float)) for k in keys}


_ROLE_PREFIXES = tuple(f"{role}_" for role in ROLES if role != "agent")
"""Prefixes of the usage keys of a scorer's own model calls (``judge_calls``, ``judge_cost_usd``)."""


def _agent_usage(usage: Mapping[str, Metric]) -> bool:
    """True when ``usage`` holds the agent's own usage (keys without a role's prefix)."""
    return any(not key.startswith(_ROLE_PREFIXES) for key in usage)


def summarize(
    task: AggregatingTask, records: Iterable[CaseRecord], selected: int | None = None,
    min_pass_rate: float | None = None,
) -> Aggregate:
    """Aggregate case records: outcome counts, pass and answer rates, the task's means, tokens and cost.

    Args:
        task: The task whose ``aggregate`` combines the counted cases' metrics.
        records: Every case record of the run (``not_run`` ones included).
        selected: Cases selected for the run; defaults to the number of records.
        min_pass_rate: ``--groundeval-min-pass-rate`` R for the case verdicts, or None.

    Returns:
        The ``Aggregate`` of the original cases, with ``counterfactual`` from the twins' records
        (``groundeval.records.sensitivity``), ``trials`` from ``groundeval.records.trial_stats.with_trial_stats``.
        ``cost_usd`` is None when any record with usage has no known cost; when it is known,
        ``price_source`` names where the prices came from (the cases' sources joined by "; "). When some answers
        came from the cache or a replay, ``usage`` also holds ``spent_usd`` (the calls this run
        made) and ``cached_cost_usd`` (the recorded cost of the cached answers, not spent now).
    """
    records = list(records)
    twins = [r for r in records if is_twin(r)]
    if twins:  # the twins give record sensitivity; every other figure is over the original cases
        records = [r for r in records if not is_twin(r)]
        selected = None if selected is None else max(selected - len(twins), 0)
    counts: dict[str, int] = {}
    for rec in records:
        counts[rec.outcome] = counts.get(rec.outcome, 0) + 1
    counted = [r for r in records if r.counted]
    not_run = counts.get("not_run", 0)
    usage: dict[str, Metric] = {}
    for rec in records:
        for key, value in rec.usage.items():
            if not key.endswith("cost_usd") and isinstance(value, int | float) and not isinstance(value, bool):
                usage[key] = (usage.get(key) or 0) + value  # type: ignore[operator]
    used = [r.usage for r in records if _agent_usage(r.usage)]
    if used:
        usage["cost_usd"] = total_cost(u.get("cost_usd") for u in used)  # missing = unknown
        sources = sorted({src for u in used if isinstance(src := u.get("price_source"), str)})
        if sources and usage["cost_usd"] is not None:  # where the prices came from (models.pricing.price_source)
            usage["price_source"] = "; ".join(sources)
    if used and any(r.cached for r in records):  # what this run paid apart from what the cache served
        usage["spent_usd"] = total_cost(
            r.usage.get("cost_usd") for r in records if _agent_usage(r.usage) and not r.cached)
        usage["cached_cost_usd"] = total_cost(
            r.usage.get("cost_usd") for r in records if _agent_usage(r.usage) and r.cached)
    for prefix in _ROLE_PREFIXES:  # a scorer's model (a judge): its own cost, over every case that used it
        judged = [r.usage for r in records if f"{prefix}calls" in r.usage]
        if judged:
            usage[f"{prefix}cost_usd"] = total_cost(u.get(f"{prefix}cost_usd") for u in judged)
    n = len(counted)
    ran = ran_outcome_count(counts)  # invalid_case and not_run: the agent was never asked
    passed = sum(r.outcome == "passed" for r in records)
    aggregate = Aggregate(
        selected=len(records) if selected is None else selected,
        cases=len(records),
        counts=dict(sorted(counts.items())),
        counted=n,
        excluded=len(records) - n - not_run,
        not_run=not_run,
        pass_rate=round(passed / n, 6) if n else None,
        pass_rate_ran=round(passed / ran, 6) if ran else None,
        answer_rate=round(sum(r.answered for r in counted) / n, 6) if n else None,
        metrics={**task.aggregate([r.metrics for r in counted]), **_spend(task, records), **grounding_figures(counted),
                 **fhir_figures(counted)},
        usage=usage,
        cached=sum(r.cached for r in records),
    )
    aggregate = with_trial_stats(aggregate, records, min_pass_rate)
    said = statements(aggregate)
    if grounded := grounding_text(counted):  # a tool-using agent on a task that declares lookups
        said[GROUNDING_STATEMENT] = grounded
    if served := fhir_text(counted):  # a run under --groundeval-fhir
        said[FHIR_STATEMENT] = served
    if twins:
        aggregate = with_counterfactual(aggregate, task, twins, records)
        assert aggregate.counterfactual is not None
        said[COUNTERFACTUAL_STATEMENT] = sensitivity_text(aggregate.counterfactual)
    return aggregate.model_copy(update={"statements": said})
