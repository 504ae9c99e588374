"""A toy model-graded task of its own: a judge, its calibration and its card, with no summary import.

Run as a script (``tests/scorers/test_toy_graded_task.py`` does, in a fresh interpreter): it prints
one JSON object of what it measured and whether ``groundeval.tasks.summary`` was ever imported.
"""

from __future__ import annotations

import json
import sys
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from groundeval.datasets import Case
from groundeval.execution.score_stage import ScoreStage
from groundeval.models.base import ModelRequest
from groundeval.scorers.calibration import Known, measure_judge, measure_labels
from groundeval.scorers.judge_card import find_card, headline, pins, reliability_metrics, write_card
from groundeval.scorers.judge_card_text import card_lines
from groundeval.scorers.labels import Labelled, read_labels
from groundeval.scorers.model_graded import JudgeError, ModelGrader, Question, Verdict, grade_case, role_usage
from groundeval.scoring import Parsed, Score
from groundeval.testing import ScriptedModel

TYPES = ("vital",)
CRITERIA = [{"id": "pulse", "type": "vital", "kind": "must_mention", "word": "pulse"},
            {"id": "temp", "type": "vital", "kind": "must_mention", "word": "temperature"}]


def _reply(request: ModelRequest) -> str:
    """The toy judge's model: says yes when the criterion's word is in the text (a perfect judge)."""
    user = str(request.messages[-1]["content"])
    word, _, text = user.partition("\n")
    return "yes" if word in text else "no"


def _parse(raw: str, text: str) -> tuple[bool, str, str | None]:
    del text
    return (raw == "yes", raw, None) if raw in ("yes", "no") else (False, raw[:200], "format_not_ok")


class ToyScorer:
    """Every criterion goes to the judge; the case passes when all are met."""

    def __init__(self, grader: ModelGrader) -> None:
        self.grader = grader

    def questions(self, case: Case, truth: Any, parsed: Parsed) -> list[Question]:
        text = str(parsed.value)
        return [Question(c["id"], lambda c=c: self.grader.grade(f"{c['word']}\n{text}", text, label=c["id"]))
                for c in truth]

    def score(self, case: Case, truth: Any, parsed: Parsed,
              grades: Mapping[str, Verdict | JudgeError] | None = None) -> Score:
        grades = dict(grades or {})
        entries = [{"id": c["id"], "type": c["type"], "kind": c["kind"], "decided_by": "judge",
                    "met": getattr(grades.get(c["id"]), "met", False)} for c in truth]
        ok = all(e["met"] for e in entries)
        return Score("passed" if ok else "failed", {"met": sum(e["met"] for e in entries)},
                     {"criteria": entries}, usage=role_usage(grades.values()))


class ToyTask:
    """Just enough of a task for ``grade_case``."""

    def __init__(self, scorer: ToyScorer) -> None:
        self.scorer = scorer


class ToyLabels:
    """The toy scorer, one labelled text at a time (``scorers.calibration.LabelScorer``)."""

    def __init__(self, scorer: ToyScorer) -> None:
        self.scorer = scorer

    def questions(self, labelled: Labelled) -> Sequence[Question]:
        return self.scorer.questions(CASE, CRITERIA, Parsed(labelled.summary, True))

    def score(self, labelled: Labelled, grades: Mapping[str, Verdict | JudgeError]) -> tuple[bool, Sequence[Any]]:
        score = self.scorer.score(CASE, CRITERIA, Parsed(labelled.summary, True), grades=grades)
        return score.outcome == "passed", score.details["criteria"]


CASE = Case(case_id="toy-1", source=Path("toy-1.json"), sha256="0" * 64, data={})


def main() -> dict[str, Any]:
    model = ScriptedModel(_reply, role="judge", name="toy-judge")
    grader = ModelGrader(model, system="grade one vital sign", prompt_sha256="toy-prompt", parse=_parse,
                         max_tokens=8)
    scorer = ToyScorer(grader)
    stage = ScoreStage(2)
    try:
        score = grade_case(ToyTask(scorer), CASE, CRITERIA, Parsed("pulse 80, temperature 37", True), stage)
        texts = ["pulse 80", "temperature 37", "pulse 80, temperature 37"]
        known = [Known(Question(f"{i}/{c['id']}", lambda t=t, c=c: grader.grade(f"{c['word']}\n{t}", t, label="k")),
                       c["word"] in t, {"by_type": c["type"]}, {"text": i, "criterion": c["id"]})
                 for i, t in enumerate(texts) for c in CRITERIA]
        alone = measure_judge(known, {"by_type": TYPES}, stage=stage)
        with tempfile.TemporaryDirectory() as folder:
            path = Path(folder) / "labels.jsonl"
            rows = [{"case_id": "toy-1", "summary_id": str(i), "labeller": "a", "summary": t,
                     "labels": {c["id"]: "met" if c["word"] in t else "not_met" for c in CRITERIA},
                     "verdict": "pass" if i == 2 else "fail"} for i, t in enumerate(texts)]
            path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
            labels = read_labels(path)
            figures = measure_labels(labels, ToyLabels(scorer), types=TYPES, kinds=("must_mention",), stage=stage)
            card = {**pins(grader, "2026-01-01"), "calibration_set": {**labels.facts(), "reference": "a"},
                    **headline(figures["overall"]), **figures}
            write_card(card, Path(folder) / "cards" / "toy.json")
            found, where = find_card(grader, None, Path(folder) / "cards", task="toy")
            reliability = reliability_metrics(grader, found, TYPES)
            lines = card_lines(card)
    finally:
        stage.close()
    return {"outcome": score.outcome, "judge_calls": score.usage.get("judge_calls"),
            "alone_kappa": alone["overall"]["kappa"]["value"], "alone_wrong": alone["wrong"],
            "labels_kappa": card["kappa"], "verdict_agreement": card["verdicts"]["agreement"]["value"],
            "where": where, "reliability": reliability["judge_reliability"], "lines": len(lines),
            "summary_imported": any(m.startswith("groundeval.tasks.summary") for m in sys.modules)}


if __name__ == "__main__":
    print(json.dumps(main()))
