"""Calibration: a perfect and a lenient scripted judge give the expected kappas; the packaged baseline card is current."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from groundeval.cli import main as cli_main
from groundeval.models.base import ModelRequest
from groundeval.tasks.summary import SummaryTask
from groundeval.tasks.summary.calibration import calibrate, control_set
from groundeval.tasks.summary.card import default_card_dir, reliability_metrics
from groundeval.tasks.summary.judge import BaselineJudge, ModelJudge
from groundeval.testing import ScriptedModel
from tests._paths import REPO

TASK = SummaryTask()
CASES = REPO / "fixtures" / "summary"


def _cases(limit: int | None = None) -> list[tuple[str, list[dict[str, Any]]]]:
    out = []
    for path in TASK.case_files(CASES)[:limit]:
        case = TASK.load_case(path)
        out.append((case.case_id, TASK.truth(case)["criteria"]))
    return out


def _quote(summary: str) -> str:
    return summary.splitlines()[0][:30]


def test_every_corruption_changes_the_right_answer_of_its_criterion() -> None:
    items = control_set(_cases(limit=2))
    variants = {i.variant for i in items}
    assert {"faithful", "drop_condition", "drop_lab", "change_dose", "stopped_as_current", "paraphrase"} <= variants
    para = [i for i in items if i.variant == "paraphrase" and i.criterion["type"] == "condition"]
    assert para and all(i.expected for i in para)  # a synonym still mentions it
    made = [i for i in items if i.variant == "stopped_as_current" and i.criterion["type"] == "stopped_medication"]
    assert any(i.expected for i in made)
    hedged = [i for i in items if i.variant == "hedged" and "(past/current)" in i.summary]
    assert any(i.criterion["type"] == "medication" and not i.expected for i in hedged)
    assert any(i.criterion["type"] == "stopped_medication" and i.expected for i in hedged)


def test_a_perfect_and_a_lenient_scripted_judge() -> None:
    cases = _cases(limit=3)
    items = control_set(cases)
    perfect = ScriptedModel([json.dumps({"met": i.expected, "evidence": _quote(i.summary) if i.expected else ""})
                             for i in items], role="judge", name="perfect")
    card = calibrate(ModelJudge(perfect), cases, date="2026-12-02")
    assert card["kappa"] == 1.0 and card["overall"]["sensitivity"]["value"] == 1.0
    assert card["overall"]["specificity"]["value"] == 1.0
    assert card["n"] == len(items) and card["judge"] == "scripted/perfect" and card["date"] == "2026-12-02"
    def yes(request: ModelRequest) -> str:  # quotes the summary's first words, so every "yes" stands
        summary = str(request.messages[0]["content"]).split("<<<\n", 1)[1]
        return json.dumps({"met": True, "evidence": summary[:12]})

    lenient = ScriptedModel(yes, role="judge", name="lenient")
    card = calibrate(ModelJudge(lenient), cases)
    assert card["kappa"] == 0.0 and card["overall"]["specificity"]["value"] == 0.0  # says yes to everything
    assert card["kappa_95ci"] is None  # every resample gives 0: a zero-width interval is no interval
    assert "no width" in card["overall"]["kappa"]["why_no_ci"]


def test_the_control_set_still_shows_the_baseline_blind_spots_and_its_card_never_gates() -> None:
    card = calibrate(BaselineJudge(), _cases(limit=6), date="2026-12-05")
    # string matching misses synonyms: the paraphrase summaries' sensitivity is below 1
    assert card["by_variant"]["paraphrase"]["sensitivity"]["value"] < 1.0
    assert card["calibration_set"]["kind"] == "generated" and "not a calibration against people" in (
        card["calibration_set"]["note"])
    metrics = reliability_metrics(BaselineJudge(), card)
    assert str(metrics["judge_reliability"]).startswith("judge calibrated on generated text only")
    assert metrics["judge_kappa"] is None  # a kappa on our own text is not shown as the judge's


def test_the_calibrate_command_writes_a_card(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "card.json"
    assert cli_main(["calibrate", "--task", "summary", "--judge", "baseline", "--limit", "2", "-o", str(out)]) == 0
    card = json.loads(out.read_text())
    assert card["judge"] == "baseline" and card["calibration_set"]["cases"] == 2 and "kappa" in card
    printed = capsys.readouterr().out
    assert "judge baseline (identity baseline, prompt " in printed and "NOT A CALIBRATION AGAINST PEOPLE" in printed
    assert cli_main(["calibrate", "--judge", "nosuch/model"]) == 2


def test_calibrate_usage_errors_and_hints(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    from groundeval.errors import ConfigError
    from groundeval.tasks.summary.judge import make_judge

    with pytest.raises(SystemExit) as info:
        cli_main(["calibrate", "--task", "summary", "--judge", "baseline", "--limit", "0"])
    assert info.value.code == 2 and "0 cases measure nothing" in capsys.readouterr().err
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    assert cli_main(["calibrate", "--judge", "anthropic/claude-sonnet-5-5"]) == 2
    err = capsys.readouterr().err
    assert "ANTHROPIC_API_KEY is not set" in err and "--judge baseline" in err
    with pytest.raises(ConfigError, match=r"'basline' \(did you mean baseline\?\)"):
        make_judge("basline")


LABELS = REPO / "fixtures" / "summary-calibration" / "labels.jsonl"


def test_the_packaged_card_is_computed_on_the_labelled_set_and_is_what_it_measures_now() -> None:
    """The packaged card never comes from the control set; once the hand-written set is there, the card
    must exist and be what ``calibrate --labels`` measures on it now (regenerate with the documented command).
    Its labels were given by a model acting as a clinician, and the card says so (``model_labels``)."""
    import hashlib

    from groundeval.scorers.judge_card import from_model
    from groundeval.tasks.summary.card import calibrate_labels, from_people
    from groundeval.tasks.summary.label_calibration import load_cases
    from groundeval.tasks.summary.labels import read_labels

    card_path = default_card_dir() / "baseline.json"
    command = ("uv run groundeval calibrate --task summary --judge baseline --labels "
               "fixtures/summary-calibration/labels.jsonl -o fixtures/summary-judge-cards/baseline.json")
    for path in default_card_dir().glob("*.json") if default_card_dir().is_dir() else []:
        found = json.loads(path.read_text())
        assert from_people(found) or from_model(found), f"{path.name} is not computed on a labelled set"
    if not LABELS.is_file():
        assert not card_path.is_file(), "a packaged card without the packaged label set it was computed on"
        return
    assert card_path.is_file(), f"the hand-written set is packaged but its card is not: {command}"
    card = json.loads(card_path.read_text())
    assert card["calibration_set"]["kind"] == "model_labels"  # every line says labelled_by: model
    assert "not people" in str(SummaryTask().aggregate([])["judge_calibration_set"])
    assert str(SummaryTask().aggregate([])["judge_reliability"]).startswith(
        "judge calibrated on model-written labels only")
    assert card["calibration_set"]["sha256"] == hashlib.sha256(LABELS.read_bytes()).hexdigest(), command
    labels = read_labels(LABELS)
    fresh = calibrate_labels(BaselineJudge(), labels, load_cases(labels.case_ids, default_card_dir().parent / "summary"),
                             max_words=250, min_rubric_score=0.8, date=card["date"])
    assert fresh == card, f"regenerate it: {command}"


def test_a_run_reads_a_card_from_people_in_the_packaged_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from groundeval.tasks.summary import card

    folder = tmp_path / "cards"
    assert cli_main(["calibrate", "--task", "summary", "--judge", "baseline", "--labels",
                     str(REPO / "tests" / "tasks" / "summary" / "labels" / "two_labellers.jsonl"),
                     "-o", str(folder / "baseline.json")]) == 0
    monkeypatch.setattr(card, "default_card_dir", lambda: folder)
    task = SummaryTask()
    assert task.card["source"] == "packaged card baseline.json"
    assert "on two_labellers.jsonl (SHA-256" in str(task.aggregate([])["judge_reliability"])
