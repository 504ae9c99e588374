"""The judge card: what a calibration measured, which set it was computed on, and how a run reads it.

A card is JSON (``write_card``/``read_card``) with the judge's spec, its model identity
(``judge_identity``: a GGUF's SHA-256, a provider's model id), settings and prompt SHA-256, the
date, the set it was computed on (``calibration_set``: for labels the file name, SHA-256,
texts, records, labellers and who labelled (``kind: human_labels``, or ``model_labels`` when a
model gave any label), ``scorers.labels``; ``kind: generated`` for a code-made control set)
and the figures (``scorers.calibration``), the overall kappa under ``kappa``. A run reads the card
of its judge (same identity and prompt hash: ``matches``; ``find_card``) and shows the judged
scores beside that kappa and set (``reliability_metrics``), or marks them ``judge not
calibrated``, ``judge calibrated on generated text only`` or ``judge unreliable``; only a card
computed on people's labels whose kappas reach ``KAPPA_THRESHOLD`` leaves the verdicts gated.

Any model-graded task uses it: it names its judge (``CardJudge``), its criterion types and where
its packaged cards are.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Protocol

from groundeval.errors import ConfigError
from groundeval.scorers.agreement import interval_text
from groundeval.scoring import Metric

__all__ = [
    "CARD_SCHEMA_VERSION", "KAPPA_THRESHOLD", "CardJudge", "find_card", "from_model", "from_people", "headline",
    "judge_identity", "matches", "pins", "read_card", "reliability_metrics", "set_text", "weak_types", "write_card",
]

KAPPA_THRESHOLD = 0.6
"""Below this Cohen's kappa a judge is ``judge unreliable``: "any kappa below 0.60 indicates
inadequate agreement among the raters and little confidence should be placed in the study results"
(McHugh ML, Interrater reliability: the kappa statistic, Biochem Med 2012;22(3):276-282,
https://pmc.ncbi.nlm.nih.gov/articles/PMC3900052/)."""

CARD_SCHEMA_VERSION = 2

JSON = dict[str, Any]


class CardJudge(Protocol):
    """What a card pins of a judge.

    Attributes:
        spec: What the user named (``baseline``, ``anthropic/claude-opus-4-8``).
        prompt_sha256: SHA-256 of what pins its decisions (the prompt, or a rule judge's rules).

    An optional ``identity`` attribute (str) is its model's identity (``judge_identity``).
    """

    spec: str
    prompt_sha256: str

    def settings(self) -> dict[str, Any]:
        """JSON-safe facts that pin the judge: ``spec``, ``model``, ``temperature``, ``max_tokens``, prompt hash."""
        ...


def judge_identity(judge: CardJudge) -> str:
    """The model's identity a judge card is keyed by (with ``prompt_sha256``).

    Returns:
        The judge's ``identity`` attribute when it has a non-empty one (``sha256:<hex>`` of a
        GGUF file, a provider's model id, ``baseline``), else its spec.
    """
    found = getattr(judge, "identity", None)
    return str(found) if isinstance(found, str) and found else judge.spec


def pins(judge: CardJudge, date: str | None) -> JSON:
    """What pins a card to its judge: schema, spec, model identity, prompt hash, settings, date."""
    return {"schema_version": CARD_SCHEMA_VERSION, "judge": judge.spec, "judge_identity": judge_identity(judge),
            "prompt_sha256": judge.prompt_sha256, "settings": judge.settings(),
            "date": date or datetime.now(UTC).date().isoformat()}


def headline(overall: Mapping[str, Any]) -> JSON:
    """The card's headline: the overall kappa, its interval, n and the threshold."""
    k = overall["kappa"]
    return {"kappa": k["value"], "kappa_95ci": k["ci"], "n": overall["n"], "threshold": KAPPA_THRESHOLD}


def set_text(card: Mapping[str, Any]) -> str:
    """Which set a card was computed on, in one line (printed beside its kappa by every run).

    ``labels.jsonl (SHA-256 1a2b3c4d5e6f; 100 summaries, 20 records; labellers a, b)`` for human
    labels; ``generated control set (168 summaries by groundeval's code; not people's labels)`` else.
    """
    facts = card.get("calibration_set")
    if isinstance(facts, Mapping) and facts.get("kind") in ("human_labels", "model_labels"):
        by = "" if facts.get("kind") == "human_labels" else f"; labelled by {facts.get('labelled_by')}, not people"
        return (f"{facts.get('file')} (SHA-256 {str(facts.get('sha256'))[:12]}; {facts.get('summaries')} summaries, "
                f"{facts.get('records')} records; labellers {', '.join(map(str, facts.get('labellers') or []))}{by})")
    old = card.get("control_set") if not isinstance(facts, Mapping) else facts
    count = old.get("summaries") if isinstance(old, Mapping) else None
    return f"generated control set ({count or '?'} summaries by groundeval's code; not people's labels)"


def from_model(card: Mapping[str, Any]) -> bool:
    """True when the card was computed on labels a model gave (``calibration_set.kind == "model_labels"``)."""
    facts = card.get("calibration_set")
    return isinstance(facts, Mapping) and facts.get("kind") == "model_labels"


def _ci_text(card: Mapping[str, Any]) -> str:
    """The overall kappa's interval as printed (``interval_text``)."""
    overall = card.get("overall")
    figure = overall.get("kappa") if isinstance(overall, Mapping) else None
    return interval_text(figure if isinstance(figure, Mapping) else {"ci": card.get("kappa_95ci")})


def _measured(judge: CardJudge, card: Mapping[str, Any], where: str) -> dict[str, Metric]:
    """The card's overall kappa, interval, n and set, as aggregate metrics."""
    return {"judge": judge.spec, "judge_kappa": round(float(card["kappa"]), 4), "judge_kappa_95ci": _ci_text(card),
            "judge_kappa_n": int(card.get("n") or 0), "judge_calibration_set": where}


def from_people(card: Mapping[str, Any]) -> bool:
    """True when the card was computed on human labels (``calibration_set.kind == "human_labels"``)."""
    facts = card.get("calibration_set")
    return isinstance(facts, Mapping) and facts.get("kind") == "human_labels"


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


def matches(card: Mapping[str, Any], judge: CardJudge) -> bool:
    """True when ``card`` is the judge's: same model identity (``judge_identity``) and prompt SHA-256.

    A card written before identities were recorded (schema 1) matches by the judge's spec.
    """
    if card.get("prompt_sha256") != judge.prompt_sha256:
        return False
    if "judge_identity" in card:
        return bool(card["judge_identity"] == judge_identity(judge))
    return bool(card.get("judge") == judge.spec)


def find_card(judge: CardJudge, given: Path | None, folder: Path, *, task: str) -> tuple[JSON | None, str]:
    """The card for ``judge`` (``matches``: same model identity and prompt hash), and where it came from or why none.

    Args:
        judge: The run's judge.
        given: The card the user named (``--groundeval-judge-card``), read when set.
        folder: The task's packaged cards, searched (``*.json`` by name) when ``given`` is None.
        task: The task's name, for the ``groundeval calibrate`` command an error message suggests.

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
                f"with prompt {judge.prompt_sha256[:12]}; run groundeval calibrate --task {task} --judge "
                f"{judge.spec} --labels LABELS.jsonl -o {given}"
            )
        return card, str(given)
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


def _lower_of(figures: Any) -> float | None:
    """The lower bound of a figure set's kappa interval, or None (no interval, or a schema-1 card)."""
    k = figures.get("kappa") if isinstance(figures, Mapping) else None
    ci = k.get("ci") if isinstance(k, Mapping) else None
    return float(ci[0]) if isinstance(ci, Sequence) and len(ci) == 2 and isinstance(ci[0], int | float) else None


def _short_of(label: str, figures: Any) -> str | None:
    """Why ``figures`` do not vouch for ``label`` (``weak_types``), or None when they do."""
    kappa = _kappa_of(figures)
    if kappa is None:
        return f"{label} (not calibrated)"
    if kappa < KAPPA_THRESHOLD:
        return f"{label} (kappa {kappa:.2f})"
    low = _lower_of(figures)
    if low is None:
        return f"{label} (kappa {kappa:.2f}, no interval)"
    if low < KAPPA_THRESHOLD:
        return f"{label} (kappa {kappa:.2f}, interval down to {low:.2f})"
    return None


def weak_types(card: Mapping[str, Any], types: Sequence[str]) -> list[str]:
    """What a card does not vouch for: each criterion type, the judge-decided criteria and the case verdicts.

    A figure vouches when its kappa **and the lower bound of its 95% interval** reach
    ``KAPPA_THRESHOLD``: a point estimate from a handful of labels (a type with 3 items, every one
    agreeing) says nothing about the next summary, so a figure with no interval does not vouch.

    Args:
        card: The card.
        types: The task's criterion types, in the order to report them.

    Returns:
        ``"<type> (kappa 0.21)"``, ``"<type> (kappa 1.00, no interval)"``, ``"<type> (kappa 0.75,
        interval down to 0.41)"`` or ``"<type> (not calibrated)"`` for each of ``types`` that
        falls short, in ``types`` order; then ``judge-decided criteria (...)`` when the card
        measured them apart and they fall short; then ``case verdicts (...)`` when the card
        measured the scorer's pass/fail against the labellers' verdicts (schema 2) and that kappa
        falls short: a gate reads verdicts, so their agreement is what must hold. The overall
        kappa can be high while one type is near chance (most verdicts are easy), so reliability
        is judged per type.
    """
    by_type = card.get("by_type") or {}
    out = [found for ctype in types if (found := _short_of(ctype, by_type.get(ctype))) is not None]
    layer = (card.get("by_layer") or {}).get("judge")
    if _kappa_of(layer) is not None and (found := _short_of("judge-decided criteria", layer)) is not None:
        out.append(found)
    verdicts = card.get("verdicts")
    if isinstance(verdicts, Mapping) and (found := _short_of("case verdicts", verdicts)) is not None:
        out.append(found)
    return out


def reliability_metrics(judge: CardJudge, card: Mapping[str, Any] | None, types: Sequence[str]) -> dict[str, Metric]:
    """The aggregate metrics that put the judge's reliability beside the judged scores.

    ``judge_reliability`` is ``calibrated (...)`` only for a card computed on human labels
    (``from_people``) whose overall kappa, every criterion type's, the judge-decided criteria's
    (when measured) and the case verdicts' reach ``KAPPA_THRESHOLD`` with the lower bound of their
    95% interval (``weak_types``); ``judge calibrated on model-written labels only (...)`` for a card
    computed on labels a model gave (``from_model``: its kappa is shown, the verdicts not gated);
    else ``judge unreliable (...)``, ``judge unreliable for <types> (...)``, ``judge calibrated on generated text only
    (...)`` (a card from a code-made control set: its kappa is not shown as the judge's) or
    ``judge not calibrated``. ``judge_calibration_set`` names the set the card was computed on
    (``set_text``). Anything but ``calibrated`` leaves the verdicts ungated.

    Args:
        judge: The run's judge.
        card: Its card (``find_card``), or None.
        types: The task's criterion types (``weak_types``).
    """
    if card is None or card.get("kappa") is None:
        return {"judge": judge.spec, "judge_kappa": None, "judge_kappa_95ci": None, "judge_kappa_n": None,
                "judge_calibration_set": None, "judge_reliability": "judge not calibrated"}
    kappa = float(card["kappa"])
    where = set_text(card)
    if from_model(card):
        return {**_measured(judge, card, where),
                "judge_reliability": f"judge calibrated on model-written labels only (kappa {kappa:.2f} "
                                     f"{_ci_text(card)} on {where}, card {card.get('date')}): not calibrated against "
                                     "people, verdicts not gated"}
    if not from_people(card):
        return {"judge": judge.spec, "judge_kappa": None, "judge_kappa_95ci": None, "judge_kappa_n": None,
                "judge_calibration_set": where,
                "judge_reliability": f"judge calibrated on generated text only (kappa {kappa:.2f} on {where}, "
                                     f"card {card.get('date')}): not calibrated against people, verdicts not gated"}
    ci = _ci_text(card)
    weak = weak_types(card, types)
    vouches = kappa >= KAPPA_THRESHOLD and _short_of("overall", card.get("overall") or card) is None
    status = "calibrated" if vouches and not weak else "judge unreliable"
    if weak and vouches:
        status = f"judge unreliable for {', '.join(weak)}"
    return {**_measured(judge, card, where),
            "judge_reliability": f"{status} ({'overall ' if weak else ''}kappa {kappa:.2f} {ci}, threshold "
                                 f"{KAPPA_THRESHOLD:g}, on {where}, card {card.get('date')})"}
