"""What a headline figure covers: one statement every output prints next to the pass rate.

A pass rate over the counted cases is a figure an agent could raise by crashing (``agent_error``
is excluded from the means) or by stopping the run (``not_run``). Every output that shows the
pass rate (terminal, Markdown, HTML, junit suite properties) therefore shows, whenever anything
was excluded or not run, the same statement first: how many cases were scored of those selected,
the excluded ones by outcome, the not-run ones, and the pass rate over every case that ran
(``Aggregate.pass_rate_ran``, errors counted as not passed). A case "ran" when its outcome's
``OutcomeRule.agent_ran`` says so (``groundeval.records.outcomes.RAN``): every outcome but ``invalid_case``
and ``not_run``, whose agent was never asked (``ran``). pass@k, pass^k and the case verdicts over
trials likewise say how many cases they leave out and why.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from typing import Any

from groundeval.records.outcomes import COUNTED, POLICY, RAN
from groundeval.records.run_record import Aggregate, PassAtK, TrialStats

__all__ = [
    "STATEMENTS", "UNGATED_FACT", "UNGATED_SHORT", "excluded_by_outcome", "judge_note", "pass_k_note",
    "pass_rate_ran", "ran",
    "ran_outcome_count", "scope_needed", "scope_text", "statement", "statements", "ungated_note", "unit",
    "unjudged_note",
]

UNGATED_FACT = "ungated_verdicts"
"""A run's ``task_facts`` key whose text says why its case verdicts must not be gated (they rest on a
judge whose agreement with known labels was not measured, or is below threshold): the regression
gate then shows regressions without failing on them (``reporting.gate.GateResult.ungated``)."""

UNGATED_SHORT = "verdicts not gated (an uncalibrated or unreliable judge)"
"""What a gate that would read ungated verdicts says instead (``--groundeval-min-pass-rate``)."""

STATEMENTS = ("scope", "pass_k_scope", "cases_scope")
"""The sentences stored on ``Aggregate.statements``, computed once and read by every output."""

ORDER = tuple(rule.outcome for rule in POLICY)


def unit(agg: Aggregate) -> str:
    """``trials`` when the run has more than one trial per case, else ``cases``."""
    return "trials" if agg.trials is not None and agg.trials.k > 1 else "cases"


def scope_needed(agg: Aggregate) -> bool:
    """True when anything selected was excluded or not run (the pass rate then covers fewer cases)."""
    return bool(agg.excluded or agg.not_run)


def excluded_by_outcome(agg: Aggregate) -> str:
    """``agent_error 27, infra_error 1``: the excluded outcomes (not-run left out), in policy order."""
    return ", ".join(
        f"{k} {agg.counts[k]}" for k in ORDER if agg.counts.get(k) and k not in COUNTED and k != "not_run"
    )


def ran_outcome_count(counts: dict[str, int]) -> int:
    """How many of ``counts`` (outcome -> cases) ran: those whose outcome is in ``groundeval.records.outcomes.RAN``."""
    return sum(n for outcome, n in counts.items() if outcome in RAN)


def ran(agg: Aggregate) -> int:
    """Cases (trials) that ran: every outcome but ``invalid_case`` and ``not_run`` (the "N ran" figure)."""
    return ran_outcome_count(agg.counts)


def pass_rate_ran(agg: Aggregate) -> float | None:
    """``Aggregate.pass_rate_ran`` as ``aggregate.summarize`` stored it; for an older record, passed / ran."""
    if agg.pass_rate_ran is not None:
        return agg.pass_rate_ran
    n = ran(agg)
    return round(agg.counts.get("passed", 0) / n, 6) if n > 0 else None


def _fmt(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def scope_text(agg: Aggregate) -> str:
    """``scored 21 of 48 cases: 27 excluded (agent_error 27), 0 not run; pass rate over every case that ran: 0.438``.

    Counts are of trials under ``--groundeval-trials``. The pass rate over every case that ran
    counts excluded cases as not passed, so crashing on a case cannot raise it; ``invalid_case``
    and ``not_run`` cases did not run (``ran``).
    """
    u = unit(agg)
    by_outcome = excluded_by_outcome(agg)
    return (
        f"scored {agg.counted} of {agg.selected} {u}: {agg.excluded} excluded"
        + (f" ({by_outcome})" if by_outcome else "") + f", {agg.not_run} not run"
        + f"; pass rate over every {u[:-1]} that ran: {_fmt(pass_rate_ran(agg))}"
    )


def statements(agg: Aggregate) -> dict[str, str]:
    """The run's shared sentences (``STATEMENTS``), computed once, by ``aggregate.summarize``.

    Returns:
        ``scope`` (``scope_text``, whether or not anything was left out: outputs print it when
        ``scope_needed``), ``pass_k_scope`` (``pass_k_note`` at the headline k, or ``""``) and
        ``cases_scope`` (``unjudged_note``, or ``""``).
    """
    stats = agg.trials
    head = stats.headline if stats is not None else None
    return {
        "scope": scope_text(agg),
        "pass_k_scope": pass_k_note(stats, head) if stats is not None and head is not None else "",
        "cases_scope": unjudged_note(stats) if stats is not None else "",
    }


def statement(agg: Aggregate, key: str) -> str:
    """The stored sentence ``key`` (one of ``STATEMENTS``); derived for a record written before they were stored."""
    stored = agg.statements.get(key)
    return stored if stored is not None else statements(agg)[key]


def _outcomes_of(stats: TrialStats, case_ids: set[str]) -> str:
    counts = Counter(o for c in stats.per_case if c.case_id in case_ids for o in c.outcomes if o not in COUNTED)
    return ", ".join(f"{k} {counts[k]}" for k in ORDER if counts.get(k))


def pass_k_note(stats: TrialStats, entry: PassAtK) -> str:
    """Why cases are missing from pass@k/pass^k at ``entry.k``, or ``""`` when every case is averaged.

    Example: ``over 40 of 48 cases: 4 with fewer than 3 counted trials, 4 with no counted trial
    (excluded or not run trials: agent_error 9, not_run 3)``.
    """
    if entry.cases >= stats.cases:
        return ""
    short = {c.case_id for c in stats.per_case if 0 < c.counted < entry.k}
    none = {c.case_id for c in stats.per_case if c.counted == 0}
    parts = []
    if short:
        parts.append(f"{len(short)} with fewer than {entry.k} counted trials")
    if none:
        parts.append(f"{len(none)} with no counted trial")
    why = _outcomes_of(stats, short | none)
    return (f"over {entry.cases} of {stats.cases} cases: " + ", ".join(parts)
            + (f" (excluded or not run trials: {why})" if why else ""))


def unjudged_note(stats: TrialStats) -> str:
    """``4 cases not judged: no counted trial (agent_error 8, not_run 4)``, or ``""`` when every case was judged."""
    left = {c.case_id for c in stats.per_case if c.passed is None}
    if not left:
        return ""
    why = _outcomes_of(stats, left)
    return f"{len(left)} of {stats.cases} cases not judged: no counted trial" + (f" ({why})" if why else "")


def ungated_note(task_facts: Mapping[str, Any]) -> str:
    """``pass rate not gated: <why> ...`` when the verdicts rest on an uncalibrated or unreliable judge, else ``""``.

    Every output prints it on its own line right under the pass rate (terminal, Markdown, HTML,
    junit property ``pass_rate_gated``): no gate of groundeval's reads such verdicts (the
    regression gate, ``--groundeval-min-pass-rate``), so the pass rate is shown, never gated.
    """
    why = task_facts.get(UNGATED_FACT)
    if not why:
        return ""
    return (f"pass rate not gated: {why}; no gate reads these verdicts (regression gate, --groundeval-min-pass-rate): "
            "calibrate the judge against people's labels (groundeval calibrate --labels)")


def judge_note(task_facts: Mapping[str, Any], model: str | None) -> str:
    """A warning when a task's judge (``task_facts["judge"]["model"]``) is the agent's own model, else ``""``.

    A model grading its own answers favours them (self-preference bias; Panickssery et al., *LLM
    Evaluators Recognize and Favor Their Own Generations*, NeurIPS 2024): every output that prints
    judged scores says so. Ids match when one starts with the other (``claude-opus-4-8`` and the
    dated ``claude-opus-4-8-20260528`` the provider reports).
    """
    judge = task_facts.get("judge")
    judged_by = judge.get("model") if isinstance(judge, Mapping) else None
    if not isinstance(judged_by, str) or not judged_by or not model:
        return ""
    if not (model.startswith(judged_by) or judged_by.startswith(model)):
        return ""
    return (f"the judge is the agent's own model ({judged_by}): judged scores carry self-preference bias; "
            "use a judge from another model family")
