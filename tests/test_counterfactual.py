"""Counterfactual twins: the extraction perturbations, record sensitivity, and the plugin's items and outputs."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import pytest

from groundeval.agent_io import AgentRequest
from groundeval.agents.baselines.priors import PriorsExtractionAgent
from groundeval.clinical.medication_list import active_medications
from groundeval.records.outcomes import Outcome
from groundeval.records.run_record import CaseRecord, Counterfactual, FigureInterval, TwinPair
from groundeval.records.sensitivity import judge_pairs, pair_values
from groundeval.records.trial_ids import split_twin, twin_name
from groundeval.reporting.gate import GateResult
from groundeval.reporting.stats import Interval
from groundeval.tasks.counterfactual import CounterfactualError, perturbations, twins
from groundeval.tasks.extraction import counterfactual as cf
from groundeval.tasks.extraction.task import ExtractionTask
from groundeval.testing.junit import junit_cases

TASK = ExtractionTask()
FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "extraction"


def _case(prefix: str) -> Any:
    (path,) = FIXTURES.glob(f"{prefix}_*.json")
    return TASK.load_case(path)


def _codes(bundle: dict[str, Any]) -> set[str]:
    return {c for m in active_medications(bundle) for c in m["codes"]}


def test_each_perturbation_moves_the_truth_as_declared_and_leaves_the_original_alone() -> None:
    case = _case("Beatrice_Aufderhar")
    before = copy.deepcopy(case.data)
    made = {t.meta["counterfactual"]["kind"]: t for t in twins(TASK, case)}
    assert list(made) == list(cf.PERTURBATIONS)
    assert case.data == before  # every twin works on a copy
    original = _codes(case.data)
    for kind, twin in made.items():
        facts = twin.meta["counterfactual"]
        assert twin.case_id == twin_name(case.case_id, kind) and split_twin(twin.case_id) == (case.case_id, kind)
        assert (twin.source, twin.sha256) == (case.source, case.sha256)
        (old, *new) = facts["probe"]["medications"]
        changed = _codes(twin.data)
        if kind == "stop-active":
            assert changed == original - set(old)
        elif kind == "restart-stopped":
            assert changed == original | set(old) and not set(old) & original
        elif kind == "swap-drug":
            assert changed == (original - set(old)) | set(new[0]) and not set(new[0]) & original
        else:
            assert changed == original and "medicationReference" in json.dumps(twin.data)
        assert facts["expected"]["original"] != facts["expected"]["twin"] or kind == "medication-reference"
    # deterministic: the same twin again (collection and every xdist worker agree)
    again = TASK.counterfactual(case, "swap-drug")
    assert again is not None and (again.data, again.meta) == (made["swap-drug"].data, made["swap-drug"].meta)


def test_a_case_with_nothing_to_restart_has_no_such_twin_and_unknown_kinds_are_refused() -> None:
    case = _case("Liz_Conn")
    assert TASK.counterfactual(case, "restart-stopped") is None
    with pytest.raises(ValueError, match="unknown extraction perturbation 'bogus'"):
        TASK.counterfactual(case, "bogus")


def test_a_perturbation_whose_truth_did_not_move_as_declared_stops() -> None:
    case = _case("Liz_Conn")
    (code,) = sorted(_codes(case.data))[:1]
    probe = {"medications": [[code]]}
    with pytest.raises(CounterfactualError, match="did not move as declared"):
        cf._check(case, copy.deepcopy(case.data), "stop-active", probe, {code: True}, {code: False})


def test_observe_counts_a_medication_listed_by_any_of_its_codes() -> None:
    probe = {"medications": [["209387", "313782"], ["308182"]]}
    answer = [{"rxnorm_code": "313782", "display": "x"}]
    assert cf.observe(probe, answer) == {"209387|313782": True, "308182": False}
    assert cf.observe(probe, None) == {"209387|313782": False, "308182": False}


def _at(second: int) -> str:
    """An agent call's start, ``second`` seconds into the run (ISO-8601 UTC)."""
    return f"2026-12-01T00:00:{second:02d}+00:00"


def _record(case_id: str, outcome: Outcome, parsed: Any, *, meta: dict[str, Any] | None = None,
            at: int | None = None) -> CaseRecord:
    counted = outcome in ("passed", "failed", "partial", "no_answer")
    if at is None:  # an original's call at 10 s, a twin's at 20 s (called after its original)
        at = 20 if "[cf-" in case_id else 10
    return CaseRecord(case_id=case_id, nodeid=f"groundeval/extraction::{case_id}", run_id="r", task="extraction",
                      agent="a", outcome=outcome, counted=counted, answered=parsed is not None, parsed=parsed,
                      meta=meta or {}, started_at=_at(at))


def _twin_meta(kind: str, effect: str) -> dict[str, Any]:
    return {"counterfactual": {
        "of": "P", "kind": kind, "effect": effect, "change": "status active -> stopped",
        "probe": {"medications": [["1"]]}, "expected": {"original": {"1": True}, "twin": {"1": effect == "same"}},
    }}


def test_pairs_tell_reading_from_remembering_and_leave_out_what_they_cannot_judge() -> None:
    listed: list[dict[str, str]] = [{"rxnorm_code": "1", "display": "d"}]
    empty: list[dict[str, str]] = []
    original = _record("P", "passed", listed)
    stop = _twin_meta("stop-active", "drops")
    twins_ = [
        _record("P[cf-stop-active]", "passed", empty, meta=stop),  # followed the change
        _record("P[cf-stop-active]", "partial", listed, meta=stop),  # the original's answer
        _record("P[cf-stop-active]", "no_answer", None, meta=stop),  # no answer: never tracked
        _record("P[cf-stop-active]", "agent_error", None, meta=stop),  # excluded: not judged
        _record("P[cf-medication-reference]", "passed", listed, meta=_twin_meta("medication-reference", "same")),
    ]
    pairs = judge_pairs(TASK, twins_, [original])
    assert [p.tracks_record for p in pairs] == [True, False, False, None, True]
    assert pairs[1].kept_original_answer and pairs[1].why == "gave the original's answer to the changed record"
    assert pairs[2].why == "no answer from the twin" and "not judged" in pairs[3].why
    # an original without an answer makes its twin untracked, whatever the twin said
    assert [p.tracks_record for p in judge_pairs(TASK, twins_[:1], [_record("P", "failed", None)])] == [False]


def test_summarize_keeps_twins_out_of_the_headline_and_computes_record_sensitivity() -> None:
    from groundeval.records.aggregate import summarize

    listed = [{"rxnorm_code": "1", "display": "d"}]
    stop = _twin_meta("stop-active", "drops")
    p, q = (_record(c, "passed", listed).model_copy(update={"metrics": {"f1": 1.0}}) for c in ("P", "Q"))
    early = _record("P[cf-stop-active]", "passed", [], meta=stop, at=5)  # before its original: tracked
    late = _record("Q[cf-stop-active]", "partial", listed, meta=stop)  # after its original: the original's answer
    agg = summarize(TASK, [p, q, early, late], selected=4)
    assert (agg.selected, agg.cases, agg.counted, agg.pass_rate) == (2, 2, 2, 1.0)
    cf_ = agg.counterfactual
    assert cf_ is not None and cf_.twins == 2 and [pr.order for pr in cf_.pairs] == ["first_call", "later_call"]
    # the headline is the lower of the two orders, never their pool (0.5)
    assert agg.metrics["record_sensitivity"] == 0.0 and cf_.orders[""] == "later_call"
    assert (agg.metrics["record_sensitivity_first_call"], agg.metrics["record_sensitivity_later_call"]) == (1.0, 0.0)
    assert agg.metrics["twin_pass_rate"] == 0.5
    assert agg.trials is not None and agg.trials.intervals["record_sensitivity"].method == "wilson"
    assert "the lower of first_call 1.000 over 1 and later_call 0.000 over 1 twins" in agg.statements["counterfactual"]
    assert "1 of them got the right answer to the original and the same answer" in agg.statements["counterfactual"]
    assert pair_values(cf_, "") == {("Q[cf-stop-active]", 0): 0.0}
    assert pair_values(cf_, "@first_call") == {("P[cf-stop-active]", 0): 1.0}
    # twins called in one order only give no headline, and say why
    one = summarize(TASK, [q, late], selected=2)
    assert one.counterfactual is not None and one.counterfactual.record_sensitivity is None
    assert "record_sensitivity" not in one.metrics and one.metrics["record_sensitivity_later_call"] == 0.0
    assert "called in one order only: first_call 0, later_call 1" in one.statements["counterfactual"]
    # what happened, not a cause groundeval cannot know (priors, a stale cache, ...)
    said = agg.statements["counterfactual"]
    assert said.endswith("(the answer did not change though the truth did)") and "priors" not in said
    # with trials each twin is one observation at its pooled rate, as a case is in trial_stats
    again = [r.model_copy(update={"trial": 1}) for r in (p, q, early, late)]
    agg = summarize(TASK, [p, q, early, late, *again], selected=8)
    assert agg.trials is not None and agg.trials.intervals["record_sensitivity"].cases == 1


def test_the_gate_fails_when_record_sensitivity_drops_beyond_noise() -> None:
    iv = FigureInterval(value=1.0, low=0.9, high=1.0, cases=10, method="wilson")
    pair = TwinPair(twin="P[cf-stop-active]", of="P", kind="stop-active", effect="drops", tracks_record=True,
                    order="later_call")
    cf_ = Counterfactual(record_sensitivity=iv, orders={"": "later_call"}, pairs=[pair])
    assert pair_values(cf_, "") == {("P[cf-stop-active]", 0): 1.0}
    assert pair_values(cf_.model_copy(update={"orders": {"": "first_call"}}), "") == {}  # the other order's twins
    drop = Interval(mean=-0.5, low=-0.8, high=-0.2, n=10, p_value=0.01, method="bootstrap-bca")
    gate = GateResult("a", "b", sensitivity_interval=drop)
    assert gate.sensitivity_dropped and any("record_sensitivity dropped" in r for r in gate.reasons())
    assert not GateResult("a", "b", sensitivity_interval=Interval(-0.1, -0.3, 0.1, 10, 0.5, "bootstrap-bca")).sensitivity_dropped


def test_priors_reads_only_the_patient_and_answers_what_it_remembers() -> None:
    case = _case("Liz_Conn")
    agent = PriorsExtractionAgent()
    twin = TASK.counterfactual(case, "stop-active")
    assert twin is not None
    answers = [
        agent.run(AgentRequest(case_id=c.case_id, task="extraction", prompt=TASK.prompt(c), context=TASK.context(c)))
        for c in (case, twin)
    ]
    assert answers[0].text == answers[1].text  # the record changed; the answer did not
    assert {m["rxnorm_code"] for m in json.loads(answers[0].text)} == _codes(case.data)


def test_a_task_without_perturbations_refuses_the_option(pytester: pytest.Pytester) -> None:
    assert perturbations(TASK) == cf.PERTURBATIONS
    result = pytester.runpytest("--groundeval-task=labs", "--groundeval-counterfactual", "-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--groundeval-counterfactual: the labs task declares no perturbations*"])


SEED = "--groundeval-twin-seed=1"
"""An order of the two cases' items in which each case's first call is a twin whose truth changed."""


def _run(pytester: pytest.Pytester, agent: str, *extra: str) -> tuple[pytest.RunResult, dict[str, Any]]:
    result = pytester.runpytest(
        "--groundeval-task=extraction", f"--groundeval-agent={agent}", "--groundeval-data-dir=data",
        "--groundeval-counterfactual", "--groundeval-concurrency=1", f"--groundeval-out-dir=runs-{agent}",
        "-p", "no:cacheprovider", SEED, *extra,
    )
    (path,) = (pytester.path / f"runs-{agent}").glob("*.json")
    return result, json.loads(path.read_text())


@pytest.fixture
def two_cases(pytester: pytest.Pytester, copy_fixtures: Callable[[Path, Iterable[str]], Path]) -> Path:
    return copy_fixtures(pytester.path / "data", ("Liz_Conn", "Beatrice_Aufderhar"))


def test_baseline_tracks_every_twin_and_priors_none_that_changed(pytester: pytest.Pytester, two_cases: Path) -> None:
    result, record = _run(pytester, "baseline", "--junitxml=out.xml")
    assert result.parseoutcomes() == {"passed": 9}  # 2 cases, 3 + 4 twins
    result.stdout.fnmatch_lines([
        "counterfactual twins: 7 (*restart-stopped 1*), 7 judged; record_sensitivity 1.000 ?0.342, 1.000?, the "
        "lower of first_call 1.000 over 2 and later_call 1.000 over 3 twins whose truth changed; 0 of them got *",
        "record_sensitivity: 1.000",
    ])
    assert record["settings"]["twin_seed"] == 1
    agg = record["aggregate"]
    assert agg["counted"] == 2 and agg["counterfactual"]["tracked"] == 7
    twin = next(c for c in record["cases"] if c["case_id"].endswith("[cf-swap-drug]"))
    assert twin["meta"]["counterfactual"]["change"].startswith("MedicationRequest/")
    assert twin["nodeid"] == f"groundeval/extraction::{twin['case_id']}"
    suite = junit_cases(pytester.path / "out.xml")
    stopped = next(v for k, v in suite.items() if k.endswith("[cf-stop-active]"))
    assert stopped["perturbation"] == "stop-active" and stopped["change"].endswith("status active -> stopped")
    xml = (pytester.path / "out.xml").read_text()
    assert 'name="record_sensitivity" value="1.0"' in xml and 'name="record_sensitivity_ci_low"' in xml

    result, record = _run(pytester, "priors", "--groundeval-summary-md=s.md")
    agg = record["aggregate"]
    assert agg["pass_rate"] == 1.0  # it remembers these two patients' lists exactly
    assert agg["metrics"]["record_sensitivity"] == 0.0
    assert agg["metrics"]["record_sensitivity_first_call"] == agg["metrics"]["record_sensitivity_later_call"] == 0.0
    kept = [p for p in agg["counterfactual"]["pairs"] if p["effect"] != "same"]
    assert kept and all(p["kept_original_answer"] and not p["tracks_record"] for p in kept)
    result.stdout.fnmatch_lines(["(case file: Liz_Conn_*.json; counterfactual twin: MedicationRequest/* -> stopped)"])
    md = (pytester.path / "s.md").read_text()
    assert "5 twin(s) not tracked" in md and "gave the original's answer to the changed record" in md
    from groundeval.records.run_record import RunRecord
    from groundeval.reporting.html import render_report

    html = render_report(RunRecord.model_validate(record))
    assert 'id="counterfactual-1">counterfactual twins: 7' in html and "5 twin(s) not tracked" in html


def test_selecting_a_case_selects_its_twins(pytester: pytest.Pytester, two_cases: Path) -> None:
    liz = TASK.load_case(next(two_cases.glob("Liz_Conn_*.json"))).case_id
    result, record = _run(pytester, "baseline", f"groundeval/extraction::{liz}")
    assert result.parseoutcomes() == {"passed": 4, "deselected": 5}
    assert {split_twin(c["case_id"])[0] for c in record["cases"]} == {liz}


def test_reconcile_twins_turn_a_matched_drug_into_a_dose_mismatch_and_a_commission() -> None:
    from groundeval.tasks.reconcile import counterfactual as rcf
    from groundeval.tasks.reconcile.task import ReconcileTask

    task = ReconcileTask()
    case = task.load_case(FIXTURES.parent / "reconcile" / "exact--Liz_Conn_27c911c6.json")
    made = {t.meta["counterfactual"]["kind"]: t for t in twins(task, case)}
    assert list(made) == list(rcf.PERTURBATIONS)
    for kind, status in (("record-dose", "dose_mismatch"), ("remove-reported", "commission")):
        facts = made[kind].meta["counterfactual"]
        (codes,) = facts["probe"]["drugs"]
        entry = next(e for e in task.truth(made[kind])["entries"] if set(e["codes"]) & set(codes))
        assert entry["status"] == status and facts["expected"]["twin"] == {"|".join(codes): status}
        assert made[kind].data["report"] == case.data["report"]  # the record changes, never the report
    # a hedged answer (two statuses for one drug) never matches the one status the truth gives
    hedged = [{"rxnorm_code": "1", "status": "matched"}, {"rxnorm_code": "1", "status": "omission"}]
    assert rcf.observe({"drugs": [["1"]]}, hedged) == {"1": "matched/omission"}


def test_the_write_twin_changes_the_notes_frequency_and_the_statement_with_it() -> None:
    from groundeval.tasks.write import counterfactual as wcf
    from groundeval.tasks.write.task import WriteTask

    task = WriteTask()
    write = FIXTURES.parent / "write"
    case = task.load_case(write / "aspirin-low-dose-display-case.json")
    twin = task.counterfactual(case, "note-frequency")
    assert twin is not None and "twice daily" in twin.data["note"] and "once daily" not in twin.data["note"]
    before, after = task.truth(case)["dosage"], task.truth(twin)["dosage"]
    assert (before["frequency"], after["frequency"]) == (1, 2)
    assert after["daily_total_mg"] == 2 * before["daily_total_mg"]
    assert task.counterfactual(task.load_case(write / "tramadol-every-six-hours-prn.json"), "note-frequency") is None
    two = {"dosage": [{"timing": {"repeat": {"frequency": 1}}}, {"timing": {"repeat": {"frequency": 2}}}]}
    assert wcf.observe({}, two) == {"frequency": [1, 2]} and wcf.observe({}, None) == {"frequency": None}


# That every pytest-xdist worker makes the same twins, and that the controller pairs each twin with its
# original whichever worker ran either, is shown by the one ``-n 2`` run of a counterfactual run that
# the suite makes: tests/reporting/test_langsmith_stream.py::test_plugin_streams_every_worker_into_one_experiment.


def test_an_agent_cannot_tell_a_twin_from_its_original_by_its_request() -> None:
    from groundeval.agents.result_cache import cache_key
    from groundeval.execution.call import request_for

    case = _case("Liz_Conn")
    made = twins(TASK, case)
    assert made
    original = request_for(TASK, case, trial=1)
    for twin in made:
        request = request_for(TASK, twin, trial=1)
        # the same id, task and trial as the original's; only the record (in the prompt and context) differs
        assert (request.case_id, request.task, request.trial) == (case.case_id, original.task, 1)
        assert request.prompt != original.prompt
        seen = json.dumps([request.case_id, request.prompt.text, request.context], default=str)
        assert "[cf-" not in seen and twin.meta["counterfactual"]["kind"] not in seen
        # the response cache still keeps the twin's answer apart from the original's (prompt and context differ)
        keys = {cache_key(agent_spec="x", agent_name="x", model=None, options={}, request=r) for r in (request, original)}
        assert len(keys) == 2


def _collected(pytester: pytest.Pytester, *extra: str) -> list[str]:
    collected = pytester.runpytest(
        "--groundeval-task=extraction", "--groundeval-data-dir=data", "--groundeval-counterfactual",
        "--collect-only", "-q", "-p", "no:cacheprovider", *extra,
    )
    return [line for line in collected.stdout.lines if line.startswith("groundeval/")]


def test_a_case_and_its_twins_run_in_a_seeded_order_and_replay_tells_them_apart(
    pytester: pytest.Pytester, two_cases: Path,
) -> None:
    ids = _collected(pytester, SEED)
    assert len(ids) == 9 and _collected(pytester, SEED) == ids  # the same seed, the same order
    others = [_collected(pytester, f"--groundeval-twin-seed={seed}") for seed in (2, 3, 4)]
    assert any(o != ids for o in others) and all(sorted(o) == sorted(ids) for o in others)
    # a case's items stay together; a twin may come first (the seed's order of Liz_Conn: a twin, then its original)
    cases = [split_twin(i.rpartition("::")[2])[0] for i in ids]
    assert cases == sorted(cases, key=cases.index) and len(set(cases[:4])) == 1 and "[cf-" in ids[0]
    # originals keep their node ids
    assert {i for i in ids if "[cf-" not in i} == {f"groundeval/extraction::{c}" for c in set(cases)}
    liz = TASK.load_case(next(two_cases.glob("Liz_Conn_*.json"))).case_id
    _, first = _run(pytester, "priors", f"groundeval/extraction::{liz}")
    (path,) = (pytester.path / "runs-priors").glob("*.json")
    result = pytester.runpytest(
        "--groundeval-task=extraction", f"--groundeval-agent=replay:{path}", "--groundeval-data-dir=data",
        "--groundeval-counterfactual", "--groundeval-out-dir=replayed", "-p", "no:cacheprovider", SEED,
        f"groundeval/extraction::{liz}",
    )
    (replayed,) = (pytester.path / "replayed").glob("*.json")
    again = json.loads(replayed.read_text())
    assert result.parseoutcomes() == {"passed": 2, "failed": 2, "deselected": 5}  # priors passes the original and the same twin
    answers = {c["case_id"]: c["raw_output"] for c in first["cases"]}
    assert len(answers) == 4 and {c["case_id"]: c["raw_output"] for c in again["cases"]} == answers
    assert again["aggregate"]["metrics"]["record_sensitivity"] == 0.0


def _twin_run(run_id: str, twin: Outcome | None, trials: int = 1) -> Any:
    """A run of cases P and Q (passed) and, unless ``twin`` is None, their stop-active twins with that outcome.

    P's twin is called before P (``first_call``), Q's after Q (``later_call``).
    """
    from groundeval.records.aggregate import summarize
    from groundeval.records.run_record import RunRecord

    listed: list[dict[str, str]] = [{"rxnorm_code": "1", "display": "d"}]
    cases = [_record("P", "passed", listed), _record("Q", "passed", listed)]
    if twin is not None:
        answer: list[dict[str, str]] | None = [] if twin == "passed" else None
        for of, at in (("P", 5), ("Q", 20)):
            cases.append(_record(f"{of}[cf-stop-active]", twin, answer, meta=_twin_meta("stop-active", "drops"),
                                 at=at))
    cases = [c.model_copy(update={"run_id": run_id, "fixture_sha256": "s", "source": f"{c.case_id[0]}.json"})
             for c in cases]
    return RunRecord.model_validate({
        "run_id": run_id, "task": "extraction", "agent": "a", "model": None, "started_at": "2026-12-01T00:00:00Z",
        "complete": True, "packages": {"groundeval": "0"}, "cases": cases,
        "aggregate": summarize(TASK, cases, selected=len(cases)), "settings": {"trials": trials},
    })


def test_twins_the_agent_failed_on_are_counted_and_the_gate_loses_their_figure() -> None:
    from groundeval.reporting.compare import compare_runs

    baseline, crashed = _twin_run("A", "passed"), _twin_run("B", "agent_error")
    cf_ = crashed.aggregate.counterfactual
    assert cf_ is not None and cf_.not_judged == {"agent_error": 2} and cf_.record_sensitivity is None
    assert ("counterfactual twins: 2 (stop-active 2), 0 judged, 2 not judged: agent_error 2; record_sensitivity: -"
            in crashed.aggregate.statements["counterfactual"])
    gate = compare_runs(baseline, crashed).gate
    assert gate.failed and gate.sensitivity_lost is not None and "2 not judged: agent_error 2" in gate.sensitivity_lost
    assert any(r.startswith("record_sensitivity lost: the baseline had it over 1 twins") for r in gate.reasons())


def test_compare_says_the_current_run_dropped_its_twins_and_its_trials_differ() -> None:
    from groundeval.reporting.compare import compare_runs
    from groundeval.reporting.render import comparison_text
    from groundeval.reporting.summary_md import comparison_markdown

    comp = compare_runs(_twin_run("A", "passed"), _twin_run("B", None, trials=3))
    assert comp.gate.failed and "no counterfactual twins" in (comp.gate.sensitivity_lost or "")
    assert any(w.startswith("run B has no counterfactual twins where run A had 2") for w in comp.warnings)
    assert any(w.startswith("trials differ (1 vs 3)") for w in comp.warnings)
    text = comparison_text(comp, fail_on_regression=True)
    assert "only in A: 0 cases and 2 counterfactual twins (stop-active 2)" in text and "comparable: same" not in text
    assert "only in A P[cf-stop-active]" not in text and "record_sensitivity lost" in text
    assert "model -  2 cases + 2 counterfactual twins" in text
    assert "only in A: 2 counterfactual twins (stop-active 2)" in comparison_markdown(comp)
    # the other way round (twins added now) is said, and no baseline figure is lost
    back = compare_runs(_twin_run("B", None), _twin_run("A", "passed"))
    assert back.gate.sensitivity_lost is None and any(w.startswith("run A has no counterfactual") for w in back.warnings)


def test_each_interval_is_printed_with_its_own_n() -> None:
    from groundeval.plugin.summary import format_table
    from groundeval.records.run_record import Aggregate, TrialStats
    from groundeval.reporting.summary_md import summary_markdown

    def iv(n: int) -> FigureInterval:
        return FigureInterval(value=0.5, low=0.2, high=0.8, cases=n, method="wilson")

    ivs = {"macro_f1": iv(68), "macro_recall": iv(10), "record_sensitivity": iv(133), "twin_pass_rate": iv(177),
           "pass_rate": iv(68), "answer_rate": iv(68)}
    agg = Aggregate(selected=68, cases=68, counted=68, pass_rate=0.5, answer_rate=0.5,
                    metrics={"micro_f1": 0.5, "macro_f1": 0.5, "micro_recall": 0.5, "macro_recall": 0.5,
                             "record_sensitivity": 0.5, "twin_pass_rate": 0.5},
                    trials=TrialStats(k=1, cases=68, intervals=ivs))
    text = "\n".join(format_table(agg, "h"))
    assert "95% intervals (Wilson score over 68 cases): pass_rate [0.200, 0.800]" in text
    assert "(95% CI of the macro means: Wilson score)" in text
    assert any(line.split() == ["n", "68", "10"] for line in text.splitlines())
    assert ("95% CI (Wilson score): record_sensitivity [0.200, 0.800] (133 twins)  twin_pass_rate [0.200, 0.800] "
            "(177 twins)") in text
    assert "over 177 cases" not in text and "over 68 cases): record" not in text
    rec = _twin_run("A", "passed")
    md = summary_markdown(rec.model_copy(update={"aggregate": rec.aggregate.model_copy(update={"trials": agg.trials})}))
    assert "| record_sensitivity | 1.000 | [0.200, 0.800] (Wilson score, 133 twins) |" in md


def test_twin_counts_count_twins_not_their_trials() -> None:
    from groundeval.records.aggregate import summarize

    listed = [{"rxnorm_code": "1", "display": "d"}]
    original, twin = _record("P", "passed", listed), _record("P[cf-stop-active]", "agent_error", None,
                                                              meta=_twin_meta("stop-active", "drops"))
    trials = [r.model_copy(update={"trial": t}) for t in range(3) for r in (original, twin)]
    cf_ = summarize(TASK, trials, selected=6).counterfactual
    assert cf_ is not None and cf_.twins == 1 and cf_.not_judged == {"agent_error": 1}
    assert cf_.twin_counts == {"agent_error": 3}  # outcomes stay per twin record (trial)


def test_replay_tells_a_twin_from_its_original_by_context_when_the_prompts_are_the_same(tmp_path: Path) -> None:
    import shutil

    from groundeval.agents.replay import ReplayAgent
    from groundeval.execution.call import prompt_hash, request_for
    from tests._records import case as record, run

    task = ExtractionTask(bundle_in_prompt=False)  # tool mode: the record is not in the prompt
    (src,) = FIXTURES.glob("Liz_Conn_*.json")
    shutil.copy(src, tmp_path / src.name)
    original = task.load_case(tmp_path / src.name)
    made = twins(task, original)
    sha = prompt_hash(task.prompt(original))
    assert all(prompt_hash(task.prompt(t)) == sha for t in made)
    recorded = [record(c.case_id, source=src.name, sha=c.sha256, raw_output=f"answer to {c.case_id}",
                       prompt_sha256=sha) for c in [original, *made]]
    path = tmp_path / "run.json"
    path.write_text(run(recorded).model_dump_json())
    agent = ReplayAgent(record=path)
    agent.check_cases(task, tmp_path)
    for each in [original, *made]:
        assert agent.run(request_for(task, each)).text == f"answer to {each.case_id}"
