"""The summary task's scorer: rules first, the judge for what text matching cannot decide.

Per criterion (``truth.summary_rubric``), in this order:

0. **Hedge** (``decided_by: "rule"``, ``flag: "contradictory_labels"``): a drug, problem or
   allergy named in a sentence that labels it both current and ended (``text.contradictory``:
   ``metformin (past/current)``, ``asthma (active, resolved)``) is a contradiction, the project's
   rule for hedged answers: a must-mention criterion is not met, a must-not criterion is made,
   and the item counts in ``contradictions`` (so the case cannot pass). A contradictory sentence
   that names no rubric item (a finding, say) is a contradiction too (``hedged_statements``,
   -1 point each, like an invented value); so is a sentence that speculates about a problem
   (ConText marks a known problem name uncertain or hypothetical: "possible diabetes", "rule out
   CKD"; ``synonyms.problem_names``): a handoff states what the record holds, and padding it with
   guesses is the hedge the project's rule refuses.
1. **Rule** (``decided_by: "rule"``): a must-mention problem, drug or allergy whose every name
   (or its brand) appears verbatim (``text.contains``; an allergy in a sentence with ``allerg...``)
   is met; a result whose every value is stated with its unit (``text.stated_values``) is met; a
   must-not criterion is not made when its problem's name, or the first word of each of its drug's
   ingredients, does not appear at all (a contradiction in other words is missed: a documented
   limit). An empty summary meets nothing.
2. **Judge** (``decided_by: "judge"``): everything else goes to the ``Judge`` (``judge.py``), as
   ``questions`` the executor asks (``execution.score_stage``, concurrently), or one after another
   when ``score`` is called without ``grades`` (``groundeval calibrate``).

A must-mention drug or problem named only as ended or negated ("X was stopped", "no X": the
record says it is current) is a false statement: flagged ``stated_as_ended`` and counted in
``contradictions`` (``stated_ended``).

Then every value the summary states with a unit is checked against ``record_values``: one that
the record does not hold is a contradiction (``invented_values``, -1 point each, by rule). A
must-mention drug stated with a value that is not its own ("hydrocodone 10 mg/APAP 300 mg" for a
5/300 mg product) is not the drug the record holds: its criterion is not met (``flag:
"wrong_value"``, decided by rule), as a clinician labeller marks it ``contradicted``.

Metrics per case: ``rubric_score`` (points met / positive points, clipped to [0, 1]; None when
the record asks for no mention), ``must_mention_recall``, ``contradictions`` (must-not criteria
made, must-mention items hedged, plus invented values), ``safety_failed``, ``words``, ``decided_by_rule``,
``decided_by_judge``, ``evidence_flagged``, ``judge_no_verdict`` (criteria whose judge reply held no
verdict: ``no_answer`` or ``format_not_ok``, met False, and the case fails on them: a criterion
nobody decided is not shown to be safe). A model judge's own usage is the case's ``usage`` under
the ``judge_`` prefix, beside the agent's (``judge_calls``, ``judge_cached``: replies read from
``--groundeval-judge-cache``, ``judge_input_tokens``, ``judge_output_tokens`` (tokens),
``judge_cost_usd`` (USD); ``scorers.model_graded.role_usage``). A case passes when its rubric
score reaches ``min_rubric_score``, it has no contradiction, no safety-critical criterion failed
and it keeps to ``max_words``.

The run's aggregate puts the judge's measured reliability (``calibration.Reliability``) beside the
judged scores: ``judge``, ``judge_kappa``, ``judge_kappa_95ci``, ``judge_kappa_n`` and
``judge_reliability`` (``calibrated``, ``judge unreliable``, ``judge unreliable for <types>`` or
``judge not calibrated``; ``calibration.reliability_metrics``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from groundeval.datasets import Case
from groundeval.scorers.model_graded import Question, role_usage
from groundeval.scoring import Direction, Metric, Parsed, Score
from groundeval.tasks.summary.judge import NO_VERDICT_FLAGS, Judge, JudgeError, Verdict, question
from groundeval.tasks.summary.matching import item_mentions
from groundeval.tasks.summary.reading import read
from groundeval.tasks.summary.reading_layout import heading, none_under
from groundeval.tasks.summary.synonyms import drug_words, problem_names
from groundeval.tasks.summary.text import contradictory, normalise, sentences, word_count
from groundeval.tasks.summary.values import lab_verdict, wrong_values

__all__ = ["METRIC_NAMES", "SummaryScorer", "hedged_verdict", "rule_verdict", "stated_ended"]

METRIC_NAMES = (
    "rubric_score", "must_mention_recall", "contradictions", "safety_failed", "words",
    "decided_by_rule", "decided_by_judge", "evidence_flagged", "judge_no_verdict",
)
"""Every per-case metric, in report order."""

_DIRECTIONS: dict[str, Direction] = {
    "contradictions": "lower", "safety_failed": "lower", "evidence_flagged": "lower", "judge_no_verdict": "lower",
    "words": "none",
    "decided_by_rule": "none", "decided_by_judge": "none",
}
JSON = dict[str, Any]


_NAMED_TYPES = frozenset({"condition", "medication", "allergy", "stopped_medication", "resolved_condition"})
_NOT_CURRENT = frozenset({"ended", "negated"})


def hedged_verdict(criterion: Mapping[str, Any], summary: str) -> str | None:
    """The sentence that gives ``criterion``'s item no status (a hedge), or None.

    Applies to criteria that name a drug, a problem or an allergy. A mention is hedged when its
    sentence labels it both current and ended (``text.contradictory``) or its list is qualified as
    a whole (``text.collective``: "some current, others stopped"); see ``reading.read``. Any name,
    ingredient or brand of the item counts (``matching.item_mentions``).
    """
    if criterion["type"] not in _NAMED_TYPES:
        return None
    found = item_mentions(criterion, summary, strict=criterion["kind"] == "must_mention").hedged()
    return None if found is None else found.sentence


def stated_ended(criterion: Mapping[str, Any], summary: str) -> str | None:
    """The sentence that states a current drug or problem as ended or absent, or None.

    For a must-mention ``medication`` criterion: every mention of the drug (its names, brands and
    salt-free names, ``matching``; allergies aside) is ended or negated ("buprenorphine/naloxone
    was stopped", "not on warfarin"), or, for a combination no mention names current, all its
    ingredients are ended together in one sentence; for a ``condition``: every mention is negated ("no
    hypertension") or said to be over ("chronic sinusitis - resolved": ``reading.Mention.over``).
    A problem written as history ("prior stroke", "MI in 1995") is not one: event disorders stay
    on the problem list and clinicians write them so. The record says it is
    current, so the summary states something false: a contradiction (``flag: "stated_as_ended"``),
    as a clinician labeller marks it ``contradicted``.
    """
    if criterion["kind"] != "must_mention" or criterion["type"] not in ("condition", "medication"):
        return None
    mentions = item_mentions(criterion, summary, strict=False)
    every = [m for m in mentions.all() if not m.allergy]
    combination = criterion["type"] == "medication" and len(mentions.per_name) > 1
    if combination and mentions.named(frozenset({"current"})) is None:
        # a combination is stated ended where all its ingredients are, together ("hydrocodone/APAP
        # 5/300 mg, since discontinued"), whatever an ingredient's own product does elsewhere
        # ("Tylenol 325 mg q4-6h" keeps acetaminophen current, not the combination)
        for m in mentions.per_name[0]:
            if m.status in _NOT_CURRENT and not m.allergy and all(
                    any(o.status in _NOT_CURRENT and o.sentence_start == m.sentence_start for o in ms)
                    for ms in mentions.per_name[1:]):
                return m.sentence
    if criterion["type"] == "medication":
        false = [m.status in _NOT_CURRENT for m in every]
    else:
        false = [m.status == "negated" or (m.status == "ended" and m.over) for m in every]
    if every and all(false):
        return every[0].sentence
    return None


def rule_verdict(criterion: Mapping[str, Any], summary: str) -> bool | None:
    """What the rule layer decides for ``criterion`` (True: met; False: not met), or None (the judge decides).

    Names are read as written (``matching``, ``strict``), each mention with its status (``reading``).
    """
    ctype = criterion["type"]
    if ctype == "lab":
        met, _ = lab_verdict(criterion, summary, strict=True)
        return met
    if ctype in ("no_condition", "no_medication"):
        nouns = ("problem", "diagnos", "condition") if ctype == "no_condition" else ("medication", "drug", "meds")
        return True if none_under(summary, nouns) else None  # "Medications: none"; other wordings: the judge
    mentions = item_mentions(criterion, summary, strict=criterion["kind"] == "must_mention")
    if criterion["kind"] == "must_not_state":
        every = mentions.all()
        if not every or all(m.status in _NOT_CURRENT or m.allergy for m in every):
            return False  # never named, or named only as ended, negated or as an allergy
        return True if mentions.named(frozenset({"current"})) else None
    if ctype == "allergy":
        return True if mentions.named(frozenset({"current", "ended"}), allergy=True) else None
    return True if mentions.named(frozenset({"current"})) else None


def _stated_wrong(criterion: Mapping[str, Any], wrong: Sequence[tuple[str, tuple[str, ...]]]) -> str | None:
    """The wrong value stated for ``criterion``'s drug (one of its names, salts aside), or None."""
    names = {drug_words(str(n)) for n in criterion.get("names") or []} | {
        normalise(str(n)) for n in criterion.get("names") or []}
    for text, phrases in wrong:
        if any(p in names or drug_words(p) in names for p in phrases):
            return text
    return None


class SummaryScorer:
    """Scores one summary against its rubric (see the module docstring).

    Args:
        judge: Decides what the rules leave open.
        max_words: The word limit the prompt states.
        min_rubric_score: The rubric score a passing case reaches (0..1).
        reliability: Returns the judge's measured reliability as aggregate metrics (called once per
            ``aggregate``; ``calibration.reliability_metrics``).
    """

    metric_names = METRIC_NAMES
    metric_directions = _DIRECTIONS

    def __init__(self, judge: Judge, *, max_words: int, min_rubric_score: float,
                 reliability: Callable[[], dict[str, Metric]]) -> None:
        self.judge = judge
        self.max_words = max_words
        self.min_rubric_score = min_rubric_score
        self.reliability = reliability

    @property
    def asks_model(self) -> bool:
        """True when the judge calls a model (its questions are then worth asking ahead: ``execution.base``)."""
        return not self.judge.costs_nothing

    def _ruled(self, criterion: Mapping[str, Any], summary: str) -> JSON | None:
        """``criterion``'s entry when a hedge or the rules decide it, else None (the judge decides)."""
        entry: JSON = {"id": criterion["id"], "type": criterion["type"], "kind": criterion["kind"],
                       "points": criterion["points"], "safety": criterion["safety"]}
        hedge = hedged_verdict(criterion, summary)
        if hedge is not None:  # both labels: nothing earned, the forbidden thing stated
            entry.update(met=criterion["kind"] == "must_not_state", decided_by="rule",
                         evidence=hedge[:300], flag="contradictory_labels")
            return entry
        met = rule_verdict(criterion, summary) if summary.strip() else False  # nothing said: nothing met
        if met is None:
            return None
        entry.update(met=met, decided_by="rule")
        return entry

    def questions(self, case: Case, truth: Any, parsed: Parsed) -> list[Question]:
        """The criteria the rules leave open, as questions to the judge, in rubric order.

        The executor asks them (``execution.score_stage``: concurrently, under the run's
        ``--groundeval-concurrency``) and hands the verdicts to ``score``.
        """
        summary = str(parsed.value or "")
        return [question(self.judge, c, summary, label=f"{case.case_id}/judge/{c['id']}")
                for c in truth["criteria"] if self._ruled(c, summary) is None]

    def score(self, case: Case, truth: Any, parsed: Parsed,
              grades: Mapping[str, Verdict | JudgeError] | None = None) -> Score:
        """Decide every criterion (rule, then judge), check stated values, and give the verdict.

        Args:
            case: The case.
            truth: Its rubric (``truth.summary_rubric``).
            parsed: The summary.
            grades: The judge's verdicts (or failures) by criterion id, for the criteria of
                ``questions``; None to ask the judge here, one criterion after another.

        Raises:
            JudgeError: The judge's model failed (the first failure in rubric order): the runner
                classes the case by the model's error (``infra_error`` excluded and counted;
                ``auth_error`` and ``config_error`` stop the run; a reply with no verdict is not
                an error, see ``judge_no_verdict``). Its ``metrics`` hold the judge's usage
                (``judge_calls`` counts the calls made, the failed ones included), which the
                runner keeps in the case's ``usage``.
        """
        if grades is not None:
            failed = [g for g in grades.values() if isinstance(g, JudgeError)]
            if failed:
                first = next(g for c in truth["criteria"] if isinstance(g := grades.get(str(c["id"])), JudgeError))
                first.metrics = role_usage(grades.values(), costs_nothing=self.judge.costs_nothing)
                raise first
        asked: dict[str, Verdict | JudgeError] = dict(grades or {})
        summary = str(parsed.value or "")
        decided: list[JSON] = []
        for criterion in truth["criteria"]:
            ruled = self._ruled(criterion, summary)
            if ruled is not None and ruled.get("flag") == "contradictory_labels":
                decided.append(ruled)
                continue
            entry: JSON
            if ruled is not None:
                entry = ruled
            else:
                key = str(criterion["id"])
                if grades is None:  # asked here, one criterion after another (groundeval calibrate, a task in code)
                    try:
                        asked[key] = self.judge.decide(criterion, summary, label=f"{case.case_id}/judge/{key}")
                    except JudgeError as exc:
                        exc.metrics = role_usage([*asked.values(), exc], costs_nothing=self.judge.costs_nothing)
                        raise
                verdict = asked[key]
                assert isinstance(verdict, Verdict)  # failures were raised above
                entry = {"id": criterion["id"], "type": criterion["type"], "kind": criterion["kind"],
                         "points": criterion["points"], "safety": criterion["safety"],
                         "met": verdict.met, "decided_by": "judge", "evidence": verdict.evidence[:300]}
                if verdict.flag:
                    entry["flag"] = verdict.flag
            if not entry["met"] and "flag" not in entry:
                ended = stated_ended(criterion, summary)
                if ended is not None:  # a current item said to be stopped, resolved or absent: a false statement
                    entry.update(flag="stated_as_ended", evidence=ended[:300])
            decided.append(entry)
        wrong = wrong_values(summary, truth["record_values"])
        invented = [text for text, _ in wrong]
        for entry, criterion in zip(decided, truth["criteria"], strict=True):
            owned = _stated_wrong(criterion, wrong) if entry["met"] and criterion["type"] == "medication" else None
            if owned is not None:  # "hydrocodone 10 mg" for a 5 mg product: not the drug the record holds
                entry.update(met=False, decided_by="rule", evidence=owned, flag="wrong_value")
        evidence = {d.get("evidence") for d in decided if d.get("flag") == "contradictory_labels"}
        loose = [s[:120] for s in sentences(summary)
                 if contradictory(s) and s[:300] not in evidence and not heading(s)]
        loose += list(dict.fromkeys(m.sentence[:120] for m in read(summary, problem_names())
                                    if m.uncertain and m.sentence[:120] not in loose))
        usage = role_usage(asked.values(), costs_nothing=self.judge.costs_nothing)
        return self._verdict(decided, invented, loose, summary, usage)

    def label_verdict(self, truth: Any, summary: str, labels: Mapping[str, str]) -> bool:
        """The verdict rule applied to a person's criterion labels instead of the scorer's decisions.

        What the rubric and the verdict rule can reach when every criterion is read as that person
        read it (``groundeval calibrate --labels`` prints it beside the scorer's verdicts): the
        value and hedge checks, which no criterion label covers, find nothing.

        Args:
            truth: The case's rubric (``truth.summary_rubric``).
            summary: The summary text (its word count still counts).
            labels: Criterion id -> ``met``, ``not_met`` or ``contradicted`` (an unlabelled
                criterion counts as not met).

        Returns:
            True when the case would pass.
        """
        decided: list[JSON] = []
        for c in truth["criteria"]:
            label = labels.get(str(c["id"]), "not_met")
            entry: JSON = {"id": c["id"], "type": c["type"], "kind": c["kind"], "points": c["points"],
                           "safety": c["safety"], "met": label == "met", "decided_by": "label"}
            if label == "contradicted" and c["points"] > 0:
                entry["flag"] = "stated_as_ended"
            decided.append(entry)
        return self._verdict(decided, [], [], summary, {}).outcome == "passed"

    def _verdict(self, decided: list[JSON], invented: list[str], loose: list[str], summary: str,
                 usage: dict[str, Any]) -> Score:
        positive = [d for d in decided if d["points"] > 0]
        possible = sum(d["points"] for d in positive)
        earned = sum(d["points"] for d in decided if d["met"]) - len(invented) - len(loose)
        score = None if possible == 0 else round(min(1.0, max(0.0, earned / possible)), 6)
        recall = round(sum(d["met"] for d in positive) / len(positive), 6) if positive else None
        made = [d["id"] for d in decided if d["points"] < 0 and d["met"]]
        hedged = [d["id"] for d in decided if d["points"] > 0 and d.get("flag") in ("contradictory_labels",
                                                                                    "stated_as_ended")]
        contradictions = len(made) + len(hedged) + len(invented) + len(loose)
        safety = [d["id"] for d in decided if d["safety"] and (d["met"] == (d["points"] < 0))]
        words = word_count(summary)
        unjudged = [d["id"] for d in decided if d.get("flag") in NO_VERDICT_FLAGS]
        metrics: dict[str, Metric] = {
            "rubric_score": score, "must_mention_recall": recall, "contradictions": contradictions,
            "safety_failed": bool(safety), "words": words,
            "decided_by_rule": sum(d["decided_by"] == "rule" for d in decided),
            "decided_by_judge": sum(d["decided_by"] == "judge" for d in decided),
            "evidence_flagged": sum(d.get("flag") == "evidence_not_in_summary" for d in decided),
            "judge_no_verdict": len(unjudged),
        }
        reasons = []
        if score is not None and score < self.min_rubric_score:
            reasons.append(f"rubric score {score:.2f} < {self.min_rubric_score:g}")
        if made:
            reasons.append(f"states as current what the record ended: {', '.join(made[:3])}")
        if hedged or loose:
            reasons.append(f"labelled both current and ended, speculated, or stated as ended while current: "
                           f"{', '.join([*hedged, *loose][:3])}")
        if invented:
            reasons.append(f"values the record does not hold: {', '.join(invented[:3])}")
        if safety:
            reasons.append(f"safety-critical: {', '.join(safety[:3])}")
        if words > self.max_words:
            reasons.append(f"{words} words > {self.max_words}")
        if unjudged:  # a criterion nobody decided is not shown to be safe: the case cannot pass on it
            reasons.append(f"the judge {self.judge.spec} gave no verdict on {len(unjudged)} criteria "
                           f"(no_answer or format_not_ok): {', '.join(unjudged[:3])}")
        missed = [d["id"] for d in positive if not d["met"]]
        details = {"criteria": decided, "invented_values": invented, "hedged_statements": loose, "missed": missed,
                   "judge": self.judge.spec}
        return Score("failed" if reasons else "passed", metrics, details=details, message="; ".join(reasons),
                     usage=usage)

    def aggregate(self, metrics: Sequence[Mapping[str, Metric]]) -> dict[str, Metric]:
        """Means of the scores, the judge's reliability beside them, and counts (the judge's usage is in ``usage``)."""

        def mean(key: str) -> float | None:
            values = [float(v) for m in metrics if isinstance(v := m.get(key), int | float)]
            return round(sum(values) / len(values), 6) if values else None

        def total(key: str) -> int:
            return sum(int(v) for m in metrics if isinstance(v := m.get(key), int | float))

        return {
            "rubric_score": mean("rubric_score"), "must_mention_recall": mean("must_mention_recall"),
            **self.reliability(),
            "contradictions": mean("contradictions"), "safety_failed": total("safety_failed"),
            "words": mean("words"), "decided_by_rule": total("decided_by_rule"),
            "decided_by_judge": total("decided_by_judge"), "evidence_flagged": total("evidence_flagged"),
            "judge_no_verdict": total("judge_no_verdict"),
        }
