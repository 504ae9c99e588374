"""Derive the extraction fixtures from raw Synthea bundles.

Usage::

    uv run python scripts/make_fixtures.py [--source DIR] [--out DIR] [--check]

Reads every ``*.json`` Bundle in ``--source`` (default ``../shared/data/synthea``) and writes a
trimmed copy with the same file name to ``--out`` (default ``fixtures/extraction``), plus
``MANIFEST.json``. ``--check`` rewrites nothing, prints what it compared, and exits 1 if any
committed fixture differs from what the sources produce. The variant cases beside them are made
by ``scripts/make_variants.py`` from the same sources.

What is kept, and why: only the entries the extraction task needs, each resource unchanged.

* ``Patient``: the subject every request must reference, the name used for the case id, and
  ``deceasedDateTime`` (deceased patients keep active requests in Synthea; the task asks what is
  active in the record, not what is plausible).
* ``MedicationRequest``: every one, whatever its status, so the agent must filter on
  ``status`` (stopped/completed requests for the same RxCUI as an active one stay in).
* ``Medication``: targets of ``medicationReference``; without them those requests name no drug.

Encounters, Conditions, Observations and the rest are dropped: the task does not ask about them,
and they are 80-95% of a bundle's bytes (prompt tokens). References into them (``encounter``,
``reasonReference``, ``requester``) are left dangling on purpose, as in many real extracts.

Output is deterministic: entries keep their source order, keys their source order, and the JSON
is written with one-space indentation, UTF-8, and a final newline.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import sys
from pathlib import Path
from typing import Any

from groundeval.clinical.medication_list import active_medications
from groundeval.datasets import read_bundles

KEEP = ("Patient", "MedicationRequest", "Medication")
ROOT = Path(__file__).resolve().parents[1]
DEFAULT_SOURCE = ROOT.parent / "shared" / "data" / "synthea"
DEFAULT_OUT = ROOT / "fixtures" / "extraction"
VERSION_RE = re.compile(r"Version identifier: ([\w.\-]*\w)")


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def trim(bundle: dict[str, Any]) -> dict[str, Any]:
    """Return a copy of the Bundle keeping only the entries whose resource type is in KEEP."""
    out = dict(bundle)
    out["entry"] = [e for e in bundle.get("entry", []) if e.get("resource", {}).get("resourceType") in KEEP]
    return out


def render(bundle: dict[str, Any]) -> bytes:
    return (json.dumps(bundle, indent=1, ensure_ascii=False) + "\n").encode("utf-8")


def synthea_version(bundle: dict[str, Any]) -> str | None:
    for entry in bundle.get("entry", []):
        resource = entry.get("resource", {})
        if resource.get("resourceType") == "Patient":
            match = VERSION_RE.search(resource.get("text", {}).get("div", ""))
            return match.group(1) if match else None
    return None


def build(source: Path) -> tuple[dict[str, bytes], dict[str, Any]]:
    files = sorted(p for p in source.glob("*.json"))
    if not files:
        if not source.is_dir():
            raise SystemExit(f"--source {source}: the directory does not exist; give the raw Synthea bundles")
        raise SystemExit(f"no *.json bundles in {source}; pass --source DIR")
    outputs: dict[str, bytes] = {}
    rows = []
    for path, raw, bundle in read_bundles(files):
        data = render(trim(bundle))
        outputs[path.name] = data
        truth = active_medications(json.loads(data), path.name)
        patient = next(e["resource"] for e in bundle["entry"] if e["resource"]["resourceType"] == "Patient")
        rows.append({
            "fixture": path.name,
            "source": path.name,
            "source_sha256": sha256(raw),
            "fixture_sha256": sha256(data),
            "source_bytes": len(raw),
            "fixture_bytes": len(data),
            "active_medications": len(truth),
            "synthea_version": synthea_version(bundle),
            "deceased": "deceasedDateTime" in patient,
        })
    manifest = {
        "generator": "scripts/make_fixtures.py",
        "kept_resource_types": list(KEEP),
        "fixtures": rows,
    }
    outputs["MANIFEST.json"] = (json.dumps(manifest, indent=2) + "\n").encode("utf-8")
    return outputs, manifest


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--source", type=Path, default=DEFAULT_SOURCE, help="directory of raw Synthea bundles")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="directory for trimmed fixtures")
    parser.add_argument("--check", action="store_true", help="verify the committed fixtures, write nothing")
    args = parser.parse_args(argv)
    outputs, manifest = build(args.source)
    if args.check:
        stale = [n for n, d in outputs.items() if not (args.out / n).is_file() or (args.out / n).read_bytes() != d]
        for name in stale:
            print(f"stale or missing: {args.out / name}", file=sys.stderr)
        print(
            f"checked {len(outputs) - 1} fixtures and MANIFEST.json in {args.out} byte for byte against "
            f"the bundles in {args.source}: " + (f"{len(stale)} stale or missing" if stale else "all current")
        )
        return 1 if stale else 0
    args.out.mkdir(parents=True, exist_ok=True)
    for name, data in outputs.items():
        (args.out / name).write_bytes(data)
    before = sum(r["source_bytes"] for r in manifest["fixtures"])
    after = sum(r["fixture_bytes"] for r in manifest["fixtures"])
    print(f"wrote {len(manifest['fixtures'])} fixtures to {args.out}: {before:,} -> {after:,} bytes")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
