"""Derive the site's RxNorm catalog from raw Synthea bundles.

Usage::

    uv run python scripts/make_terminology.py [--source DIR] [--out DIR] [--check]

Reads every ``*.json`` Bundle in ``--source`` (default ``../shared/data/synthea``) and writes
``rxnorm_catalog.json`` to ``--out`` (default ``fixtures/terminology``). ``--check`` writes
nothing and exits 1 if the committed file differs from what the sources produce.

What goes in: every RxNorm coding (system ``http://www.nlm.nih.gov/research/umls/rxnorm``) of a
drug the site has handled: ``MedicationRequest.medicationCodeableConcept``, ``Medication.code`` and
``MedicationAdministration.medicationCodeableConcept``. Claim/ExplanationOfBenefit codings repeat
those. ``AllergyIntolerance.code`` RxNorm codings are listed under ``excluded``: they name an
allergen substance ("Aspirin"), not a product a MedicationStatement should carry.

Each entry holds the display (the spelling used by most bundles; ties go to the first in sort
order; other spellings are kept in ``aliases``) and its parse by
``groundeval.terminology.parse_display``: ingredients with strength and unit, dose form, release
modifier, brand. ``route`` (from the dose form), ``resource_types`` and ``bundles`` (how many
bundles use the code) are for readers; ``Catalog.load`` ignores them. The top level names the
``source`` and a ``snapshot_date``: the latest ``MedicationRequest.authoredOn`` date in the
sources (the catalog reflects prescribing up to that day; derived from the data, so the output
stays deterministic).

Output is deterministic: entries sorted by display (case-insensitive) then RxCUI, two-space JSON
indentation, UTF-8, final newline, no timestamps.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

from groundeval.datasets import read_bundles
from groundeval.fhir.bundle import RXNORM_SYSTEM, is_rxnorm
from groundeval.terminology import CATALOG_FILE, parse_display

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_SOURCE = ROOT.parent / "shared" / "data" / "synthea"
DEFAULT_OUT = ROOT / "fixtures" / "terminology"
FIELDS = {
    "MedicationRequest": "medicationCodeableConcept",
    "Medication": "code",
    "MedicationAdministration": "medicationCodeableConcept",
}
EXCLUDED_FIELDS = {"AllergyIntolerance": "code"}


def codings(resource: dict[str, Any], field: str) -> list[tuple[str, str]]:
    concept = resource.get(field) or {}
    return [
        (str(c["code"]).strip(), " ".join(str(c.get("display") or "").split()))
        for c in concept.get("coding") or []
        if is_rxnorm(c.get("system")) and c.get("code")
    ]


def collect(files: list[Path]) -> tuple[dict[str, Any], dict[str, Any], list[dict[str, str]]]:
    displays: dict[str, Counter[str]] = defaultdict(Counter)
    types: dict[str, set[str]] = defaultdict(set)
    bundles: dict[str, set[str]] = defaultdict(set)
    allergens: dict[str, str] = {}
    sources = []
    latest = ""
    for path, raw, bundle in read_bundles(files):
        sources.append({"file": path.name, "sha256": hashlib.sha256(raw).hexdigest()})
        seen: set[tuple[str, str]] = set()
        for entry in bundle.get("entry") or []:
            resource = entry.get("resource") or {}
            rtype = resource.get("resourceType")
            if rtype == "MedicationRequest" and isinstance(resource.get("authoredOn"), str):
                latest = max(latest, resource["authoredOn"][:10])
            if rtype in FIELDS:
                for code, display in codings(resource, FIELDS[rtype]):
                    types[code].add(rtype)
                    bundles[code].add(path.name)
                    if display and (code, display) not in seen:
                        seen.add((code, display))
                        displays[code][display] += 1
            elif rtype in EXCLUDED_FIELDS:
                for code, display in codings(resource, EXCLUDED_FIELDS[rtype]):
                    allergens.setdefault(code, display)
    excluded = [
        {"rxcui": code, "display": display, "reason": "only in AllergyIntolerance.code (allergen)"}
        for code, display in sorted(allergens.items())
        if code not in types
    ]
    found = {"displays": displays, "types": types, "bundles": bundles}
    return found, {"sources": sources, "snapshot_date": latest or None}, excluded


def entry_json(code: str, names: Counter[str], types: set[str], n_bundles: int) -> dict[str, Any]:
    ranked = sorted(names.items(), key=lambda kv: (-kv[1], kv[0]))
    display = ranked[0][0]
    parsed = parse_display(display, code)
    return {
        "rxcui": code,
        "display": display,
        "aliases": sorted(name for name, _ in ranked[1:]),
        "ingredients": [
            {"name": i.name, "strength": i.strength, "unit": i.unit} for i in parsed.ingredients
        ],
        "dose_form": parsed.dose_form,
        "release": parsed.release,
        "brand": parsed.brand,
        "quantity": parsed.quantity,
        "qualifier": parsed.qualifier,
        "route": parsed.route,
        "resource_types": sorted(types),
        "bundles": n_bundles,
    }


def build(source: Path) -> bytes:
    files = sorted(source.glob("*.json"))
    if not files:
        if not source.is_dir():
            raise SystemExit(f"--source {source}: the directory does not exist; give the raw Synthea bundles")
        raise SystemExit(f"no *.json bundles in {source}; pass --source DIR")
    found, meta, excluded = collect(files)
    entries = [
        entry_json(code, found["displays"][code], found["types"][code], len(found["bundles"][code]))
        for code in found["displays"]
    ]
    entries.sort(key=lambda e: (e["display"].lower(), int(e["rxcui"])))
    catalog = {
        "generator": "scripts/make_terminology.py",
        "system": RXNORM_SYSTEM,
        "description": "RxNorm concepts used by the site's Synthea records, parsed from displays.",
        "source": f"Synthea synthetic patient bundles ({len(meta['sources'])} files, listed in 'sources')",
        "snapshot_date": meta["snapshot_date"],
        "resource_types": sorted(FIELDS),
        "sources": meta["sources"],
        "excluded": excluded,
        "entries": entries,
    }
    return (json.dumps(catalog, indent=2, ensure_ascii=False) + "\n").encode("utf-8")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--source", type=Path, default=DEFAULT_SOURCE, help="raw Synthea bundles")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="output directory")
    parser.add_argument("--check", action="store_true", help="verify the committed file only")
    args = parser.parse_args(argv)
    data = build(args.source)
    target = args.out / CATALOG_FILE
    if args.check:
        if not target.is_file() or target.read_bytes() != data:
            print(f"stale or missing: {target}; run scripts/make_terminology.py", file=sys.stderr)
            return 1
        return 0
    args.out.mkdir(parents=True, exist_ok=True)
    target.write_bytes(data)
    print(f"wrote {len(json.loads(data)['entries'])} entries to {target}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
