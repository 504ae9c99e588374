"""Ground truth for the extraction task: a patient's active medications, from the Bundle itself.

Rule (each step has a unit test in tests/test_fhir_cases.py):

1. Every ``MedicationRequest`` with ``status == "active"``
   (https://hl7.org/fhir/R4/valueset-medicationrequest-status.html) whose ``subject`` resolves to
   the bundle's one Patient (``urn:uuid:<id>``, ``Patient/<id>`` or the Patient's fullUrl).
2. Its drug is ``medicationCodeableConcept``, or the ``Medication.code`` that
   ``medicationReference`` resolves to (bundle entry by fullUrl or ``Type/id``, or contained
   ``#id``).
3. RxNorm codings are picked by system (``fhir.RXNORM_SYSTEMS``), never by position. All RxNorm
   codes of one concept (branded SBD and generic SCD) name the same medication.
4. Requests whose RxCUIs overlap collapse into one medication.
5. The expected display of an RxCUI is the bundle's own display for that coding; if the coding
   has none, the first display the bundle gives that RxCUI elsewhere; then the concept's text.
6. A drug with no RxNorm coding but a ``text`` is kept as ``uncoded`` (matched only by an answer
   with ``rxnorm_code: null`` and the same text, case-insensitive). A ``medicationReference`` that
   does not resolve is kept as ``unresolved`` and left out of scoring: nobody can know its drug.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypedDict

from groundeval.errors import DatasetError
from groundeval.fhir import (
    BundleIndex,
    entry_resources,
    patient_reference_matches,
    rxnorm_codings,
)

__all__ = ["TruthMedication", "active_medications", "find_patient", "inactive_codes"]


class TruthMedication(TypedDict):
    """One expected medication.

    Keys:
        codes: Sorted RxCUIs naming this medication (one for Synthea data, several for
            branded + generic codings); empty when uncoded or unresolved.
        displays: Expected display per RxCUI.
        text: ``CodeableConcept.text`` or, when unresolved, the dangling reference.
        kind: ``"coded"``, ``"uncoded"`` or ``"unresolved"``.
        requests: Ids of the MedicationRequests collapsed into this entry.
    """

    codes: list[str]
    displays: dict[str, str | None]
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
        raise DatasetError(source, "the Bundle has no Patient entry; one patient per bundle")
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
    if isinstance(concept, Mapping):
        return concept, None
    ref = (request.get("medicationReference") or {}).get("reference")
    target = index.resolve(ref, parent=request) if isinstance(ref, str) else None
    if target is None:
        return None, ref if isinstance(ref, str) else "(no medication[x])"
    code = target.get("code")
    return (code if isinstance(code, Mapping) else {}), None


def _display_fallbacks(bundle: Mapping[str, Any], index: BundleIndex) -> dict[str, str]:
    """First display the bundle gives each RxCUI, over MedicationRequest and Medication codes."""
    seen: dict[str, str] = {}
    concepts: list[Mapping[str, Any] | None] = []
    for request in entry_resources(bundle, "MedicationRequest"):
        concepts.append(_drug_concept(request, index)[0])
    concepts.extend(m.get("code") for m in entry_resources(bundle, "Medication"))
    for concept in concepts:
        for coding in rxnorm_codings(concept):
            if coding.display and coding.code not in seen:
                seen[coding.code] = coding.display
    return seen


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
    patient, full_url = find_patient(bundle, source)
    index = BundleIndex.of(bundle)
    fallback = _display_fallbacks(bundle, index)
    meds: list[TruthMedication] = []
    for request in entry_resources(bundle, "MedicationRequest"):
        if request.get("status") != "active":
            continue
        subject = (request.get("subject") or {}).get("reference")
        if not patient_reference_matches(subject, patient, full_url):
            continue
        concept, dangling = _drug_concept(request, index)
        rid = str(request.get("id") or "")
        text = concept.get("text") if concept else None
        text = text.strip() if isinstance(text, str) and text.strip() else None
        codings = rxnorm_codings(concept)
        if dangling is not None:
            item = TruthMedication(
                codes=[], displays={}, text=dangling, kind="unresolved", requests=[rid]
            )
        elif codings:
            displays = {c.code: c.display or fallback.get(c.code) or text for c in codings}
            item = TruthMedication(
                codes=sorted(displays), displays=displays, text=text, kind="coded", requests=[rid]
            )
        elif text:
            item = TruthMedication(codes=[], displays={}, text=text, kind="uncoded", requests=[rid])
        else:
            continue  # a concept with neither code nor text names no drug
        _merge(meds, item)
    return sorted(meds, key=_sort_key)


def _merge(meds: list[TruthMedication], item: TruthMedication) -> None:
    """Add ``item``, collapsing it into every entry that names the same drug."""
    def same(a: TruthMedication) -> bool:
        if a["kind"] != item["kind"]:
            return False
        if a["kind"] == "coded":
            return bool(set(a["codes"]) & set(item["codes"]))
        return (a["text"] or "").casefold() == (item["text"] or "").casefold()

    for other in [m for m in meds if same(m)]:
        meds.remove(other)
        merged_displays = {**item["displays"], **other["displays"]}
        item = TruthMedication(
            codes=sorted(merged_displays),
            displays=merged_displays,
            text=other["text"] or item["text"],
            kind=item["kind"],
            requests=sorted(set(other["requests"]) | set(item["requests"])),
        )
    meds.append(item)


def _sort_key(med: TruthMedication) -> tuple[int, str, str]:
    order = {"coded": 0, "uncoded": 1, "unresolved": 2}[med["kind"]]
    return order, (med["codes"] or [""])[0], med["text"] or ""


def inactive_codes(bundle: Mapping[str, Any]) -> dict[str, list[str]]:
    """Map each RxCUI on a non-active MedicationRequest to its sorted statuses (diagnostics).

    Used to explain false positives: an extra RxCUI that is ``stopped`` or ``completed`` in the
    record points at a status error, not a hallucination.
    """
    index = BundleIndex.of(bundle)
    found: dict[str, set[str]] = {}
    for request in entry_resources(bundle, "MedicationRequest"):
        status = str(request.get("status") or "unknown")
        if status == "active":
            continue
        for coding in rxnorm_codings(_drug_concept(request, index)[0]):
            found.setdefault(coding.code, set()).add(status)
    return {code: sorted(statuses) for code, statuses in sorted(found.items())}
