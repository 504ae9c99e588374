"""What a patient's record holds for a handoff summary, read from the case's FHIR Bundle.

Plain dict walks over the Bundle (the R4B check runs apart, in ``cases.check_bundle``):

* **Conditions**: the SNOMED CT display's semantic tag (the parenthesised suffix,
  ``"Anemia (disorder)"``) decides what the record calls a disorder. Synthea writes findings and
  social situations as Conditions too (``"Full-time employment (finding)"``, ``"Medication review
  due (situation)"``; Synthea issue 1371); only ``(disorder)`` counts as a diagnosis here. Source
  of the tags: SNOMED CT Editorial Guide, "Semantic Tags"
  (https://confluence.ihtsdotools.org/display/DOCEG/Semantic+Tag).
  ``clinicalStatus`` ``active``/``recurrence``/``relapse`` is active; ``inactive``/``remission``/
  ``resolved`` is not (FHIR R4 condition-clinical, https://hl7.org/fhir/R4/valueset-condition-clinical.html).
* **Medications**: MedicationRequests with status ``active`` are current; ``stopped`` and
  ``completed`` are ended (FHIR R4 medicationrequest-status,
  https://hl7.org/fhir/R4/valueset-medicationrequest-status.html). The drug is the RxNorm coding of
  ``medicationCodeableConcept``, or of the Medication that ``medicationReference`` names.
* **Allergies**: AllergyIntolerances whose clinicalStatus is ``active`` (or absent) and whose
  ``category`` includes ``medication``.
* **Values**: each Observation's ``valueQuantity`` and components, and each drug's strengths as
  its RxNorm name writes them (``"100 MG"``, parsed by ``terminology.parse_display``), with what
  the product's concentration makes of them: a package volume times a concentration is the
  package's amount (``0.3 ML Epinephrine 1 MG/ML`` holds 0.3 mg), and ``10 MG/ML`` is ``1 %``
  (w/v: grams per 100 mL; USP General Notices 8.140, "Percentages"). Each value keeps the names
  of its item (the Observation's name, the ingredient and brand), so a summary's value is compared
  with its own item's values.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from groundeval.clinical.hba1c import HBA1C_NGSP_LOINC, ifcc_mmol_per_mol

__all__ = [
    "FSN_TAGS",
    "RXNORM",
    "SNOMED",
    "Drug",
    "Problem",
    "active_allergies",
    "conditions",
    "drug_names",
    "medications",
    "record_values",
    "resources",
    "semantic_tag",
    "strengths",
    "strip_tag",
]

SNOMED = "http://snomed.info/sct"
RXNORM = "http://www.nlm.nih.gov/research/umls/rxnorm"
ACTIVE_CONDITION = frozenset({"active", "recurrence", "relapse"})
ENDED_CONDITION = frozenset({"inactive", "remission", "resolved"})
ENDED_REQUEST = frozenset({"stopped", "completed"})

_TAG = re.compile(r"\s*\(([a-z /-]+)\)\s*$")
_LEADING = re.compile(r"^\s*(?:NDA\d+\s+|Abuse-Deterrent\s+|\d+(?:\.\d+)?\s*(?:HR|ML|MG|ACTUAT)\s+)+", re.IGNORECASE)
_BRAND = re.compile(r"\[([^\]]+)\]")
_QUANTITY = re.compile(r"(\d+(?:\.\d+)?)\s*ML$", re.IGNORECASE)
_STRENGTH = re.compile(r"(\d+(?:\.\d+)?)\s*(MG|MCG|UNT|ML|MEQ|%)(?:/(ML|ACTUAT|HR|MG))?\b", re.IGNORECASE)
JSON = dict[str, Any]


def resources(bundle: Mapping[str, Any], kind: str | None = None) -> Iterator[Mapping[str, Any]]:
    """The Bundle's resources in order, only those of ``kind`` (a resourceType) when given."""
    for entry in bundle.get("entry") or []:
        resource = entry.get("resource") if isinstance(entry, Mapping) else None
        if isinstance(resource, Mapping) and (kind is None or resource.get("resourceType") == kind):
            yield resource


FSN_TAGS: Mapping[str, str] = {
    "22298006": "disorder",   # Myocardial infarction (disorder)
    "24079001": "disorder",   # Atopic dermatitis (disorder)
    "38341003": "disorder",   # Hypertensive disorder, systemic arterial (disorder)
    "44465007": "disorder",   # Sprain of ankle (disorder)
    "49436004": "disorder",   # Atrial fibrillation (disorder)
    "53741008": "disorder",   # Coronary arteriosclerosis (disorder)
    "65363002": "disorder",   # Otitis media (disorder)
    "68496003": "disorder",   # Polyp of colon (disorder)
    "83664006": "disorder",   # Idiopathic atrophic hypothyroidism (disorder)
    "84757009": "disorder",   # Epilepsy (disorder)
    "128613002": "disorder",  # Seizure disorder (disorder)
    "230690007": "disorder",  # Cerebrovascular accident (disorder)
    "410429000": "disorder",  # Cardiac arrest (disorder)
}
"""The semantic tag of each SNOMED CT concept that a packaged record names by a display without its
tag (older Synthea records write the preferred term, ``"Hypertension"``, not the fully specified
name). Each tag is that of the concept's fully specified name in the SNOMED CT International Edition
(the comment beside it; SNOMED CT Editorial Guide, "Fully Specified Name",
https://confluence.ihtsdotools.org/display/DOCEG/Fully+Specified+Name). A code whose display has no
tag and is not in this table has no tag: ``scripts/make_summary.py --check`` fails on such a code in
a packaged record, so the table cannot silently fall behind the fixtures."""


def semantic_tag(display: str, code: str | None = None) -> str | None:
    """The SNOMED CT semantic tag of a Condition's concept.

    Args:
        display: The coding's display (``"Anemia (disorder)"``).
        code: The SNOMED CT code, looked up in ``FSN_TAGS`` when the display has no tag.

    Returns:
        ``"disorder"`` for ``"Anemia (disorder)"`` or for code ``38341003`` displayed as
        ``"Hypertension"``; None when neither the display nor ``FSN_TAGS`` gives one.
    """
    found = _TAG.search(display)
    if found:
        return found[1]
    return FSN_TAGS.get(code) if code else None


def strip_tag(display: str) -> str:
    """The display without its semantic tag: ``"Anemia (disorder)"`` -> ``"Anemia"``."""
    return _TAG.sub("", display).strip()


def drug_names(display: str) -> tuple[tuple[str, ...], str | None]:
    """The ingredient names and the brand of an RxNorm display.

    ``"Acetaminophen 325 MG / HYDROcodone Bitartrate 7.5 MG Oral Tablet"`` ->
    ``(("Acetaminophen", "HYDROcodone Bitartrate"), None)``; ``"24 HR metoprolol succinate 100 MG
    Extended Release Oral Tablet"`` -> ``(("metoprolol succinate",), None)``; a ``[Brand]`` suffix
    is the brand. A leading package or release word (``NDA020800 0.3 ML``, ``Abuse-Deterrent 12 HR``)
    is dropped; a part with no strength is kept whole (``"Lasix 40mg"`` -> ``"Lasix"``).
    """
    brand = _BRAND.search(display)
    text = _BRAND.sub("", display)
    names = []
    for part in text.split(" / "):
        part = _LEADING.sub("", part.strip())
        name = re.split(r"\s\d|\d+\s*mg\b", part, maxsplit=1, flags=re.IGNORECASE)[0].strip(" ,")
        if name:
            names.append(name)
    return tuple(names), brand[1].strip() if brand else None


def strengths(display: str) -> list[tuple[float, str]]:
    """The strengths an RxNorm display writes: ``[(100.0, "mg")]`` for ``"... 100 MG ..."`` (unit lower case)."""
    out = []
    for value, unit, per in _STRENGTH.findall(display):
        out.append((float(value), (unit + (f"/{per}" if per else "")).lower()))
    return out


@dataclass(frozen=True, slots=True)
class Problem:
    """One Condition as the summary rubric reads it.

    Attributes:
        code: The SNOMED CT code.
        name: The display without its semantic tag.
        tag: The semantic tag (``disorder``, ``finding``, ``situation``...), or None.
        status: ``active`` or ``ended`` (from clinicalStatus), or ``other``.
        onset: ``onsetDateTime``'s date (``YYYY-MM-DD``) or None.
    """

    code: str
    name: str
    tag: str | None
    status: str
    onset: str | None


@dataclass(frozen=True, slots=True)
class Drug:
    """One MedicationRequest's drug.

    Attributes:
        rxcui: The RxNorm code.
        display: The RxNorm display as this Bundle writes it.
        names: The ingredient names (``drug_names``).
        brand: The bracketed brand, or None.
        status: The request's status.
        authored: ``authoredOn``'s date or None.
    """

    rxcui: str
    display: str
    names: tuple[str, ...]
    brand: str | None
    status: str
    authored: str | None


def _code(concept: Any, system: str) -> tuple[str, str] | None:
    if not isinstance(concept, Mapping):
        return None
    for coding in concept.get("coding") or []:
        if isinstance(coding, Mapping) and coding.get("system") == system and coding.get("code"):
            display = coding.get("display") or concept.get("text") or str(coding["code"])
            return str(coding["code"]), str(display)
    return None


def _status(resource: Mapping[str, Any], field: str) -> str | None:
    """The first coding's code of a status CodeableConcept (``clinicalStatus``), or None."""
    codings = (resource.get(field) or {}).get("coding") or []
    return str(codings[0].get("code")) if codings and isinstance(codings[0], Mapping) else None


def conditions(bundle: Mapping[str, Any]) -> list[Problem]:
    """Every Condition with a SNOMED CT code, in Bundle order."""
    out = []
    for resource in resources(bundle, "Condition"):
        found = _code(resource.get("code"), SNOMED)
        if found is None:
            continue
        status = _status(resource, "clinicalStatus")
        kind = "active" if status in ACTIVE_CONDITION else "ended" if status in ENDED_CONDITION else "other"
        onset = resource.get("onsetDateTime")
        out.append(Problem(found[0], strip_tag(found[1]), semantic_tag(found[1], found[0]), kind,
                           str(onset)[:10] if isinstance(onset, str) else None))
    return out


def _medication_concept(resource: Mapping[str, Any], bundle: Mapping[str, Any]) -> Any:
    if resource.get("medicationCodeableConcept"):
        return resource["medicationCodeableConcept"]
    ref = (resource.get("medicationReference") or {}).get("reference")
    if not isinstance(ref, str):
        return None
    for entry in bundle.get("entry") or []:
        med = entry.get("resource") or {}
        if med.get("resourceType") == "Medication" and ref in (entry.get("fullUrl"), f"Medication/{med.get('id')}"):
            return med.get("code")
    return None


def _named(display: str, rxcui: str) -> tuple[tuple[str, ...], str | None]:
    """``drug_names`` of a display, or, for a display that is a brand alone, the brand's ingredients.

    ``"Lasix 40mg"`` (RxCUI 315971) is named ``("furosemide",)`` with the brand ``Lasix``: a summary
    that writes the generic name names the drug, as one that writes the brand does. The
    ingredients come from RxNorm as the catalog holds it (``terminology.parse_display``).
    """
    names, brand = drug_names(display)
    if brand is not None:
        return names, brand
    from groundeval.terminology import parse_display

    entry = parse_display(display, rxcui)
    if entry.brand and entry.ingredients and [n.lower() for n in names] == [entry.brand.lower()]:
        return tuple(i.name for i in entry.ingredients), entry.brand
    return names, brand


def medications(bundle: Mapping[str, Any]) -> list[Drug]:
    """Every MedicationRequest whose drug has an RxNorm coding, in Bundle order."""
    out = []
    for resource in resources(bundle, "MedicationRequest"):
        found = _code(_medication_concept(resource, bundle), RXNORM)
        if found is None:
            continue
        names, brand = _named(found[1], found[0])
        authored = resource.get("authoredOn")
        out.append(Drug(found[0], found[1], names, brand, str(resource.get("status")),
                        str(authored)[:10] if isinstance(authored, str) else None))
    return out


def active_allergies(bundle: Mapping[str, Any]) -> list[tuple[str, str, str]]:
    """``(code, name, criticality)`` of each active medication allergy, in Bundle order."""
    out = []
    for resource in resources(bundle, "AllergyIntolerance"):
        if "medication" not in (resource.get("category") or []):
            continue
        codings = (resource.get("clinicalStatus") or {}).get("coding") or []
        if codings and codings[0].get("code") != "active":
            continue
        found = _code(resource.get("code"), RXNORM) or _code(resource.get("code"), SNOMED)
        if found is None:
            continue
        out.append((found[0], strip_tag(found[1]), str(resource.get("criticality") or "unknown")))
    return out


def _drug_values(drug: Drug) -> list[tuple[float, str, tuple[str, ...]]]:
    """``(value, unit, names)`` of a drug (module docstring, "Values").

    Each ingredient's strength, the package volume, and what the product's concentration makes of them.
    """
    from groundeval.terminology import parse_display

    entry = parse_display(drug.display)
    brand = (drug.brand,) if drug.brand else ()
    every = tuple(i.name for i in entry.ingredients) + brand
    out: list[tuple[float, str, tuple[str, ...]]] = []
    volume = _QUANTITY.match(entry.quantity or "")
    if volume:
        out.append((float(volume[1]), "ml", every))
    for ing in entry.ingredients:
        if ing.strength is None or not ing.unit:
            continue
        names = (ing.name, *brand)
        unit = ing.unit.lower()
        out.append((ing.strength, unit, names))
        mass, _, per = unit.partition("/")
        if per == "ml" and volume:  # the package's amount: 0.3 mL of 1 mg/mL is 0.3 mg
            out.append((round(ing.strength * float(volume[1]), 6), mass, names))
        if unit in ("mg/ml", "mg/g"):  # 10 mg/mL is 1 % (w/v), 10 mg/g 1 % (w/w)
            out.append((round(ing.strength / 10, 6), "%", names))
    if not entry.ingredients:  # a display the parser cannot read: its strengths, named by the drug
        out += [(v, u, drug.names + brand) for v, u in strengths(drug.display)]
    return out


def record_values(bundle: Mapping[str, Any], molar_masses: Mapping[str, float] | None = None) -> list[JSON]:
    """Every value a summary may state: ``{"value": float, "unit": str, "what": str, "names": [str], "kind": str}``.

    ``kind`` is ``observation`` or ``drug``. An Observation whose LOINC code has a molar mass in
    ``molar_masses`` (g/mol by LOINC code: the labs task's table, ``clinical.lab_thresholds``:
    glucose 180.156) also carries ``molar_mass_g_per_mol``, so a value stated in the other kind of
    concentration (``glucose 3.7 mmol/L`` for 67.37 mg/dL) converts. An NGSP HbA1c (LOINC 4548-4,
    %) is also given in IFCC mmol/mol (``clinical.hba1c``: a master equation, not a unit).

    Observation ``valueQuantity`` and component values (their UCUM ``code``, else ``unit``), named by
    the Observation's (component's) ``code.text`` and codings' displays; and each drug's values
    (``_drug_values``), named by its ingredient (and brand), ``what`` its RxNorm display. A value is
    compared with the values of the item it is stated for (``values.check_values``). Sorted, without
    duplicates.
    """
    seen: dict[tuple[float, str, str], tuple[str, ...]] = {}
    kinds: dict[str, str] = {}
    molar: dict[str, float] = {}

    def add(value: Any, unit: Any, what: str, names: tuple[str, ...], kind: str = "observation") -> None:
        if isinstance(value, int | float) and not isinstance(value, bool) and isinstance(unit, str) and unit:
            key = (float(value), unit, what)
            seen[key] = tuple(dict.fromkeys((*seen.get(key, ()), *(n for n in names if n))))
            kinds[what] = kind

    for obs in resources(bundle, "Observation"):
        code = obs.get("code") or {}
        name = str(code.get("text") or "")
        labels = (name, *(str(c.get("display") or "") for c in code.get("coding") or []))
        quantity = obs.get("valueQuantity") or {}
        add(quantity.get("value"), quantity.get("code") or quantity.get("unit"), name, labels)
        value = quantity.get("value")
        if (isinstance(value, int | float) and quantity.get("code") == "%"
                and any(str(c.get("code")) == HBA1C_NGSP_LOINC for c in code.get("coding") or [])):
            add(ifcc_mmol_per_mol(float(value)), "mmol/mol", name, labels)  # "HbA1c 43 mmol/mol" (IFCC)
        mass = next((molar_masses[str(c.get("code"))] for c in code.get("coding") or []
                     if molar_masses and str(c.get("code")) in molar_masses), None)
        if mass is not None:
            molar[name] = mass
        for comp in obs.get("component") or []:
            q = comp.get("valueQuantity") or {}
            ccode = comp.get("code") or {}
            ctext = str(ccode.get("text") or name)
            clabels = (ctext, *(str(c.get("display") or "") for c in ccode.get("coding") or []), *labels)
            add(q.get("value"), q.get("code") or q.get("unit"), ctext, clabels)
    for drug in medications(bundle):
        for value, unit, names in _drug_values(drug):
            add(value, unit, drug.display, names, "drug")
    return [{"value": v, "unit": u, "what": w, "names": list(n), "kind": kinds[w],
             **({"molar_mass_g_per_mol": molar[w]} if w in molar else {})}
            for (v, u, w), n in sorted(seen.items())]
