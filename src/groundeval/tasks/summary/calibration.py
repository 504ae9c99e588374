"""The judge's reliability, measured against labels known to be true, and the judge card that carries it.

**Control set** (``control_set``): for each case, summaries rendered by code from the rubric
(``faithful``: every must-mention item stated, every ended drug and problem stated as ended), and
copies with one known defect each (``CORRUPTIONS``):

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
  labelled both ways (``(past/current)``, ``(active/resolved)``): the hedge rule of ``scorer``
  says such an item is not mentioned (must-mention not met) and is stated as current (must-not made).

Every criterion of every control summary has a known right answer, and the judge is asked each
one directly (not only what the rules leave open), so the figures describe the judge alone.

**Figures** (``measure``): per criterion type and overall, sensitivity, specificity and Cohen's
kappa (``sklearn.metrics.cohen_kappa_score``, imported here only), each with a 95% percentile
bootstrap interval (``scipy.stats.bootstrap``, 2,000 paired resamples, seed 0), and n.

**Judge card** (``write_card``/``read_card``): JSON with the judge's spec, settings and prompt
SHA-256, the date, the control set's size and the figures, the overall kappa under ``kappa``. A run
reads the card for its judge (same spec and prompt hash; ``reliability_metrics``): the judged
scores are shown beside that kappa, or marked ``judge not calibrated`` (no matching card) or
``judge unreliable`` (kappa below ``KAPPA_THRESHOLD``).
"""

from __future__ import annotations

import json
import re
import warnings
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from groundeval.datasets import default_data_dir
from groundeval.errors import ConfigError
from groundeval.scoring import Metric
from groundeval.tasks.summary.judge import Judge
from groundeval.tasks.summary.truth import CRITERION_TYPES

__all__ = [
    "CARD_SCHEMA_VERSION",
    "CORRUPTIONS",
    "KAPPA_THRESHOLD",
    "PARAPHRASES",
    "ControlItem",
    "calibrate",
    "control_set",
    "default_card_dir",
    "faithful_summary",
    "find_card",
    "measure",
    "read_card",
    "reliability_metrics",
    "weak_types",
    "write_card",
]

KAPPA_THRESHOLD = 0.6
"""Below this Cohen's kappa a judge is ``judge unreliable``: "any kappa below 0.60 indicates
inadequate agreement among the raters and little confidence should be placed in the study results"
(McHugh ML, Interrater reliability: the kappa statistic, Biochem Med 2012;22(3):276-282,
https://pmc.ncbi.nlm.nih.gov/articles/PMC3900052/)."""

CARD_SCHEMA_VERSION = 1
N_RESAMPLES = 2000
SEED = 0
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


def _kappa_interval(truth: Sequence[bool], judged: Sequence[bool]) -> tuple[float | None, float | None, float | None]:
    """Cohen's kappa (scikit-learn) and its 95% percentile bootstrap interval (scipy); None where undefined."""
    import numpy as np
    from scipy import stats

    from groundeval.extras import require_extra

    require_extra("calibrate", "sklearn", "groundeval calibrate (Cohen's kappa)")
    from sklearn.metrics import cohen_kappa_score  # type: ignore[import-untyped]

    t = np.asarray(truth, dtype=float)
    j = np.asarray(judged, dtype=float)
    if len(set(truth)) < 2:
        return None, None, None  # the right answers hold one label only: agreement beyond chance is undefined
    point = float(cohen_kappa_score(t, j))

    def kappa(a: Any, b: Any, axis: int = -1) -> Any:
        # the same formula as cohen_kappa_score for two labels, vectorised over resamples
        po = np.mean(a == b, axis=axis)
        pa, pb = np.mean(a, axis=axis), np.mean(b, axis=axis)
        pe = pa * pb + (1 - pa) * (1 - pb)
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(pe < 1, (po - pe) / (1 - pe), np.nan)

    if abs(float(kappa(t, j)) - point) > 1e-9:  # the resampled statistic must be scikit-learn's kappa
        raise AssertionError(f"vectorised kappa {float(kappa(t, j))} differs from cohen_kappa_score {point}")
    if len(set(judged)) < 2:
        return round(point, 4), round(point, 4), round(point, 4)
    with warnings.catch_warnings():  # a resample holding one label gives NaN; a NaN bound is reported as undefined
        warnings.simplefilter("ignore")
        res = stats.bootstrap((t, j), kappa, paired=True, vectorized=True, n_resamples=N_RESAMPLES,
                              method="percentile", random_state=SEED)
    low, high = res.confidence_interval
    return (round(point, 4), None if np.isnan(low) else round(float(low), 4),
            None if np.isnan(high) else round(float(high), 4))


def _rate_interval(hits: Sequence[bool]) -> tuple[float | None, float | None, float | None]:
    import numpy as np
    from scipy import stats

    if not hits:
        return None, None, None
    data = np.asarray(hits, dtype=float)
    point = float(data.mean())
    if len(set(hits)) < 2:
        return round(point, 4), round(point, 4), round(point, 4)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = stats.bootstrap((data,), np.mean, n_resamples=N_RESAMPLES, method="percentile", random_state=SEED)
    return round(point, 4), round(float(res.confidence_interval.low), 4), round(float(res.confidence_interval.high), 4)


def _figures(pairs: Sequence[tuple[bool, bool]]) -> JSON:
    truth = [t for t, _ in pairs]
    judged = [j for _, j in pairs]
    k, klo, khi = _kappa_interval(truth, judged)
    sens = _rate_interval([j for t, j in pairs if t])
    spec = _rate_interval([not j for t, j in pairs if not t])
    return {
        "n": len(pairs), "positives": sum(truth), "negatives": len(truth) - sum(truth),
        "kappa": k, "kappa_95ci": [klo, khi],
        "sensitivity": sens[0], "sensitivity_95ci": [sens[1], sens[2]],
        "specificity": spec[0], "specificity_95ci": [spec[1], spec[2]],
        "agreement": round(sum(t == j for t, j in pairs) / len(pairs), 4) if pairs else None,
    }


def measure(items: Sequence[ControlItem], judge: Judge) -> JSON:
    """Ask ``judge`` every control item and compare with the right answers.

    Returns:
        ``{"overall": figures, "by_type": {type: figures}, "by_variant": {variant: figures},
        "disagreements": [first 20 items judged wrongly]}``, figures as in ``_figures``.

    Raises:
        JudgeError: The judge could not decide an item (calibration stops: a card needs every verdict).
    """
    pairs: list[tuple[ControlItem, bool]] = []
    for i, item in enumerate(items):
        label = f"calibration/{item.case_id}/{item.variant}/{item.criterion['id']}#{i}"
        pairs.append((item, judge.decide(item.criterion, item.summary, label=label).met))
    by_type = {t: _figures([(it.expected, met) for it, met in pairs if it.criterion["type"] == t])
               for t in CRITERION_TYPES if any(it.criterion["type"] == t for it, _ in pairs)}
    by_variant = {v: _figures([(it.expected, met) for it, met in pairs if it.variant == v])
                  for v in ("faithful", *CORRUPTIONS) if any(it.variant == v for it, _ in pairs)}
    wrong = [{"case_id": it.case_id, "variant": it.variant, "criterion": it.criterion["id"], "expected": it.expected}
             for it, met in pairs if met != it.expected]
    return {"overall": _figures([(it.expected, met) for it, met in pairs]), "by_type": by_type,
            "by_variant": by_variant, "wrong": len(wrong), "disagreements": wrong[:20]}


def calibrate(judge: Judge, cases: Sequence[tuple[str, Sequence[Mapping[str, Any]]]], *,
              date: str | None = None) -> JSON:
    """The judge card: ``measure`` over ``control_set(cases)``, with what pins the judge.

    Args:
        judge: The judge to measure.
        cases: ``(case_id, criteria)`` pairs.
        date: ISO date to record (default: today, UTC).
    """
    items = control_set(cases)
    figures = measure(items, judge)
    overall = figures["overall"]
    return {
        "schema_version": CARD_SCHEMA_VERSION, "judge": judge.spec, "prompt_sha256": judge.prompt_sha256,
        "settings": judge.settings(), "date": date or datetime.now(UTC).date().isoformat(),
        "control_set": {"cases": len(cases), "summaries": len({(i.case_id, i.variant) for i in items}),
                        "verdicts": len(items), "corruptions": list(CORRUPTIONS)},
        "kappa": overall["kappa"], "kappa_95ci": overall["kappa_95ci"], "n": overall["n"],
        "threshold": KAPPA_THRESHOLD, **figures,
    }


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


def find_card(judge: Judge, given: Path | None) -> tuple[JSON | None, str]:
    """The card for ``judge`` (same spec and prompt hash), and where it came from or why there is none.

    ``given`` (``--groundeval-judge-card``) is read if set; else the packaged cards are searched.

    Raises:
        ConfigError: ``given`` is unreadable, or is a card of another judge or prompt.
    """
    if given is not None:
        card = read_card(given)
        if card["judge"] != judge.spec or card["prompt_sha256"] != judge.prompt_sha256:
            raise ConfigError(
                f"judge card {given}: made for judge {card['judge']!r} with prompt {str(card['prompt_sha256'])[:12]}, "
                f"not for {judge.spec!r} with prompt {judge.prompt_sha256[:12]}; run groundeval calibrate --task "
                f"summary --judge {judge.spec} -o {given}"
            )
        return card, str(given)
    folder = default_card_dir()
    for path in sorted(folder.glob("*.json")) if folder.is_dir() else []:
        try:
            card = read_card(path)
        except ConfigError:
            continue
        if card["judge"] == judge.spec and card["prompt_sha256"] == judge.prompt_sha256:
            return card, f"packaged card {path.name}"
    return None, f"no judge card for {judge.spec} with prompt {judge.prompt_sha256[:12]}"


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
        kappa = (by_type.get(ctype) or {}).get("kappa")
        if not isinstance(kappa, int | float):
            out.append(f"{ctype} (not calibrated)")
        elif kappa < KAPPA_THRESHOLD:
            out.append(f"{ctype} (kappa {kappa:.2f})")
    return out


def reliability_metrics(judge: Judge, card: Mapping[str, Any] | None) -> dict[str, Metric]:
    """The aggregate metrics that put the judge's reliability beside the judged scores.

    ``judge_reliability`` is ``calibrated (...)`` only when the overall kappa and every criterion
    type's kappa reach ``KAPPA_THRESHOLD`` (``weak_types``); else ``judge unreliable (...)``, or
    ``judge unreliable for <types> (...)`` naming the types below it, or ``judge not calibrated``.
    Anything but ``calibrated`` leaves the verdicts ungated (``SummaryTask.run_facts``).
    """
    if card is None or card.get("kappa") is None:
        return {"judge": judge.spec, "judge_kappa": None, "judge_kappa_95ci": None, "judge_kappa_n": None,
                "judge_reliability": "judge not calibrated"}
    kappa = float(card["kappa"])
    low, high = (card.get("kappa_95ci") or [None, None])[:2]
    ci = f"[{low:.2f}, {high:.2f}]" if isinstance(low, int | float) and isinstance(high, int | float) else None
    weak = weak_types(card)
    status = "calibrated" if kappa >= KAPPA_THRESHOLD and not weak else "judge unreliable"
    if weak and kappa >= KAPPA_THRESHOLD:
        status = f"judge unreliable for {', '.join(weak)}"
    return {"judge": judge.spec, "judge_kappa": round(kappa, 4), "judge_kappa_95ci": ci,
            "judge_kappa_n": int(card.get("n") or 0),
            "judge_reliability": f"{status} ({'overall ' if weak else ''}kappa {kappa:.2f}, threshold "
                                 f"{KAPPA_THRESHOLD:g}, card {card.get('date')})"}
