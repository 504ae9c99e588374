"""Score a labs answer: value, category and direction accuracy per case, the critical rule, macro F1.

Truth entries come from ``clinical.lab_truth`` (one per test of the table); answer entries are
``{"loinc", "value", "unit", "date", "category", "direction", "critical"}``. An answer entry is
paired with the truth entry of its ``loinc``; an entry for a test the prompt did not name is
``extra``. A test without an entry is wrong on every count it takes part in. Several entries for
one test follow the rule for answers that are sets of labelled items: a repeat that says the same
(after trimming and case-folding the words) is a ``duplicate`` and neutral; entries that differ
in anything are a ``contradiction``: the test earns nothing (it is scored as if it had no entry,
so a critical result is missed) and the case cannot pass.

Per test with a counted result (``tests_with_result``):

* **value**: the answer's value, converted from its unit to the test's unit through UCUM (units
  the table accepts for the test only), is within 0.5 % of the truth (relative; for blood pressure
  every component), and its date is the result's date (``YYYY-MM-DD``; a longer dateTime is cut to
  its date). A unit that is missing, not UCUM or not accepted for the test makes the value wrong.
* **category**: equal to the truth's (case and surrounding space ignored).
* **direction**, over the tests that also have a previous result (``tests_with_previous``): equal
  to the truth's (per component for blood pressure). Where there is no previous result the right
  answer is JSON ``null`` (or an empty string); anything else (a word, a list, an object) is a
``directions_invented`` and keeps the case from passing,
  but such tests are not in ``direction_accuracy``, so answering ``null`` everywhere earns nothing.

Per test without a counted result (``tests_without_result``): right when the entry says so
(``value`` null and category ``no_result``).

**Critical.** ``critical_missed`` is true when a result the truth calls critical is not flagged
``"critical": true`` (or has no entry): it fails the case whatever else is right (like reconcile's
high-alert rule). A flag on a result that is not critical is a ``critical_false_alarms``; it stops
the case from passing (flagging everything cannot pay) but is not a miss. A result the table does
not assess (``not_applicable``) is neither.

A case passes when an answer was found, every applicable accuracy is 1.0 and there is no critical
miss, no false alarm, no invented direction and no contradiction; it is ``partial`` when something
is right and no critical result was missed; otherwise ``failed``. An accuracy with no test to
count is n/a (None); when no answer was found every applicable accuracy is 0.0.

Run level: micro (pooled) and macro (mean over cases, n/a skipped) accuracies, and
``category_macro_f1``: the F1 of each category label (``<LOINC>:<category>``) over every
test with a result in the run, averaged over the labels that occur in the truth or in the answers;
it is read from the per-case ``category_pairs`` string, ``<LOINC>=<truth>><answer>`` items joined
by ``;`` (``-`` for a test without an entry).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from statistics import fmean
from typing import Any, Literal

from groundeval.clinical.lab_thresholds import Thresholds
from groundeval.clinical.lab_truth import NO_RESULT
from groundeval.scoring import Direction, Metric, Parsed, Score

__all__ = [
    "METRIC_DIRECTIONS", "METRIC_NAMES", "VALUE_TOLERANCE", "LabsScorer", "aggregate_labs", "macro_f1", "score_labs",
]

VALUE_TOLERANCE = 0.005
"""Relative difference at which an answer's value (in the test's unit) still equals the truth's (0.5 %)."""

METRIC_NAMES: tuple[str, ...] = (
    "value_accuracy", "category_accuracy", "direction_accuracy", "no_result_accuracy",
    "critical_missed", "critical_false_alarms", "critical_results", "directions_invented",
    "tests_with_result", "tests_with_previous", "tests_without_result", "values_correct", "categories_correct",
    "directions_correct", "no_results_correct", "missing_entries", "extra_entries", "duplicates", "contradictions",
    "category_pairs",
    "format_ok",
)
METRIC_DIRECTIONS: dict[str, Direction] = {
    **dict.fromkeys(("critical_missed", "critical_false_alarms", "directions_invented", "missing_entries",
                     "extra_entries", "duplicates", "contradictions", "answers_critical_missed",
                     "answers_with_contradictions"), "lower"),
    **dict.fromkeys(("critical_results", "tests_with_result", "tests_with_previous", "tests_without_result",
                     "category_pairs", "answers_scored"), "none"),
}
"""Metrics (per case and of ``aggregate_labs``) for which higher is not better (the truth's counts are neither)."""

_MISSING = "-"


def _ratio(num: int, den: int, *, found: bool) -> float | None:
    if not den:
        return None
    return round(num / den, 6) if found else 0.0


def _word(value: object) -> str | None:
    return value.strip().lower() if isinstance(value, str) and value.strip() else None


def _norm(value: object) -> object:
    if isinstance(value, str):
        return " ".join(value.split()).lower()
    if isinstance(value, Mapping):
        return {str(k).strip(): _norm(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_norm(v) for v in value]
    return value


def _same(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    """Two entries for one test say the same (words trimmed and case-folded; 83 equals 83.0)."""
    return all(_norm(a.get(k)) == _norm(b.get(k)) for k in set(a) | set(b))


def _close(got: object, want: float) -> bool:
    return isinstance(got, float) and abs(got - want) <= max(VALUE_TOLERANCE * abs(want), 1e-9)


class _Check:
    """One answer entry against one truth entry."""

    def __init__(self, table: Thresholds, truth: Mapping[str, Any], item: Mapping[str, Any] | None) -> None:
        self.table, self.truth, self.item = table, truth, item

    def _in_unit(self, value: object, unit: object) -> float | None:
        if isinstance(value, bool) or not isinstance(value, int | float) or not isinstance(unit, str):
            return None
        return self.table.test(self.truth["loinc"]).to_unit(float(value), unit.strip())

    def value(self) -> bool:
        if self.item is None:
            return False
        want, got, unit = self.truth["value_in_unit"], self.item.get("value"), self.item.get("unit")
        if isinstance(want, Mapping):
            same = isinstance(got, Mapping) and all(
                _close(self._in_unit(got.get(code), unit), float(v)) for code, v in want.items())
        else:
            same = _close(self._in_unit(got, unit), float(want))
        day = self.item.get("date")
        return same and isinstance(day, str) and day.strip()[:10] == self.truth["date"]

    def category(self) -> bool:
        return self.item is not None and _word(self.item.get("category")) == self.truth["category"].lower()

    def direction(self) -> bool:
        if self.item is None:
            return False
        want, got = self.truth["direction"], self.item.get("direction")
        if isinstance(want, Mapping):
            return isinstance(got, Mapping) and all(_word(got.get(code)) == v for code, v in want.items())
        if want is None:  # no previous result: only JSON null (or an empty string) says "no direction"
            return got is None or (isinstance(got, str) and not got.strip())
        return bool(_word(got) == want)

    def no_result(self) -> bool:
        return (self.item is not None and self.item.get("value") is None
                and _word(self.item.get("category")) == NO_RESULT)

    def flagged(self) -> bool:
        return self.item is not None and self.item.get("critical") is True


def score_labs(table: Thresholds, truth: Sequence[Mapping[str, Any]], answer: Sequence[Mapping[str, Any]], *,
               found: bool = True) -> Score:
    """Compare answer entries with the truth (rules in the module docstring).

    Args:
        table: The threshold table the truth was derived with (units and conversions).
        truth: The truth's ``tests`` entries.
        answer: Parsed answer entries (``loinc`` a string).
        found: False when no answer was found; the accuracies are then 0.0.

    Returns:
        A ``Score`` with the metrics of ``METRIC_NAMES`` except ``format_ok``. Details:
        ``missing`` (tests without an entry), ``mismatches`` (``code``, ``field``, ``expected``,
        ``got``), ``extra`` (entries for tests not asked), ``critical_missed``.
    """
    by_code: dict[str, Mapping[str, Any]] = {}
    duplicates, extra, contradicted = 0, [], set()
    wanted = {t["loinc"] for t in truth}
    for given in answer:
        code = given.get("loinc")
        if code not in wanted:
            extra.append({"code": code, "display": str(given.get("category") or "")})
        elif code in by_code:
            if _same(by_code[str(code)], given):
                duplicates += 1
            else:
                contradicted.add(str(code))
        else:
            by_code[str(code)] = given
    counts = dict.fromkeys(("values", "categories", "directions", "no_results"), 0)
    missed, alarms, critical, invented, pairs, mismatches = [], 0, 0, 0, [], []
    for entry in truth:
        item = None if entry["loinc"] in contradicted else by_code.get(entry["loinc"])
        if item is None and entry["loinc"] in contradicted:
            mismatches.append(_mismatch(entry, "entries", "one entry", "entries that contradict each other"))
        check = _Check(table, entry, item)
        if entry["critical"] is True:
            critical += 1
            if not check.flagged():
                missed.append({"code": entry["loinc"], "display": entry["name"], "note": _shown_value(entry)})
        elif entry["critical"] is False and check.flagged():
            alarms += 1
            mismatches.append(_mismatch(entry, "critical", False, True))
        if not entry["result"]:
            counts["no_results"] += check.no_result()
            if item is not None and not check.no_result():
                mismatches.append(_mismatch(entry, "no_result", "no counted result", _got(item)))
            continue
        said = re.sub(r"[;=>]", "_", _word((item or {}).get("category")) or _MISSING)
        pairs.append(f"{entry['loinc']}={entry['category'].lower()}>{said}")
        checks = [("values", check.value(), "value", f"{_shown_value(entry)} on {entry['date']}"),
                  ("categories", check.category(), "category", entry["category"])]
        if entry["previous"] is not None:
            checks.append(("directions", check.direction(), "direction", entry["direction"]))
        elif item is not None and not check.direction():
            invented += 1
            mismatches.append(_mismatch(entry, "direction", None, item.get("direction")))
        for name, ok, field, expected in checks:
            counts[name] += ok
            if not ok and item is not None:
                got = (f"{item.get('value')} {item.get('unit')} on {item.get('date')}" if field == "value"
                       else item.get(field))
                mismatches.append(_mismatch(entry, field, expected, got))
    with_result = sum(1 for e in truth if e["result"])
    with_previous = sum(1 for e in truth if e["result"] and e["previous"] is not None)
    without = len(truth) - with_result
    metrics: dict[str, Metric] = {
        "value_accuracy": _ratio(counts["values"], with_result, found=found),
        "category_accuracy": _ratio(counts["categories"], with_result, found=found),
        "direction_accuracy": _ratio(counts["directions"], with_previous, found=found),
        "no_result_accuracy": _ratio(counts["no_results"], without, found=found),
        "critical_missed": bool(missed), "critical_false_alarms": alarms, "critical_results": critical,
        "directions_invented": invented, "tests_with_result": with_result, "tests_with_previous": with_previous,
        "tests_without_result": without,
        "values_correct": counts["values"], "categories_correct": counts["categories"],
        "directions_correct": counts["directions"], "no_results_correct": counts["no_results"],
        "missing_entries": len(wanted - set(by_code)), "extra_entries": len(extra), "duplicates": duplicates,
        "contradictions": len(contradicted), "category_pairs": ";".join(pairs),
    }
    rates = [metrics[k] for k in ("value_accuracy", "category_accuracy", "direction_accuracy", "no_result_accuracy")]
    ok = (found and not missed and not alarms and not invented and not contradicted
          and all(r is None or r == 1.0 for r in rates))
    credit = found and not missed and sum(counts.values()) > 0
    outcome: Literal["passed", "partial", "failed"] = "passed" if ok else ("partial" if credit else "failed")
    details = {
        "missing": [{"code": e["loinc"], "display": e["name"]} for e in truth if e["loinc"] not in by_code],
        "mismatches": mismatches, "extra": extra, "critical_missed": missed,
    }
    return Score(outcome=outcome, metrics=metrics, details=details, message="" if ok else _message(metrics, details))


def _shown_value(entry: Mapping[str, Any]) -> str:
    value = entry.get("value")
    if isinstance(value, Mapping):
        value = "/".join(f"{v:g}" for v in value.values())
    return f"{value} {entry.get('recorded_unit')}" if value is not None else "no result"


def _got(item: Mapping[str, Any]) -> str:
    return f"{item.get('value')} {item.get('unit')}, {item.get('category')}"


def _mismatch(entry: Mapping[str, Any], field: str, expected: Any, got: Any) -> dict[str, Any]:
    return {"code": entry["loinc"], "display": entry["name"], "field": field, "expected": expected, "got": got}


def _fmt(value: Metric) -> str:
    return "n/a" if value is None else f"{value:.3f}" if isinstance(value, float) else str(value)


def _message(metrics: Mapping[str, Metric], details: Mapping[str, list[dict[str, Any]]]) -> str:
    lines = [
        f"value accuracy {_fmt(metrics['value_accuracy'])}, category accuracy {_fmt(metrics['category_accuracy'])}, "
        f"direction accuracy {_fmt(metrics['direction_accuracy'])}, no-result accuracy "
        f"{_fmt(metrics['no_result_accuracy'])}; each needs 1.000"
    ]
    if details["critical_missed"]:
        lines.append("CRITICAL result not flagged (fails the case whatever else is right):")
        lines += [f"  - {e['code']} {e['display']}: {e['note']}" for e in details["critical_missed"]]
    if details["missing"]:
        lines.append("no entry in the answer: " + ", ".join(f"{e['code']} {e['display']}" for e in details["missing"]))
    if details["mismatches"]:
        lines.append("wrong (expected | got):")
        lines += [f"  - {e['code']} {e['display']} {e['field']}: {e['expected']} | {e['got']}"
                  for e in details["mismatches"]]
    if details["extra"]:
        lines.append("entries for tests not asked: " + ", ".join(str(e["code"]) for e in details["extra"]))
    return "\n".join(lines)


def macro_f1(pairs: Sequence[tuple[str, str | None]]) -> float | None:
    """Macro F1 over labels: per label F1 from (truth, answer) pairs, averaged; None without pairs.

    The labels are those in the truth or among the answers (``None``, no entry, is no label): an
    answer label never in the truth scores F1 0 for that label, as in scikit-learn's
    ``f1_score(average="macro")``.
    """
    if not pairs:
        return None
    labels = {t for t, _ in pairs} | {a for _, a in pairs if a is not None}
    scores = []
    for label in sorted(labels):
        tp = sum(t == label and a == label for t, a in pairs)
        fp = sum(t != label and a == label for t, a in pairs)
        fn = sum(t == label and a != label for t, a in pairs)
        scores.append(2 * tp / (2 * tp + fp + fn) if tp + fp + fn else 0.0)
    return round(fmean(scores), 6)


def _pairs(text: object) -> list[tuple[str, str | None]]:
    out: list[tuple[str, str | None]] = []
    for item in str(text or "").split(";"):
        code, _, rest = item.partition("=")
        truth, _, answer = rest.partition(">")
        if code and truth:
            out.append((f"{code}:{truth}", None if answer == _MISSING else f"{code}:{answer}"))
    return out


def aggregate_labs(metrics: Sequence[Mapping[str, Metric]]) -> dict[str, Metric]:
    """Micro and macro accuracies, macro F1 over categories, critical and format counts.

    Returns:
        ``micro_``/``macro_`` ``value_accuracy``, ``category_accuracy``, ``direction_accuracy``,
        ``no_result_accuracy`` (None where no case applies), ``category_macro_f1``,
        ``answers_critical_missed`` (scored answers that missed a critical result) out of
        ``answers_scored`` (the metrics given: one per counted case and trial, so under K trials a
        case counts K times, and a case the agent crashed on is in neither), ``critical_false_alarms``,
        ``directions_invented``, ``missing_entries``, ``duplicates``, ``contradictions`` (tests with
        contradictory entries), ``answers_with_contradictions``, ``format_not_ok``.
    """
    def total(key: str) -> int:
        return sum(int(m.get(key) or 0) for m in metrics)

    def mean(key: str) -> float | None:
        values = [float(v) for m in metrics if isinstance(v := m.get(key), int | float) and not isinstance(v, bool)]
        return round(fmean(values), 6) if values else None

    with_result, without = total("tests_with_result"), total("tests_without_result")
    out: dict[str, Metric] = {}
    for name, correct, den in (("value_accuracy", "values_correct", with_result),
                               ("category_accuracy", "categories_correct", with_result),
                               ("direction_accuracy", "directions_correct", total("tests_with_previous")),
                               ("no_result_accuracy", "no_results_correct", without)):
        out[f"micro_{name}"] = round(total(correct) / den, 6) if den else None
        out[f"macro_{name}"] = mean(name)
    out["category_macro_f1"] = macro_f1([p for m in metrics for p in _pairs(m.get("category_pairs"))])
    out.update({
        "answers_critical_missed": sum(m.get("critical_missed") is True for m in metrics),
        "answers_scored": len(metrics),
        "critical_false_alarms": total("critical_false_alarms"),
        "directions_invented": total("directions_invented"),
        "missing_entries": total("missing_entries"),
        "duplicates": total("duplicates"),
        "contradictions": total("contradictions"),
        "answers_with_contradictions": sum(int(m.get("contradictions") or 0) > 0 for m in metrics),
        "format_not_ok": sum(m.get("format_ok") is False for m in metrics),
    })
    return out


class LabsScorer:
    """The labs task's scorer (``metric_names``, ``metric_directions``, ``score``, ``aggregate``).

    Args:
        table: The threshold table the task derives its truth with.
    """

    metric_names: tuple[str, ...] = METRIC_NAMES
    metric_directions: dict[str, Direction] = METRIC_DIRECTIONS

    def __init__(self, table: Thresholds) -> None:
        self.table = table

    def score(self, case: Any, truth: Any, parsed: Parsed) -> Score:
        """Score ``parsed.value`` against ``truth["tests"]``; ``format_ok`` added from ``parsed``."""
        del case
        score = score_labs(self.table, truth["tests"], parsed.value, found=parsed.found)
        message = score.message
        if not parsed.found:
            message = f"answer format: {parsed.error}; an answer without a JSON array cannot pass\n{message}".strip()
        elif parsed.error and message:
            message = f"answer format: {parsed.error}\n{message}"
        return Score(outcome=score.outcome, metrics={**score.metrics, "format_ok": parsed.format_ok},
                     details=score.details, message=message)

    def aggregate(self, metrics: Sequence[Mapping[str, Metric]]) -> dict[str, Metric]:
        """See ``aggregate_labs``."""
        return aggregate_labs(metrics)

