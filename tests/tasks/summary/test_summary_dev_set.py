"""The development set (5 records kept out of the calibration set): its flawed summaries fail.

The text rules are developed on ``fixtures/summary-calibration/dev-labels.jsonl``; whatever a rule
change credits, a summary written with one clinical error or as a gaming attempt must still fail.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from groundeval.scoring import Parsed
from groundeval.tasks.summary.judge import BaselineJudge
from groundeval.tasks.summary.label_calibration import load_cases
from groundeval.tasks.summary.labels import read_labels

ROOT = Path(__file__).resolve().parents[3]
DEV = ROOT / "fixtures" / "summary-calibration" / "dev-labels.jsonl"
CALIBRATION = ROOT / "fixtures" / "summary-calibration" / "labels.jsonl"


def test_the_development_set_shares_no_record_with_the_calibration_set() -> None:
    assert not set(read_labels(DEV).case_ids) & set(read_labels(CALIBRATION).case_ids)


def test_every_flawed_development_summary_fails() -> None:
    from groundeval.tasks.summary.scorer import SummaryScorer

    labels = read_labels(DEV)
    cases = load_cases(labels.case_ids, ROOT / "fixtures" / "summary")
    scorer = SummaryScorer(BaselineJudge(), max_words=250, min_rubric_score=0.8, reliability=dict)
    flawed = [lines[0] for lines in labels.by_summary.values() if lines[0].kind in ("clinical_error", "gaming")]
    assert len(flawed) >= 13
    for line in flawed:
        found = cases[line.case_id]
        score = scorer.score(found.case, found.truth, Parsed(line.summary, True))
        assert score.outcome == "failed", (line.summary_id, line.flaw)


@pytest.mark.parametrize("kind", ["faithful_prose", "faithful_structured"])
def test_the_development_set_holds_each_faithful_style(kind: str) -> None:
    assert any(lines[0].kind == kind for lines in read_labels(DEV).by_summary.values())
