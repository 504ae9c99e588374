"""Small, dependency-free readers for FHIR JSON (dicts), used to derive ground truth.

Ground truth is computed from plain ``json.loads`` output rather than fhir.resources models:
a dict walk over a Synthea bundle takes milliseconds, full model validation about 0.5 s per MB,
and the truth must not depend on the same library the baseline agent uses.

Reference resolution follows the FHIR R4 rules for resolving references in bundles
(https://hl7.org/fhir/R4/bundle.html#references): a ``#id`` reference points into the
referring resource's ``contained`` list; an absolute reference (any ``scheme:`` URI, so
``urn:uuid:...`` and ``https://...`` alike) matches only the entry whose ``fullUrl`` is that
exact string, and otherwise is not resolvable inside the bundle (it points to a server, not to an
entry, whatever its path ends with); a relative ``Type/id`` reference matches the entry whose
resource has that type and id (Synthea's ``urn:uuid:`` fullUrls give no RESTful base to
resolve it against).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from groundeval.terminology.systems import RXNORM_SYSTEM, RXNORM_SYSTEMS

__all__ = [
    "RXNORM_SYSTEM",
    "RXNORM_SYSTEMS",
    "SNOMED_SYSTEM",
    "BundleIndex",
    "Coding",
    "codings_by_system",
    "entry_resources",
    "is_absolute",
    "is_rxnorm",
    "request_rxcuis",
    "rxnorm_codings",
]

JSON = dict[str, Any]

_ID_RE = re.compile(r"^[A-Za-z0-9\-.]{1,64}$")
"""FHIR ``id`` datatype (https://hl7.org/fhir/R4/datatypes.html#id)."""

_ABSOLUTE_RE = re.compile(r"^[A-Za-z][A-Za-z0-9+.\-]*:")
"""An absolute URI starts with a scheme (RFC 3986 section 3.1): ``urn:``, ``http:``, ``https:``."""


@dataclass(frozen=True, slots=True)
class Coding:
    """One RxNorm coding of a medication concept.

    Attributes:
        code: The RxCUI, as a string (e.g. ``"313782"``).
        display: The coding's own display, or None when the coding has none.
    """

    code: str
    display: str | None


def is_rxnorm(system: object) -> bool:
    """Return True when a ``Coding.system`` value denotes RxNorm (see ``RXNORM_SYSTEMS``)."""
    return isinstance(system, str) and system.strip() in RXNORM_SYSTEMS


def rxnorm_codings(concept: Mapping[str, Any] | None) -> list[Coding]:
    """Return the RxNorm codings of a CodeableConcept, in order, selected by system.

    Args:
        concept: A CodeableConcept dict, or None.

    Returns:
        One ``Coding`` per RxNorm coding with a non-empty code; NDC, SNOMED CT and codings
        without a code are skipped. Displays are stripped; an empty display becomes None.
    """
    return codings_by_system(concept, RXNORM_SYSTEMS)


def is_absolute(reference: str) -> bool:
    """Return True when a reference is an absolute URI (``urn:uuid:...``, ``https://...``)."""
    return bool(_ABSOLUTE_RE.match(reference))


def is_valid_id(value: str) -> bool:
    """Return True when ``value`` is a legal FHIR ``id`` (letters, digits, ``-``, ``.``; 1-64)."""
    return bool(_ID_RE.match(value))


@dataclass(slots=True)
class BundleIndex:
    """Lookup tables over one Bundle's entries for reference resolution.

    Attributes:
        by_full_url: Entry resource by ``Bundle.entry.fullUrl``.
        by_type_id: Entry resource by ``"ResourceType/id"``.
    """

    by_full_url: dict[str, JSON] = field(default_factory=dict)
    by_type_id: dict[str, JSON] = field(default_factory=dict)

    @classmethod
    def of(cls, bundle: Mapping[str, Any]) -> BundleIndex:
        """Index a Bundle dict's entries.

        Args:
            bundle: A parsed ``Bundle`` resource.

        Returns:
            The index; entries without a resource are ignored.
        """
        index = cls()
        for entry in bundle.get("entry") or []:
            resource = entry.get("resource") if isinstance(entry, dict) else None
            if not isinstance(resource, dict):
                continue
            full_url = entry.get("fullUrl")
            if isinstance(full_url, str) and full_url:
                index.by_full_url[full_url] = resource
            rtype, rid = resource.get("resourceType"), resource.get("id")
            if isinstance(rtype, str) and isinstance(rid, str):
                index.by_type_id[f"{rtype}/{rid}"] = resource
        return index

    def resolve(self, reference: str | None, parent: Mapping[str, Any] | None = None) -> JSON | None:
        """Resolve a reference string to the resource it points to, or None.

        Args:
            reference: ``#id`` (contained), an absolute URI (``urn:uuid:...`` or a URL, matched
                against ``fullUrl`` only), or a relative ``Type/id``.
            parent: The referring resource; needed for ``#id`` references.

        Returns:
            The target resource dict, or None when it is not in the bundle. Never raises.
            ``https://other.example/fhir/Medication/x`` does not resolve to an entry whose
            fullUrl is ``urn:uuid:x`` (https://hl7.org/fhir/R4/bundle.html#references).
        """
        if not reference:
            return None
        if reference.startswith("#"):
            for contained in (parent or {}).get("contained") or []:
                if isinstance(contained, dict) and contained.get("id") == reference[1:]:
                    return contained
            return None
        if is_absolute(reference):
            return self.by_full_url.get(reference)
        rtype, _, rid = reference.partition("/")
        if rtype and rid and is_valid_id(rid):
            return self.by_type_id.get(f"{rtype}/{rid}")
        return None


def entry_resources(bundle: Mapping[str, Any], resource_type: str) -> list[JSON]:
    """Return every top-level entry resource of one type, in bundle order (no deduplication).

    Args:
        bundle: A parsed ``Bundle`` resource.
        resource_type: A FHIR resource type name such as ``"MedicationRequest"``.

    Returns:
        The matching resource dicts.
    """
    out: list[JSON] = []
    for entry in bundle.get("entry") or []:
        resource = entry.get("resource") if isinstance(entry, dict) else None
        if isinstance(resource, dict) and resource.get("resourceType") == resource_type:
            out.append(resource)
    return out


def patient_references(patient: Mapping[str, Any], full_url: str | None) -> frozenset[str]:
    """Every reference string that resolves to ``patient`` (see ``patient_reference_matches``).

    Args:
        patient: The Patient resource.
        full_url: The Patient entry's ``fullUrl``, if any.

    Returns:
        At most two strings: the exact ``fullUrl`` and ``Patient/<id>`` (when ``id`` is legal).
    """
    refs = {full_url} if full_url else set()
    pid = patient.get("id")
    if isinstance(pid, str) and is_valid_id(pid):
        refs.add(f"Patient/{pid}")
    return frozenset(refs)


def patient_reference_matches(
    reference: str | None, patient: Mapping[str, Any], full_url: str | None
) -> bool:
    """Return True when a subject reference points at ``patient``.

    Accepted forms (https://hl7.org/fhir/R4/bundle.html#references): the Patient entry's exact
    ``fullUrl`` (Synthea writes ``urn:uuid:<id>``) and the relative ``Patient/<id>``. Any other
    absolute reference does not resolve to the entry, even one ending in ``/Patient/<id>``
    (``https://example.org/fhir/Patient/<id>`` names a patient on some server, not this entry),
    nor does ``urn:uuid:<id>`` when the entry's fullUrl is something else.
    ``Patient/urn:uuid:<id>`` is malformed (an id cannot contain ``:``) and never matches.

    Args:
        reference: The ``Reference.reference`` string, or None.
        patient: The Patient resource.
        full_url: The Patient entry's ``fullUrl``, if any.
    """
    return bool(reference) and reference in patient_references(patient, full_url)


SNOMED_SYSTEM = "http://snomed.info/sct"
"""The SNOMED CT code system URI (https://terminology.hl7.org/CodeSystem-snomedct.html)."""


def codings_by_system(concept: Mapping[str, Any] | None, systems: str | frozenset[str] | set[str]) -> list[Coding]:
    """Return the codings of a CodeableConcept whose ``system`` is one of ``systems``, in order.

    The generic form of ``rxnorm_codings``: codings are picked by system, never by position
    (https://hl7.org/fhir/R4/datatypes.html#CodeableConcept).

    Args:
        concept: A CodeableConcept dict, or None.
        systems: One system URI (e.g. ``SNOMED_SYSTEM``) or a set of equivalent ones
            (e.g. ``RXNORM_SYSTEMS``); compared after stripping whitespace.

    Returns:
        One ``Coding`` per matching coding with a non-empty code (as a string); displays are
        stripped and an empty display becomes None.
    """
    wanted = {systems} if isinstance(systems, str) else set(systems)
    found: list[Coding] = []
    for coding in (concept or {}).get("coding") or []:
        system = coding.get("system") if isinstance(coding, Mapping) else None
        if not isinstance(system, str) or system.strip() not in wanted:
            continue
        code = str(coding.get("code") or "").strip()
        if not code:
            continue
        display = coding.get("display")
        text = display.strip() if isinstance(display, str) else ""
        found.append(Coding(code=code, display=text or None))
    return found


def request_rxcuis(request: Mapping[str, Any], index: BundleIndex) -> frozenset[str]:
    """The RxNorm codes (RxCUIs) a MedicationRequest names.

    Read from its ``medicationCodeableConcept``, or else from the ``code`` of the Medication its
    ``medicationReference`` resolves to in ``index``. Empty when neither holds an RxNorm coding or
    the reference does not resolve. Source: FHIR R4 MedicationRequest, ``medication[x]``
    (https://hl7.org/fhir/R4/medicationrequest.html).
    """
    concept = request.get("medicationCodeableConcept")
    if not isinstance(concept, dict):
        ref = (request.get("medicationReference") or {}).get("reference")
        target = index.resolve(ref, parent=request) if isinstance(ref, str) else None
        concept = target.get("code") if isinstance(target, dict) else None
    return frozenset(c.code for c in rxnorm_codings(concept if isinstance(concept, dict) else None))
