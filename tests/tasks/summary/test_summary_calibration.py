"""Calibration: a perfect and a lenient scripted judge give the expected kappas; the packaged baseline card is current."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from groundeval.cli import main as cli_main
from groundeval.models.base import ModelRequest
from groundeval.tasks.summary import SummaryTask
from groundeval.tasks.summary.calibration import calibrate, control_set, default_card_dir
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
    assert card["kappa"] == 1.0 and card["overall"]["sensitivity"] == 1.0 and card["overall"]["specificity"] == 1.0
    assert card["n"] == len(items) and card["judge"] == "scripted/perfect" and card["date"] == "2026-12-02"
    def yes(request: ModelRequest) -> str:  # quotes the summary's first words, so every "yes" stands
        summary = str(request.messages[0]["content"]).split("<<<\n", 1)[1]
        return json.dumps({"met": True, "evidence": summary[:12]})

    lenient = ScriptedModel(yes, role="judge", name="lenient")
    card = calibrate(ModelJudge(lenient), cases)
    assert card["kappa"] == 0.0 and card["overall"]["specificity"] == 0.0  # says yes to everything: no agreement
    low, high = card["kappa_95ci"]
    assert low == high == 0.0


def test_the_packaged_baseline_card_is_what_calibration_measures_now(capsys: pytest.CaptureFixture[str]) -> None:
    committed = json.loads((default_card_dir() / "baseline.json").read_text())
    fresh = calibrate(BaselineJudge(), _cases(), date=committed["date"])
    assert fresh == committed, "regenerate it: uv run groundeval calibrate --task summary --judge baseline " \
                               "-o fixtures/summary-judge-cards/baseline.json"
    # the paraphrase blind spot, in numbers: string matching misses synonyms and cannot see a changed dose
    assert committed["by_variant"]["paraphrase"]["sensitivity"] < 1.0
    assert committed["by_variant"]["change_dose"]["specificity"] < 1.0
    assert committed["by_variant"]["hedged"]["kappa"] == 1.0  # hedged items: neither mentioned nor denied
    assert committed["kappa"] >= 0.6


def test_the_calibrate_command_writes_a_card(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "card.json"
    assert cli_main(["calibrate", "--task", "summary", "--judge", "baseline", "--limit", "2", "-o", str(out)]) == 0
    card = json.loads(out.read_text())
    assert card["judge"] == "baseline" and card["control_set"]["cases"] == 2 and "kappa" in card
    assert "judge baseline (prompt " in capsys.readouterr().out
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
