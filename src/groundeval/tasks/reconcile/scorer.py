"""Score a reconciliation answer: discrepancy precision/recall/F1, matched F1, the high-alert rule.

Truth entries come from ``tasks.reconcile.truth`` (each with its accepted RxCUIs and status);
answer items are ``{"rxnorm_code", "display", "status", ...}``. An answer item is paired with the
truth entry that carries its RxCUI (any of the entry's codes: branded and generic RxCUIs of one
record concept, and the RxCUI the report names, are the same drug); an item whose RxCUI is on
neither side pairs with nothing (an *extra*, keyed by its RxCUI, or by its display when it has
none).

**An answer is a set of (drug, status) claims** (the rule every task whose answer is a set of
labelled items follows; ``tasks.extraction.scorer`` applies it to (drug, display)):

* an identical repeat (the same drug with the same status) counts once, right or wrong: it is
  neither a hit nor a false positive, and ``duplicates`` counts it;
* the same drug claimed with two or more different statuses is a *contradiction*: at most one of
  them can be true, so none earns anything. Every distinct (drug, status) pair claimed for it is
  a false positive (in the discrepancy or the matched pool, by the status), and its true status is
  a false negative; a high-alert drug so claimed is a missed high-alert discrepancy;
  ``contradictions`` counts such drugs, and a case with one cannot pass.

So adding hedges (other statuses) to a best guess always scores strictly lower than the best
guess alone, whether the guess was right or wrong.

* **Discrepancies** are the (RxCUI, status) pairs whose status is not ``matched``. A discrepancy
  claim is a true positive when its entry has that status (and no other status is claimed for
  it), else a false positive (a misclassified status is one false positive and one false
  negative); truth discrepancies without a true positive are false negatives.
  ``discrepancy_precision`` is n/a (None) when the answer names no discrepancy,
  ``discrepancy_recall`` when the truth has none; ``discrepancy_f1`` is always a number, by the
  extraction task's rule: 1.0 when both are empty and an answer was found, 0.0 when exactly one
  is, 0.0 whenever no answer was found (see ``tasks.extraction.scorer``).
* ``recall_<status>``: the recall over the truth entries of one discrepancy status (n/a when there
  are none).
* **Matched**: ``matched_f1`` over the drugs the answer calls ``matched`` against the truth's
  matched entries, by the same rule. It is what makes a report that agrees with the record
  scoreable: there the discrepancy F1 is 1.0 only when the agent reports no discrepancy, and the
  matched F1 is 1.0 only when it lists every matched medication, so ``[]`` cannot pass it.
* ``high_alert_missed``: true when some truth discrepancy on a high-alert medication (ISMP,
  ``terminology.high_alert``) has no true positive (missed, misclassified or contradicted). It
  fails the case whatever the F1.

A case passes when an answer was found, ``discrepancy_f1 >= min_f1``, ``matched_f1 >= min_f1``,
no high-alert discrepancy was missed and nothing was contradicted. ``dose_mismatch`` items should
carry ``record_dose`` and ``reported_dose``; ``doses_given`` counts the true-positive ones that do
(reported, not gating).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from statistics import fmean
from typing import Any, Literal

from groundeval.scoring import Direction, Metric, Score

__all__ = ["DISCREPANCY_STATUSES", "METRIC_NAMES", "ReconcileScorer", "aggregate_reconcile", "score_reconcile"]

DISCREPANCY_STATUSES = ("omission", "commission", "dose_mismatch", "stopped_but_taken")

METRIC_NAMES: tuple[str, ...] = (
    "discrepancy_precision", "discrepancy_recall", "discrepancy_f1",
    *(f"recall_{s}" for s in DISCREPANCY_STATUSES),
    "matched_precision", "matched_recall", "matched_f1", "high_alert_missed", "high_alert_discrepancies",
    "tp", "fp", "fn", "matched_tp", "matched_fp", "matched_fn", "duplicates", "contradictions", "doses_given",
    "format_ok",
)
METRIC_DIRECTIONS: dict[str, Direction] = {
    **dict.fromkeys(("fp", "fn", "matched_fp", "matched_fn", "duplicates", "contradictions", "high_alert_missed",
                     "answers_high_alert_missed"), "lower"),
    "high_alert_discrepancies": "none", "answers_scored": "none",
}
"""Metrics for which higher is not better (``high_alert_discrepancies`` counts the truth's, not the answer's)."""


def _ratio(num: int, den: int) -> float | None:
    return round(num / den, 6) if den else None


def _f1(tp: int, fp: int, fn: int, *, found: bool) -> float:
    if not found:
        return 0.0
    den = 2 * tp + fp + fn
    return round(2 * tp / den, 6) if den else 1.0


def _code(value: object) -> str | None:
    return str(value).strip() if value is not None and str(value).strip() else None


def score_reconcile(
    truth: Sequence[Mapping[str, Any]],
    answer: Sequence[Mapping[str, Any]],
    *,
    min_f1: float = 1.0,
    found: bool = True,
) -> Score:
    """Compare answer items with the truth entries (rules in the module docstring).

    Args:
        truth: ``TruthEntry`` dicts (``codes``, ``status``, ``display``, ``high_alert``).
        answer: Items ``{"rxnorm_code", "display", "status", "record_dose"?, "reported_dose"?}``.
        min_f1: Discrepancy and matched F1 needed to pass, in [0, 1].
        found: False when no answer was found; both F1s are then 0.0.

    Returns:
        A ``Score`` with the metrics of ``METRIC_NAMES`` (except ``format_ok``, added by the task):
        ``passed``, ``partial`` (some pair right, not passing, no high-alert miss) or ``failed``.
        Details follow the report convention (docs/tasks/writing-a-task.md): ``missing`` (truth
        entries the answer lacks), ``mismatches`` (``expected``/``got`` status), ``contradictions``
        (entries claimed with several statuses, ``got`` joined by ``+``), ``extra`` (distinct (drug,
        status) claims on neither side), plus ``high_alert_missed``.
    """
    by_code = {code: i for i, entry in enumerate(truth) for code in entry.get("codes", [])}
    claims: dict[int, dict[Any, Mapping[str, Any]]] = {}  # entry -> status -> its first item
    extra_claims: dict[str, dict[Any, dict[str, Any]]] = {}  # extra drug -> status -> shown item
    duplicates = 0
    for item in answer:
        code = _code(item.get("rxnorm_code"))
        status = item.get("status")
        idx = by_code.get(code) if code else None
        if idx is None:
            key = code or f"display:{' '.join(str(item.get('display') or '').split()).casefold()}"
            seen = extra_claims.setdefault(key, {})
            target: dict[Any, Any] = seen
            shown: Mapping[str, Any] = {"rxnorm_code": code, "display": item.get("display"), "status": status}
        else:
            target, shown = claims.setdefault(idx, {}), item
        if status in target:
            duplicates += 1  # an identical repeat: neutral, right or wrong
            continue
        target[status] = shown
    hits: set[int] = set()
    matched_hits: set[int] = set()
    wrong: list[dict[str, Any]] = []
    contradicted: list[dict[str, Any]] = []
    doses_given = 0
    extras = [e for statuses in extra_claims.values() for e in statuses.values()]
    fp = sum(1 for e in extras if e["status"] != "matched")
    matched_fp = len(extras) - fp
    contradictions = sum(len(statuses) > 1 for statuses in extra_claims.values())
    for idx, statuses in claims.items():
        expected = truth[idx]["status"]
        if len(statuses) == 1:
            ((status, item),) = statuses.items()
            if status == expected:
                (matched_hits if status == "matched" else hits).add(idx)
                if status == "dose_mismatch" and item.get("record_dose") and item.get("reported_dose"):
                    doses_given += 1
                continue
            wrong.append({"rxnorm_code": truth[idx]["rxnorm_code"], "display": truth[idx]["display"],
                          "expected": expected, "got": status})
        else:  # a contradiction: no status claimed for this drug earns anything
            contradictions += 1
            contradicted.append({"rxnorm_code": truth[idx]["rxnorm_code"], "display": truth[idx]["display"],
                                 "expected": expected, "got": " + ".join(str(s) for s in statuses)})
        matched_fp += sum(1 for s in statuses if s == "matched")
        fp += sum(1 for s in statuses if s != "matched")
    discrepancies = [i for i, e in enumerate(truth) if e["status"] != "matched"]
    matched = [i for i, e in enumerate(truth) if e["status"] == "matched"]
    tp, matched_tp = len(hits), len(matched_hits)
    fn, matched_fn = len(discrepancies) - tp, len(matched) - matched_tp
    missed = [i for i in discrepancies if i not in hits]
    high_alert = [i for i in discrepancies if truth[i].get("high_alert")]
    high_alert_missed = any(i in missed for i in high_alert)
    metrics: dict[str, Metric] = {
        "discrepancy_precision": _ratio(tp, tp + fp),
        "discrepancy_recall": _ratio(tp, tp + fn),
        "discrepancy_f1": _f1(tp, fp, fn, found=found),
    }
    for status in DISCREPANCY_STATUSES:
        of_status = [i for i in discrepancies if truth[i]["status"] == status]
        metrics[f"recall_{status}"] = _ratio(sum(i in hits for i in of_status), len(of_status))
    metrics.update({
        "matched_precision": _ratio(matched_tp, matched_tp + matched_fp),
        "matched_recall": _ratio(matched_tp, matched_tp + matched_fn),
        "matched_f1": _f1(matched_tp, matched_fp, matched_fn, found=found),
        "high_alert_missed": high_alert_missed,
        "high_alert_discrepancies": len(high_alert),
        "tp": tp, "fp": fp, "fn": fn,
        "matched_tp": matched_tp, "matched_fp": matched_fp, "matched_fn": matched_fn,
        "duplicates": duplicates, "contradictions": contradictions, "doses_given": doses_given,
    })
    ok = (found and not high_alert_missed and not contradictions and float(metrics["discrepancy_f1"] or 0) >= min_f1
          and float(metrics["matched_f1"] or 0) >= min_f1)
    credit = (tp or matched_tp) and not high_alert_missed
    outcome: Literal["passed", "partial", "failed"] = "passed" if ok else ("partial" if credit else "failed")
    details = {
        "missing": [_shown(truth[i]) for i in range(len(truth)) if i not in claims],
        "mismatches": wrong,
        "contradictions": contradicted,
        "extra": extras,
        "high_alert_missed": [_shown(truth[i]) for i in high_alert if i in missed],
    }
    message = "" if ok else _message(metrics, details, min_f1)
    return Score(outcome=outcome, metrics=metrics, details=details, message=message)


def _shown(entry: Mapping[str, Any]) -> dict[str, Any]:
    return {"rxnorm_code": entry["rxnorm_code"], "display": entry["display"], "status": entry["status"],
            "why": entry.get("why", ""), "high_alert": entry.get("high_alert")}


def _fmt(value: Metric) -> str:
    return "n/a" if value is None else f"{value:.3f}" if isinstance(value, float) else str(value)


def _message(metrics: Mapping[str, Metric], details: Mapping[str, list[dict[str, Any]]], min_f1: float) -> str:
    lines = [
        f"discrepancy F1 {_fmt(metrics['discrepancy_f1'])} (precision {_fmt(metrics['discrepancy_precision'])}, "
        f"recall {_fmt(metrics['discrepancy_recall'])}); matched F1 {_fmt(metrics['matched_f1'])}; "
        f"each needs >= {min_f1:g}"
    ]
    sections: tuple[tuple[str, str, Callable[[Mapping[str, Any]], str]], ...] = (
        ("high_alert_missed", "HIGH-ALERT discrepancy missed or misclassified (fails the case whatever the F1):",
         lambda e: f"[{e['status']}; {e['high_alert']}]"),
        ("missing", "not in the answer:", lambda e: f"[{e['status']}{'; ' + e['why'] if e['why'] else ''}]"),
        ("mismatches", "wrong status (expected | got):", lambda e: f"{e['expected']} | {e['got']}"),
        ("contradictions", "claimed with several statuses, a contradiction: each is a false positive, the drug is "
         "missed and the case cannot pass (expected | got):", lambda e: f"{e['expected']} | {e['got']}"),
        ("extra", "in the answer, on neither side:", lambda e: f"[{e['status']}]"),
    )
    for key, title, tail in sections:
        if details[key]:
            lines.append(title)
            sep = ": " if key in ("mismatches", "contradictions") else "  "
            lines += [f"  - {e['rxnorm_code'] or '(null)'}  {e['display']}{sep}{tail(e)}" for e in details[key]]
    return "\n".join(lines)


def aggregate_reconcile(metrics: Sequence[Mapping[str, Metric]]) -> dict[str, Metric]:
    """Micro discrepancy precision/recall/F1 (pooled tp/fp/fn), macro means (n/a skipped), counts.

    Micro pools tp/fp/fn over cases (a pool with an empty denominator is None); macro is the mean
    of the per-case values where applicable (n/a skipped, not counted as 0 or 1).

    Returns:
        ``micro_``/``macro_`` ``discrepancy_precision``, ``discrepancy_recall``, ``discrepancy_f1``
        and ``matched_f1``; ``macro_recall_<status>`` (None when no case applies);
        ``answers_high_alert_missed`` (scored answers that missed a high-alert discrepancy) out of
        ``answers_scored`` (the metrics given: one per counted case and trial, so under K trials a
        case counts K times, and a case the agent crashed on is in neither), ``format_not_ok``,
        ``duplicates``, ``contradictions`` (totals) and ``answers_with_contradictions``.
    """
    def total(key: str) -> int:
        return sum(int(m.get(key) or 0) for m in metrics)

    def mean(key: str) -> float | None:
        values = [float(v) for m in metrics if isinstance(v := m.get(key), int | float) and not isinstance(v, bool)]
        return round(fmean(values), 6) if values else None

    tp, fp, fn = total("tp"), total("fp"), total("fn")
    mtp, mfp, mfn = total("matched_tp"), total("matched_fp"), total("matched_fn")
    out: dict[str, Metric] = {
        "micro_discrepancy_precision": _ratio(tp, tp + fp),
        "micro_discrepancy_recall": _ratio(tp, tp + fn),
        "micro_discrepancy_f1": _f1(tp, fp, fn, found=True) if tp + fp + fn else None,
        "micro_matched_f1": _f1(mtp, mfp, mfn, found=True) if mtp + mfp + mfn else None,
        "macro_discrepancy_precision": mean("discrepancy_precision"),
        "macro_discrepancy_recall": mean("discrepancy_recall"),
        "macro_discrepancy_f1": mean("discrepancy_f1"),
        "macro_matched_f1": mean("matched_f1"),
    }
    for status in DISCREPANCY_STATUSES:
        out[f"macro_recall_{status}"] = mean(f"recall_{status}")
    out.update({
        "answers_high_alert_missed": sum(m.get("high_alert_missed") is True for m in metrics),
        "answers_scored": len(metrics),
        "format_not_ok": sum(m.get("format_ok") is False for m in metrics),
        "duplicates": total("duplicates"),
        "contradictions": total("contradictions"),
        "answers_with_contradictions": sum(int(m.get("contradictions") or 0) > 0 for m in metrics),
    })
    return out


class ReconcileScorer:
    """The reconcile task's scorer (``metric_names``, ``score``, ``aggregate``).

    Args:
        min_f1: Discrepancy and matched F1 a case needs to pass, in [0, 1].
    """

    metric_names: tuple[str, ...] = METRIC_NAMES
    metric_directions: dict[str, Direction] = METRIC_DIRECTIONS

    def __init__(self, min_f1: float = 1.0) -> None:
        self.min_f1 = min_f1

    def score(self, case: Any, truth: Any, parsed: Any) -> Score:
        """Score ``parsed.value`` against ``truth["entries"]``; ``format_ok`` added from ``parsed``."""
        del case
        score = score_reconcile(truth["entries"], parsed.value, min_f1=self.min_f1, found=parsed.found)
        metrics = {**score.metrics, "format_ok": parsed.format_ok}
        message = score.message
        if not parsed.found:
            message = f"answer format: {parsed.error}; an answer without a JSON array cannot pass\n{message}".strip()
        elif parsed.error and message:
            message = f"answer format: {parsed.error}\n{message}"
        return Score(outcome=score.outcome, metrics=metrics, details=score.details, message=message)

    def aggregate(self, metrics: Sequence[Mapping[str, Metric]]) -> dict[str, Metric]:
        """See ``aggregate_reconcile``."""
        return aggregate_reconcile(metrics)
