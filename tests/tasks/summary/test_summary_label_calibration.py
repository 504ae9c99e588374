"""Calibration against people: the whole scorer measured on the hand-written label files of labels/,
with any judge (baseline, a Judge object, a ScriptedModel, a model spec over a mocked transport)."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from groundeval.cli import main as cli_main
from groundeval.datasets import default_data_dir
from groundeval.errors import DatasetError
from groundeval.tasks.summary.card import calibrate_labels, find_card, reliability_metrics, write_card
from groundeval.tasks.summary.judge import BaselineJudge, ModelJudge, Verdict, make_judge
from groundeval.tasks.summary.label_calibration import load_cases
from groundeval.tasks.summary.labels import read_labels
from groundeval.testing import ScriptedModel

LABELS = Path(__file__).parent / "labels"
TWO = LABELS / "two_labellers.jsonl"
DATA = default_data_dir("summary")


def _card(judge: Any, path: Path = TWO, **kw: Any) -> dict[str, Any]:
    labels = read_labels(path)
    return calibrate_labels(judge, labels, load_cases(labels.case_ids, DATA), max_words=250, min_rubric_score=0.8,
                            date="2026-12-05", **kw)


class OracleJudge:
    """Answers what the reference labeller (reader-b) said: the judge layer then agrees by construction."""

    spec = "tests:oracle"
    prompt_sha256 = "oracle"
    costs_nothing = True

    def __init__(self) -> None:
        self.answers = {(x.summary, k): v == "met" for x in read_labels(TWO).lines if x.labeller == "reader-b"
                        for k, v in x.labels.items()}

    def settings(self) -> dict[str, Any]:
        return {"spec": self.spec}

    def decide(self, criterion: Mapping[str, Any], summary: str, *, label: str) -> Verdict:
        return Verdict(self.answers[(summary, criterion["id"])], summary)


def _figures(node: Any) -> Iterator[Mapping[str, Any]]:
    if isinstance(node, Mapping):
        if "ci" in node and "value" in node:
            yield node
        for value in node.values():
            yield from _figures(value)
    elif isinstance(node, list):
        for value in node:
            yield from _figures(value)


def test_the_card_names_its_set_and_the_default_reference_is_the_first_labeller_who_did_not_write_it() -> None:
    card = _card(BaselineJudge())
    facts = card["calibration_set"]
    assert facts == {"kind": "human_labels", "labelled_by": "people", "file": "two_labellers.jsonl",
                     "sha256": hashlib.sha256(TWO.read_bytes()).hexdigest(), "summaries": 6, "records": 3, "lines": 11,
                     "labellers": ["writer-a", "reader-b"], "doubly_labelled": 5,
                     "reference": "first labeller who is not the writer",
                     "scorer": {"max_words": 250, "min_rubric_score": 0.8}}
    # reader-b is the reference wherever writer-a wrote: reader-b fails garrett/aspirin, writer-a passed it
    assert card["verdicts"]["n"] == 6 and card["verdicts"]["labeller_passed"] == 3
    assert card["summaries"] == 6 and card["criteria"] == 3 + 3 + 3 + 8 + 8 + 4 and card["left_out"] == 0
    named = _card(BaselineJudge(), reference_labeller="writer-a")
    assert named["calibration_set"]["reference"] == "labeller writer-a"
    assert named["left_out"] == 1 and named["verdicts"]["labeller_passed"] == 3  # johnie/terse: not writer-a's


def test_two_labellers_give_their_own_kappa_the_ceiling() -> None:
    ir = _card(BaselineJudge())["inter_rater"]
    assert ir["summaries"] == 5 and ir["pairs"] == {"reader-b / writer-a": 5}
    crit = ir["criteria"]
    # by hand: 25 criteria, 24 agree (writer-a missed the stopped aspirin); reader-b 14 met, writer-a 13:
    # pe = (14 * 13 + 11 * 12) / 25**2 = 0.5024, kappa = (24/25 - pe) / (1 - pe) = 0.9196
    assert crit["n"] == 25 and crit["agreement"]["k"] == 24 and crit["kappa"]["value"] == 0.9196
    # verdicts pass/fail/fail/pass/fail against pass/fail/fail/pass/pass: (0.8 - 0.48) / 0.52
    assert ir["verdict_kappa"]["value"] == 0.6154
    single = read_labels(TWO).by_summary["johnie/terse"]
    assert len(single) == 1  # the one summary with one labeller is not in the pairs


def test_the_layers_are_measured_apart_and_add_up_to_the_whole_scorer() -> None:
    card = _card(OracleJudge())
    whole, rule, judge = card["overall"], card["by_layer"]["rule"], card["by_layer"]["judge"]
    assert rule["n"] + judge["n"] == whole["n"] == card["criteria"]
    assert judge["n"] > 0 and judge["agreement"]["k"] == judge["n"]  # the oracle agrees on all it decides
    assert whole["agreement"]["k"] == whole["n"] - card["wrong"]
    assert all(d["layer"] == "rule" for d in card["disagreements"])  # every disagreement is the rules'
    v = card["verdicts"]
    assert v["agreement"]["k"] + v["false_passes"]["k"] + v["false_fails"]["k"] == v["n"]
    assert v["false_passes"]["n"] == 3 and v["false_fails"]["n"] == 3  # over the labeller's fails, passes
    assert set(card["verdicts_by_kind"]) == {"faithful_structured", "gaming", "faithful_prose", "clinical_error",
                                             "faithful_terse"}


def test_labels_map_to_the_scorers_binary_decision() -> None:
    # reader-b's labels (the reference): met 3 + 0 + 2 (liz/negated: HCTZ "contradicted" is not met)
    # + 4 + 5 (garrett/aspirin: the stopped aspirin's must-not criterion "met": the mistake was made) + 2
    card = _card(BaselineJudge())
    assert (card["overall"]["positives"], card["overall"]["negatives"]) == (16, 13)
    assert card["by_kind"]["must_not_state"]["positives"] == 1 and card["by_kind"]["must_not_state"]["n"] == 4 + 4 + 2


def test_a_prose_answering_model_judge_still_gets_a_card_with_every_unparsed_reply_scored_wrong(
    tmp_path: Path,
) -> None:
    prose = ModelJudge(ScriptedModel(lambda request: "I think the summary is fine overall.", role="judge",
                                     name="prose-model"))
    card = _card(prose)
    judge = card["by_layer"]["judge"]
    assert judge["n"] > 0 and card["judge_no_verdict"] == judge["n"] and judge["agreement"]["k"] == 0
    assert card["judge_identity"] == "prose-model"
    write_card(card, tmp_path / "prose.json")
    found, where = find_card(prose, tmp_path / "prose.json")
    assert found is not None and where.endswith("prose.json")
    status = str(reliability_metrics(prose, found)["judge_reliability"])
    assert status.startswith("judge unreliable") and "two_labellers.jsonl" in status


def test_a_model_spec_over_a_mocked_transport_is_calibrated_through_the_model_layer(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import httpx2

    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test-offline")
    asked: list[str] = []

    def handler(request: httpx2.Request) -> httpx2.Response:
        body = json.loads(request.content)
        asked.append(body["messages"][-1]["content"])
        return httpx2.Response(200, json={
            "id": "msg_1", "type": "message", "role": "assistant", "model": "claude-sonnet-5-5",
            "content": [{"type": "text", "text": '{"met": false, "evidence": ""}'}], "stop_reason": "end_turn",
            "usage": {"input_tokens": 120, "output_tokens": 9}})

    judge = make_judge("anthropic/claude-sonnet-5-5", http_client=httpx2.Client(transport=httpx2.MockTransport(handler)),
                       options={"max_retries": 0})
    card = _card(judge)
    assert asked and len(asked) == card["by_layer"]["judge"]["n"]  # one call per judge-decided criterion
    assert card["judge"] == "anthropic/claude-sonnet-5-5" and card["judge_identity"] == "claude-sonnet-5-5"
    assert card["judge_no_verdict"] == 0


def test_every_figure_without_an_interval_says_why() -> None:
    card = _card(BaselineJudge())
    figures = list(_figures(card))
    assert len(figures) > 20
    for fig in figures:
        assert fig["ci"] is not None or fig.get("why_no_ci"), fig
    assert card["by_type"]["no_medication"]["kappa"]["why_no_ci"].startswith("kappa undefined: every reference")


@pytest.mark.parametrize(("line", "message"), [
    ('{"case_id": "Liz_Conn_27c911c6"}', "summary_id is None"),
    ('{"case_id": "Liz_Conn_27c911c6", "summary_id": "s", "labeller": "a", "summary": "x", '
     '"labels": {"no_condition": "yes"}, "verdict": "pass"}', "label of no_condition is 'yes'"),
    ('{"case_id": "Liz_Conn_27c911c6", "summary_id": "s", "labeller": "a", "summary": "x", '
     '"labels": {"no_condition": "met"}, "verdict": "ok"}', "verdict is 'ok'; use pass or fail"),
    ("not json", "not JSON"),
])
def test_a_bad_label_line_names_the_file_line_value_and_fix(tmp_path: Path, line: str, message: str) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text(TWO.read_text().splitlines()[0] + "\n\n" + line + "\n")
    with pytest.raises(DatasetError, match=message) as info:
        read_labels(path)
    assert "bad.jsonl:3" in str(info.value)


def test_a_label_of_a_criterion_the_case_lacks_and_a_changed_summary_text_are_refused(tmp_path: Path) -> None:
    first = json.loads(TWO.read_text().splitlines()[0])
    path = tmp_path / "drift.jsonl"
    path.write_text(json.dumps(first) + "\n" + json.dumps({**first, "labeller": "c", "summary": "other"}) + "\n")
    with pytest.raises(DatasetError, match="another summary text than on line 1"):
        read_labels(path)
    path.write_text(json.dumps({**first, "labels": {"condition:1": "met"}}) + "\n")
    with pytest.raises(DatasetError, match=r"criterion id\(s\) condition:1 are not in case Liz_Conn_27c911c6"):
        _card(BaselineJudge(), path)


def test_the_calibrate_command_with_labels_writes_a_card_a_run_reads_and_prints_beside_the_kappa(
    tmp_path: Path, capsys: pytest.CaptureFixture[str],
) -> None:
    out = tmp_path / "baseline.json"
    assert cli_main(["calibrate", "--task", "summary", "--judge", "baseline", "--labels", str(TWO), "-o", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "on two_labellers.jsonl (SHA-256 " in printed and "6 summaries, 3 records; labellers writer-a, reader-b" \
        in printed
    assert "between labellers (5 summaries; reader-b / writer-a): criteria kappa 0.92" in printed
    assert "None" not in printed
    from groundeval.tasks.summary import SummaryTask

    task = SummaryTask(judge_card=str(out))
    agg = task.aggregate([])
    assert agg["judge_calibration_set"] == json.loads(out.read_text())["calibration_set"]["file"] + (
        f" (SHA-256 {hashlib.sha256(TWO.read_bytes()).hexdigest()[:12]}; 6 summaries, 3 records; labellers "
        "writer-a, reader-b)")
    assert "on two_labellers.jsonl" in str(agg["judge_reliability"])
    assert task.run_facts()["judge_card"]["calibration_set"]["file"] == "two_labellers.jsonl"
    assert cli_main(["calibrate", "--judge", "baseline", "--labels", str(TWO), "--limit", "2"]) == 2
    assert "--limit bounds the control set" in capsys.readouterr().err


def test_the_verdict_rule_on_the_labellers_own_labels_is_measured_beside_the_scorers() -> None:
    card = _card(BaselineJudge())
    labels = read_labels(TWO)
    cases = load_cases(labels.case_ids, DATA)
    from groundeval.tasks.summary.scorer import SummaryScorer

    scorer = SummaryScorer(BaselineJudge(), max_words=250, min_rubric_score=0.8, reliability=dict)
    aspirin = next(x for x in labels.by_summary["garrett/aspirin"] if x.labeller == "reader-b")
    truth = cases[aspirin.case_id].truth
    # reader-b marked the stopped aspirin stated as current: the rule fails that reading, as reader-b did
    assert aspirin.verdict == "fail" and not scorer.label_verdict(truth, aspirin.summary, aspirin.labels)
    every_item_met = {str(c["id"]): "met" if c["points"] > 0 else "not_met" for c in truth["criteria"]}
    assert scorer.label_verdict(truth, aspirin.summary, every_item_met)
    first = str(next(c["id"] for c in truth["criteria"] if c["points"] > 0))
    assert not scorer.label_verdict(truth, aspirin.summary, {**every_item_met, first: "contradicted"})
    fl = card["verdicts_from_labels"]
    assert fl["n"] == card["verdicts"]["n"] == 6 and fl["labeller_passed"] == 3
    assert fl["agreement"]["k"] + fl["false_passes"]["k"] + fl["false_fails"]["k"] == fl["n"]
    from groundeval.scorers.judge_card_text import card_lines

    assert any("the verdict rule on the labeller's own criterion labels" in line for line in card_lines(card))


def test_a_set_a_model_labelled_is_recorded_so_and_never_gates(tmp_path: Path) -> None:
    """Labels a model gave (``labelled_by: model``) are measured and shown, never as people's, and never gate."""
    from groundeval.scorers.judge_card import reliability_metrics
    from groundeval.tasks.summary.truth import CRITERION_TYPES

    rows = [json.loads(line) for line in TWO.read_text().splitlines() if line.strip()]
    path = tmp_path / "model.jsonl"
    path.write_text("".join(json.dumps({**r, "labelled_by": "model"}) + "\n" for r in rows))
    facts = read_labels(path).facts()
    assert facts["kind"] == "model_labels" and facts["labelled_by"] == "a model acting as a clinician"
    mixed = tmp_path / "mixed.jsonl"
    mixed.write_text("".join(json.dumps({**r, "labelled_by": "model"} if i else r) + "\n" for i, r in enumerate(rows)))
    assert read_labels(mixed).facts()["labelled_by"] == "people and a model acting as a clinician"
    card = {"judge": "baseline", "prompt_sha256": "x", "kappa": 0.95, "calibration_set": facts, "date": "2026-12-06",
            "overall": {"kappa": {"value": 0.95, "ci": [0.9, 1.0], "n": 99}}}
    got = reliability_metrics(BaselineJudge(), card, CRITERION_TYPES)
    assert str(got["judge_reliability"]).startswith("judge calibrated on model-written labels only (kappa 0.95")
    assert "verdicts not gated" in str(got["judge_reliability"]) and "not people" in str(got["judge_calibration_set"])
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps({**rows[0], "labelled_by": "robot"}) + "\n")
    with pytest.raises(DatasetError, match=r"bad.jsonl:1: labelled_by is 'robot'; use person or model"):
        read_labels(bad)
