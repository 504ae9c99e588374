"""Calibration against people: the whole summary scorer measured on human-labelled summaries.

``measure_labels`` scores every summary of a label file (``labels.read_labels``) with the
**whole scorer** (``SummaryScorer``: the rules, then the judge for what they leave open, exactly
as a run scores) and compares its decisions with the reference labeller's
(``scorers.labels.reference``), through the generic measurement (``scorers.calibration.measure_labels``):

* **per criterion** (the scorer's ``met`` against the label, mapped to binary: ``met`` is True;
  ``not_met`` and ``contradicted`` are False; for a ``must_not_state`` criterion True means the
  mistake was made): agreement, Cohen's kappa, sensitivity and specificity, overall, per
  criterion type, per kind, and per layer (``rule``: the criteria the rules decided; ``judge``:
  those they left to the judge), each with its interval and n (``scorers.agreement``);
* **per summary**: the scorer's case verdict (``passed``) against the labeller's ``verdict``:
  agreement and kappa, **false passes** and **false fails**, overall and per summary ``kind``;
* **between labellers**: on summaries labelled by more than one, the reference against the next
  labeller: the ceiling a scorer can be expected to reach.

A judge reply that holds no verdict is scored as a **wrong** verdict and counted
(``judge_no_verdict``). A model failure (``JudgeError``) stops the calibration. The judge's
questions of every summary are asked by one ``GradeStage`` (``groundeval calibrate
--concurrency``): the card is the same as asked one after another.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from groundeval.errors import DatasetError
from groundeval.scorers import calibration
from groundeval.scorers.labels import Labelled, LabelSet
from groundeval.scorers.model_graded import GradeStage, JudgeError, Question, Verdict
from groundeval.scoring import Metric, Parsed
from groundeval.tasks.summary.judge import Judge
from groundeval.tasks.summary.labels import KINDS
from groundeval.tasks.summary.truth import CRITERION_TYPES

if TYPE_CHECKING:
    from groundeval.tasks.summary.scorer import SummaryScorer

__all__ = ["CRITERION_KINDS", "FAITHFUL_KINDS", "CaseTruth", "LabelledSummaries", "load_cases", "measure_labels"]

JSON = dict[str, Any]
CRITERION_KINDS = ("must_mention", "must_not_state")
FAITHFUL_KINDS = KINDS[:3]
"""The summary kinds written to be faithful (``faithful_prose``, ``faithful_structured``, ``faithful_terse``)."""


@dataclass(frozen=True, slots=True)
class CaseTruth:
    """What scoring one labelled summary needs of its case.

    Attributes:
        case: The ``datasets.Case`` (a packaged summary case).
        truth: Its rubric (``truth.summary_rubric``).
    """

    case: Any
    truth: Mapping[str, Any]


def _no_reliability() -> dict[str, Metric]:
    return {}


class LabelledSummaries:
    """The summary scorer, one labelled summary at a time (``scorers.calibration.LabelScorer``).

    Args:
        scorer: The whole scorer (rules and judge).
        cases: case id -> its case and rubric.
        path: The label file (named in error messages).
    """

    def __init__(self, scorer: SummaryScorer, cases: Mapping[str, CaseTruth], path: Path) -> None:
        self.scorer = scorer
        self.cases = cases
        self.path = path

    def _case(self, ref: Labelled) -> CaseTruth:
        found = self.cases.get(ref.case_id)
        if found is None:
            raise DatasetError(f"{self.path}:{ref.line}", f"case_id {ref.case_id} is not a summary case here; "
                                                          "use the id of a file in fixtures/summary (or --data-dir)")
        return found

    @staticmethod
    def _parsed(ref: Labelled) -> Parsed:
        return Parsed(value=ref.summary, format_ok=bool(ref.summary.strip()))

    def questions(self, labelled: Labelled) -> Sequence[Question]:
        """The criteria the rules leave to the judge (``SummaryScorer.questions``).

        Raises:
            DatasetError: The line names a case not here, or a criterion id its case does not have.
        """
        found = self._case(labelled)
        criteria = {c["id"]: c for c in found.truth["criteria"]}
        unknown = sorted(set(labelled.labels) - set(criteria))
        if unknown:
            where = f"{self.path}:{labelled.line}"
            raise DatasetError(where, f"criterion id(s) {', '.join(unknown)} are not in case {labelled.case_id}'s "
                                      f"rubric ({', '.join(criteria)})")
        return self.scorer.questions(found.case, found.truth, self._parsed(labelled))

    def score(self, labelled: Labelled, grades: Mapping[str, Verdict | JudgeError]) -> tuple[bool, Sequence[JSON]]:
        """The case verdict and the criteria's entries (``SummaryScorer.score`` with the judge's answers)."""
        found = self._case(labelled)
        score = self.scorer.score(found.case, found.truth, self._parsed(labelled), grades=grades)
        return score.outcome == "passed", score.details["criteria"]


    def label_verdict(self, labelled: Labelled) -> bool:
        """The verdict rule on the labeller's own criterion labels (``SummaryScorer.label_verdict``)."""
        found = self._case(labelled)
        return self.scorer.label_verdict(found.truth, labelled.summary, labelled.labels)


def measure_labels(labels: LabelSet, judge: Judge, cases: Mapping[str, CaseTruth], *, max_words: int,
                   min_rubric_score: float, reference_labeller: str | None = None,
                   stage: GradeStage | None = None) -> JSON:
    """Score every labelled summary with the whole scorer and compare with the reference labels.

    Args:
        labels: The label file, read.
        judge: The judge the scorer asks.
        cases: case id -> its case and rubric, for every case the file names.
        max_words: The scorer's word limit (a run's ``max_words``).
        min_rubric_score: The rubric score a passing case reaches (a run's ``min_rubric_score``).
        reference_labeller: The labeller to measure against (``scorers.labels.reference``), or None.
        stage: Asks the judge's questions (default: one after another).

    Returns:
        See ``scorers.calibration.measure_labels``.

    Raises:
        DatasetError: A line names a case not in ``cases``, a criterion id its case does not have,
            or ``reference_labeller`` labelled no summary.
        JudgeError: The judge's model failed (a reply without a verdict does not raise).
    """
    from groundeval.tasks.summary.scorer import SummaryScorer

    scorer = SummaryScorer(judge, max_words=max_words, min_rubric_score=min_rubric_score,
                           reliability=_no_reliability)
    return calibration.measure_labels(labels, LabelledSummaries(scorer, cases, labels.path), types=CRITERION_TYPES,
                                      kinds=CRITERION_KINDS, faithful=FAITHFUL_KINDS,
                                      reference_labeller=reference_labeller, stage=stage)


def load_cases(case_ids: Sequence[str], data_dir: Path) -> dict[str, CaseTruth]:
    """The cases ``case_ids`` name, read from ``data_dir``, with their rubrics.

    Raises:
        DatasetError: A case file is unreadable or malformed.
    """
    from groundeval.clinical.lab_thresholds import default_thresholds
    from groundeval.tasks.summary.cases import read_case
    from groundeval.tasks.summary.truth import summary_rubric

    wanted = set(case_ids)
    out: dict[str, CaseTruth] = {}
    for path in sorted(data_dir.glob("*.json")):
        if path.name.startswith("MANIFEST"):
            continue
        case = read_case(path)
        if case.case_id in wanted:
            out[case.case_id] = CaseTruth(case, summary_rubric(case.data, default_thresholds(), str(path)))
    return out
