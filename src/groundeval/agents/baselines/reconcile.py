"""Rule-based reconcile agents (no model): ``baseline-reconcile``, the honest floor, and a naive control.

Both read only what any agent gets: the Bundle JSON and the ``<report>`` text in the user prompt,
and the site formulary lines in the system prompt. They never see the report's structured content,
and they read the record with their own code (never ``groundeval.fhir.bundle``, ``groundeval.tasks`` or the
truth code), implementing the rules the prompt states:

* **record**: MedicationRequests with status ``active``, an order intent, no ``doNotPerform``, the
  patient as subject; the drug from ``medicationCodeableConcept`` or a resolved
  ``medicationReference`` (fullUrl, ``Type/id``, contained ``#id``); RxNorm picked by system.
  Stopped, completed and on-hold requests that pass the same filters give the drugs that may be
  "stopped but taken". The dose
  is the count in ``doseQuantity`` (1 when absent) times the strength written in the display
  (``10 MG`` -> 10 mg) for a single-ingredient product; frequency ``timing.repeat``; as-needed
  ``asNeededBoolean``.
* **report**: the text is cut into segments at commas, full stops and "and"; a record drug is found
  when every word of its ingredient names (salts dropped) is in one segment, or, for a combination,
  in two neighbouring ones (combinations are looked for first). The dose is ``<number> mg|mcg|
  micrograms|g``, the schedule once/twice/three/four times a day or every N hours/days, as-needed
  "as needed"/"when needed"/"when I need it". Segments left over are matched against the record's
  stopped drugs (``stopped_but_taken``), then against the formulary by ingredient words and strength
  (``commission``).

Known misses, on purpose: a brand name the record does not spell (Zocor for simvastatin) is not
recognised (it becomes an uncoded commission and the record drug an omission), and units are
compared as written (125 micrograms against 0.125 mg is reported as a dose mismatch), a count of
tablets ("two tablets") is not read as a dose, and a combination product's dose is not compared.
Two negative controls: ``naive-reconcile`` lists the same medications but calls every one
``matched``; ``hedge-reconcile`` gives the baseline's answer and then every other status for each
of its medications (a hedged answer: the contradiction rule of ``tasks.reconcile.scorer`` must score it
below the baseline's own).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from groundeval.agent_io import AgentRequest, AgentResult
from groundeval.agents.base import AgentConfig
from groundeval.agents.baselines import no_model_calls
from groundeval.errors import AgentError

__all__ = ["BaselineReconcileAgent", "HedgingReconcileAgent", "NaiveReconcileAgent", "reconcile_answer"]

_STATUSES = ("matched", "omission", "commission", "dose_mismatch", "stopped_but_taken")

_RXNORM = frozenset({"http://www.nlm.nih.gov/research/umls/rxnorm", "urn:oid:2.16.840.1.113883.6.88"})
_ORDERS = frozenset({"order", "original-order", "reflex-order", "filler-order", "instance-order"})
_STOPPED = frozenset({"stopped", "completed", "on-hold"})
_SALTS = frozenset({"hydrochloride", "hydrocholoride", "bitartrate", "calcium", "maleate", "sodium", "potassium"})
_STRENGTH_RE = re.compile(r"(\d+(?:\.\d+)?) ?(MG|MCG|G)(/HR)?\b", re.IGNORECASE)
_DOSE_RE = re.compile(r"(\d+(?:\.\d+)?)\s*(mg|mcg|micrograms?|g)\b( an hour| per hour|/h)?", re.IGNORECASE)
_UNIT = {"mg": "mg", "mcg": "ug", "microgram": "ug", "micrograms": "ug", "g": "g"}
_TIMES = {"once": 1, "twice": 2, "three times": 3, "four times": 4}
_TIMES_RE = re.compile(r"\b(once|twice|three times|four times) (?:a|per) day\b", re.IGNORECASE)
_EVERY_RE = re.compile(r"\bevery (\d+(?:\.\d+)?) (hours?|days?)\b", re.IGNORECASE)
_PRN_RE = re.compile(r"\b(as needed|when needed|when i need it|if needed)\b", re.IGNORECASE)
_SPLIT_RE = re.compile(r",\s*|\.\s+|\.$|\s+and\s+")
_WORD_RE = re.compile(r"[a-z][a-z0-9\-]*")


@dataclass
class _Drug:
    code: str
    display: str
    words: list[set[str]]  # one set of words per ingredient
    dose: tuple[float, str] | None = None
    per_day: float | None = None
    as_needed: bool | None = None


def _ingredient_words(display: str) -> list[set[str]]:
    text = re.sub(r"\[[^\]]*\]", "", display)
    out = []
    for part in text.split(" / "):
        head = _STRENGTH_RE.split(part)[0].lower()
        words = {
            w
            for w in _WORD_RE.findall(head)
            if w not in _SALTS and w not in ("hr", "ml", "abuse-deterrent") and not any(ch.isdigit() for ch in w[:1])
        }
        words = {w.strip("-") for w in words if not re.match(r"^nda\d", w)}
        if words:
            out.append(words)
    return out or [{display.lower()}]


def _strength(display: str) -> tuple[float, str] | None:
    if " / " in display:
        return None
    found = _STRENGTH_RE.findall(display)
    if len(found) != 1:
        return None
    value, unit, per = found[0]
    return float(value), _UNIT[unit.lower()] + ("/h" if per else "")


def _bundle_and_report(request: AgentRequest) -> tuple[dict[str, Any], str]:
    text = request.prompt.user
    start, open_at, close_at = text.find("{"), text.find("<report>"), text.find("</report>")
    if start == -1 or open_at == -1 or close_at == -1:
        raise AgentError(f"{request.case_id}: the prompt holds no Bundle and <report>")
    try:
        bundle, _ = json.JSONDecoder().raw_decode(text, start)
    except ValueError as exc:
        raise AgentError(f"{request.case_id}: cannot read the Bundle in the prompt: {exc}") from exc
    return bundle, text[open_at + len("<report>") : close_at].strip()


def _formulary(system: str) -> list[tuple[str, str]]:
    _, _, tail = system.partition("Site formulary (RxCUI: display):")
    return [
        (c.strip(), d.strip())
        for line in tail.splitlines()
        if (c := line.partition(":")[0]).strip().isdigit()
        for d in [line.partition(":")[2]]
    ]


def _record(bundle: Mapping[str, Any]) -> tuple[list[_Drug], list[_Drug]]:
    entries = [e for e in bundle.get("entry") or [] if isinstance(e, dict) and isinstance(e.get("resource"), dict)]
    by_url = {e["fullUrl"]: e["resource"] for e in entries if isinstance(e.get("fullUrl"), str)}
    by_id = {f"{e['resource'].get('resourceType')}/{e['resource'].get('id')}": e["resource"] for e in entries}
    patients = {
        ref
        for e in entries
        if e["resource"].get("resourceType") == "Patient"
        for ref in (e.get("fullUrl"), f"Patient/{e['resource'].get('id')}")
        if ref
    }
    active: dict[str, _Drug] = {}
    stopped: dict[str, _Drug] = {}
    for e in entries:
        req = e["resource"]
        if req.get("resourceType") != "MedicationRequest":
            continue
        concept = req.get("medicationCodeableConcept")
        if not isinstance(concept, dict):
            ref = (req.get("medicationReference") or {}).get("reference") or ""
            target = (
                next((c for c in req.get("contained") or [] if c.get("id") == ref[1:]), None)
                if ref.startswith("#")
                else by_url.get(ref) or by_id.get(ref)
            )
            concept = (target or {}).get("code") or {}
        coding = next((c for c in concept.get("coding") or [] if (c.get("system") or "").strip() in _RXNORM), None)
        if not coding or not coding.get("code"):
            continue
        code, display = str(coding["code"]), coding.get("display") or concept.get("text") or ""
        subject = (req.get("subject") or {}).get("reference")
        ordered = req.get("intent") in _ORDERS and req.get("doNotPerform") is not True and subject in patients
        if ordered and req.get("status") == "active":
            drug = active.setdefault(code, _Drug(code, display, _ingredient_words(display)))
            _dosage(drug, req)
        elif ordered and req.get("status") in _STOPPED:  # a stopped request passes the same filters
            stopped.setdefault(code, _Drug(code, display, _ingredient_words(display)))
    return list(active.values()), [d for c, d in stopped.items() if c not in active]


def _dosage(drug: _Drug, request: Mapping[str, Any]) -> None:
    first = (request.get("dosageInstruction") or [{}])[0]
    count = 1.0
    for dr in first.get("doseAndRate") or []:
        value = (dr.get("doseQuantity") or {}).get("value")
        if isinstance(value, int | float):
            count = float(value)
    strength = _strength(drug.display)
    drug.dose = (count * strength[0], strength[1]) if strength else None
    repeat = (first.get("timing") or {}).get("repeat") or {}
    hours = {"h": 1 / 24, "d": 1.0, "wk": 7.0}.get(repeat.get("periodUnit") or "")
    if repeat.get("frequency") and repeat.get("period") and hours:
        drug.per_day = repeat["frequency"] / (repeat["period"] * hours)
    drug.as_needed = first.get("asNeededBoolean") if isinstance(first.get("asNeededBoolean"), bool) else None


def _said(segment: str) -> tuple[tuple[float, str] | None, float | None, bool | None]:
    dose = None
    if (m := _DOSE_RE.search(segment)) is not None:
        dose = (float(m[1]), _UNIT[m[2].lower()] + ("/h" if m[3] else ""))
    per_day = None
    if (m := _TIMES_RE.search(segment)) is not None:
        per_day = float(_TIMES[m[1].lower()])
    elif (m := _EVERY_RE.search(segment)) is not None:
        per_day = (24.0 if m[2].lower().startswith("hour") else 1.0) / float(m[1])
    as_needed = True if _PRN_RE.search(segment) else (False if per_day else None)
    return dose, per_day, as_needed


def _fmt(dose: tuple[float, str] | None, per_day: float | None, as_needed: bool | None) -> str:
    parts = [
        f"{dose[0]:g} {dose[1]}" if dose else "",
        f"{per_day:g} a day" if per_day else "",
        "as needed" if as_needed else "",
    ]
    return ", ".join(p for p in parts if p)


def reconcile_answer(request: AgentRequest, *, naive: bool = False, hedge: bool = False) -> list[dict[str, Any]]:
    """The answer list for one request.

    Every status is ``matched`` when ``naive``; with ``hedge``, the answer is followed by every other
    status of each of its medications.
    """
    bundle, report = _bundle_and_report(request)
    active, stopped = _record(bundle)
    segments = [s.strip().lower() for s in _SPLIT_RE.split(report) if s and s.strip()]
    used: set[int] = set()
    answer: list[dict[str, Any]] = []
    for drug in sorted(active, key=lambda d: -len(d.words)):
        span = _find(drug, segments, used)
        item = {"rxnorm_code": drug.code, "display": drug.display}
        if span is None:
            answer.append({**item, "status": "omission"})
            continue
        used.update(span)
        dose, per_day, as_needed = _said(" ".join(segments[i] for i in span))
        differs = (
            (dose and drug.dose and dose != drug.dose)
            or (per_day and drug.per_day and abs(per_day - drug.per_day) > 1e-9)
            or (as_needed is not None and drug.as_needed is not None and as_needed != drug.as_needed)
        )
        if differs:
            answer.append(
                {
                    **item,
                    "status": "dose_mismatch",
                    "record_dose": _fmt(drug.dose, drug.per_day, drug.as_needed),
                    "reported_dose": _fmt(dose, per_day, as_needed),
                }
            )
        else:
            answer.append({**item, "status": "matched"})
    formulary = [(code, display, _ingredient_words(display)) for code, display in _formulary(request.prompt.system)]
    for i, segment in enumerate(segments):
        if i in used:
            continue
        words = set(_WORD_RE.findall(segment))
        hit = next((d for d in stopped if all(w <= words for w in d.words)), None)
        if hit is not None:
            answer.append({"rxnorm_code": hit.code, "display": hit.display, "status": "stopped_but_taken"})
            continue
        dose, _, _ = _said(segment)
        found = [
            (c, d)
            for c, d, ws in formulary
            if all(w <= words for w in ws) and (dose is None or _strength(d) == dose or _strength(d) is None)
        ]
        if len(found) > 1 and dose is not None:
            found = [(c, d) for c, d in found if _strength(d) == dose] or found
        if found:
            answer.append({"rxnorm_code": found[0][0], "display": found[0][1], "status": "commission"})
        elif dose is not None:
            answer.append({"rxnorm_code": None, "display": segment, "status": "commission"})
    if naive:
        return [{"rxnorm_code": a["rxnorm_code"], "display": a["display"], "status": "matched"} for a in answer]
    if hedge:
        return answer + [
            {"rxnorm_code": a["rxnorm_code"], "display": a["display"], "status": other}
            for a in answer
            for other in _STATUSES
            if other != a["status"]
        ]
    return answer


def _find(drug: _Drug, segments: list[str], used: set[int]) -> list[int] | None:
    words = [set(_WORD_RE.findall(s)) for s in segments]
    for i in range(len(segments)):
        if i in used:
            continue
        if all(w <= words[i] for w in drug.words):
            return [i]
        if (
            len(drug.words) > 1
            and i + 1 < len(segments)
            and i + 1 not in used
            and all(w <= words[i] | words[i + 1] for w in drug.words)
        ):
            return [i, i + 1]
    return None


class BaselineReconcileAgent:
    """Reconciles the report text against the record with explicit patterns (no model)."""

    thread_safe = True
    """Safe to call from several threads at once (``--groundeval-concurrency`` defaults to 4)."""

    network_calls = False
    """Never makes a network call: the first call of a process need not go alone."""

    name = "baseline-reconcile"
    tasks: frozenset[str] = frozenset({"reconcile"})
    model: str | None = None
    naive = False
    hedge = False

    def __init__(self, config: AgentConfig | None = None) -> None:
        del config  # nothing to configure

    def run(self, request: AgentRequest) -> AgentResult:
        """Return the JSON answer; raises ``AgentError`` when the prompt holds no Bundle and report."""
        answer = reconcile_answer(request, naive=self.naive, hedge=self.hedge)
        return AgentResult(usage=no_model_calls(), text=json.dumps(answer, ensure_ascii=False))


class NaiveReconcileAgent(BaselineReconcileAgent):
    """Negative control: the baseline's medications, every one called ``matched``."""

    name = "naive-reconcile"
    naive = True


class HedgingReconcileAgent(BaselineReconcileAgent):
    """Negative control: the baseline's answer, then each of its medications under every other status."""

    name = "hedge-reconcile"
    hedge = True
