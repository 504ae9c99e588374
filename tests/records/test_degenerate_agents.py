"""Degenerate agents on every packaged case of every task: no headline figure rises above what the answer earns.

An agent that answers nothing, ``[]``, everything, every status for every drug, its best guess plus
hedges, or the right answer twice must not score above the answer it actually gives. Each agent runs
in process through the outcome policy (``execution.outcome_policy.classify`` on a truth derived once per case) and the run's
aggregate (``aggregate.summarize``): the figures checked are the ones every output prints.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable, Mapping
from typing import Any

import pytest

from groundeval.agent_io import AgentRequest
from groundeval.datasets import Case, default_data_dir
from groundeval.execution.call import attempt, prepare
from groundeval.execution.outcome_policy import RunInfo, classify
from groundeval.records.aggregate import summarize
from groundeval.records.run_record import Aggregate
from groundeval.tasks import make_task
from groundeval.testing import ScriptedAgent
from tests._write_answers import statement_from_truth

Answer = Callable[[Case, AgentRequest, Any], str]
STATUSES = ("matched", "omission", "commission", "dose_mismatch", "stopped_but_taken")
LOWER_IS_BETTER = frozenset({"answers_high_alert_missed"})


def _prepared(task_name: str) -> list[tuple[Case, AgentRequest, Any]]:
    task = make_task(task_name)
    cases = [task.load_case(p) for p in task.case_files(default_data_dir(task_name))]
    return [(case, *prepare(task, case)) for case in cases]


@pytest.fixture(scope="module")
def reconcile() -> list[tuple[Case, AgentRequest, Any]]:
    return _prepared("reconcile")


@pytest.fixture(scope="module")
def extraction() -> list[tuple[Case, AgentRequest, Any]]:
    return _prepared("extraction")


@pytest.fixture(scope="module")
def write() -> list[tuple[Case, AgentRequest, Any]]:
    return _prepared("write")


def _run(task_name: str, prepared: list[tuple[Case, AgentRequest, Any]], answer: Answer | None) -> Aggregate:
    """Every case answered by ``answer`` (None: the agent gives no answer at all), aggregated."""
    task = make_task(task_name)
    info = RunInfo(run_id="degenerate", task=task_name, agent="degenerate", model=None)
    records = []
    for case, request, truth in prepared:
        text = "" if answer is None else answer(case, request, truth)
        agent = ScriptedAgent({case.case_id: text})
        done = attempt(agent, request, truth)
        records.append(classify(task, agent, case, info, f"{task_name}::{case.case_id}", done).record)
    return summarize(task, records)


def _headline(agg: Aggregate) -> dict[str, float]:
    """Pass rate, answer rate and every numeric figure of the task's aggregate."""
    out = {"pass_rate": agg.pass_rate or 0.0, "answer_rate": agg.answer_rate or 0.0}
    for name, value in agg.metrics.items():
        if isinstance(value, int | float) and not isinstance(value, bool) and not name.startswith(
                ("duplicates", "contradictions", "cases_with_", "answers_with_", "format_not_ok", "coding_reason_")):
            out[name] = float(value)
    return out


def _not_above(got: Aggregate, earned: Aggregate) -> None:
    """No headline figure of ``got`` is better than the same figure of ``earned``."""
    mine, ref = _headline(got), _headline(earned)
    for name, value in mine.items():
        if name not in ref:
            continue
        if name in LOWER_IS_BETTER:
            assert value >= ref[name], (name, value, ref[name])
        else:
            assert value <= ref[name] + 1e-9, (name, value, ref[name])


def _n(agg: Aggregate, name: str) -> float:
    value = agg.metrics[name]
    assert value is None or (isinstance(value, int | float) and not isinstance(value, bool)), (name, value)
    return float(value or 0)


def _empty_truth_share(prepared: list[tuple[Case, AgentRequest, Any]], key: str) -> float:
    return sum(not truth[key] for _, _, truth in prepared) / len(prepared)


# -- reconcile -----------------------------------------------------------------------------------

def _right(case: Case, request: AgentRequest, truth: Any) -> list[dict[str, Any]]:
    return [{"rxnorm_code": e["rxnorm_code"], "display": e["display"], "status": e["status"]}
            for e in truth["entries"]]


def _hedged(items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return items + [{**i, "status": s} for i in items for s in STATUSES if s != i["status"]]


def _baseline(case: Case, request: AgentRequest, truth: Any) -> list[dict[str, Any]]:
    from groundeval.agents.baselines.reconcile import reconcile_answer

    return reconcile_answer(request)


def _every_drug(case: Case, request: AgentRequest) -> list[tuple[str, str]]:
    from groundeval.tasks.reconcile.task import _catalog_displays
    from groundeval.tasks.reconcile.truth import request_displays

    return list({**_catalog_displays(), **request_displays(case.data["bundle"])}.items())


def test_reconcile_degenerate_agents_earn_no_more_than_their_answer(reconcile: list[Any]) -> None:
    def dumps(fn: Callable[..., Any]) -> Answer:
        return lambda case, request, truth: json.dumps(fn(case, request, truth))

    right = _run("reconcile", reconcile, dumps(_right))
    assert right.pass_rate == 1.0
    empty_share = _empty_truth_share(reconcile, "entries")
    assert 0 < empty_share < 0.1  # the one case with no medication on either side

    twice = _run("reconcile", reconcile, dumps(lambda c, r, t: _right(c, r, t) * 2))
    assert _headline(twice) == _headline(right) and _n(twice, "duplicates") > 0

    hedged = _run("reconcile", reconcile, dumps(lambda c, r, t: _hedged(_right(c, r, t))))
    _not_above(hedged, right)
    assert hedged.pass_rate == pytest.approx(empty_share, abs=1e-6)  # only the case with nothing to hedge passes
    assert _n(hedged, "answers_high_alert_missed") > _n(right, "answers_high_alert_missed") == 0
    assert float(hedged.metrics["macro_discrepancy_f1"] or 0) < 1.0 and float(hedged.metrics["macro_matched_f1"] or 0) < 1.0

    baseline = _run("reconcile", reconcile, dumps(_baseline))
    baseline_hedged = _run("reconcile", reconcile, dumps(lambda c, r, t: _hedged(_baseline(c, r, t))))
    _not_above(baseline_hedged, baseline)
    assert (baseline_hedged.pass_rate or 0) < (baseline.pass_rate or 0)
    assert float(baseline_hedged.metrics["micro_discrepancy_f1"] or 0) < float(baseline.metrics["micro_discrepancy_f1"] or 0)

    every = _run("reconcile", reconcile, dumps(lambda c, r, t: [
        {"rxnorm_code": code, "display": display, "status": s} for code, display in _every_drug(c, r) for s in STATUSES]))
    _not_above(every, right)
    assert every.pass_rate == 0.0 and every.metrics["micro_discrepancy_f1"] == 0.0  # every drug contradicted
    everything_matched = _run("reconcile", reconcile, dumps(lambda c, r, t: [
        {"rxnorm_code": code, "display": display, "status": "matched"} for code, display in _every_drug(c, r)]))
    _not_above(everything_matched, right)
    assert everything_matched.pass_rate == 0.0

    nothing_listed = _run("reconcile", reconcile, lambda c, r, t: "[]")
    _not_above(nothing_listed, right)
    assert nothing_listed.pass_rate == pytest.approx(empty_share, abs=1e-6)
    no_answer = _run("reconcile", reconcile, None)
    assert (no_answer.pass_rate, no_answer.answer_rate) == (0.0, 0.0)
    assert no_answer.metrics["macro_discrepancy_f1"] == no_answer.metrics["macro_matched_f1"] == 0.0


def test_the_reconcile_naive_control_fails_and_misses_every_discrepancy(reconcile: list[Any]) -> None:
    """The naive control over every packaged case (its run through the plugin: test_reconcile_plugin.py)."""
    from groundeval.agents.baselines.reconcile import NaiveReconcileAgent

    agent = NaiveReconcileAgent()
    naive = _run("reconcile", reconcile, lambda c, r, t: agent.run(r).text or "")
    assert (naive.pass_rate or 0) < 0.3
    assert naive.metrics["micro_discrepancy_recall"] == 0.0
    assert _n(naive, "answers_high_alert_missed") >= 8


# -- extraction ----------------------------------------------------------------------------------

def _meds(truth: Any) -> list[dict[str, Any]]:
    out = []
    for med in truth["medications"]:
        if med["kind"] == "coded":
            code = med["codes"][0]
            out.append({"rxnorm_code": code, "display": (med["displays"].get(code) or [""])[0]})
        elif med["kind"] == "uncoded":
            out.append({"rxnorm_code": None, "display": med["text"]})
    return out


def _bundle_drugs(case: Case) -> list[dict[str, Any]]:
    from groundeval.tasks.reconcile.truth import request_displays

    return [{"rxnorm_code": c, "display": d} for c, d in request_displays(case.data).items()]


def test_extraction_degenerate_agents_earn_no_more_than_their_answer(extraction: list[Any]) -> None:
    def dumps(fn: Callable[..., Any]) -> Answer:
        return lambda case, request, truth: json.dumps(fn(case, request, truth))

    right = _run("extraction", extraction, dumps(lambda c, r, t: _meds(t)))
    assert right.pass_rate == 1.0
    twice = _run("extraction", extraction, dumps(lambda c, r, t: _meds(t) * 2))
    assert _headline(twice) == _headline(right) and _n(twice, "duplicates") > 0
    # hedging the display: each drug again, spelled another way; a wrong drug listed twice
    hedged = _run("extraction", extraction, dumps(lambda c, r, t: _meds(t) + [
        {**m, "display": m["display"].swapcase()} for m in _meds(t) if m["rxnorm_code"]]))
    _not_above(hedged, right)
    assert _n(hedged, "macro_display_accuracy") < 1.0 and _n(hedged, "contradictions") > 0
    coded_share = sum(any(m["rxnorm_code"] for m in _meds(t)) for _, _, t in extraction) / len(extraction)
    assert hedged.pass_rate == pytest.approx(1 - coded_share, abs=1e-6)
    wrong_twice = _run("extraction", extraction, dumps(lambda c, r, t: _meds(t) + [{"rxnorm_code": "1", "display": "x"}] * 2))
    once = _run("extraction", extraction, dumps(lambda c, r, t: [*_meds(t), {"rxnorm_code": "1", "display": "x"}]))
    assert _headline(wrong_twice) == _headline(once)  # a wrong drug listed twice is still one false positive

    everything = _run("extraction", extraction, dumps(lambda c, r, t: _bundle_drugs(c)))
    _not_above(everything, right)
    assert float(everything.metrics["micro_precision"] or 0) < 1.0 and (everything.pass_rate or 0) < 1.0
    nothing_listed = _run("extraction", extraction, lambda c, r, t: "[]")
    _not_above(nothing_listed, right)
    assert nothing_listed.pass_rate == pytest.approx(_empty_truth_share(extraction, "medications"), abs=1e-6)
    no_answer = _run("extraction", extraction, None)
    assert (no_answer.pass_rate, no_answer.answer_rate, no_answer.metrics["macro_f1"]) == (0.0, 0.0, 0.0)


# -- write ---------------------------------------------------------------------------------------

def _with(truth: Any, change: Callable[[dict[str, Any]], None]) -> str:
    resource = copy.deepcopy(statement_from_truth(truth))
    change(resource)
    return json.dumps(resource)


def _codings(resource: Mapping[str, Any]) -> list[dict[str, Any]]:
    coded: list[dict[str, Any]] = resource["medicationCodeableConcept"].setdefault("coding", [])
    return coded


def test_write_degenerate_agents_earn_no_more_than_their_answer(write: list[Any]) -> None:
    from groundeval.terminology import Catalog

    right = _run("write", write, lambda c, r, t: json.dumps(statement_from_truth(t)))
    assert right.pass_rate == 1.0 and right.metrics["all_pass_rate"] == 1.0
    twice = _run("write", write, lambda c, r, t: _with(t, lambda s: _codings(s).extend(copy.deepcopy(_codings(s)))))
    assert _headline(twice) == _headline(right)  # the same coding repeated is neutral
    other = "310965"  # ibuprofen 200 mg: a second drug code beside the right one is a hedge
    hedged = _run("write", write, lambda c, r, t: _with(t, lambda s: _codings(s).append(
        {"system": "http://www.nlm.nih.gov/research/umls/rxnorm", "code": other if t["medication"]["rxcui"] != other
         else "198405"})))
    _not_above(hedged, right)
    assert hedged.metrics["coding_pass_rate"] == 0.0 and hedged.pass_rate == 0.0
    two_doses = _run("write", write, lambda c, r, t: _with(t, lambda s: s.get("dosage") and s["dosage"].append(
        copy.deepcopy(s["dosage"][0]))))
    _not_above(two_doses, right)
    with_dose = sum(t["dosage"] is not None for _, _, t in write) / len(write)
    assert two_doses.pass_rate == pytest.approx(1 - with_dose, abs=1e-6)  # a dose given twice is a double dose, not a repeat

    everything = _run("write", write, lambda c, r, t: _with(t, lambda s: s["medicationCodeableConcept"].update(coding=[
        {"system": "http://www.nlm.nih.gov/research/umls/rxnorm", "code": e.rxcui, "display": e.display}
        for e in Catalog.load()])))
    _not_above(everything, right)
    assert everything.metrics["coding_pass_rate"] == 0.0

    from groundeval.agents.baselines.write import NaiveWriteAgent

    naive = _run("write", write, lambda c, r, t: NaiveWriteAgent().run(r).text or "")
    _not_above(naive, right)
    assert naive.metrics["schema_pass_rate"] == 1.0 and naive.metrics["coding_pass_rate"] == 0.0  # table stakes
    assert 0.3 < _n(naive, "constraints_pass_rate") < 0.7 and _n(naive, "safety_pass_rate") < 0.2
    assert naive.pass_rate == 0.0 and "naive-write" in str(naive.metrics["table_stakes"])  # and the summary says so
    empty = _run("write", write, lambda c, r, t: "{}")
    no_answer = _run("write", write, None)
    for agg in (empty, no_answer):
        assert agg.pass_rate == 0.0 and agg.answer_rate == 0.0
        assert all(agg.metrics[f"{d}_pass_rate"] == 0.0 for d in ("schema", "coding", "constraints", "safety"))


# -- summary -------------------------------------------------------------------------------------

SUMMARY_HEADLINE = ("pass_rate", "rubric_score", "must_mention_recall")


@pytest.fixture(scope="module")
def summary() -> list[tuple[Case, AgentRequest, Any]]:
    return _prepared("summary")


def _items(request: AgentRequest) -> tuple[list[str], list[str], list[str]]:
    """Every problem, every drug (whatever its status) and the honest template of a summary's record."""
    from groundeval.agents.baselines.summary import _bundle, summary_text
    from groundeval.tasks.summary.record import conditions, medications

    bundle = _bundle(request)
    problems = list(dict.fromkeys(p.name for p in conditions(bundle) if p.tag == "disorder"))
    drugs = list(dict.fromkeys(d.display for d in medications(bundle)))
    return problems, drugs, [summary_text(bundle)]


def _summary_not_above(got: Aggregate, honest: Aggregate) -> None:
    for name in SUMMARY_HEADLINE:
        mine, ref = _headline(got).get(name, 0.0), _headline(honest)[name]
        assert mine <= ref + 1e-9, (name, mine, ref)


def test_summary_collective_and_negated_lists_earn_no_more_than_an_honest_summary(summary: list[Any]) -> None:
    """A list qualified as a whole gives no item a status; a negated item is never a mention."""
    def collective(lead: str, tail: str = "") -> Answer:
        def answer(case: Case, request: AgentRequest, truth: Any) -> str:
            problems, drugs, _ = _items(request)
            return (f"Problems {lead}: {', '.join(problems)}{tail}.\n"
                    f"Medications {lead}: {', '.join(drugs)}{tail}.")
        return answer

    def negated(case: Case, request: AgentRequest, truth: Any) -> str:
        problems, drugs, _ = _items(request)
        return f"Not on {', '.join(drugs)}. No {', '.join(problems)}."

    def honest_plus_collective(case: Case, request: AgentRequest, truth: Any) -> str:
        _, drugs, honest = _items(request)
        return f"{honest[0]}\nAlso on file, some current, others stopped: {', '.join(drugs)}."

    def record_contents(case: Case, request: AgentRequest, truth: Any) -> str:
        problems, drugs, _ = _items(request)
        return "Record contents:\n" + "\n".join(f"- {item}" for item in [*problems, *drugs])

    def honest_plus_speculation(case: Case, request: AgentRequest, truth: Any) -> str:
        return f"{_items(request)[2][0]}\nPossible diabetes, CKD and heart failure; rule out sepsis."

    honest = _run("summary", summary, lambda c, r, t: _items(r)[2][0])
    assert honest.pass_rate == 1.0
    speculating = _run("summary", summary, honest_plus_speculation)
    _summary_not_above(speculating, honest)
    assert speculating.pass_rate == 0.0  # guesses padding an honest handoff never pass
    for name, answer in [
        ("on / previously on", collective("(on / previously on)")),
        ("record contents", record_contents),
        ("some current, others stopped", collective("on file, some current, others stopped")),
        ("(all ever prescribed), several since stopped", collective("(all ever prescribed), several since stopped")),
        ("current and past", collective("(current and past)")),
        (", some stopped", collective("", ", some stopped")),
        ("negated", negated),
        ("honest plus collective", honest_plus_collective),
    ]:
        got = _run("summary", summary, answer)
        _summary_not_above(got, honest)
        with_drugs = sum(bool(_items(r)[1]) for _, r, _ in summary) / len(summary)
        assert (got.pass_rate or 0.0) <= 1 - with_drugs + 1e-9, (name, got.pass_rate)  # only records with no drug pass
        if name != "honest plus collective":  # items given no status earn nothing
            assert _n(got, "must_mention_recall") < 0.2, (name, got.metrics["must_mention_recall"])
