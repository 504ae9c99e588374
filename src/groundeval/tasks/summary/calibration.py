"""The judge's reliability, measured against labels, and the judge card that carries it.

**Against people** (``calibrate_labels``; ``groundeval calibrate --labels FILE``): the whole
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

**Figures** (``agreement``): agreement, sensitivity and specificity (Wilson intervals) and Cohen's
kappa (scikit-learn, percentile bootstrap interval), each with n, and the reason when there is no
interval.

**Judge card** (``write_card``/``read_card``): JSON with the judge's spec, its model identity
(``judge.judge_identity``: a GGUF's SHA-256, a provider's model id), settings and prompt SHA-256,
the date, the set it was computed on (``calibration_set``: file name, SHA-256, summaries,
records, labellers) and the figures, the overall kappa under ``kappa``. A run reads the card of
its judge (same identity and prompt hash: ``matches``) and shows the judged scores beside that
kappa and set (``reliability_metrics``), or marks them ``judge not calibrated``, ``judge
calibrated on generated text only`` or ``judge unreliable`` (kappa below ``KAPPA_THRESHOLD``).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from groundeval.datasets import default_data_dir
from groundeval.errors import ConfigError
from groundeval.scoring import Metric
from groundeval.tasks.summary.agreement import binary_figures, interval_text
from groundeval.tasks.summary.judge import NO_VERDICT_FLAGS, Judge, judge_identity
from groundeval.tasks.summary.label_calibration import CaseTruth, measure_labels
from groundeval.tasks.summary.labels import LabelSet
from groundeval.tasks.summary.truth import CRITERION_TYPES

__all__ = [
    "CARD_SCHEMA_VERSION",
    "CORRUPTIONS",
    "GENERATED_NOTE",
    "KAPPA_THRESHOLD",
    "PARAPHRASES",
    "ControlItem",
    "calibrate",
    "calibrate_labels",
    "control_set",
    "default_card_dir",
    "faithful_summary",
    "find_card",
    "from_people",
    "matches",
    "measure",
    "read_card",
    "reliability_metrics",
    "set_text",
    "weak_types",
    "write_card",
]

KAPPA_THRESHOLD = 0.6
"""Below this Cohen's kappa a judge is ``judge unreliable``: "any kappa below 0.60 indicates
inadequate agreement among the raters and little confidence should be placed in the study results"
(McHugh ML, Interrater reliability: the kappa statistic, Biochem Med 2012;22(3):276-282,
https://pmc.ncbi.nlm.nih.gov/articles/PMC3900052/)."""

CARD_SCHEMA_VERSION = 2
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


def measure(items: Sequence[ControlItem], judge: Judge) -> JSON:
    """Ask ``judge`` every control item and compare with the right answers.

    Returns:
        ``{"overall": figures, "by_type": {type: figures}, "by_variant": {variant: figures},
        "judge_no_verdict": n, "disagreements": [first 20 items judged wrongly]}``, figures as in
        ``agreement.binary_figures``. A reply with no verdict counts as a wrong verdict.

    Raises:
        JudgeError: The judge's model failed (calibration stops: a card needs every call).
    """
    pairs: list[tuple[ControlItem, bool]] = []
    no_verdict = 0
    for i, item in enumerate(items):
        label = f"calibration/{item.case_id}/{item.variant}/{item.criterion['id']}#{i}"
        verdict = judge.decide(item.criterion, item.summary, label=label)
        unjudged = verdict.flag in NO_VERDICT_FLAGS
        no_verdict += unjudged
        pairs.append((item, (not item.expected) if unjudged else verdict.met))
    by_type = {t: binary_figures([(it.expected, met) for it, met in pairs if it.criterion["type"] == t])
               for t in CRITERION_TYPES if any(it.criterion["type"] == t for it, _ in pairs)}
    by_variant = {v: binary_figures([(it.expected, met) for it, met in pairs if it.variant == v])
                  for v in ("faithful", *CORRUPTIONS) if any(it.variant == v for it, _ in pairs)}
    wrong = [{"case_id": it.case_id, "variant": it.variant, "criterion": it.criterion["id"], "expected": it.expected}
             for it, met in pairs if met != it.expected]
    return {"overall": binary_figures([(it.expected, met) for it, met in pairs]), "by_type": by_type,
            "by_variant": by_variant, "judge_no_verdict": no_verdict, "wrong": len(wrong),
            "disagreements": wrong[:20]}


GENERATED_NOTE = ("code-made control set: summaries rendered by groundeval's own code from the rubric; a smoke "
                  "test of the judge, not a calibration against people")


def _pins(judge: Judge, date: str | None) -> JSON:
    return {"schema_version": CARD_SCHEMA_VERSION, "judge": judge.spec, "judge_identity": judge_identity(judge),
            "prompt_sha256": judge.prompt_sha256, "settings": judge.settings(),
            "date": date or datetime.now(UTC).date().isoformat()}


def _headline(overall: Mapping[str, Any]) -> JSON:
    k = overall["kappa"]
    return {"kappa": k["value"], "kappa_95ci": k["ci"], "n": overall["n"], "threshold": KAPPA_THRESHOLD}


def calibrate(judge: Judge, cases: Sequence[tuple[str, Sequence[Mapping[str, Any]]]], *,
              date: str | None = None) -> JSON:
    """A smoke-test card: ``measure`` over the code-made ``control_set(cases)``.

    The card's ``calibration_set`` is ``{"kind": "generated", ...}``: a run never gates on it and
    says the judge is ``calibrated on generated text only`` (``reliability_metrics``).

    Args:
        judge: The judge to measure.
        cases: ``(case_id, criteria)`` pairs.
        date: ISO date to record (default: today, UTC).
    """
    items = control_set(cases)
    figures = measure(items, judge)
    return {
        **_pins(judge, date),
        "calibration_set": {"kind": "generated", "note": GENERATED_NOTE, "cases": len(cases),
                            "summaries": len({(i.case_id, i.variant) for i in items}), "verdicts": len(items),
                            "corruptions": list(CORRUPTIONS)},
        **_headline(figures["overall"]), **figures,
    }


def calibrate_labels(judge: Judge, labels: LabelSet, cases: Mapping[str, CaseTruth], *, max_words: int,
                     min_rubric_score: float, reference_labeller: str | None = None,
                     date: str | None = None) -> JSON:
    """The judge card from human labels: the whole scorer measured (``label_calibration.measure_labels``).

    The headline ``kappa`` is the whole scorer's per-criterion kappa (rules and judge, as a run
    scores); ``by_layer`` holds the rule-decided and judge-decided criteria apart.

    Args:
        judge: The judge the scorer asks.
        labels: The label file, read (``labels.read_labels``).
        cases: case id -> its case and rubric (``label_calibration.load_cases``).
        max_words: The scorer's word limit.
        min_rubric_score: The rubric score a passing case reaches.
        reference_labeller: The reference labeller, or None for the default rule (``labels.reference``).
        date: ISO date to record (default: today, UTC).

    Raises:
        DatasetError: See ``measure_labels``.
        JudgeError: The judge's model failed.
    """
    figures = measure_labels(labels, judge, cases, max_words=max_words, min_rubric_score=min_rubric_score,
                             reference_labeller=reference_labeller)
    rule = f"labeller {reference_labeller}" if reference_labeller else "first labeller who is not the writer"
    return {
        **_pins(judge, date),
        "calibration_set": {**labels.facts(), "reference": rule,
                            "scorer": {"max_words": max_words, "min_rubric_score": min_rubric_score}},
        **_headline(figures["overall"]), **figures,
    }


def set_text(card: Mapping[str, Any]) -> str:
    """Which set a card was computed on, in one line (printed beside its kappa by every run).

    ``labels.jsonl (SHA-256 1a2b3c4d5e6f; 100 summaries, 20 records; labellers a, b)`` for human
    labels; ``generated control set (168 summaries by groundeval's code; not people's labels)`` else.
    """
    facts = card.get("calibration_set")
    if isinstance(facts, Mapping) and facts.get("kind") == "human_labels":
        return (f"{facts.get('file')} (SHA-256 {str(facts.get('sha256'))[:12]}; {facts.get('summaries')} summaries, "
                f"{facts.get('records')} records; labellers {', '.join(map(str, facts.get('labellers') or []))})")
    old = card.get("control_set") if not isinstance(facts, Mapping) else facts
    count = old.get("summaries") if isinstance(old, Mapping) else None
    return f"generated control set ({count or '?'} summaries by groundeval's code; not people's labels)"


def from_people(card: Mapping[str, Any]) -> bool:
    """True when the card was computed on human labels (``calibration_set.kind == "human_labels"``)."""
    facts = card.get("calibration_set")
    return isinstance(facts, Mapping) and facts.get("kind") == "human_labels"


def default_card_dir() -> Path:
    """The packaged judge cards: ``fixtures/summary-judge-cards``."""
    return default_data_dir("summary-judge-cards")


def write_card(card: Mapping[str, Any], path: Path) -> None:
    """Write a card as JSON (one-space indent, UTF-8, final newline)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(card, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")


def read_card(path: Path) -> JSON:
    """Read a card.

    Raises:
        ConfigError: Not readable, not JSON, or without ``judge``, ``prompt_sha256`` and ``kappa``.
    """
    try:
        card = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ConfigError(
            f"judge card {path}: cannot be read as JSON ({exc}); write one with groundeval calibrate"
        ) from exc
    if not isinstance(card, dict) or not {"judge", "prompt_sha256", "kappa"} <= set(card):
        raise ConfigError(f"judge card {path}: not a judge card (needs judge, prompt_sha256, kappa); "
                          "write one with groundeval calibrate")
    return card


def matches(card: Mapping[str, Any], judge: Judge) -> bool:
    """True when ``card`` is the judge's: same model identity (``judge.judge_identity``) and prompt SHA-256.

    A card written before identities were recorded (schema 1) matches by the judge's spec.
    """
    if card.get("prompt_sha256") != judge.prompt_sha256:
        return False
    if "judge_identity" in card:
        return bool(card["judge_identity"] == judge_identity(judge))
    return bool(card.get("judge") == judge.spec)


def find_card(judge: Judge, given: Path | None) -> tuple[JSON | None, str]:
    """The card for ``judge`` (``matches``: same model identity and prompt hash), and where it came from or why none.

    ``given`` (``--groundeval-judge-card``) is read if set; else the packaged cards are searched.
    A local judge's identity is its GGUF's SHA-256, so moving or renaming the file keeps its card.

    Raises:
        ConfigError: ``given`` is unreadable, or is a card of another judge or prompt.
    """
    if given is not None:
        card = read_card(given)
        if not matches(card, judge):
            raise ConfigError(
                f"judge card {given}: made for judge {card['judge']!r} (identity "
                f"{str(card.get('judge_identity', card['judge']))[:40]}) with prompt "
                f"{str(card['prompt_sha256'])[:12]}, not for {judge.spec!r} (identity {judge_identity(judge)[:40]}) "
                f"with prompt {judge.prompt_sha256[:12]}; run groundeval calibrate --task summary --judge "
                f"{judge.spec} --labels LABELS.jsonl -o {given}"
            )
        return card, str(given)
    folder = default_card_dir()
    for path in sorted(folder.glob("*.json")) if folder.is_dir() else []:
        try:
            card = read_card(path)
        except ConfigError:
            continue
        if matches(card, judge):
            return card, f"packaged card {path.name}"
    return None, f"no judge card for {judge.spec} with prompt {judge.prompt_sha256[:12]}"


def _kappa_of(figures: Any) -> float | None:
    """A figure set's kappa: ``{"kappa": {"value": k}}`` (schema 2) or ``{"kappa": k}`` (schema 1)."""
    k = figures.get("kappa") if isinstance(figures, Mapping) else None
    if isinstance(k, Mapping):
        k = k.get("value")
    return float(k) if isinstance(k, int | float) else None


def weak_types(card: Mapping[str, Any]) -> list[str]:
    """The criterion types a card does not vouch for: kappa below ``KAPPA_THRESHOLD``, or not calibrated.

    Returns:
        ``"<type> (kappa 0.00)"`` or ``"<type> (not calibrated)"`` for each of ``CRITERION_TYPES``
        whose card figures are missing or whose kappa is None (the control set had one label
        only) or below the threshold, in ``CRITERION_TYPES`` order. The overall kappa can be high
        while one type is near chance (most control verdicts are easy), so reliability is judged
        per type.
    """
    by_type = card.get("by_type") or {}
    out = []
    for ctype in CRITERION_TYPES:
        kappa = _kappa_of(by_type.get(ctype))
        if kappa is None:
            out.append(f"{ctype} (not calibrated)")
        elif kappa < KAPPA_THRESHOLD:
            out.append(f"{ctype} (kappa {kappa:.2f})")
    layer = _kappa_of((card.get("by_layer") or {}).get("judge"))
    if layer is not None and layer < KAPPA_THRESHOLD:
        out.append(f"judge-decided criteria (kappa {layer:.2f})")
    return out


def reliability_metrics(judge: Judge, card: Mapping[str, Any] | None) -> dict[str, Metric]:
    """The aggregate metrics that put the judge's reliability beside the judged scores.

    ``judge_reliability`` is ``calibrated (...)`` only for a card computed on human labels
    (``from_people``) whose overall kappa and every criterion type's kappa (and the judge-decided
    criteria's, when measured) reach ``KAPPA_THRESHOLD`` (``weak_types``); else ``judge unreliable
    (...)``, ``judge unreliable for <types> (...)``, ``judge calibrated on generated text only
    (...)`` (a card from the code-made control set: its kappa is not shown as the judge's) or
    ``judge not calibrated``. ``judge_calibration_set`` names the set the card was computed on
    (``set_text``). Anything but ``calibrated`` leaves the verdicts ungated (``SummaryTask.run_facts``).
    """
    if card is None or card.get("kappa") is None:
        return {"judge": judge.spec, "judge_kappa": None, "judge_kappa_95ci": None, "judge_kappa_n": None,
                "judge_calibration_set": None, "judge_reliability": "judge not calibrated"}
    kappa = float(card["kappa"])
    where = set_text(card)
    if not from_people(card):
        return {"judge": judge.spec, "judge_kappa": None, "judge_kappa_95ci": None, "judge_kappa_n": None,
                "judge_calibration_set": where,
                "judge_reliability": f"judge calibrated on generated text only (kappa {kappa:.2f} on {where}, "
                                     f"card {card.get('date')}): not calibrated against people, verdicts not gated"}
    overall = card.get("overall")
    figure = overall.get("kappa") if isinstance(overall, Mapping) else None
    ci = interval_text(figure if isinstance(figure, Mapping) else {"ci": card.get("kappa_95ci")})
    weak = weak_types(card)
    status = "calibrated" if kappa >= KAPPA_THRESHOLD and not weak else "judge unreliable"
    if weak and kappa >= KAPPA_THRESHOLD:
        status = f"judge unreliable for {', '.join(weak)}"
    return {"judge": judge.spec, "judge_kappa": round(kappa, 4), "judge_kappa_95ci": ci,
            "judge_kappa_n": int(card.get("n") or 0), "judge_calibration_set": where,
            "judge_reliability": f"{status} ({'overall ' if weak else ''}kappa {kappa:.2f} {ci}, threshold "
                                 f"{KAPPA_THRESHOLD:g}, on {where}, card {card.get('date')})"}
