"""The summary judge's card: calibrated against people's labels, found among the packaged cards.

The card itself (format, matching, reliability wording) is generic: ``scorers.judge_card``. This
module adds what is the summary task's: the card from human labels (``calibrate_labels``, the
whole summary scorer measured by ``label_calibration``), where its packaged cards are
(``default_card_dir``: ``fixtures/summary-judge-cards``) and its criterion types
(``truth.CRITERION_TYPES``), by which reliability is judged per type.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from groundeval.datasets import default_data_dir
from groundeval.scorers import judge_card
from groundeval.scorers.judge_card import (
    CARD_SCHEMA_VERSION,
    KAPPA_THRESHOLD,
    from_people,
    headline,
    matches,
    pins,
    read_card,
    set_text,
    write_card,
)
from groundeval.scorers.labels import LabelSet
from groundeval.scorers.model_graded import GradeStage
from groundeval.scoring import Metric
from groundeval.tasks.summary.judge import Judge
from groundeval.tasks.summary.label_calibration import CaseTruth, measure_labels
from groundeval.tasks.summary.truth import CRITERION_TYPES

__all__ = [
    "CARD_SCHEMA_VERSION", "KAPPA_THRESHOLD", "calibrate_labels", "default_card_dir", "find_card", "from_people",
    "headline", "matches", "pins", "read_card", "reliability_metrics", "set_text", "weak_types", "write_card",
]

JSON = dict[str, Any]


def calibrate_labels(judge: Judge, labels: LabelSet, cases: Mapping[str, CaseTruth], *, max_words: int,
                     min_rubric_score: float, reference_labeller: str | None = None,
                     date: str | None = None, stage: GradeStage | None = None) -> JSON:
    """The judge card from human labels: the whole scorer measured (``label_calibration.measure_labels``).

    The headline ``kappa`` is the whole scorer's per-criterion kappa (rules and judge, as a run
    scores); ``by_layer`` holds the rule-decided and judge-decided criteria apart.

    Args:
        judge: The judge the scorer asks.
        labels: The label file, read (``labels.read_labels``).
        cases: case id -> its case and rubric (``label_calibration.load_cases``).
        max_words: The scorer's word limit.
        min_rubric_score: The rubric score a passing case reaches.
        reference_labeller: The reference labeller, or None for the default rule (``scorers.labels.reference``).
        date: ISO date to record (default: today, UTC).
        stage: Asks the judge's questions (default: one after another; the card is the same).

    Raises:
        DatasetError: See ``measure_labels``.
        JudgeError: The judge's model failed.
    """
    figures = measure_labels(labels, judge, cases, max_words=max_words, min_rubric_score=min_rubric_score,
                             reference_labeller=reference_labeller, stage=stage)
    rule = f"labeller {reference_labeller}" if reference_labeller else "first labeller who is not the writer"
    return {
        **pins(judge, date),
        "calibration_set": {**labels.facts(), "reference": rule,
                            "scorer": {"max_words": max_words, "min_rubric_score": min_rubric_score}},
        **headline(figures["overall"]), **figures,
    }


def default_card_dir() -> Path:
    """The packaged judge cards: ``fixtures/summary-judge-cards``."""
    return default_data_dir("summary-judge-cards")


def find_card(judge: Judge, given: Path | None) -> tuple[JSON | None, str]:
    """The card for ``judge``: ``given`` (``--groundeval-judge-card``), else a packaged one.

    See ``scorers.judge_card.find_card``.

    A local judge's identity is its GGUF's SHA-256, so moving or renaming the file keeps its card.

    Raises:
        ConfigError: ``given`` is unreadable, or is a card of another judge or prompt.
    """
    return judge_card.find_card(judge, given, default_card_dir(), task="summary")


def weak_types(card: Mapping[str, Any]) -> list[str]:
    """The summary criterion types a card does not vouch for (``scorers.judge_card.weak_types``)."""
    return judge_card.weak_types(card, CRITERION_TYPES)


def reliability_metrics(judge: Judge, card: Mapping[str, Any] | None) -> dict[str, Metric]:
    """The judge's reliability beside the judged scores (``scorers.judge_card.reliability_metrics``).

    Anything but ``calibrated`` leaves the verdicts ungated (``SummaryTask.run_facts``).
    """
    return judge_card.reliability_metrics(judge, card, CRITERION_TYPES)
