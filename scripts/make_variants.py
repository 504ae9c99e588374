"""Derive the extraction task's variant cases from real Synthea bundles by named transformations.

Usage::

    uv run python scripts/make_variants.py [--source DIR] [--out DIR] [--check]

The 25 real patients only exercise the status filter: every active request uses an inline
``medicationCodeableConcept`` with one RxNorm coding and a ``urn:uuid:`` subject. Each variant here
takes one real patient (``--source``, default ``../shared/data/synthea``), trims it exactly as
``scripts/make_fixtures.py`` does, and applies one named transformation to its *active* requests,
so every truth rule of ``groundeval.clinical.medication_list`` decides at least one packaged case. Files are
written to ``--out`` (default ``fixtures/extraction``) as ``variant-<transformation>--<source case
id>.json``, plus ``MANIFEST.variants.json`` (per variant: transformation, rule, source and its
SHA-256, changed request ids, fixture SHA-256 and size, and the truth before and after).

A transformation targets the first active request (bundle order) whose RxCUIs no other active
request carries, so excluding it changes the truth; ``display-not-borrowed`` targets the first
active request whose RxCUI also sits on an inactive one. New ids are UUIDv5 of the transformation
and the request id, so output is deterministic. Each variant declares its effect on the truth
(``same``, ``drops``, ``uncoded``, ``unresolved``, ``display-unchecked``, ``two-displays``,
``two-codes``);
the build stops if the truth code disagrees.

``--check`` writes nothing: it rebuilds every variant and the manifest in memory, compares them
byte for byte with the committed files, lists stray ``variant-*.json`` files the script does not
make, prints what it checked, and exits 1 on any difference.
"""

from __future__ import annotations

import copy
import json
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import fixture_files
from make_fixtures import DEFAULT_SOURCE, render, sha256, trim

from groundeval.clinical.medication_list import active_medications
from groundeval.datasets import read_bundles
from groundeval.tasks.extraction.task import case_id_from_stem

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_OUT = ROOT / "fixtures" / "extraction"
MANIFEST = "MANIFEST.variants.json"
NAMESPACE = uuid.UUID("6b0c3a52-5d1e-4f7a-9c1e-67726f756e64")  # fixed: ids never change between runs
NDC = "http://hl7.org/fhir/sid/ndc"
RXNORM_OID = "urn:oid:2.16.840.1.113883.6.88"  # https://terminology.hl7.org/CodeSystem-v3-rxNorm.html
BRANDED_GENERIC = {
    "209387": ("313782", "Acetaminophen 325 MG Oral Tablet"),
    "866414": ("866412", "24 HR metoprolol succinate 100 MG Extended Release Oral Tablet"),
}
"""Branded (SBD) RxCUI -> its generic (SCD) RxCUI and display, two pairs that both occur in the
Synthea bundles with these displays (RxNorm tradename_of, https://mor.nlm.nih.gov/RxNav/)."""
JSON = dict[str, Any]


def _new_id(name: str, rid: str) -> str:
    return str(uuid.uuid5(NAMESPACE, f"{name}:{rid}"))


def _requests(bundle: JSON) -> list[JSON]:
    return [e for e in bundle["entry"] if e["resource"]["resourceType"] == "MedicationRequest"]


def _codes(entry: JSON) -> set[str]:
    return {c["code"] for c in entry["resource"].get("medicationCodeableConcept", {}).get("coding", [])}


def _targets(bundle: JSON, count: int = 1, *, also_inactive: bool = False) -> list[JSON]:
    """The first ``count`` active request entries whose RxCUIs no other active request carries."""
    entries = _requests(bundle)
    active = [e for e in entries if e["resource"]["status"] == "active"]
    inactive = set().union(*(_codes(e) for e in entries if e["resource"]["status"] != "active"))
    chosen = []
    for entry in active:
        others = set().union(*(_codes(o) for o in active if o is not entry))
        if _codes(entry) & others or "medicationCodeableConcept" not in entry["resource"]:
            continue
        if also_inactive and not _codes(entry) & inactive:
            continue
        chosen.append(entry)
    if len(chosen) < count:
        raise SystemExit(f"{_patient(bundle)['id']}: needs {count} suitable active requests, has {len(chosen)}")
    return chosen[:count]


def _patient(bundle: JSON) -> JSON:
    return next(e["resource"] for e in bundle["entry"] if e["resource"]["resourceType"] == "Patient")


def _move_drug(bundle: JSON, name: str, form: str) -> list[str]:
    """Move the drug into a Medication: a bundle entry (``urn`` or ``relative`` ref) or contained."""
    (entry,) = _targets(bundle)
    request = entry["resource"]
    concept = request.pop("medicationCodeableConcept")
    if form == "contained":
        request["contained"] = [{"resourceType": "Medication", "id": "med0", "code": concept}]
        request["medicationReference"] = {"reference": "#med0"}
        return [request["id"]]
    mid = _new_id(name, request["id"])
    medication = {"fullUrl": f"urn:uuid:{mid}", "resource": {"resourceType": "Medication", "id": mid, "code": concept}}
    bundle["entry"].insert(bundle["entry"].index(entry), medication)
    request["medicationReference"] = {"reference": f"urn:uuid:{mid}" if form == "urn" else f"Medication/{mid}"}
    return [request["id"]]


def _set(field: str, value: Any) -> Callable[[JSON, str], list[str]]:
    def apply(bundle: JSON, name: str) -> list[str]:
        (entry,) = _targets(bundle)
        entry["resource"][field] = value
        return [entry["resource"]["id"]]
    return apply


def _ndc_first(bundle: JSON, name: str) -> list[str]:
    (entry,) = _targets(bundle)
    coding = {"system": NDC, "code": "00000-0000-00", "display": "SYNTHETIC NDC placeholder (not a real product)"}
    entry["resource"]["medicationCodeableConcept"]["coding"].insert(0, coding)
    return [entry["resource"]["id"]]


def _rxnorm_oid(bundle: JSON, name: str) -> list[str]:
    (entry,) = _targets(bundle)
    for coding in entry["resource"]["medicationCodeableConcept"]["coding"]:
        coding["system"] = RXNORM_OID
    return [entry["resource"]["id"]]


def _branded_and_generic(bundle: JSON, name: str) -> list[str]:
    """Add the generic coding after the branded one on the first active branded request."""
    for entry in _requests(bundle):
        if entry["resource"]["status"] != "active":
            continue
        codings = entry["resource"].get("medicationCodeableConcept", {}).get("coding", [{}])
        if codings[0].get("code") in BRANDED_GENERIC:
            code, display = BRANDED_GENERIC[codings[0]["code"]]
            codings.append({"system": codings[0]["system"], "code": code, "display": display})
            return [entry["resource"]["id"]]
    raise SystemExit(f"variant {name}: no active request with a branded code of {sorted(BRANDED_GENERIC)}")


def _subject_relative(bundle: JSON, name: str) -> list[str]:
    pid = _patient(bundle)["id"]
    changed = []
    for entry in _requests(bundle):
        if entry["resource"]["status"] == "active":
            entry["resource"]["subject"] = {"reference": f"Patient/{pid}"}
            changed.append(entry["resource"]["id"])
    return changed


def _subject_other_server(bundle: JSON, name: str) -> list[str]:
    pid = _patient(bundle)["id"]
    return _set("subject", {"reference": f"https://example.org/fhir/Patient/{pid}"})(bundle, name)


NEW_DOSE = [{
    "sequence": 1, "timing": {"repeat": {"frequency": 1, "period": 1.0, "periodUnit": "d"}},
    "asNeededBoolean": False,
    "doseAndRate": [{"type": {"coding": [{"system": "http://terminology.hl7.org/CodeSystem/dose-rate-type",
                                          "code": "ordered", "display": "Ordered"}]},
                     "doseQuantity": {"value": 2.0}}],
}]
"""The refill's new dosage: two units once a day, in the shape Synthea's 2025 bundles write."""


def _refill(bundle: JSON, name: str, recase: bool = False, new_dose: bool = False) -> list[str]:
    """Insert a second active request for the same drug right after the first (a refill).

    With ``new_dose`` the refill is authored a day later and doubles the dose (``NEW_DOSE``): the
    extraction truth is unchanged (one drug), and the reconcile task's rule "the latest authoredOn
    gives the dosage" decides a packaged case.
    """
    (entry,) = _targets(bundle)
    refill = copy.deepcopy(entry)
    rid = _new_id(name, entry["resource"]["id"])
    refill["fullUrl"] = f"urn:uuid:{rid}"
    refill["resource"]["id"] = rid
    if recase:  # the other Synthea generation's spelling: first letter's case swapped
        for coding in refill["resource"]["medicationCodeableConcept"]["coding"]:
            coding["display"] = coding["display"][0].swapcase() + coding["display"][1:]
    if new_dose:
        authored = datetime.fromisoformat(refill["resource"]["authoredOn"]) + timedelta(days=1)
        refill["resource"]["authoredOn"] = authored.isoformat()
        refill["resource"]["dosageInstruction"] = copy.deepcopy(NEW_DOSE)
    bundle["entry"].insert(bundle["entry"].index(entry) + 1, refill)
    return [entry["resource"]["id"], rid]


def _display_not_borrowed(bundle: JSON, name: str) -> list[str]:
    (entry,) = _targets(bundle, also_inactive=True)
    concept = entry["resource"]["medicationCodeableConcept"]
    concept.pop("text", None)
    for coding in concept["coding"]:
        coding.pop("display", None)
    return [entry["resource"]["id"]]


def _text_only(bundle: JSON, name: str) -> list[str]:
    (entry,) = _targets(bundle)
    concept = entry["resource"]["medicationCodeableConcept"]
    entry["resource"]["medicationCodeableConcept"] = {"text": concept.get("text") or concept["coding"][0]["display"]}
    return [entry["resource"]["id"]]


def _dangling(bundle: JSON, name: str) -> list[str]:
    (entry,) = _targets(bundle)
    request = entry["resource"]
    del request["medicationCodeableConcept"]
    request["medicationReference"] = {"reference": f"Medication/{_new_id(name, request['id'])}"}
    return [request["id"]]


def _order_family(bundle: JSON, name: str) -> list[str]:
    intents = ("original-order", "reflex-order", "filler-order", "instance-order")
    entries = _targets(bundle, len(intents))
    for entry, intent in zip(entries, intents, strict=True):
        entry["resource"]["intent"] = intent
    return [e["resource"]["id"] for e in entries]


@dataclass(frozen=True)
class Variant:
    """One named transformation of one real patient."""

    name: str
    source: str  # file-name prefix of the raw Synthea bundle
    apply: Callable[[JSON, str], list[str]]
    effect: str  # expected change of the truth (see the module docstring)
    rule: str  # the documented (docs/tasks/extraction.md) medication-list rule it exercises


VARIANTS: tuple[Variant, ...] = (
    Variant("medref-urn-uuid", "Max_Kris", lambda b, n: _move_drug(b, n, "urn"), "same",
            "medicationReference to a bundled Medication by urn:uuid fullUrl"),
    Variant("medref-relative", "Moises22", lambda b, n: _move_drug(b, n, "relative"), "same",
            "medicationReference to a bundled Medication by Medication/<id>"),
    Variant("medref-contained", "Trey_Berge", lambda b, n: _move_drug(b, n, "contained"), "same",
            "medicationReference to a contained Medication (#id)"),
    Variant("ndc-first", "Janene3", _ndc_first, "same", "RxNorm picked by system: an NDC coding listed first"),
    Variant("rxnorm-oid", "Sandee884", _rxnorm_oid, "same", "RxNorm given by its OID system"),
    Variant("branded-and-generic", "Ellena683", _branded_and_generic, "two-codes",
            "branded and generic RxNorm codings of one concept are one drug"),
    Variant("subject-relative", "Beatrice", _subject_relative, "same", "subject Patient/<id>"),
    Variant("subject-other-server", "Stephen_McLaughlin", _subject_other_server, "drops",
            "an absolute subject URL that is not the Patient's fullUrl names someone else"),
    Variant("duplicate-refill", "Delores12", lambda b, n: _refill(b, n, new_dose=True), "same",
            "duplicate active refills collapse into one (the refill, a day later, doubles the dose)"),
    Variant("display-two-spellings", "Bobbie849", lambda b, n: _refill(b, n, recase=True), "two-displays",
            "one RxCUI with two displays on active requests: either is accepted"),
    Variant("display-not-borrowed", "Demarcus108", _display_not_borrowed, "display-unchecked",
            "a display is never borrowed from another (inactive) request"),
    *(Variant(f"status-{s}", src, _set("status", s), "drops", f"status {s} is not active")
      for s, src in (("on-hold", "Ellena683"), ("draft", "Jacquelyn628"), ("entered-in-error", "Emory494"),
                     ("unknown", "Sandee884"), ("cancelled", "Tama137"))),
    Variant("do-not-perform", "Travis723", _set("doNotPerform", True), "drops",
            "doNotPerform: true is a prohibition, not a prescription"),
    *(Variant(f"intent-{i}", src, _set("intent", i), "drops", f"intent {i} is not an order")
      for i, src in (("proposal", "Max_Kris"), ("plan", "Jayson808"), ("option", "Trey_Berge"))),
    Variant("intent-order-family", "Maximina916", _order_family, "same",
            "original-order, reflex-order, filler-order and instance-order are orders"),
    Variant("text-only", "Moises22", _text_only, "uncoded", "a drug with only text is uncoded (rxnorm_code null)"),
    Variant("dangling-reference", "Janene3", _dangling, "unresolved",
            "a medicationReference that does not resolve is unresolved and not scored"),
)


def _summary(meds: list[Any]) -> JSON:
    return {
        "active_medications": len(meds),
        "coded": sorted(c for m in meds for c in m["codes"]),
        "uncoded": sum(m["kind"] == "uncoded" for m in meds),
        "unresolved": sum(m["kind"] == "unresolved" for m in meds),
    }


def _verify(variant: Variant, before: list[Any], after: list[Any], changed: list[str]) -> None:
    """Stop the build when the truth does not change the way the variant declares."""
    b, a = _summary(before), _summary(after)
    codes = {c for m in before if set(m["requests"]) & set(changed) for c in m["codes"]}
    ok = {
        "same": a == b,
        "drops": a["active_medications"] == b["active_medications"] - 1 and not codes & set(a["coded"]),
        "uncoded": a["uncoded"] == b["uncoded"] + 1 and not codes & set(a["coded"]),
        "unresolved": a["unresolved"] == b["unresolved"] + 1 and not codes & set(a["coded"]),
        "display-unchecked": a == b and any(not m["displays"][c] for m in after for c in m["codes"] if c in codes),
        "two-codes": a["active_medications"] == b["active_medications"]
        and any(len(m["codes"]) == 2 for m in after if set(m["requests"]) & set(changed)),
        "two-displays": a == b and any(len(m["displays"][c]) == 2 for m in after for c in m["codes"] if c in codes),
    }[variant.effect]
    if not ok:
        raise SystemExit(f"variant {variant.name}: truth does not show effect {variant.effect!r}: {b} -> {a}")


def build(source: Path) -> dict[str, bytes]:
    """Return file name -> bytes for every variant and the manifest."""
    raws = {p.name: (p, raw, bundle) for p, raw, bundle in read_bundles(sorted(source.glob("*.json")))}
    outputs: dict[str, bytes] = {}
    rows = []
    for variant in VARIANTS:
        matches = [n for n in raws if n.startswith(variant.source + "_")]
        if len(matches) != 1:
            raise SystemExit(f"variant {variant.name}: no single source {variant.source}_*.json in {source}")
        path, raw, bundle = raws[matches[0]]
        base = trim(bundle)
        changed = copy.deepcopy(base)
        ids = variant.apply(changed, variant.name)
        before, after = active_medications(base, path.name), active_medications(changed, variant.name)
        _verify(variant, before, after, ids)
        name = f"variant-{variant.name}--{case_id_from_stem(path.stem)}.json"
        data = render(changed)
        outputs[name] = data
        rows.append({
            "fixture": name,
            "case_id": case_id_from_stem(Path(name).stem),
            "transformation": variant.name,
            "rule": variant.rule,
            "effect": variant.effect,
            "requests": ids,
            "source": path.name,
            "source_sha256": sha256(raw),
            "fixture_sha256": sha256(data),
            "fixture_bytes": len(data),
            "truth_before": _summary(before),
            "truth_after": _summary(after),
        })
    manifest = {"generator": "scripts/make_variants.py", "variants": rows}
    outputs[MANIFEST] = (json.dumps(manifest, indent=2) + "\n").encode("utf-8")
    return outputs


def main(argv: list[str] | None = None) -> int:
    """Write (or, with --check, verify) the variant cases; returns the exit status."""
    return fixture_files.main(
        argv, doc=__doc__, default_source=DEFAULT_SOURCE, default_out=DEFAULT_OUT, build=build,
        pattern="variant-*.json", what=lambda n: f"{n} variant cases and {MANIFEST}",
        against=(f" (the transformations of {len({v.source for v in VARIANTS})} source bundles: bytes, and each "
                 "variant's declared effect on the truth)"),
    )


if __name__ == "__main__":
    raise SystemExit(main())
