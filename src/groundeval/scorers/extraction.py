"""Score a predicted medication list against the truth: RxNorm precision/recall/F1 and displays.

Matching (see ``tasks/medlist.py`` for how the truth is built):

* A predicted RxCUI matches the truth medication that carries it (branded and generic codes of
  one concept are the same drug). A second prediction for an already-matched medication is a
  ``duplicate``: neither a hit nor a false positive.
* A prediction with ``rxnorm_code: null`` matches an ``uncoded`` truth medication whose text is
  equal after normalisation and case folding.
* Any other prediction is a false positive. When the truth holds an uncoded medication that is
  still unmatched, such a coded prediction is labelled ``unverifiable`` (it may name that drug,
  but the record cannot confirm the code), and still counts as a false positive.
* ``unresolved`` truth entries (a dangling medicationReference) are not scored.

Metrics: precision = tp / (tp + fp), recall = tp / (tp + fn), F1 = their harmonic mean.
When truth and prediction are both empty all three are 1.0; otherwise an empty denominator gives
0.0 (scikit-learn's ``zero_division=0``), so any prediction against empty truth has precision 0.

Display accuracy: over the matched medications that have an expected display, the share whose
predicted display equals the expected one exactly after trimming and collapsing internal runs of
whitespace to one space. Case is significant: the record's own display is the truth.
It is None (not applicable) when nothing was matched, empty vs empty included.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from statistics import fmean
from typing import Any, Literal

from groundeval.records import Metric, Score

__all__ = ["aggregate_medications", "normalize_display", "score_medications"]

_WS = re.compile(r"\s+")


def normalize_display(text: object) -> str:
    """Trim and collapse whitespace runs to one space; non-strings become ``""``."""
    return _WS.sub(" ", text).strip() if isinstance(text, str) else ""


def _ratio(num: int, den: int, both_empty: bool) -> float:
    if den == 0:
        return 1.0 if both_empty else 0.0
    return num / den


def score_medications(
    truth: Sequence[Mapping[str, Any]],
    predicted: Sequence[Mapping[str, Any]],
    *,
    min_f1: float = 1.0,
    min_display_accuracy: float = 1.0,
    inactive: Mapping[str, Sequence[str]] | None = None,
) -> Score:
    """Compare predicted medications with the truth.

    Args:
        truth: ``TruthMedication`` dicts (``codes``, ``displays``, ``text``, ``kind``).
        predicted: Answer items, each ``{"rxnorm_code": str | None, "display": str}``.
        min_f1: F1 needed to pass, in [0, 1].
        min_display_accuracy: Display accuracy needed to pass, in [0, 1].
        inactive: RxCUI -> statuses of non-active requests, used only to explain extras.

    Returns:
        A ``Score``: ``passed`` when both thresholds are met, ``partial`` when some medication
        was matched, ``failed`` otherwise. Metrics: precision, recall, f1, display_accuracy
        (None when not applicable), tp, fp, fn, duplicates, display_checked, display_correct.
    """
    scored = [m for m in truth if m.get("kind") in ("coded", "uncoded")]
    by_code = {code: i for i, m in enumerate(scored) for code in m.get("codes", [])}
    by_text = {
        normalize_display(m.get("text")).casefold(): i
        for i, m in enumerate(scored)
        if m.get("kind") == "uncoded"
    }
    matched: dict[int, str | None] = {}
    extras: list[dict[str, Any]] = []
    mismatches: list[dict[str, Any]] = []
    duplicates = checked = correct = 0
    for item in predicted:
        code = item.get("rxnorm_code")
        code = str(code).strip() if code is not None else None
        display = normalize_display(item.get("display"))
        idx = by_code.get(code) if code else by_text.get(display.casefold())
        if idx is None:
            extras.append({"rxnorm_code": code, "display": display})
            continue
        if idx in matched:
            duplicates += 1
            continue
        matched[idx] = code
        med = scored[idx]
        expected = med["displays"].get(code) if code else med.get("text")
        if expected:
            checked += 1
            if normalize_display(expected) == display:
                correct += 1
            else:
                mismatches.append({"rxnorm_code": code, "expected": expected, "got": display})
    tp, fp = len(matched), len(extras)
    missing = [m for i, m in enumerate(scored) if i not in matched]
    fn = len(missing)
    both_empty = not scored and not predicted
    precision = _ratio(tp, tp + fp, both_empty)
    recall = _ratio(tp, tp + fn, both_empty)
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    display_accuracy = correct / checked if checked else None
    unmatched_uncoded = any(m.get("kind") == "uncoded" for m in missing)
    for extra in extras:
        code = extra["rxnorm_code"]
        if code and inactive and code in inactive:
            extra["note"] = "in the record as " + "/".join(inactive[code]) + ", not active"
        elif code and unmatched_uncoded:
            extra["note"] = "unverifiable: the record's uncoded drug has no RxCUI to compare"
        else:
            extra["note"] = "not in the record"
    ok = f1 >= min_f1 and (display_accuracy is None or display_accuracy >= min_display_accuracy)
    outcome: Literal["passed", "partial", "failed"] = "passed" if ok else ("partial" if tp else "failed")
    metrics: dict[str, Metric] = {
        "precision": round(precision, 6),
        "recall": round(recall, 6),
        "f1": round(f1, 6),
        "display_accuracy": None if display_accuracy is None else round(display_accuracy, 6),
        "tp": tp,
        "fp": fp,
        "fn": fn,
        "duplicates": duplicates,
        "display_checked": checked,
        "display_correct": correct,
    }
    details = {
        "missing": [{"codes": m.get("codes"), "display": _shown(m)} for m in missing],
        "extra": extras,
        "display_mismatches": mismatches,
    }
    message = "" if ok else _message(metrics, details, min_f1, min_display_accuracy)
    return Score(outcome=outcome, metrics=metrics, details=details, message=message)


def _shown(med: Mapping[str, Any]) -> str:
    displays = [d for d in med.get("displays", {}).values() if d]
    return str(displays[0] if displays else med.get("text") or "")


def _fmt(value: Metric) -> str:
    return "n/a" if value is None else f"{value:.3f}" if isinstance(value, float) else str(value)


def _message(
    metrics: Mapping[str, Metric],
    details: Mapping[str, list[dict[str, Any]]],
    min_f1: float,
    min_display: float,
) -> str:
    lines = [
        f"F1 {_fmt(metrics['f1'])} (needs >= {min_f1:g}); precision {_fmt(metrics['precision'])}, "
        f"recall {_fmt(metrics['recall'])}; display accuracy {_fmt(metrics['display_accuracy'])} "
        f"(needs >= {min_display:g})"
    ]
    if details["missing"]:
        lines.append("missing (active in the record, not in the answer):")
        lines += [f"  - {'/'.join(m['codes']) or '(uncoded)'}  {m['display']}" for m in details["missing"]]
    if details["extra"]:
        lines.append("extra (in the answer, not an active medication in the record):")
        lines += [
            f"  - {e['rxnorm_code'] or '(null)'}  {e['display']}  [{e['note']}]"
            for e in details["extra"]
        ]
    if details["display_mismatches"]:
        lines.append("display mismatches (RxCUI: expected | got):")
        lines += [
            f"  - {d['rxnorm_code'] or '(uncoded)'}: {d['expected']!r} | {d['got']!r}"
            for d in details["display_mismatches"]
        ]
    return "\n".join(lines)


def aggregate_medications(metrics: Sequence[Mapping[str, Metric]]) -> dict[str, Metric]:
    """Micro- and macro-averaged precision/recall/F1 and display accuracy over scored cases.

    Micro averages pool tp/fp/fn (and display counts) over cases; macro averages take the mean of
    the per-case values, skipping cases where a value is not applicable.

    Args:
        metrics: Per-case metrics as returned by ``score_medications``.

    Returns:
        ``micro_precision``, ``micro_recall``, ``micro_f1``, ``micro_display_accuracy``,
        ``macro_precision``, ``macro_recall``, ``macro_f1``, ``macro_display_accuracy``
        (None when no case applies).
    """
    def total(key: str) -> int:
        return sum(int(m.get(key) or 0) for m in metrics)

    def mean(key: str) -> float | None:
        values = [float(v) for m in metrics if isinstance(v := m.get(key), int | float)]
        return round(fmean(values), 6) if values else None

    tp, fp, fn = total("tp"), total("fp"), total("fn")
    empty = not metrics or (tp + fp + fn == 0)
    p = _ratio(tp, tp + fp, empty)
    r = _ratio(tp, tp + fn, empty)
    checked = total("display_checked")
    return {
        "micro_precision": round(p, 6) if metrics else None,
        "micro_recall": round(r, 6) if metrics else None,
        "micro_f1": round(2 * p * r / (p + r), 6) if metrics and p + r else (0.0 if metrics else None),
        "micro_display_accuracy": round(total("display_correct") / checked, 6) if checked else None,
        "macro_precision": mean("precision"),
        "macro_recall": mean("recall"),
        "macro_f1": mean("f1"),
        "macro_display_accuracy": mean("display_accuracy"),
    }
