"""Calibration of a model-graded scorer: its verdicts measured against known answers or people's labels.

Two measurements, for any task whose judge answers ``Question``s (``scorers.model_graded``):

* ``measure_judge``: the **judge alone** on items whose right answer is known (a task's code-made
  control set): each item's question is asked, its verdict compared with the expected answer,
  overall and per group (the summary task groups by criterion type and by corruption).
* ``measure_labels``: the **whole scorer** (rules and judge, as a run scores) on human-labelled
  texts (``scorers.labels``), against the reference labeller: per criterion (overall, per type,
  per kind, per layer: ``rule`` or ``judge`` decided), per text (the scorer's case verdict
  against the labeller's: agreement, kappa, false passes, false fails) and between labellers.

Figures are ``scorers.agreement.binary_figures`` (agreement, sensitivity, specificity with
Wilson intervals, Cohen's kappa with a bootstrap interval, each with n). A judge reply that holds
no verdict (``NO_VERDICT_FLAGS``) is scored as a **wrong** verdict and counted
(``judge_no_verdict``): a weak judge gets a card that shows it, never an aborted calibration. A
model failure (``JudgeError``) stops the calibration: no card can rest on missing calls.

Every question of the set goes to one ``GradeStage`` call (``execution.score_stage.ScoreStage``:
up to ``--concurrency`` judge calls at once; ``SerialGrades``: one after another): the verdicts,
and so the card, are the same either way.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

from groundeval.errors import DatasetError
from groundeval.scorers.agreement import binary_figures, kappa, proportion
from groundeval.scorers.labels import Labelled, LabelSet, reference
from groundeval.scorers.model_graded import NO_VERDICT_FLAGS, GradeStage, JudgeError, Question, SerialGrades, Verdict

__all__ = ["Known", "LabelScorer", "ask_all", "measure_judge", "measure_labels"]

JSON = dict[str, Any]
Grades = dict[str, Verdict | JudgeError]


def ask_all(questions: Sequence[Question], stage: GradeStage | None = None) -> dict[str, Verdict]:
    """Ask every question through ``stage`` (default: one after another); the verdicts by key.

    Raises:
        JudgeError: The first question (in ``questions`` order) whose judge failed, or that was
            not asked because the run stopped.
    """
    grades = (stage or SerialGrades()).run(questions)
    out: dict[str, Verdict] = {}
    for q in questions:
        got = grades.get(q.key)
        if isinstance(got, JudgeError):
            raise got
        if got is None:  # not asked after an earlier failure: that failure is raised first
            failed = next((g for g in grades.values() if isinstance(g, JudgeError)), None)
            raise failed or JudgeError(f"question {q.key} was not asked", called=False)
        out[q.key] = got
    return out


@dataclass(frozen=True, slots=True)
class Known:
    """One question whose right answer is known (one criterion of one control text).

    Attributes:
        question: Asks the judge (its key unique in the set).
        expected: Whether the criterion is met in the text.
        groups: Group name -> this item's value (``{"by_type": "condition"}``): the figures per group.
        shown: What a disagreement line shows of the item.
    """

    question: Question
    expected: bool
    groups: Mapping[str, str] = field(default_factory=dict)
    shown: Mapping[str, Any] = field(default_factory=dict)


def measure_judge(items: Sequence[Known], groups: Mapping[str, Sequence[str]], *, stage: GradeStage | None = None,
                  shown: int = 20) -> JSON:
    """Ask the judge every item and compare with the right answers.

    Args:
        items: The items, in the order disagreements are listed.
        groups: Group name -> its values in report order (a value no item has is left out).
        stage: Asks the questions (default: one after another).
        shown: The most disagreements listed.

    Returns:
        ``{"overall": figures, <group>: {value: figures}..., "judge_no_verdict": n, "wrong": n,
        "disagreements": [the first ``shown`` items judged wrongly, each its ``shown`` and
        ``expected``]}``, figures as ``agreement.binary_figures``. A reply with no verdict counts
        as a wrong verdict.

    Raises:
        JudgeError: The judge's model failed.
    """
    verdicts = ask_all([i.question for i in items], stage)
    pairs: list[tuple[Known, bool]] = []
    no_verdict = 0
    for item in items:
        verdict = verdicts[item.question.key]
        unjudged = verdict.flag in NO_VERDICT_FLAGS
        no_verdict += unjudged
        pairs.append((item, (not item.expected) if unjudged else verdict.met))
    by = {name: {v: binary_figures([(it.expected, met) for it, met in pairs if it.groups.get(name) == v])
                 for v in values if any(it.groups.get(name) == v for it, _ in pairs)}
          for name, values in groups.items()}
    wrong = [{**it.shown, "expected": it.expected} for it, met in pairs if met != it.expected]
    return {"overall": binary_figures([(it.expected, met) for it, met in pairs]), **by,
            "judge_no_verdict": no_verdict, "wrong": len(wrong), "disagreements": wrong[:shown]}


class LabelScorer(Protocol):
    """What ``measure_labels`` needs of a task's scorer, one labelled text at a time."""

    def questions(self, labelled: Labelled) -> Sequence[Question]:
        """The judge's questions for this text (keys unique within it).

        Raises:
            DatasetError: The line names a case or a criterion the task does not have.
        """
        ...

    def score(self, labelled: Labelled, grades: Mapping[str, Verdict | JudgeError]) -> tuple[bool, Sequence[JSON]]:
        """The case verdict (passed) and the criteria's entries.

        Each entry has ``id``, ``type``, ``kind``, ``decided_by`` (``rule`` or ``judge``), ``met``
        and an optional ``flag``.
        """
        ...


def _binary(label: str) -> bool:
    return label == "met"


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
    """The reference against the next labeller of each doubly labelled text."""
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


def _label_verdicts(scorer: LabelScorer, chosen: Mapping[str, Labelled]) -> JSON | None:
    """The task's verdict rule on the reference labeller's own criterion labels, against their verdicts.

    What the rubric itself can reach: a false pass here is a flaw no criterion describes; a false
    fail, a text the labeller signs although the rule would fail their own reading of it. None
    when the scorer does not offer ``label_verdict``.
    """
    rule = getattr(scorer, "label_verdict", None)
    if rule is None:
        return None
    return _verdict_figures([(ref, bool(rule(ref))) for ref in chosen.values()])


def _chosen(labels: LabelSet, reference_labeller: str | None) -> tuple[dict[str, Labelled], int]:
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
    return chosen, left_out


def _grades(scorer: LabelScorer, chosen: Mapping[str, Labelled], stage: GradeStage | None) -> dict[str, Grades]:
    """Every text's questions asked in one stage call; the verdicts by text, then question key."""
    asked: list[tuple[str, str, Question]] = []
    for summary_id, ref in chosen.items():
        asked += [(summary_id, q.key, replace(q, key=f"{summary_id}\x1f{q.key}")) for q in scorer.questions(ref)]
    verdicts = ask_all([q for _, _, q in asked], stage)
    out: dict[str, Grades] = {summary_id: {} for summary_id in chosen}
    for summary_id, key, q in asked:
        out[summary_id][key] = verdicts[q.key]
    return out


def measure_labels(labels: LabelSet, scorer: LabelScorer, *, types: Sequence[str], kinds: Sequence[str],
                   faithful: Sequence[str] = (), reference_labeller: str | None = None,
                   stage: GradeStage | None = None) -> JSON:
    """Score every labelled text with the whole scorer and compare with the reference labels.

    Args:
        labels: The label file, read (``labels.read_labels``).
        scorer: The task's scorer, one labelled text at a time (``LabelScorer``).
        types: The criterion types, in report order (``by_type``).
        kinds: The criterion kinds, in report order (``by_kind``).
        faithful: The text kinds (``Labelled.kind``) written to be faithful; the others are flawed
            (``verdicts_faithful_vs_flawed``).
        reference_labeller: The labeller to measure against (``labels.reference``), or None.
        stage: Asks the judge's questions (default: one after another).

    Returns:
        ``{"summaries", "criteria", "not_labelled", "left_out", "judge_no_verdict", "overall",
        "by_type", "by_kind", "by_layer": {"rule", "judge"}, "verdicts", "verdicts_by_kind",
        "verdicts_faithful_vs_flawed", "verdicts_from_labels", "inter_rater", "wrong",
        "disagreements"}`` (figures as
        ``agreement.binary_figures``).

    Raises:
        DatasetError: ``reference_labeller`` labelled no text, or the scorer refuses a line
            (``LabelScorer.questions``).
        JudgeError: The judge's model failed (a reply without a verdict does not raise).
    """
    chosen, left_out = _chosen(labels, reference_labeller)
    grades = _grades(scorer, chosen, stage)
    items: list[JSON] = []
    verdicts: list[tuple[Labelled, bool]] = []
    not_labelled = 0
    no_verdict = 0
    for summary_id, ref in chosen.items():
        passed, entries = scorer.score(ref, grades[summary_id])
        verdicts.append((ref, passed))
        for entry in entries:
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

    def having(key: str, values: Sequence[str]) -> JSON:
        return {v: figures([i for i in items if i[key] == v]) for v in values if any(i[key] == v for i in items)}

    text_kinds = list(dict.fromkeys(x.kind for x, _ in verdicts if x.kind))
    wrong = [{k: i[k] for k in ("summary_id", "criterion", "layer", "label", "scorer", "flag")}
             for i in items if i["human"] != i["scorer"]]
    return {
        "summaries": len(chosen), "criteria": len(items), "not_labelled": not_labelled, "left_out": left_out,
        "judge_no_verdict": no_verdict,
        "overall": figures(items),
        "by_type": having("type", types),
        "by_kind": having("kind", kinds),
        "by_layer": {layer: figures([i for i in items if i["layer"] == layer]) for layer in ("rule", "judge")},
        "verdicts": _verdict_figures(verdicts),
        "verdicts_by_kind": {k: _verdict_figures([(x, p) for x, p in verdicts if x.kind == k]) for k in text_kinds},
        "verdicts_faithful_vs_flawed": {
            "faithful": _verdict_figures([(x, p) for x, p in verdicts if x.kind in faithful]),
            "flawed": _verdict_figures([(x, p) for x, p in verdicts if x.kind and x.kind not in faithful]),
        } if text_kinds else None,
        "verdicts_from_labels": _label_verdicts(scorer, chosen),
        "inter_rater": _inter_rater(labels, chosen),
        "wrong": len(wrong), "disagreements": wrong[:30],
    }

