"""Score a predicted medication list against the truth: RxNorm precision/recall/F1 and displays.

Matching (see ``clinical/medication_list.py`` for how the truth is built):

* A predicted RxCUI matches the truth medication that carries it (branded and generic codes of
  one concept are the same drug).
* A prediction with ``rxnorm_code: null`` matches an ``uncoded`` truth medication whose text is
  equal after normalisation and case folding.
* Any other prediction is a false positive, counted once per drug (its RxCUI, or its normalised,
  case-folded display when it has none). When the truth holds an uncoded medication that is still
  unmatched, such a coded prediction is labelled ``unverifiable`` (it may name that drug, but the
  record cannot confirm the code), and still counts as a false positive.
* ``unresolved`` truth entries (a dangling medicationReference) are not scored.

**The answer is a set of (drug, display) claims**, by the rule every task whose answer is a set of
labelled items follows (``tasks.reconcile.scorer`` applies it to (drug, status)): an identical repeat
(the same drug again, with the same display after whitespace normalisation) counts once, whether
the drug is right or wrong: it is neither a hit nor a false positive, and ``duplicates`` counts it.
The same drug listed again with another display (or another of its codes) is also no second hit
or false positive, but its display is then right only when *every* display given for it is
accepted for the code it is given with; two listings of which one is not accepted are a
*contradiction* (``contradictions`` counts such drugs), the drug's display counts as wrong, and a
case with a contradiction cannot pass. (Two displays that are both accepted, say the two spellings
Synthea gives one RxCUI, or a brand and a generic coding each with its own display, contradict
nothing.)

Metrics: precision = tp / (tp + fp), recall = tp / (tp + fn), F1 = their harmonic mean.
Empty denominators are not applicable, never a made-up number:

* ``recall`` is None when the (scored) truth is empty: there was nothing to find.
* ``precision`` is None when the answer is empty: nothing was claimed.
* ``f1`` is always a number: 1.0 when both are empty and an answer was found (``[]`` is the
  answer "none"), 0.0 when exactly one side is empty, and 0.0 whenever no answer was found
  (``found=False``: no JSON array, an ambiguous reply, or an agent that did not answer at all,
  which the runner scores as an empty, not-found answer). So F1 carries the pass/fail signal of
  every case, and an empty-truth case can still fail.

Display accuracy: over the matched medications that have an expected display, the share whose
predicted display equals one of the accepted displays exactly after trimming and collapsing
internal runs of whitespace to one space. Case is significant: the record's own display is the
truth. It is None (not applicable) when nothing was matched, empty vs empty included.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from statistics import fmean
from typing import Any, Literal

from groundeval.scoring import Metric, Score

__all__ = ["aggregate_medications", "normalize_display", "score_medications"]

_WS = re.compile(r"\s+")


def normalize_display(text: object) -> str:
    """Trim and collapse whitespace runs to one space; non-strings become ``""``."""
    return _WS.sub(" ", text).strip() if isinstance(text, str) else ""


def _ratio(num: int, den: int) -> float | None:
    """``num / den``, or None (not applicable) for an empty denominator."""
    return num / den if den else None


def _f1(tp: int, fp: int, fn: int, *, found: bool = True) -> float:
    """F1 = 2tp / (2tp + fp + fn); 1.0 for nothing vs nothing (when found), else 0.0 if undefined."""
    if not found:
        return 0.0
    den = 2 * tp + fp + fn
    return 2 * tp / den if den else 1.0


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 6)


def score_medications(
    truth: Sequence[Mapping[str, Any]],
    predicted: Sequence[Mapping[str, Any]],
    *,
    min_f1: float = 1.0,
    min_display_accuracy: float = 1.0,
    inactive: Mapping[str, Sequence[str]] | None = None,
    found: bool = True,
) -> Score:
    """Compare predicted medications with the truth.

    Args:
        truth: ``TruthMedication`` dicts (``codes``, ``displays``, ``text``, ``kind``).
        predicted: Answer items, each ``{"rxnorm_code": str | None, "display": str}``.
        min_f1: F1 needed to pass, in [0, 1].
        min_display_accuracy: Display accuracy needed to pass, in [0, 1].
        inactive: RxCUI -> reasons its requests were excluded (``medication_list.inactive_codes``), used
            only to explain extras.
        found: False when no answer was found (``Parsed.found``); F1 is then 0.0 and the case
            fails whatever the truth.

    Returns:
        A ``Score``: ``passed`` when both thresholds are met and an answer was found,
        ``partial`` when some medication was matched, ``failed`` otherwise. Metrics: precision
        (None for an empty answer), recall (None for an empty truth), f1 (always a number),
        display_accuracy (None when nothing with a display was matched), tp, fp, fn,
        duplicates, contradictions, display_checked, display_correct.
    """
    scored = [m for m in truth if m.get("kind") in ("coded", "uncoded")]
    by_code = {code: i for i, m in enumerate(scored) for code in m.get("codes", [])}
    by_text = {
        normalize_display(m.get("text")).casefold(): i
        for i, m in enumerate(scored)
        if m.get("kind") == "uncoded"
    }
    matched: dict[int, str | None] = {}
    given: dict[int, list[tuple[str | None, str]]] = {}  # truth medication -> distinct (code, display) listed
    extras: list[dict[str, Any]] = []
    extra_keys: set[str] = set()
    mismatches: list[dict[str, Any]] = []
    duplicates = checked = correct = contradictions = 0
    for item in predicted:
        code = item.get("rxnorm_code")
        code = str(code).strip() if code is not None else None
        display = normalize_display(item.get("display"))
        idx = by_code.get(code) if code else by_text.get(display.casefold())
        if idx is None:
            key = code or f"display:{display.casefold()}"
            if key in extra_keys:
                duplicates += 1  # a wrong drug listed again is still one false positive
                continue
            extra_keys.add(key)
            extras.append({"rxnorm_code": code, "display": display})
            continue
        if idx in matched:
            duplicates += 1
            if (code, display) not in given[idx]:
                given[idx].append((code, display))
            continue
        matched[idx] = code
        given[idx] = [(code, display)]
    for idx, code in matched.items():
        # each listing's display is checked against the displays accepted for the code it gives
        listed = [(c, d, [normalize_display(a) for a in _accepted(scored[idx], c)]) for c, d in given[idx]]
        listed = [(c, d, accepted) for c, d, accepted in listed if accepted]
        if not listed:
            continue
        checked += 1
        if all(d in accepted for _, d, accepted in listed):
            correct += 1
            continue
        contradicted = len(listed) > 1
        contradictions += contradicted
        raw = _accepted(scored[idx], code) or _accepted(scored[idx], listed[0][0])
        expected = raw[0] if len(raw) == 1 else " or ".join(repr(a) for a in raw)
        got = " + ".join(repr(d) for _, d, _ in listed) if contradicted else listed[0][1]
        mismatches.append({"rxnorm_code": code, "expected": expected, "got": got,
                           **({"contradiction": True} if contradicted else {})})
    tp, fp = len(matched), len(extras)
    missing = [m for i, m in enumerate(scored) if i not in matched]
    fn = len(missing)
    precision = _ratio(tp, tp + fp)
    recall = _ratio(tp, tp + fn)
    f1 = _f1(tp, fp, fn, found=found)
    display_accuracy = correct / checked if checked else None
    unmatched_uncoded = any(m.get("kind") == "uncoded" for m in missing)
    for extra in extras:
        code = extra["rxnorm_code"]
        if code and inactive and code in inactive:
            extra["note"] = "in the record, but not an active order: " + "; ".join(inactive[code])
        elif code and unmatched_uncoded:
            extra["note"] = "unverifiable: the record's uncoded drug has no RxCUI to compare"
        else:
            extra["note"] = "not in the record"
    ok = (found and f1 >= min_f1 and not contradictions
          and (display_accuracy is None or display_accuracy >= min_display_accuracy))
    outcome: Literal["passed", "partial", "failed"] = "passed" if ok else ("partial" if tp else "failed")
    metrics: dict[str, Metric] = {
        "precision": _round(precision),
        "recall": _round(recall),
        "f1": round(f1, 6),
        "display_accuracy": _round(display_accuracy),
        "tp": tp,
        "fp": fp,
        "fn": fn,
        "duplicates": duplicates,
        "contradictions": contradictions,
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


def _accepted(med: Mapping[str, Any], code: str | None) -> list[str]:
    """Accepted displays for a matched medication: the RxCUI's list, or the uncoded text."""
    if not code:
        return [med["text"]] if med.get("text") else []
    value = (med.get("displays") or {}).get(code)
    if isinstance(value, str):  # a truth written by hand with one display per RxCUI
        return [value]
    return [d for d in value or [] if d]


def _shown(med: Mapping[str, Any]) -> str:
    displays = [d for code in med.get("codes", []) for d in _accepted(med, code)]
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
        lines.append("display mismatches (RxCUI: expected | got; two displays, one not accepted, are a "
                     "contradiction and the case cannot pass):")
        lines += [
            f"  - {d['rxnorm_code'] or '(uncoded)'}: {d['expected']!r} | "
            + (d["got"] if d.get("contradiction") else repr(d["got"]))
            for d in details["display_mismatches"]
        ]
    return "\n".join(lines)


def aggregate_medications(metrics: Sequence[Mapping[str, Metric]]) -> dict[str, Metric]:
    """Micro- and macro-averaged precision/recall/F1 and display accuracy, plus answer counts.

    Macro averages are the mean of the per-case values, each metric over the cases where it is
    applicable (a None is skipped, not counted as 0 or 1): macro recall covers the cases with a
    non-empty truth, macro precision those with a non-empty answer, macro F1 every case.
    Micro averages pool tp/fp/fn (and display counts) over cases; a pool with an empty
    denominator is None. What micro cannot see: a case with nothing in the truth and nothing in
    the answer adds nothing to the pools, so an empty-truth case that *failed* (no answer found)
    leaves micro F1 at 1.0; the pass rate and answer rate of the run are the headline figures,
    micro/macro describe the answers given.

    Args:
        metrics: Per-case metrics as returned by ``score_medications`` (plus ``format_ok``
            when the task adds it).

    Returns:
        ``micro_precision``, ``micro_recall``, ``micro_f1``, ``micro_display_accuracy``,
        ``macro_precision``, ``macro_recall``, ``macro_f1``, ``macro_display_accuracy``
        (None when no case applies), and the counts ``format_not_ok`` (cases whose answer had
        to be dug out of prose or a fence, or was not found), ``duplicates`` and ``contradictions``
        (totals), and ``cases_with_duplicates``.
    """
    def total(key: str) -> int:
        return sum(int(m.get(key) or 0) for m in metrics)

    def mean(key: str) -> float | None:
        values = [float(v) for m in metrics if isinstance(v := m.get(key), int | float)]
        return round(fmean(values), 6) if values else None

    tp, fp, fn = total("tp"), total("fp"), total("fn")
    checked = total("display_checked")
    return {
        "micro_precision": _round(_ratio(tp, tp + fp)),
        "micro_recall": _round(_ratio(tp, tp + fn)),
        "micro_f1": round(_f1(tp, fp, fn), 6) if tp + fp + fn else None,
        "micro_display_accuracy": _round(_ratio(total("display_correct"), checked)),
        "macro_precision": mean("precision"),
        "macro_recall": mean("recall"),
        "macro_f1": mean("f1"),
        "macro_display_accuracy": mean("display_accuracy"),
        "format_not_ok": sum(m.get("format_ok") is False for m in metrics),
        "duplicates": total("duplicates"),
        "contradictions": total("contradictions"),
        "cases_with_duplicates": sum(int(m.get("duplicates") or 0) > 0 for m in metrics),
    }
