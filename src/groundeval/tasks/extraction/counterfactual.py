"""The extraction task's counterfactual twins (``--groundeval-counterfactual``).

Each perturbation changes one MedicationRequest of the case's Bundle, chosen among those it can
change (seeded from the file's SHA-256, so every process picks the same one):

* ``stop-active`` (drops): an active prescription whose RxCUIs no other counted request carries
  gets ``status: stopped``; its drug must leave the list.
* ``restart-stopped`` (adds): a ``stopped`` or ``completed`` prescription (an order for this
  patient, not ``doNotPerform``) whose RxCUIs are on no active request gets ``status: active``;
  its drug must join the list.
* ``swap-drug`` (replaces): an active prescription's ``medicationCodeableConcept`` is replaced by
  a generic oral drug of the packaged RxNorm catalog (``fixtures/terminology``) that shares no
  ingredient with any drug named anywhere in the Bundle and whose RxCUI the Bundle never carries;
  the old drug must leave the list and the new one join it.
* ``medication-reference`` (same): an active prescription's drug moves into a bundled
  ``Medication`` named by a ``urn:uuid:`` ``medicationReference``; the list must not change.

The twin's truth is the task's truth (``medication_list.medication_truth``) over the changed Bundle, and
``counterfactual`` checks that it moved exactly as declared: the probed medications flip (or stay), and
every other medication is untouched. A prescription is a candidate only when changing it alone
moves the truth that way, so the check fails only on a bug (``CounterfactualError``).
"""

from __future__ import annotations

import copy
import functools
import uuid
from collections.abc import Mapping
from typing import Any

from groundeval.clinical.medication_list import exclusion, find_patient, medication_truth
from groundeval.datasets import Case
from groundeval.fhir.bundle import RXNORM_SYSTEM, BundleIndex, patient_references, request_rxcuis, rxnorm_codings
from groundeval.tasks.counterfactual import CounterfactualError, Effect, make_twin, seeded

__all__ = ["PERTURBATIONS", "counterfactual", "observe"]

PERTURBATIONS: tuple[str, ...] = ("stop-active", "restart-stopped", "swap-drug", "medication-reference")
"""The extraction task's perturbations, in the order their twins are collected."""

_ENDED = frozenset({"stopped", "completed"})
_NAMESPACE = uuid.UUID("0f4c8a8e-3b1d-4c52-9a57-636f756e7466")  # fixed: a twin's new ids never change
JSON = dict[str, Any]


def observe(probe: Mapping[str, Any], parsed: Any) -> dict[str, bool]:
    """``{medication: listed?}`` for each medication of ``probe["medications"]`` in an answer.

    Args:
        probe: A twin's probe: ``{"medications": [[rxcui, ...], ...]}``, each medication the RxCUIs
            naming it (a branded and a generic code of one drug are one medication).
        parsed: A parsed answer as the case record keeps it (a list of ``{"rxnorm_code", "display"}``),
            or None when there was none (every medication then counts as not listed).

    Returns:
        Keyed by the medication's RxCUIs joined with ``|``; listed when the answer has any of them.
    """
    listed = {str(i.get("rxnorm_code")) for i in parsed if isinstance(i, dict)} if isinstance(parsed, list) else set()
    return {"|".join(codes): bool(listed & set(codes)) for codes in probe.get("medications", [])}


def _truth_codes(bundle: Mapping[str, Any], source: str) -> list[frozenset[str]]:
    """The truth's coded medications, each as its set of RxCUIs."""
    meds, _ = medication_truth(bundle, source)
    return [frozenset(m["codes"]) for m in meds if m["codes"]]


def _requests(bundle: JSON) -> list[JSON]:
    return [e["resource"] for e in bundle.get("entry") or []
            if isinstance(e, dict) and isinstance(e.get("resource"), dict)
            and e["resource"].get("resourceType") == "MedicationRequest"]


def _candidates(bundle: JSON, source: str, kind: str) -> list[JSON]:
    """The requests ``kind`` can change so that the truth moves as it declares, in bundle order."""
    patient, full_url = find_patient(bundle, source)
    subjects = patient_references(patient, full_url)
    index = BundleIndex.of(bundle)
    requests = _requests(bundle)
    counted = [r for r in requests if exclusion(r, subjects) is None]
    codes = {id(r): request_rxcuis(r, index) for r in requests}
    out = []
    if kind == "restart-stopped":
        active = frozenset().union(*(codes[id(r)] for r in counted))
        for r in requests:
            if r.get("status") in _ENDED and codes[id(r)] and not codes[id(r)] & active \
                    and exclusion({**r, "status": "active"}, subjects) is None:
                out.append(r)
        return out
    for r in counted:
        others = frozenset().union(*(codes[id(o)] for o in counted if o is not r))
        if not codes[id(r)] or codes[id(r)] & others:
            continue
        if kind != "stop-active" and not isinstance(r.get("medicationCodeableConcept"), dict):
            continue
        out.append(r)
    return out


def _label(request: Mapping[str, Any], index: BundleIndex) -> str:
    concept = request.get("medicationCodeableConcept")
    if not isinstance(concept, dict):
        ref = (request.get("medicationReference") or {}).get("reference")
        target = index.resolve(ref, parent=request) if isinstance(ref, str) else None
        concept = target.get("code") if isinstance(target, dict) else {}
    codings = rxnorm_codings(concept)
    return ", ".join(f"{c.code} {c.display or ''}".strip() for c in codings)


@functools.cache
def _catalog_drugs() -> tuple[tuple[str, str, tuple[str, ...]], ...]:
    """Generic oral drugs of the packaged RxNorm catalog: (RxCUI, display, lower-case ingredient names)."""
    from groundeval.terminology.catalog import Catalog

    return tuple(
        (e.rxcui, e.display, tuple(i.name.lower() for i in e.ingredients))
        for e in Catalog.load().entries
        if e.dose_form and "Oral" in e.dose_form and e.brand is None and e.ingredients
    )


def _swap_drug(bundle: JSON, case: Case, kind: str) -> tuple[str, str, str] | None:
    """A catalog drug for ``swap-drug``: shares no ingredient with any drug text in the Bundle, RxCUI unseen."""
    seen_codes: set[str] = set()
    texts: list[str] = []
    for entry in bundle.get("entry") or []:
        resource = entry.get("resource") if isinstance(entry, dict) else None
        if not isinstance(resource, dict):
            continue
        for key in ("medicationCodeableConcept", "code"):
            concept = resource.get(key)
            if isinstance(concept, dict) and resource.get("resourceType") in ("MedicationRequest", "Medication"):
                codings = [c for c in concept.get("coding") or [] if isinstance(c, dict)]
                seen_codes.update(str(c.get("code")) for c in codings)
                texts += [str(c.get("display") or "").lower() for c in codings]
                texts.append(str(concept.get("text") or "").lower())
    blob = "\n".join(texts)
    pool = [d for d in _catalog_drugs() if d[0] not in seen_codes and not any(i in blob for i in d[2])]
    if not pool:
        return None
    code, display, _ = seeded(case, f"{kind}:drug").choice(pool)
    return code, display, RXNORM_SYSTEM


def counterfactual(case: Case, kind: str) -> Case | None:
    """The twin of ``case`` made by perturbation ``kind`` (``PERTURBATIONS``), or None when nothing fits.

    Raises:
        ValueError: ``kind`` is not one of ``PERTURBATIONS``.
        CounterfactualError: The changed Bundle's truth did not move as ``kind`` declares (a bug).
    """
    if kind not in PERTURBATIONS:
        raise ValueError(f"unknown extraction perturbation {kind!r}; known: {', '.join(PERTURBATIONS)}")
    source = str(case.source)
    bundle = copy.deepcopy(case.data)
    candidates = _candidates(bundle, source, kind)
    if not candidates:
        return None
    request = seeded(case, kind).choice(candidates)
    index = BundleIndex.of(bundle)
    rid = str(request.get("id"))
    old = sorted(request_rxcuis(request, index))
    label = _label(request, index)
    effect: Effect
    new: list[str]
    if kind == "stop-active":
        effect, new, change = "drops", [], f"MedicationRequest/{rid} ({label}): status active -> stopped"
        request["status"] = "stopped"
    elif kind == "restart-stopped":
        effect, new = "adds", []
        change = f"MedicationRequest/{rid} ({label}): status {request.get('status')} -> active"
        request["status"] = "active"
    elif kind == "swap-drug":
        drug = _swap_drug(bundle, case, kind)
        if drug is None:
            return None
        code, display, system = drug
        effect, new = "replaces", [code]
        change = f"MedicationRequest/{rid}: drug {label} -> {code} {display}"
        request["medicationCodeableConcept"] = {"coding": [{"system": system, "code": code, "display": display}],
                                                "text": display}
    else:
        effect, new = "same", []
        mid = str(uuid.uuid5(_NAMESPACE, f"{kind}:{rid}"))
        concept = request.pop("medicationCodeableConcept")
        entries = bundle["entry"]
        at = next(i for i, e in enumerate(entries) if e.get("resource") is request)
        entries.insert(at, {"fullUrl": f"urn:uuid:{mid}", "resource": {"resourceType": "Medication", "id": mid,
                                                                        "code": concept}})
        request["medicationReference"] = {"reference": f"urn:uuid:{mid}"}
        change = f"MedicationRequest/{rid} ({label}): drug moved to Medication urn:uuid:{mid} (medicationReference)"
    meds = [old, new] if new else [old]
    probe = {"medications": meds}
    old_key, new_key = "|".join(old), "|".join(new)
    before = {old_key: kind != "restart-stopped"} | ({new_key: False} if new else {})
    after = {old_key: kind in ("restart-stopped", "medication-reference")} | ({new_key: True} if new else {})
    _check(case, bundle, kind, probe, before, after)
    return make_twin(case, kind, bundle, effect=effect, change=change, probe=probe, original=before, twin=after)


def _check(
    case: Case, bundle: JSON, kind: str, probe: Mapping[str, Any],
    before: Mapping[str, bool], after: Mapping[str, bool],
) -> None:
    """Stop when the truths do not show the declared flip of the probed RxCUIs, or anything else changed.

    Raises:
        CounterfactualError: Naming the case, the perturbation and both truths' coded medications.
    """
    source = str(case.source)
    old, new = _truth_codes(case.data, source), _truth_codes(bundle, source)
    probed = {code for codes in probe["medications"] for code in codes}

    def shown(meds: list[frozenset[str]]) -> dict[str, bool]:
        return observe(probe, [{"rxnorm_code": code} for m in meds for code in m])

    rest_old = sorted(sorted(m) for m in old if not m & probed)
    rest_new = sorted(sorted(m) for m in new if not m & probed)
    if shown(old) != dict(before) or shown(new) != dict(after) or rest_old != rest_new:
        raise CounterfactualError(
            f"{case.case_id}: the {kind} twin's truth did not move as declared (probe {probe['medications']}: "
            f"{shown(old)} -> {shown(new)}, expected {dict(before)} -> {dict(after)}; other medications "
            f"{'unchanged' if rest_old == rest_new else 'changed'})"
        )
