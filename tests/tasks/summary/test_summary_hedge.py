"""Hedged summaries: an item labelled both current and ended earns nothing, states the forbidden thing,
and fails its case; the hedge-all control scores below the honest baseline and no better than naive."""

from __future__ import annotations

from typing import Any

import pytest

from groundeval.agent_io import AgentResult
from groundeval.agents.base import Agent, FunctionAgent
from groundeval.agents.baselines.summary import BaselineSummaryAgent, HedgeAllSummaryAgent, NaiveSummaryAgent
from groundeval.execution.outcome_policy import RunInfo
from groundeval.tasks.summary import SummaryTask
from groundeval.tasks.summary.judge import BaselineJudge
from groundeval.tasks.summary.text import contradictory
from groundeval.testing.one_case import run_case
from tests._paths import REPO

CASES = REPO / "fixtures" / "summary"
TASK = SummaryTask()


@pytest.mark.parametrize(("sentence", "hedged"), [
    ("Metformin 500 MG Oral Tablet (past/current).", True),
    ("Asthma (active, resolved)", True),
    ("Hypertension, current or previously treated", True),
    ("Currently on lisinopril, previously on metformin.", False),
    ("Asthma, no longer active.", False),
    ("Past medications: amoxicillin (stopped)", False),
    ("Active problems: Essential hypertension", False),
])
def test_labels_that_cannot_both_be_true(sentence: str, hedged: bool) -> None:
    assert contradictory(sentence) is hedged


def _score(agent: Agent, limit: int | None = None) -> list[Any]:
    out = []
    for path in TASK.case_files(CASES)[:limit]:
        case = TASK.load_case(path)
        info = RunInfo(run_id="r", task="summary", agent=agent.name, model=None)
        out.append(run_case(TASK, agent, case, info, f"n::{case.case_id}").record)
    return out


def test_a_hedged_item_earns_nothing_states_the_forbidden_thing_and_fails_the_case() -> None:
    (honest,) = _score(BaselineSummaryAgent(), limit=1)
    criteria = honest.truth["criteria"]
    current = next(c for c in criteria if c["type"] in ("condition", "medication"))
    text = honest.raw_output + f"\n{current['names'][0]} (past/current)."
    stopped = next((c for c in criteria if c["kind"] == "must_not_state"), None)
    if stopped is not None:
        text += f"\n{stopped['names'][0]} (active/resolved)."
    (hedged,) = _score(FunctionAgent(lambda request: AgentResult(text=text), "hedged"), limit=1)
    assert honest.outcome == "passed" and hedged.outcome == "failed"
    by_id = {c["id"]: c for c in hedged.details["criteria"]}
    assert by_id[current["id"]]["met"] is False and by_id[current["id"]]["flag"] == "contradictory_labels"
    if stopped is not None:
        assert by_id[stopped["id"]]["met"] is True  # a must-not criterion made
    assert hedged.metrics["contradictions"] >= 1 + (stopped is not None)
    assert float(hedged.metrics["rubric_score"]) < float(honest.metrics["rubric_score"])
    assert "labelled both current and ended" in hedged.message


def test_the_hedge_all_control_scores_below_the_baseline_and_no_better_than_naive() -> None:
    runs = {a.name: _score(a) for a in (BaselineSummaryAgent(), NaiveSummaryAgent(), HedgeAllSummaryAgent())}

    def passed(name: str) -> int:
        return sum(r.outcome == "passed" for r in runs[name])

    def mean(name: str) -> float:
        return sum(float(r.metrics["rubric_score"] or 0) for r in runs[name]) / len(runs[name])

    # Listing everything as current is the honest summary only of a record with nothing ended (Liz_Conn:
    # one active disorder, one active drug): the naive control passes there and nowhere else.
    nothing_ended = {r.case_id for r in runs["naive-summary"]
                     if not any(c["kind"] == "must_not_state" for c in r.truth["criteria"])}
    naive_passed = {r.case_id for r in runs["naive-summary"] if r.outcome == "passed"}
    assert naive_passed <= nothing_ended and len(nothing_ended) < 3
    assert passed("hedge-all-summary") <= passed("naive-summary") < passed("baseline-summary")
    assert mean("hedge-all-summary") < mean("baseline-summary")
    assert all(r.metrics["contradictions"] > 0 for r in runs["hedge-all-summary"])
    assert "(past/current)" in runs["hedge-all-summary"][0].raw_output


def test_the_baseline_judge_reads_a_hedge_as_neither_mention_nor_denial() -> None:
    criterion = {"id": "medication:1", "type": "medication", "kind": "must_mention", "points": 1, "safety": False,
                 "statement": "x", "names": ["lisinopril"], "alternatives": [], "values": []}
    judge = BaselineJudge()
    assert judge.decide(criterion, "Current medications: lisinopril 10 MG.", label="x").met
    assert not judge.decide(criterion, "Medications: lisinopril (past/current).", label="x").met
    stopped = {**criterion, "type": "stopped_medication", "kind": "must_not_state", "points": -1}
    assert not judge.decide(stopped, "Past medications: lisinopril (stopped).", label="x").met
    assert judge.decide(stopped, "Medications: lisinopril (past/current).", label="x").met
