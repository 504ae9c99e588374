"""The judge's reliability, measured against labels, and the judge card that carries it.

**Against people** (``card.calibrate_labels``; ``groundeval calibrate --labels FILE``): the whole
scorer (rules and judge, as a run scores) measured on human-labelled summaries
(``labels``, ``label_calibration``). This is the only card a run gates on.

**Control set** (``control_set``, ``calibrate``; ``groundeval calibrate`` without ``--labels``):
a quick smoke test. For each case, summaries rendered by code from the rubric (``faithful``:
every must-mention item stated, every ended drug and problem stated as ended), and copies with
one known defect each (``CORRUPTIONS``):

* ``drop_condition``, ``drop_allergy``, ``drop_lab``: one active disorder, the allergies, or one
  result left out (those criteria become not met);
* ``change_dose``: one current drug's first strength doubled (that drug's criterion becomes not
  met: the summary names another product; the rule layer also counts the invented value);
* ``stopped_as_current``: one ended drug listed among the current ones (its must-not criterion
  becomes made, and a "no current medication" criterion not met);
* ``resolved_as_active``: one resolved disorder listed among the active problems (made; "no active
  diagnosis" not met);
* ``paraphrase``: one active disorder named by a synonym of ``PARAPHRASES`` (still met: string
  matching fails where a good judge passes);
* ``hedged``: one current drug, one active disorder, one ended drug and one resolved disorder each
  labelled both ways (``(past/current)``, ``(active/resolved)``).

Every criterion of every control summary has a known right answer, and the judge is asked each
one directly. The text is groundeval's own, in the phrasing its rules expect, so a figure measured
on it is circular: its card says ``calibration_set.kind: generated`` and a run shows the judge as
``judge calibrated on generated text only`` (not gated), never as calibrated.

**Figures** (``scorers.calibration.measure_judge``, ``scorers.agreement``): agreement, sensitivity and
specificity (Wilson intervals) and Cohen's kappa (scikit-learn, percentile bootstrap interval),
each with n, and the reason when there is no interval.

**Judge card**: ``scorers.judge_card`` (what a card holds, how a run reads it).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from groundeval.scorers.calibration import Known, measure_judge
from groundeval.scorers.judge_card import headline, pins
from groundeval.scorers.model_graded import GradeStage
from groundeval.tasks.summary.judge import Judge, question
from groundeval.tasks.summary.truth import CRITERION_TYPES

__all__ = [
    "CORRUPTIONS", "GENERATED_NOTE", "PARAPHRASES", "ControlItem", "calibrate", "control_set", "faithful_summary",
    "measure",
]

CORRUPTIONS = (
    "drop_condition", "drop_allergy", "drop_lab", "change_dose", "stopped_as_current", "resolved_as_active",
    "paraphrase", "hedged",
)

PARAPHRASES: dict[str, str] = {
    "Essential hypertension": "high blood pressure",
    "Anemia": "low haemoglobin (anaemia)",
    "Ischemic heart disease": "coronary artery disease",
    "Chronic sinusitis": "long-standing sinus inflammation",
    "Hyperlipidemia": "raised cholesterol",
    "Osteoarthritis of knee": "degenerative knee arthritis",
    "Osteoarthritis of hip": "degenerative hip arthritis",
    "Chronic congestive heart failure": "chronic heart failure",
    "Major depressive disorder": "major depression",
    "Seizure disorder": "epilepsy",
    "Alzheimer's disease": "Alzheimer dementia",
    "Loss of teeth": "tooth loss",
    "Inflammatory disorder due to increased blood urate level": "gout",
    "Chronic kidney disease stage 1": "CKD stage 1",
    "Opioid abuse": "opioid use disorder",
    "Acute non-ST segment elevation myocardial infarction": "NSTEMI",
    "Acute ST segment elevation myocardial infarction": "STEMI",
}
"""Synonyms a clinician would write for the active disorders of the packaged cases (lay or
abbreviated forms), for the ``paraphrase`` corruption. Not known to the baseline judge."""

JSON = dict[str, Any]


@dataclass(frozen=True, slots=True)
class ControlItem:
    """One criterion of one control summary, with its right answer.

    Attributes:
        case_id: The case the summary was rendered from.
        variant: ``faithful`` or a ``CORRUPTIONS`` name.
        summary: The control summary's text.
        criterion: The rubric criterion (a dict of ``truth.summary_rubric``).
        expected: Whether the criterion is met in this summary.
    """

    case_id: str
    variant: str
    summary: str
    criterion: JSON
    expected: bool


def _value_text(criterion: Mapping[str, Any]) -> str:
    values = criterion["values"]
    unit = values[0]["unit"] if values else ""
    return "/".join(f"{float(v['value']):g}" for v in values) + f" {unit}"


def _display(criterion: Mapping[str, Any]) -> str:
    """The drug display a medication criterion's statement names."""
    pattern = r"(?:lists|states) (.+?) (?:\(a \w+ prescription\) )?as a current medication"
    found = re.search(pattern, criterion["statement"])
    return found[1] if found else " / ".join(criterion["names"])


def _lines(criteria: Sequence[Mapping[str, Any]], *, problems: list[str], current: list[str],
           stopped: list[str], resolved: list[str], allergies: bool) -> str:
    by = {t: [c for c in criteria if c["type"] == t] for t in CRITERION_TYPES}
    lines = []
    if problems:
        lines.append("Active problems: " + "; ".join(problems) + ".")
    elif by["no_condition"]:
        lines.append("No active diagnosis is recorded.")
    if allergies and by["allergy"]:
        lines.append("Allergies: " + "; ".join(f"allergy to {c['names'][0]}" for c in by["allergy"]) + ".")
    if current:
        lines.append("Current medications: " + "; ".join(current) + ".")
    elif by["no_medication"]:
        lines.append("No current medication is recorded.")
    if by["lab"]:
        lines.append("Results outside range: " + "; ".join(
            f"{c['names'][0]} {_value_text(c)}" for c in by["lab"]) + ".")
    if stopped:
        lines.append("Past medications: " + "; ".join(f"{d} (stopped)" for d in stopped) + ".")
    if resolved:
        lines.append("Past problems: " + "; ".join(f"{p} (resolved)" for p in resolved) + ".")
    return "\n".join(lines)


def faithful_summary(criteria: Sequence[Mapping[str, Any]]) -> str:
    """The summary the rubric describes: every must-mention item, every ended item stated as ended."""
    return _render(criteria)


def _render(criteria: Sequence[Mapping[str, Any]], *, drop_allergy: bool = False, drop: str | None = None,
            dose: tuple[str, str] | None = None, stopped_current: str | None = None,
            resolved_active: str | None = None, paraphrase: tuple[str, str] | None = None,
            hedge: frozenset[str] = frozenset()) -> str:
    criteria = [c for c in criteria if c["id"] != drop]
    problems = [c["names"][0] for c in criteria if c["type"] == "condition"]
    if paraphrase:
        problems = [paraphrase[1] if p == paraphrase[0] else p for p in problems]
    current = [_display(c) for c in criteria if c["type"] == "medication"]
    if dose:
        current = [dose[1] if d == dose[0] else d for d in current]
    stopped = [_display(c) for c in criteria if c["type"] == "stopped_medication"]
    resolved = [c["names"][0] for c in criteria if c["type"] == "resolved_condition"]
    if stopped_current:
        stopped.remove(stopped_current)
        current.append(stopped_current)
    if resolved_active:
        resolved.remove(resolved_active)
        problems.append(resolved_active)
    if hedge:
        problems = [f"{p} (active/resolved)" if p in hedge else p for p in problems]
        problems += [f"{p} (active/resolved)" for p in resolved if p in hedge]
        resolved = [p for p in resolved if p not in hedge]
        current = [f"{d} (past/current)" if d in hedge else d for d in current]
        current += [f"{d} (past/current)" for d in stopped if d in hedge]
        stopped = [d for d in stopped if d not in hedge]
    return _lines(criteria, problems=problems, current=current, stopped=stopped, resolved=resolved,
                  allergies=not drop_allergy)


def _doubled(display: str) -> str | None:
    found = re.search(r"(\d+(?:\.\d+)?)(\s*)(MG|MCG|UNT|ML|MEQ)", display, re.IGNORECASE)
    if not found:
        return None
    doubled = f"{float(found[1]) * 2:g}"
    return display[:found.start()] + doubled + found[2] + found[3] + display[found.end():]


def control_set(cases: Iterable[tuple[str, Sequence[Mapping[str, Any]]]]) -> list[ControlItem]:
    """Every criterion of every control summary, with its right answer.

    Args:
        cases: ``(case_id, criteria)`` pairs (the rubric of each case).
    """
    items: list[ControlItem] = []
    for case_id, criteria in cases:
        base = {c["id"]: c["kind"] == "must_mention" for c in criteria}
        variants: list[tuple[str, str, dict[str, bool]]] = [("faithful", _render(criteria), {})]
        for ctype in ("condition", "lab"):
            dropped = next((c for c in criteria if c["type"] == ctype), None)
            if dropped:
                variants.append((f"drop_{ctype}", _render(criteria, drop=dropped["id"]), {dropped["id"]: False}))
        allergy = next((c for c in criteria if c["type"] == "allergy"), None)
        if allergy:
            variants.append(("drop_allergy", _render(criteria, drop_allergy=True),
                             {c["id"]: False for c in criteria if c["type"] == "allergy"}))
        med = next((c for c in criteria if c["type"] == "medication" and _doubled(_display(c))), None)
        if med:
            new = _doubled(_display(med))
            assert new is not None
            variants.append(("change_dose", _render(criteria, dose=(_display(med), new)), {med["id"]: False}))
        stopped = next((c for c in criteria if c["type"] == "stopped_medication"), None)
        if stopped:
            variants.append(("stopped_as_current", _render(criteria, stopped_current=_display(stopped)),
                             {stopped["id"]: True, "no_medication": False}))
        resolved = next((c for c in criteria if c["type"] == "resolved_condition"), None)
        if resolved:
            variants.append(("resolved_as_active", _render(criteria, resolved_active=resolved["names"][0]),
                             {resolved["id"]: True, "no_condition": False}))
        para = next((c for c in criteria if c["type"] == "condition" and c["names"][0] in PARAPHRASES), None)
        if para:
            name = para["names"][0]
            variants.append(("paraphrase", _render(criteria, paraphrase=(name, PARAPHRASES[name])), {}))
        hedged = [c for t in ("medication", "condition", "stopped_medication", "resolved_condition")
                  if (c := next((c for c in criteria if c["type"] == t), None)) is not None]
        if hedged:
            shown = frozenset(_display(c) if "medication" in c["type"] else c["names"][0] for c in hedged)
            changed = {c["id"]: c["kind"] == "must_not_state" for c in hedged}
            if any(c["type"] == "stopped_medication" for c in hedged):
                changed["no_medication"] = False
            if any(c["type"] == "resolved_condition" for c in hedged):
                changed["no_condition"] = False
            variants.append(("hedged", _render(criteria, hedge=shown), changed))
        for variant, summary, changed in variants:
            for c in criteria:
                items.append(ControlItem(case_id, variant, summary, dict(c), changed.get(c["id"], base[c["id"]])))
    return items


def measure(items: Sequence[ControlItem], judge: Judge, *, stage: GradeStage | None = None) -> JSON:
    """Ask ``judge`` every control item and compare with the right answers (``scorers.calibration.measure_judge``).

    Args:
        items: The control items (``control_set``).
        judge: The judge to measure.
        stage: Asks the judge's questions (default: one after another; the figures are the same).

    Returns:
        ``{"overall": figures, "by_type": {type: figures}, "by_variant": {variant: figures},
        "judge_no_verdict": n, "disagreements": [first 20 items judged wrongly]}``, figures as in
        ``agreement.binary_figures``. A reply with no verdict counts as a wrong verdict.

    Raises:
        JudgeError: The judge's model failed (calibration stops: a card needs every call).
    """
    known = []
    for i, item in enumerate(items):
        label = f"calibration/{item.case_id}/{item.variant}/{item.criterion['id']}#{i}"
        asked = question(judge, item.criterion, item.summary, label=label)
        known.append(Known(replace(asked, key=label), item.expected,
                           {"by_type": item.criterion["type"], "by_variant": item.variant},
                           {"case_id": item.case_id, "variant": item.variant, "criterion": item.criterion["id"]}))
    return measure_judge(known, {"by_type": CRITERION_TYPES, "by_variant": ("faithful", *CORRUPTIONS)}, stage=stage)


GENERATED_NOTE = ("code-made control set: summaries rendered by groundeval's own code from the rubric; a smoke "
                  "test of the judge, not a calibration against people")


def calibrate(judge: Judge, cases: Sequence[tuple[str, Sequence[Mapping[str, Any]]]], *,
              date: str | None = None, stage: GradeStage | None = None) -> JSON:
    """A smoke-test card: ``measure`` over the code-made ``control_set(cases)``.

    The card's ``calibration_set`` is ``{"kind": "generated", ...}``: a run never gates on it and
    says the judge is ``calibrated on generated text only`` (``reliability_metrics``).

    Args:
        judge: The judge to measure.
        cases: ``(case_id, criteria)`` pairs.
        date: ISO date to record (default: today, UTC).
        stage: Asks the judge's questions (default: one after another; the card is the same).
    """
    items = control_set(cases)
    figures = measure(items, judge, stage=stage)
    return {
        **pins(judge, date),
        "calibration_set": {"kind": "generated", "note": GENERATED_NOTE, "cases": len(cases),
                            "summaries": len({(i.case_id, i.variant) for i in items}), "verdicts": len(items),
                            "corruptions": list(CORRUPTIONS)},
        **headline(figures["overall"]), **figures,
    }


