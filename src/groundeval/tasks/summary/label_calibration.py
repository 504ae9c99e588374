"""Calibration against people: the whole scorer measured on human-labelled summaries.

``measure_labels`` scores every summary of a label file (``labels.read_labels``) with the
**whole scorer** (``SummaryScorer``: the rules, then the judge for what they leave open, exactly
as a run scores) and compares its decisions with the reference labeller's (``labels.reference``):

* **per criterion** (the scorer's ``met`` against the label, mapped to binary: ``met`` is True;
  ``not_met`` and ``contradicted`` are False; for a ``must_not_state`` criterion True means the
  mistake was made): agreement, Cohen's kappa, sensitivity and specificity, overall, per
  criterion type, per kind, and per layer (``rule``: the criteria the rules decided; ``judge``:
  those they left to the judge), each with its interval and n (``agreement``);
* **per summary**: the scorer's case verdict (``passed``) against the labeller's ``verdict``:
  agreement and kappa, **false passes** (passed, the labeller would not sign it; over the
  summaries the labeller failed) and **false fails** (failed, the labeller would sign it; over
  those the labeller passed), overall and per summary ``kind``;
* **between labellers**: on summaries labelled by more than one, the reference against the next
  labeller (per criterion and per verdict): the ceiling a scorer can be expected to reach.

A judge reply that holds no verdict (``judge.NO_VERDICT_FLAGS``) is scored as a **wrong** verdict
(the opposite of the reference label) and counted (``judge_no_verdict``): a weak judge gets a
card that shows it, never an aborted calibration. A model failure (``JudgeError``) stops the
calibration (no card can rest on missing calls).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from groundeval.errors import DatasetError
from groundeval.scorers.agreement import binary_figures, kappa, proportion
from groundeval.scoring import Metric, Parsed
from groundeval.tasks.summary.judge import NO_VERDICT_FLAGS, Judge
from groundeval.tasks.summary.labels import Labelled, LabelSet, reference
from groundeval.tasks.summary.truth import CRITERION_TYPES

__all__ = ["CaseTruth", "load_cases", "measure_labels"]

JSON = dict[str, Any]
_FAITHFUL = ("faithful_prose", "faithful_structured", "faithful_terse")


@dataclass(frozen=True, slots=True)
class CaseTruth:
    """What scoring one labelled summary needs of its case.

    Attributes:
        case: The ``datasets.Case`` (a packaged summary case).
        truth: Its rubric (``truth.summary_rubric``).
    """

    case: Any
    truth: Mapping[str, Any]


def _binary(label: str) -> bool:
    return label == "met"


def _no_reliability() -> dict[str, Metric]:
    return {}


def _verdict_figures(pairs: Sequence[tuple[Labelled, bool]]) -> JSON:
    """Case verdicts: agreement, kappa, false passes and false fails (scorer passed vs labeller passed)."""
    human = [x.passed for x, _ in pairs]
    scorer = [p for _, p in pairs]
    return {
        "n": len(pairs), "labeller_passed": sum(human), "scorer_passed": sum(scorer),
        "agreement": proportion([h == s for h, s in zip(human, scorer, strict=True)], "summary"),
        "kappa": kappa(human, scorer),
        "false_passes": proportion([s for h, s in zip(human, scorer, strict=True) if not h],
                                   "summary the labeller failed"),
        "false_fails": proportion([not s for h, s in zip(human, scorer, strict=True) if h],
                                  "summary the labeller passed"),
    }


def _inter_rater(labels: LabelSet, chosen: Mapping[str, Labelled]) -> JSON:
    """The reference against the next labeller of each doubly labelled summary."""
    criteria: list[tuple[bool, bool]] = []
    verdicts: list[tuple[bool, bool]] = []
    pairs: dict[str, int] = {}
    for summary_id, ref in chosen.items():
        other = next((x for x in labels.by_summary[summary_id] if x.labeller != ref.labeller), None)
        if other is None:
            continue
        pairs[f"{ref.labeller} / {other.labeller}"] = pairs.get(f"{ref.labeller} / {other.labeller}", 0) + 1
        criteria += [(_binary(v), _binary(other.labels[k])) for k, v in ref.labels.items() if k in other.labels]
        verdicts.append((ref.passed, other.passed))
    if not verdicts:
        return {"summaries": 0, "why": "no summary is labelled by more than one labeller"}
    return {"summaries": len(verdicts), "pairs": pairs, "criteria": binary_figures(criteria),
            "verdict_kappa": kappa([a for a, _ in verdicts], [b for _, b in verdicts]),
            "verdict_agreement": proportion([a == b for a, b in verdicts], "summary")}


def measure_labels(labels: LabelSet, judge: Judge, cases: Mapping[str, CaseTruth], *, max_words: int,
                   min_rubric_score: float, reference_labeller: str | None = None) -> JSON:
    """Score every labelled summary with the whole scorer and compare with the reference labels.

    Args:
        labels: The label file, read.
        judge: The judge the scorer asks.
        cases: case id -> its case and rubric, for every case the file names.
        max_words: The scorer's word limit (a run's ``max_words``).
        min_rubric_score: The rubric score a passing case reaches (a run's ``min_rubric_score``).
        reference_labeller: The labeller to measure against (``labels.reference``), or None.

    Returns:
        ``{"overall", "by_type", "by_kind", "by_layer": {"rule", "judge"}, "verdicts",
        "verdicts_by_kind", "inter_rater", "judge_no_verdict", "summaries", "criteria",
        "not_labelled", "left_out", "disagreements"}`` (figures as ``agreement.binary_figures``).

    Raises:
        DatasetError: A line names a case not in ``cases``, a criterion id its case does not have,
            or ``reference_labeller`` labelled no summary.
        JudgeError: The judge's model failed (a reply without a verdict does not raise).
    """
    from groundeval.tasks.summary.scorer import SummaryScorer

    scorer = SummaryScorer(judge, max_words=max_words, min_rubric_score=min_rubric_score,
                           reliability=_no_reliability)
    chosen: dict[str, Labelled] = {}
    left_out = 0
    for summary_id, lines in labels.by_summary.items():
        ref = reference(lines, reference_labeller)
        if ref is None:
            left_out += 1
        else:
            chosen[summary_id] = ref
    if not chosen:
        raise DatasetError(str(labels.path), f"--reference-labeller {reference_labeller} labelled no summary; "
                                             f"the labellers are {', '.join(labels.labellers)}")
    items: list[JSON] = []
    verdicts: list[tuple[Labelled, bool]] = []
    not_labelled = 0
    no_verdict = 0
    for summary_id, ref in chosen.items():
        found = cases.get(ref.case_id)
        if found is None:
            raise DatasetError(f"{labels.path}:{ref.line}", f"case_id {ref.case_id} is not a summary case here; "
                                                            "use the id of a file in fixtures/summary (or --data-dir)")
        criteria = {c["id"]: c for c in found.truth["criteria"]}
        unknown = sorted(set(ref.labels) - set(criteria))
        if unknown:
            raise DatasetError(f"{labels.path}:{ref.line}", f"criterion id(s) {', '.join(unknown)} are not in case "
                                                            f"{ref.case_id}'s rubric ({', '.join(criteria)})")
        score = scorer.score(found.case, found.truth, Parsed(value=ref.summary, format_ok=bool(ref.summary.strip())))
        verdicts.append((ref, score.outcome == "passed"))
        for entry in score.details["criteria"]:
            label = ref.labels.get(entry["id"])
            if label is None:
                not_labelled += 1
                continue
            human = _binary(label)
            unjudged = entry.get("flag") in NO_VERDICT_FLAGS
            no_verdict += unjudged
            items.append({"summary_id": summary_id, "criterion": entry["id"], "type": entry["type"],
                          "kind": entry["kind"], "layer": entry["decided_by"], "label": label, "human": human,
                          "scorer": (not human) if unjudged else bool(entry["met"]), "flag": entry.get("flag"),
                          "summary_kind": ref.kind})

    def figures(selected: Sequence[JSON]) -> JSON:
        return binary_figures([(i["human"], i["scorer"]) for i in selected])

    kinds = list(dict.fromkeys(x.kind for x, _ in verdicts if x.kind))
    wrong = [{k: i[k] for k in ("summary_id", "criterion", "layer", "label", "scorer", "flag")}
             for i in items if i["human"] != i["scorer"]]
    return {
        "summaries": len(chosen), "criteria": len(items), "not_labelled": not_labelled, "left_out": left_out,
        "judge_no_verdict": no_verdict,
        "overall": figures(items),
        "by_type": {t: figures([i for i in items if i["type"] == t]) for t in CRITERION_TYPES
                    if any(i["type"] == t for i in items)},
        "by_kind": {k: figures([i for i in items if i["kind"] == k]) for k in ("must_mention", "must_not_state")
                    if any(i["kind"] == k for i in items)},
        "by_layer": {layer: figures([i for i in items if i["layer"] == layer]) for layer in ("rule", "judge")},
        "verdicts": _verdict_figures(verdicts),
        "verdicts_by_kind": {k: _verdict_figures([(x, p) for x, p in verdicts if x.kind == k]) for k in kinds},
        "verdicts_faithful_vs_flawed": {
            "faithful": _verdict_figures([(x, p) for x, p in verdicts if x.kind in _FAITHFUL]),
            "flawed": _verdict_figures([(x, p) for x, p in verdicts if x.kind and x.kind not in _FAITHFUL]),
        } if kinds else None,
        "inter_rater": _inter_rater(labels, chosen),
        "wrong": len(wrong), "disagreements": wrong[:30],
    }


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
