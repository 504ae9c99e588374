"""The outcome policy: every case outcome, how pytest shows it, and whether it counts.

This table is the one place the policy is defined; the outcome table of docs/reference/outcomes.md is rendered from
the same rows (``tests/test_outcomes.py`` checks they agree). Outcomes fall in four classes:

* **scored**: the agent answered and the scorer gave a verdict (``passed``, ``partial``,
  ``failed``);
* **agent behaviour**: the agent did not give a usable answer (``no_answer``, ``truncated``,
  ``agent_loop``, ``refusal``): a pytest failure, scored as an empty answer in every mean, so an
  agent cannot raise its figures by not answering;
* **excluded**: the result says nothing about the agent's answer (``infra_error``,
  ``case_too_large``, ``agent_error``, ``harness_error``, ``invalid_case``, ``worker_crashed``, and the run-stopping
  ``config_error`` and ``auth_error``): a pytest error, excluded from the means and counted;
* ``not_run``: a selected case that never ran because the run stopped (``-x``, Ctrl-C, a
  configuration stop); recorded so the run record accounts for every selected case.

Each rule also says whether the case counts as *ran* (``OutcomeRule.agent_ran``): the pass rate
over every case that ran (``Aggregate.pass_rate_ran``, ``groundeval.records.scope``) and the "N ran"
figure count every outcome but ``invalid_case`` and ``not_run``, whose agent was never asked. An
error the agent or the harness raised (``agent_error``, ``harness_error``, ``infra_error``, ...)
counts as ran and not passed, so an agent cannot raise that figure by crashing.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

__all__ = [
    "COUNTED",
    "OUTCOMES",
    "POLICY",
    "RAN",
    "SCORED",
    "Outcome",
    "OutcomeRule",
    "outcome_table_markdown",
]

Outcome = Literal[
    "passed", "partial", "failed",
    "no_answer", "truncated", "agent_loop", "refusal",
    "infra_error", "case_too_large", "agent_error", "harness_error", "invalid_case", "config_error", "auth_error",
    "worker_crashed", "not_run",
]
"""Per-case outcome in the run record and the junit ``outcome`` property."""


@dataclass(frozen=True, slots=True)
class OutcomeRule:
    """How one outcome is reported and counted.

    Attributes:
        outcome: The outcome name.
        pytest: What pytest shows (``passed``, ``failed``, ``error``, ``-`` for no item run).
        counted: True when the case counts in the run's means (scored, or scored as empty).
        stops_run: True when the run stops at once after this outcome.
        meaning: One line for the outcomes table (docs/reference/outcomes.md).
        agent_ran: True when the case counts as ran (in ``pass_rate_ran`` and "N ran"): every
            outcome but those whose agent was never asked for an answer (``invalid_case``, ``not_run``).
    """

    outcome: str
    pytest: str
    counted: bool
    stops_run: bool
    meaning: str
    agent_ran: bool = True


POLICY: tuple[OutcomeRule, ...] = (
    OutcomeRule("passed", "passed", True, False, "the answer met every threshold"),
    OutcomeRule("partial", "failed (`P` PARTIAL)", True, False, "some credit, below a threshold"),
    OutcomeRule("failed", "failed", True, False, "a wrong answer, no credit"),
    OutcomeRule("no_answer", "failed", True, False,
                "no parseable answer, an ambiguous answer (two JSON values), JSON of another shape (the "
                "wanted array nested in an object) or only quoted in a sentence, the agent returned None, "
                "or it raised `AgentError`"),
    OutcomeRule("truncated", "failed", True, False, "the reply stopped at `max_tokens`; never parsed"),
    OutcomeRule("agent_loop", "failed", True, False,
                "a tool-using agent hit its recursion limit (model calls, last tool and limit recorded)"),
    OutcomeRule("refusal", "failed", True, False, "the model declined to answer"),
    OutcomeRule("infra_error", "error", False, False,
                "retries exhausted on 429/529/5xx, a timeout, a connection error or a garbled response"),
    OutcomeRule("case_too_large", "error", False, False,
                "the API refused this case's prompt as too large for the model"),
    OutcomeRule("agent_error", "error", False, False,
                "the agent's own code raised (traceback shown), or returned a value that is neither a str "
                "nor an `AgentResult` (a bug, not an answer)"),
    OutcomeRule("harness_error", "error", False, False,
                "groundeval raised while rendering, deriving the truth, parsing, scoring or recording, or "
                "refused to send a malformed request during an agent call (full traceback)"),
    OutcomeRule("invalid_case", "error", False, False,
                "the case file failed the task's checks when its case was about to run (not valid FHIR R4B, "
                "a MedicationRequest status or intent outside its value set, a truth that cannot be derived); the "
                "agent is not called. Fix the file the message names", agent_ran=False),
    OutcomeRule("config_error", "error", False, True,
                "404 unknown model or 400 invalid request: no later case can succeed; the run stops"),
    OutcomeRule("auth_error", "error", False, True, "missing or rejected API key (401/403); the run stops"),
    OutcomeRule("worker_crashed", "error", False, False,
                "the pytest-xdist worker running the case died (os._exit, out of memory); the worker is named"),
    OutcomeRule("not_run", "-", False, False,
                "selected but never run, because the run stopped early or its provider batch was cancelled",
                agent_ran=False),
)

OUTCOMES: dict[str, OutcomeRule] = {rule.outcome: rule for rule in POLICY}
"""Outcome name -> rule."""

SCORED: frozenset[str] = frozenset({"passed", "partial", "failed"})
"""Outcomes where the agent gave a parseable answer that was scored."""

COUNTED: frozenset[str] = frozenset(rule.outcome for rule in POLICY if rule.counted)
"""Outcomes that count in the means (scored answers and agent-behaviour failures)."""

RAN: frozenset[str] = frozenset(rule.outcome for rule in POLICY if rule.agent_ran)
"""Outcomes that count as ran (``OutcomeRule.agent_ran``): every one but ``invalid_case`` and ``not_run``."""


def outcome_table_markdown() -> str:
    """The policy as the Markdown table docs/reference/outcomes.md shows.

    The exit status is pytest's for a run whose worst case has this outcome: 0 when every case
    passed, 1 (``TESTS_FAILED``) for any failure or error, 2 (``INTERRUPTED``) when the run stopped.
    """
    lines = [
        "| outcome | pytest | counted in means | counts as ran | exit status | meaning |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for rule in POLICY:
        counted = "yes" if rule.counted else ("no (run stops)" if rule.stops_run else "no")
        exit_status = "0" if rule.outcome == "passed" else ("2 (interrupted)" if rule.stops_run else "1")
        if rule.outcome == "not_run":
            exit_status = "the stop's"
        ran = "yes" if rule.agent_ran else "no"
        lines.append(f"| `{rule.outcome}` | {rule.pytest} | {counted} | {ran} | {exit_status} | {rule.meaning} |")
    return "\n".join(lines)
