"""A patient's active medications, from the Bundle itself: the extraction task's truth, read by reconcile and write too.

Rule (each step has a unit test in tests/test_fhir_cases.py and a packaged variant case made by
scripts/make_variants.py):

1. Every ``MedicationRequest`` with ``status == "active"``
   (https://hl7.org/fhir/R4/valueset-medicationrequest-status.html); ``on-hold``, ``draft``,
   ``cancelled``, ``completed``, ``stopped``, ``entered-in-error`` and ``unknown`` are not.
2. ... that is not a prohibition: ``doNotPerform: true`` means "the provider is asking for the
   medication request not to occur" and is a modifier element
   (https://hl7.org/fhir/R4/medicationrequest-definitions.html#MedicationRequest.doNotPerform),
   so such a request never puts the drug on the list.
3. ... whose ``intent`` is an order: ``order``, ``original-order``, ``reflex-order``,
   ``filler-order`` or ``instance-order``. ``proposal`` (a suggestion, "without providing an
   authorization to act"), ``plan`` ("an intention ... without providing an authorization for
   others to act") and ``option`` (a component of a RequestGroup, not a request on its own) are
   not prescriptions (https://hl7.org/fhir/R4/valueset-medicationrequest-intent.html).
4. ... whose ``subject`` resolves to the bundle's one Patient: the Patient entry's exact
   ``fullUrl`` or ``Patient/<id>``. Any other absolute URL, even one ending in ``/Patient/<id>``,
   resolves only to an entry with that fullUrl (https://hl7.org/fhir/R4/bundle.html#references),
   so it names someone else (``fhir.bundle.patient_reference_matches``).
5. Its drug is ``medicationCodeableConcept``, or the ``Medication.code`` that
   ``medicationReference`` resolves to (bundle entry by fullUrl or ``Type/id``, or contained
   ``#id``; ``fhir.bundle.BundleIndex``).
6. RxNorm codings are picked by system (``terminology.systems.RXNORM_SYSTEMS``), never by position. All RxNorm
   codes of one concept (branded SBD and generic SCD) name the same medication.
7. Requests whose RxCUIs overlap collapse into one medication (duplicate refills count once).
8. The accepted displays of an RxCUI come only from the active requests that name it (or their
   Medication): the coding's own display, else that concept's ``text``. A display is never
   borrowed from another request (a stopped one, say); when the coding has neither, the display is
   not checked. When two active requests give one RxCUI different displays, either is accepted.
9. A drug with no RxNorm coding but a ``text`` is kept as ``uncoded`` (matched only by an answer
   with ``rxnorm_code: null`` and the same text, case-insensitive). A ``medicationReference`` that
   does not resolve is kept as ``unresolved`` and left out of scoring: nobody can know its drug.

Derivation is linear in the number of entries: one index pass, one pass over the requests, and a
union-find over RxCUIs and texts for step 7.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypedDict

from groundeval.errors import DatasetError
from groundeval.fhir.bundle import (
    BundleIndex,
    entry_resources,
    patient_references,
    rxnorm_codings,
)

__all__ = [
    "ORDER_INTENTS",
    "TruthMedication",
    "active_medications",
    "exclusion",
    "find_patient",
    "inactive_codes",
    "medication_truth",
    "medications_with_status",
]

ORDER_INTENTS = frozenset({"order", "original-order", "reflex-order", "filler-order", "instance-order"})
"""MedicationRequest.intent codes that authorise the medication
(https://hl7.org/fhir/R4/valueset-medicationrequest-intent.html); ``proposal``, ``plan`` and
``option`` do not."""


class TruthMedication(TypedDict):
    """One expected medication.

    Keys:
        codes: Sorted RxCUIs naming this medication (one for Synthea data, several for
            branded + generic codings); empty when uncoded or unresolved.
        displays: Accepted displays per RxCUI, distinct, in bundle order (the first is the one
            shown in messages); an empty list means the record gives none and it is not checked.
        text: ``CodeableConcept.text`` or, when unresolved, the dangling reference.
        kind: ``"coded"``, ``"uncoded"`` or ``"unresolved"``.
        requests: Sorted ids of the MedicationRequests collapsed into this entry.
    """

    codes: list[str]
    displays: dict[str, list[str]]
    text: str | None
    kind: str
    requests: list[str]


def find_patient(bundle: Mapping[str, Any], source: str) -> tuple[dict[str, Any], str | None]:
    """Return the bundle's single Patient and its entry fullUrl.

    Args:
        bundle: A parsed Bundle.
        source: File name for error messages.

    Raises:
        DatasetError: Not a Bundle, no entries, no Patient, or more than one Patient.
    """
    if bundle.get("resourceType") != "Bundle":
        got = bundle.get("resourceType")
        raise DatasetError(source, f"resourceType is {got!r}, expected 'Bundle'")
    entries = bundle.get("entry")
    if not isinstance(entries, list):
        raise DatasetError(source, "Bundle.entry is missing or not a list")
    patients = [
        (e["resource"], e.get("fullUrl"))
        for e in entries
        if isinstance(e, dict)
        and isinstance(e.get("resource"), dict)
        and e["resource"].get("resourceType") == "Patient"
    ]
    if not patients:
        near = sorted({str(e["resource"].get("resourceType")) for e in entries if isinstance(e, dict)
                       and isinstance(e.get("resource"), dict)
                       and str(e["resource"].get("resourceType", "")).lower() in ("patient", "patinet", "pateint")})
        hint = f" (an entry's resourceType is {near[0]!r}: did you mean 'Patient'?)" if near else ""
        raise DatasetError(source, f"the Bundle has no Patient entry{hint}; one patient per bundle")
    if len(patients) > 1:
        raise DatasetError(
            source, f"the Bundle has {len(patients)} Patient entries; split it, one per bundle"
        )
    patient, full_url = patients[0]
    return patient, full_url if isinstance(full_url, str) else None


def _drug_concept(
    request: Mapping[str, Any], index: BundleIndex
) -> tuple[Mapping[str, Any] | None, str | None]:
    """Return (concept, dangling reference) for a request's medication[x]."""
    concept = request.get("medicationCodeableConcept")
    if isinstance(concept, dict):
        return concept, None
    ref = (request.get("medicationReference") or {}).get("reference")
    target = index.resolve(ref, parent=request) if isinstance(ref, str) else None
    if target is None:
        return None, ref if isinstance(ref, str) else "(no medication[x])"
    code = target.get("code")
    return (code if isinstance(code, Mapping) else {}), None


def exclusion(request: Mapping[str, Any], subjects: frozenset[str]) -> str | None:
    """Why a MedicationRequest is not on the patient's active list (rules 1-4), or None if it is.

    Args:
        request: A MedicationRequest dict.
        subjects: The references that resolve to the patient (``fhir.bundle.patient_references``).

    Returns:
        ``"<status>"`` for a non-active status, ``"doNotPerform"``, ``"intent <code>"`` or
        ``"subject <reference>"``; None for a request that counts.
    """
    status = request.get("status")
    if status != "active":
        return str(status or "no status")
    if request.get("doNotPerform") is True:
        return "doNotPerform"
    intent = request.get("intent")
    if intent not in ORDER_INTENTS:
        return f"intent {intent}"
    subject = (request.get("subject") or {}).get("reference")
    if subject not in subjects:
        return f"subject {subject}"
    return None


def _item(request: Mapping[str, Any], index: BundleIndex) -> TruthMedication | None:
    """One request's medication (rules 5, 6, 8, 9), before collapsing; None if it names no drug."""
    concept, dangling = _drug_concept(request, index)
    rid = str(request.get("id") or "")
    if dangling is not None:
        return TruthMedication(codes=[], displays={}, text=dangling, kind="unresolved", requests=[rid])
    text = concept.get("text") if concept else None
    text = text.strip() if isinstance(text, str) and text.strip() else None
    codings = rxnorm_codings(concept)
    if codings:
        displays: dict[str, list[str]] = {}
        for c in codings:
            shown = c.display or text
            displays.setdefault(c.code, [])
            if shown and shown not in displays[c.code]:
                displays[c.code].append(shown)
        return TruthMedication(codes=sorted(displays), displays=displays, text=text, kind="coded", requests=[rid])
    if text:
        return TruthMedication(codes=[], displays={}, text=text, kind="uncoded", requests=[rid])
    return None  # a concept with neither code nor text names no drug


def _keys(item: TruthMedication) -> list[tuple[str, str]]:
    if item["kind"] == "coded":
        return [("coded", code) for code in item["codes"]]
    return [(item["kind"], (item["text"] or "").casefold())]


def _collapse(items: list[TruthMedication]) -> list[TruthMedication]:
    """Merge items sharing an RxCUI (or, uncoded/unresolved, a case-folded text): union-find, O(n)."""
    parent = list(range(len(items)))

    def root(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    owner: dict[tuple[str, str], int] = {}
    for i, item in enumerate(items):
        for key in _keys(item):
            j = owner.setdefault(key, i)
            a, b = root(i), root(j)
            if a != b:
                parent[max(a, b)] = min(a, b)
    groups: dict[int, list[TruthMedication]] = {}
    for i, item in enumerate(items):
        groups.setdefault(root(i), []).append(item)
    merged: list[TruthMedication] = []
    for members in groups.values():
        if len(members) == 1:
            merged.append(members[0])  # nothing to merge (the usual case)
            continue
        displays: dict[str, list[str]] = {}
        for member in members:
            for code, shown in member["displays"].items():
                accepted = displays.setdefault(code, [])
                accepted.extend(d for d in shown if d not in accepted)
        merged.append(TruthMedication(
            codes=sorted(displays),
            displays={code: displays[code] for code in sorted(displays)},
            text=next((m["text"] for m in members if m["text"]), None),
            kind=members[0]["kind"],
            requests=sorted({r for m in members for r in m["requests"]}),
        ))
    return merged


def medication_truth(
    bundle: Mapping[str, Any], source: str = "bundle"
) -> tuple[list[TruthMedication], dict[str, list[str]]]:
    """Derive the active list and the excluded RxCUIs in one pass over the requests.

    Args:
        bundle: A parsed Bundle with exactly one Patient.
        source: File name for error messages.

    Returns:
        ``(active_medications(bundle), inactive_codes(bundle))``.

    Raises:
        DatasetError: The bundle does not have exactly one Patient.
    """
    patient, full_url = find_patient(bundle, source)
    subjects = patient_references(patient, full_url)
    index = BundleIndex.of(bundle)
    items: list[TruthMedication] = []
    excluded: dict[str, set[str]] = {}
    for request in entry_resources(bundle, "MedicationRequest"):
        why = exclusion(request, subjects)
        if why is None:
            if (item := _item(request, index)) is not None:
                items.append(item)
            continue
        for coding in rxnorm_codings(_drug_concept(request, index)[0]):
            excluded.setdefault(coding.code, set()).add(why)
    inactive = {code: sorted(reasons) for code, reasons in sorted(excluded.items())}
    return sorted(_collapse(items), key=_sort_key), inactive


def medications_with_status(
    bundle: Mapping[str, Any], statuses: frozenset[str], source: str = "bundle"
) -> list[TruthMedication]:
    """The medications of the requests with one of ``statuses`` that pass rules 2-4 as active ones must.

    A request whose status is in ``statuses`` (``stopped``, ``completed``, ``on-hold`` for the
    reconcile task) is read by the same rules as an active one: not ``doNotPerform``, an order
    ``intent``, the patient as ``subject`` (rules 2-4), its drug and RxCUIs by rules 5, 6, 8 and 9,
    and requests whose RxCUIs overlap collapsed into one medication (rule 7: a stopped request coded
    with both the generic and the brand RxCUI is one drug). So a ``plan``, a prohibition or another
    patient's request never counts, whatever its status.

    Args:
        bundle: A parsed Bundle with exactly one Patient.
        statuses: ``MedicationRequest.status`` codes to take.
        source: File name for error messages.

    Returns:
        Medications sorted as ``active_medications`` sorts them.

    Raises:
        DatasetError: The bundle does not have exactly one Patient.
    """
    patient, full_url = find_patient(bundle, source)
    subjects = patient_references(patient, full_url)
    index = BundleIndex.of(bundle)
    items = [item for request in entry_resources(bundle, "MedicationRequest")
             if request.get("status") in statuses and exclusion({**request, "status": "active"}, subjects) is None
             and (item := _item(request, index)) is not None]
    return sorted(_collapse(items), key=_sort_key)


def active_medications(bundle: Mapping[str, Any], source: str = "bundle") -> list[TruthMedication]:
    """Derive the patient's active medication list (see the module docstring for the rule).

    Args:
        bundle: A parsed Bundle with exactly one Patient.
        source: File name for error messages.

    Returns:
        Medications sorted by first RxCUI, then text; uncoded and unresolved entries last.

    Raises:
        DatasetError: The bundle does not have exactly one Patient.
    """
    return medication_truth(bundle, source)[0]


def _sort_key(med: TruthMedication) -> tuple[int, str, str]:
    order = {"coded": 0, "uncoded": 1, "unresolved": 2}[med["kind"]]
    return order, (med["codes"] or [""])[0], med["text"] or ""


def inactive_codes(bundle: Mapping[str, Any]) -> dict[str, list[str]]:
    """Map each RxCUI on an excluded MedicationRequest to why it was excluded (diagnostics).

    Used to explain false positives: an extra RxCUI that is ``stopped`` in the record, or active
    but ``doNotPerform``/``intent plan``/for another subject, points at a filtering error, not a
    hallucination. Values are sorted reasons as returned by ``exclusion``.

    Raises:
        DatasetError: The bundle does not have exactly one Patient.
    """
    return medication_truth(bundle)[1]
