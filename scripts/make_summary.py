"""Derive the summary task's cases from raw Synthea bundles: one trimmed record per patient.

Usage::

    uv run python scripts/make_summary.py [--source DIR] [--out DIR] [--check]

Reads every ``*.json`` Bundle in ``--source`` (default ``../shared/data/synthea``) and writes to
``--out`` (default ``fixtures/summary``):

* ``<same file name>``: the resources a clinician's handoff summary draws on, each unchanged, in
  source order: the Patient, every Condition, AllergyIntolerance, MedicationRequest and Immunization,
  every Medication a MedicationRequest references, and for each LOINC code the latest ``final``
  Observation (by ``effectiveDateTime`` as written, then position in the Bundle). Everything else
  (Encounters, Claims, Procedures, DiagnosticReports, older results) is dropped: it would only make
  the prompt longer. Patients whose record holds nothing a rubric asks for are kept: their summary
  is scored on what it must not state.
  A SNOMED CT Condition whose display has no semantic tag must have one in
  ``groundeval.tasks.summary.record.FSN_TAGS`` (the build stops and names the code otherwise).
* ``MANIFEST.json``: per file, its source, both SHA-256s, resource counts and the rubric's
  criterion counts by type (``groundeval.tasks.summary.truth``), so a change to a rule shows in
  the diff.

``--check`` writes nothing: it rebuilds everything in memory, compares byte for byte with the
committed files, lists stray files, and exits 1 on any difference. JSON is written with
one-space indentation, UTF-8, and a final newline.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from pathlib import Path
from typing import Any

import fixture_files

from groundeval.clinical.lab_thresholds import default_thresholds
from groundeval.datasets import read_bundles
from groundeval.tasks.summary.record import conditions
from groundeval.tasks.summary.truth import summary_rubric

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_SOURCE = ROOT.parent / "shared" / "data" / "synthea"
DEFAULT_OUT = ROOT / "fixtures" / "summary"
MANIFEST = "MANIFEST.json"
KEPT = ("Patient", "Condition", "AllergyIntolerance", "MedicationRequest", "Immunization")
LOINC = "http://loinc.org"
JSON = dict[str, Any]


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def render(value: JSON) -> bytes:
    return (json.dumps(value, indent=1, ensure_ascii=False) + "\n").encode("utf-8")


def _loinc(resource: JSON) -> str | None:
    for coding in (resource.get("code") or {}).get("coding") or []:
        if coding.get("system") == LOINC and coding.get("code"):
            return str(coding["code"])
    return None


def trim(bundle: JSON) -> JSON:
    """A copy of the Bundle with the summary's resources (see the module docstring), in source order."""
    entries = bundle.get("entry") or []
    latest: dict[str, tuple[str, int]] = {}
    for i, entry in enumerate(entries):
        res = entry.get("resource") or {}
        code = _loinc(res) if res.get("resourceType") == "Observation" and res.get("status") == "final" else None
        if code is None:
            continue
        when = str(res.get("effectiveDateTime") or "")
        if code not in latest or when >= latest[code][0]:
            latest[code] = (when, i)
    keep_obs = {i for _, i in latest.values()}
    refs = {
        str((e.get("resource") or {}).get("medicationReference", {}).get("reference"))
        for e in entries if (e.get("resource") or {}).get("resourceType") == "MedicationRequest"
    }
    kept = []
    for i, entry in enumerate(entries):
        res = entry.get("resource") or {}
        kind = res.get("resourceType")
        referenced = entry.get("fullUrl") in refs or f"Medication/{res.get('id')}" in refs
        if kind in KEPT or i in keep_obs or (kind == "Medication" and referenced):
            kept.append(entry)
    out = {k: v for k, v in bundle.items() if k != "entry"}
    out["entry"] = kept
    return out


def build(source: Path) -> dict[str, bytes]:
    """File name -> bytes of every case file and the manifest."""
    table = default_thresholds()
    outputs: dict[str, bytes] = {}
    manifest: JSON = {"description": (__doc__ or "").splitlines()[0], "files": {}}
    for path, raw, bundle in read_bundles(sorted(source.glob("*.json"))):
        trimmed = trim(bundle)
        untagged = sorted({f"{p.code} {p.name!r}" for p in conditions(trimmed) if p.tag is None})
        if untagged:
            raise SystemExit(
                f"{path.name}: SNOMED CT concepts with no semantic tag in the display and none in "
                f"groundeval.tasks.summary.record.FSN_TAGS: {', '.join(untagged)}. Add each code's tag from its "
                "fully specified name in the SNOMED CT International Edition."
            )
        data = render(trimmed)
        outputs[path.name] = data
        rubric = summary_rubric(trimmed, table, path.name)
        manifest["files"][path.name] = {
            "source": path.name, "source_sha256": sha256(raw), "sha256": sha256(data),
            "resources": dict(sorted(Counter(e["resource"]["resourceType"] for e in trimmed["entry"]).items())),
            "criteria": dict(sorted(Counter(c["type"] for c in rubric["criteria"]).items())),
        }
    outputs[MANIFEST] = render(manifest)
    return outputs


def main(argv: list[str] | None = None) -> int:
    """Write (or, with --check, verify) the cases; returns the exit status."""
    return fixture_files.main(
        argv, doc=__doc__, default_source=DEFAULT_SOURCE, default_out=DEFAULT_OUT, build=build, pattern="*.json",
        what=lambda n: f"{n} case files and {MANIFEST}",
    )


if __name__ == "__main__":
    raise SystemExit(main())
