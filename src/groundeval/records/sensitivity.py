"""Record sensitivity: did the agent's answer follow a change of the record? Computed once into the aggregate.

Each counterfactual twin (``groundeval.tasks.counterfactual``) is paired with its original case (same
trial). The twin's ``meta["counterfactual"]`` names what the task looks at in an answer (its
``probe``: for extraction, the RxCUIs of the changed prescription) and what an answer to each side
should show there (``expected``), both derived by the task's truth code. The task's ``observe``
reads those items out of each side's parsed answer.

* ``tracks_record`` (per pair): the original's answer shows the original's expectation and the
  twin's answer the twin's: the answer changed exactly as the truth did. Either side without an
  answer (``no_answer``, an agent-behaviour failure scored as empty) is not tracked, so an agent
  cannot raise the figure by failing on twins; a pair with either side excluded (``agent_error``,
  ``infra_error``, ...) or not run is not judged and left out, and counted.
* ``kept_original_answer`` (per pair): the twin's answer on the probed items equals the original's.
  For a twin whose truth changed, that is the signature of answering from priors.
* ``order`` (per pair): ``first_call`` when the twin's agent call started before any other call
  about the same subject (``meta["subject"]``, ``tasks.counterfactual.subject_of``: the case's
  patient, so its original, its other twins, the patient's other cases and every trial count),
  else ``later_call``. An agent may remember what it saw: "read the record only for a patient
  seen before" tracks every twin called after its original and none called first, and "read it
  only the first time" the reverse.
* ``record_sensitivity``: tracked / judged over the twins whose truth changed (effect ``drops``,
  ``adds`` or ``replaces``), computed apart over the ``first_call`` and the ``later_call`` twins
  (``record_sensitivity_first_call``, ``record_sensitivity_later_call``), and the **lower** of the
  two is the headline, with that order's Wilson score interval over its twins (each twin one
  observation, its trials pooled, as ``trial_stats`` treats cases:
  ``trial_stats.proportion_interval``); None unless both orders have a judged twin. Since the
  items of a case and its twins run in a shuffled order (``tasks.counterfactual.interleave``),
  an agent cannot know which call is a twin; to score x it must track at least x of the twins in
  either order, which no rule based on what it saw before (call order, case ids, the patient)
  can do without reading the record. ``record_sensitivity[<kind>]`` is the same per perturbation,
  ``same`` kinds included (there it says the answer did not move when the truth did not).
* ``twin_pass_rate``: twins passed / twins counted, scored by the task as usual.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from groundeval.records.run_record import Aggregate, CaseRecord, Counterfactual, FigureInterval, TwinPair
from groundeval.records.trial_ids import split_twin
from groundeval.records.trial_stats import proportion_interval
from groundeval.scoring import Metric

__all__ = [
    "COUNTERFACTUAL_STATEMENT", "ORDERS", "PRIORS_SIGNATURE", "call_orders", "figure_unit", "is_twin", "judge_pairs",
    "pair_values", "sensitivity_figure", "sensitivity_text", "with_counterfactual",
]

ORDERS = ("first_call", "later_call")
"""The two orders a twin's call can come in (``TwinPair.order``); figure ``record_sensitivity_<order>`` each."""

PRIORS_SIGNATURE = "gave the original's answer to the changed record"
"""A pair's ``why`` when the original was answered right and the twin got the same answer although its truth changed."""

NOT_JUDGED = "not judged: the twin is "
NOT_JUDGED_ORIGINAL = "not judged: the original is "

COUNTERFACTUAL_STATEMENT = "counterfactual"
"""The key of ``Aggregate.statements`` holding the twins' one-line summary (``sensitivity_text``)."""


def is_twin(record: CaseRecord) -> bool:
    """True for the record of a counterfactual twin (its case id ends ``[cf-<kind>]``)."""
    return split_twin(record.case_id)[1] is not None


def _answer(task: Any, probe: Mapping[str, Any], record: CaseRecord) -> Any:
    return task.observe(probe, record.parsed if record.answered else None)


def _pair(task: Any, twin: CaseRecord, original: CaseRecord | None) -> TwinPair:
    of, kind = split_twin(twin.case_id)
    facts = twin.meta.get("counterfactual")
    facts = facts if isinstance(facts, Mapping) else {}
    base: dict[str, Any] = {"twin": twin.case_id, "of": of, "trial": twin.trial, "kind": str(facts.get("kind") or kind),
            "effect": str(facts.get("effect") or "unknown"), "change": str(facts.get("change") or "")}
    if not twin.counted or not facts:
        return TwinPair(**base, why=f"{NOT_JUDGED}{twin.outcome}")
    if original is None or not original.counted:
        return TwinPair(**base, why=f"{NOT_JUDGED_ORIGINAL}{original.outcome if original else 'missing'}")
    probe, expected = facts.get("probe") or {}, facts.get("expected") or {}
    seen_original, seen_twin = _answer(task, probe, original), _answer(task, probe, twin)
    original_ok = original.answered and seen_original == expected.get("original")
    twin_ok = twin.answered and seen_twin == expected.get("twin")
    kept = seen_twin == seen_original
    why = ""
    if not original.answered or not twin.answered:
        why = f"no answer from the {'original' if not original.answered else 'twin'}"
    elif not original_ok:
        why = f"the original's answer misses its own truth on the changed items ({seen_original})"
    elif not twin_ok:
        changed = facts.get("effect") != "same"
        why = (PRIORS_SIGNATURE if kept and changed
               else f"the twin's answer misses its truth on the changed items ({seen_twin})")
    return TwinPair(**base, tracks_record=bool(original_ok and twin_ok), kept_original_answer=kept, why=why)


def _start(record: CaseRecord) -> datetime | None:
    try:
        return datetime.fromisoformat(record.started_at) if record.started_at else None
    except ValueError:
        return None


def _subject(record: CaseRecord) -> str:
    subject = record.meta.get("subject")
    return str(subject) if subject else f"case:{split_twin(record.case_id)[0]}"


def call_orders(records: Sequence[CaseRecord]) -> dict[tuple[str, int], str]:
    """``(twin case id, trial) -> first_call | later_call`` for every twin record whose call start is known.

    ``first_call``: no other record of the same subject (``meta["subject"]``, else the original's
    case id) has a call that started before (strictly) this twin's call; ``later_call`` otherwise.
    """
    starts: dict[str, list[tuple[datetime, str, int]]] = defaultdict(list)
    for r in records:
        if (at := _start(r)) is not None:
            starts[_subject(r)].append((at, r.case_id, r.trial))
    out: dict[tuple[str, int], str] = {}
    for r in records:
        at = _start(r)
        if at is None or not is_twin(r):
            continue
        earlier = any(t < at and (c, i) != (r.case_id, r.trial) for t, c, i in starts[_subject(r)])
        out[(r.case_id, r.trial)] = "later_call" if earlier else "first_call"
    return out


def judge_pairs(task: Any, twins: Sequence[CaseRecord], originals: Sequence[CaseRecord]) -> list[TwinPair]:
    """Pair each twin record with its original (same case id before ``[cf-...]``, same trial), judge it, say its order.

    Args:
        task: The run's task (its ``observe`` reads the probed items out of an answer).
        twins: The twins' case records.
        originals: The original cases' records (every one of the run: a patient's other cases
            count for the order).
    """
    by_case = {(r.case_id, r.trial): r for r in originals}
    orders = call_orders([*originals, *twins])
    pairs = [_pair(task, t, by_case.get((split_twin(t.case_id)[0], t.trial))) for t in twins]
    return [p.model_copy(update={"order": orders.get((p.twin, p.trial))}) if p.tracks_record is not None else p
            for p in pairs]


def _share(pairs: Sequence[TwinPair]) -> FigureInterval | None:
    judged = [p for p in pairs if p.tracks_record is not None]
    if not judged:  # each twin is one observation: with trials, at its pooled rate (as trial_stats does)
        return None
    return proportion_interval(sum(bool(p.tracks_record) for p in judged) / len(judged), len({p.twin for p in judged}))


def _by_order(pairs: Sequence[TwinPair]) -> dict[str, FigureInterval]:
    """The share per order (``ORDERS``) with a judged twin."""
    return {o: iv for o in ORDERS if (iv := _share([p for p in pairs if p.order == o])) is not None}


def _robust(pairs: Sequence[TwinPair]) -> tuple[FigureInterval | None, str]:
    """The lower of the two orders' shares and which order it is; (None, "") unless both have a judged twin."""
    shares = _by_order(pairs)
    if len(shares) < len(ORDERS):
        return None, ""
    order = min(ORDERS, key=lambda o: shares[o].value)  # a tie: first_call
    return shares[order], order


def counterfactual_stats(task: Any, twins: Sequence[CaseRecord], originals: Sequence[CaseRecord]) -> Counterfactual:
    """The twins' figures (see the module docstring)."""
    pairs = judge_pairs(task, twins, originals)
    effects = {p.kind: p.effect for p in pairs}
    orders: dict[str, str] = {}
    by_kind: dict[str, FigureInterval] = {}
    for kind in effects:
        iv, order = _robust([p for p in pairs if p.kind == kind])
        if iv is not None:
            by_kind[kind], orders[kind] = iv, order
    changed = [p for p in pairs if p.effect != "same"]
    headline, order = _robust(changed)
    if headline is not None:
        orders[""] = order
    each = _by_order(changed)
    counted = [t for t in twins if t.counted]
    judged_twins = {p.twin for p in pairs if p.tracks_record is not None}
    why: dict[str, str] = {}  # twin -> why its first unjudged trial was not judged
    for p in pairs:
        if p.twin not in judged_twins and p.twin not in why:
            original = p.why.startswith(NOT_JUDGED_ORIGINAL)
            why[p.twin] = (f"original {p.why.removeprefix(NOT_JUDGED_ORIGINAL)}" if original
                           else p.why.removeprefix(NOT_JUDGED))
    return Counterfactual(
        twins=len({t.case_id for t in twins}), judged=sum(p.tracks_record is not None for p in pairs),
        tracked=sum(bool(p.tracks_record) for p in pairs),
        record_sensitivity=headline, first_call=each.get("first_call"), later_call=each.get("later_call"),
        orders=orders, by_kind=by_kind, effects=effects,
        twin_counts=dict(sorted(Counter(t.outcome for t in twins).items())),
        not_judged=dict(Counter(why.values()).most_common()),
        twin_pass_rate=round(sum(t.outcome == "passed" for t in counted) / len(counted), 6) if counted else None,
        pairs=pairs,
    )


def sensitivity_text(cf: Counterfactual) -> str:
    """``counterfactual twins: 177 (stop-active 44, ...), 170 judged, 7 not judged: agent_error 7; record_...``.

    Every count is of twins, whatever their trials (a twin is judged when any of its trials was).
    """
    kinds = Counter(p.kind for p in {p.twin: p for p in cf.pairs}.values())
    sens = cf.record_sensitivity
    kept = len({p.twin for p in cf.pairs if p.why == PRIORS_SIGNATURE})  # twins, whatever their trials
    judged = len({p.twin for p in cf.pairs if p.tracks_record is not None})
    head = (f"counterfactual twins: {cf.twins} ({', '.join(f'{k} {n}' for k, n in kinds.items())}), "
            f"{judged} judged")
    if cf.not_judged:
        head += (f", {sum(cf.not_judged.values())} not judged: "
                 + ", ".join(f"{why} {n}" for why, n in cf.not_judged.items()))
    first, later = cf.first_call, cf.later_call
    if first is None and later is None:
        return head + "; record_sensitivity: - (no judged twin whose truth changed)"
    if sens is None or first is None or later is None:
        return (head + f"; record_sensitivity: - (judged twins whose truth changed were called in one order only: "
                f"first_call {first.cases if first else 0}, later_call {later.cases if later else 0}; the "
                "order-robust figure needs both)")
    return (head + f"; record_sensitivity {sens.value:.3f} {sens.text()}, the lower of first_call {first.value:.3f} "
            f"over {first.cases} and later_call {later.value:.3f} over {later.cases} twins whose truth "
            f"changed; {kept} of them got the right answer to the original and the same answer to the changed "
            "record (the answer did not change though the truth did)")


def with_counterfactual(
    aggregate: Aggregate, task: Any, twins: Sequence[CaseRecord], originals: Sequence[CaseRecord],
) -> Aggregate:
    """``aggregate`` with ``counterfactual`` filled, and its figures added to ``metrics`` and ``trials.intervals``.

    The figures go where every output and ``groundeval compare`` already read a run's figures:
    ``record_sensitivity``, ``record_sensitivity_first_call``/``_later_call``,
    ``record_sensitivity[<kind>]`` and ``twin_pass_rate`` in ``metrics``, the
    Wilson intervals in ``trials.intervals``, and a one-line summary in
    ``statements["counterfactual"]``.
    """
    cf = counterfactual_stats(task, twins, originals)
    figures: dict[str, Metric] = {}
    intervals: dict[str, FigureInterval] = {}
    if cf.record_sensitivity is not None:
        figures["record_sensitivity"] = cf.record_sensitivity.value
        intervals["record_sensitivity"] = cf.record_sensitivity
    for order, each in (("first_call", cf.first_call), ("later_call", cf.later_call)):
        if each is not None:
            figures[f"record_sensitivity_{order}"] = each.value
            intervals[f"record_sensitivity_{order}"] = each
    for kind, iv in cf.by_kind.items():
        figures[f"record_sensitivity[{kind}]"] = iv.value
        intervals[f"record_sensitivity[{kind}]"] = iv
    figures["twin_pass_rate"] = cf.twin_pass_rate
    counted = [t for t in twins if t.counted]
    passed = sum(t.outcome == "passed" for t in counted)
    if counted and (twin_iv := proportion_interval(passed / len(counted), len({t.case_id for t in counted}))):
        intervals["twin_pass_rate"] = twin_iv
    update: dict[str, Any] = {"counterfactual": cf, "metrics": {**aggregate.metrics, **figures}}
    if aggregate.trials is not None:
        shown = {**aggregate.trials.intervals, **intervals}
        update["trials"] = aggregate.trials.model_copy(update={"intervals": shown})
    return aggregate.model_copy(update=update)


def sensitivity_figure(name: str) -> str | None:
    """Which twins a ``record_sensitivity`` figure is over, or None for any other figure name.

    ``""`` for ``record_sensitivity`` (every twin whose truth changed, in the order the headline
    was taken from), ``@first_call``/``@later_call`` for ``record_sensitivity_<order>``, the kind
    for ``record_sensitivity[<kind>]``.
    """
    if name == "record_sensitivity":
        return ""
    if name.startswith("record_sensitivity_") and name.removeprefix("record_sensitivity_") in ORDERS:
        return "@" + name.removeprefix("record_sensitivity_")
    if name.startswith("record_sensitivity[") and name.endswith("]"):
        return name[len("record_sensitivity["):-1]
    return None


def figure_unit(name: str) -> str:
    """What a figure's interval ``cases`` counts: ``twins`` for the counterfactual figures, else ``cases``."""
    return "twins" if sensitivity_figure(name) is not None or name == "twin_pass_rate" else "cases"


def pair_values(cf: Counterfactual | None, kind: str) -> dict[tuple[str, int], float]:
    """``(twin case id, trial) -> 1.0/0.0`` (tracked or not) for the judged pairs a figure is over.

    Args:
        cf: A run's ``Aggregate.counterfactual`` (None: no twins).
        kind: ``sensitivity_figure``'s answer: ``""`` for the twins whose truth changed in the order
            the headline was taken from (``Counterfactual.orders``), ``@<order>`` for those in that
            order, else one kind's twins in the order its figure was taken from.
    """
    if cf is None:
        return {}
    if kind.startswith("@"):
        order, changed = kind[1:], True
    else:
        order, changed = cf.orders.get(kind, ""), not kind
    return {(p.twin, p.trial): float(bool(p.tracks_record)) for p in cf.pairs if p.tracks_record is not None
            and p.order == order and (p.effect != "same" if changed else p.kind == kind)}
