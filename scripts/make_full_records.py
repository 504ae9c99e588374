"""Derive the full-size record cases (``fixtures/full-records/``) from raw Synthea bundles.

Usage::

    uv run python scripts/make_full_records.py [--source DIR] [--out DIR] [--check]

Copies a few whole Synthea records (``RECORDS``) from ``--source`` (default
``../shared/data/synthea``) to ``--out`` (default ``fixtures/full-records``), untrimmed: every entry
and every resource as the source holds it (Encounters, Claims, ExplanationOfBenefits, Observations,
Procedures and the rest), written as compact JSON (no indentation, UTF-8, a final newline) to keep
the repository small. They are extraction cases: the task's truth (``clinical.medication_list.active_medications``)
is derived from the same resources the FHIR server serves, so a whole record is scored exactly as
a trimmed one is.

A whole record is 20,000 to 700,000 tokens of FHIR JSON (chars / 4): an agent can only read it by
querying. These cases run only with ``--groundeval-fhir`` (``MANIFEST.json`` says
``"record_access": "fhir"``; the extraction task marks its cases and the plugin skips them in file
mode with the reason).

Which records: seven of the 25, with active medications, chosen to span sizes and shapes while the
whole set stays near 2.5 MB: the smallest records with medications and up to a record past a
200,000-token context (Tama137: 11 MedicationRequests of which 2 active). ``MANIFEST.json`` lists per
record its source and SHA-256s, bytes, the record's token estimate (compact JSON characters / 4),
the active medications of the truth, and its resource counts.

``--check`` writes nothing: it rebuilds everything in memory, compares byte for byte with the
committed files, lists stray files, and exits 1 on any difference.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from pathlib import Path
from typing import Any

import fixture_files

from groundeval.clinical.medication_list import active_medications
from groundeval.datasets import read_bundles

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_SOURCE = ROOT.parent / "shared" / "data" / "synthea"
DEFAULT_OUT = ROOT / "fixtures" / "full-records"

RECORDS: tuple[str, ...] = (
    "Stephen_McLaughlin_7735ab79-6ac8-4b81-9936-f7ddabd18751.json",
    "Garrett_Thompson_5a72e290-8102-4c8a-84f7-f838387508b2.json",
    "Beatrice_Aufderhar_5451401c-ab1b-4adc-9df6-c02e856e492a.json",
    "Trey_Berge_99153850-84f1-4de6-9e19-3e0d6eeedeb2.json",
    "Max_Kris_f9120576-f949-45de-ae43-c0d902ecb249.json",
    "Sandee884_Lesch175_ad655588-9deb-d164-ea1e-29243f2de17d.json",
    "Tama137_Schamberger479_9311ccc6-c1d0-ccae-d783-09d5d41709d4.json",
)
"""The source file names copied, in manifest order (smallest first)."""

CHARS_PER_TOKEN = 4
"""The token estimate's divisor (STACK.md: raw Synthea bundles measured as compact JSON, chars / 4)."""


def render(bundle: dict[str, Any]) -> bytes:
    """The record as compact JSON, UTF-8, with a final newline (key and entry order kept)."""
    return (json.dumps(bundle, separators=(",", ":"), ensure_ascii=False) + "\n").encode("utf-8")


def build(source: Path) -> dict[str, bytes]:
    """``{file name: bytes}`` of every record in ``RECORDS`` and ``MANIFEST.json``.

    Raises:
        SystemExit: A record of ``RECORDS`` is missing from ``source``, or its truth has no active medication.
    """
    files = [source / name for name in RECORDS]
    missing = [f.name for f in files if not f.is_file()]
    if missing:
        raise SystemExit(f"--source {source}: missing {', '.join(missing)}; give the raw Synthea bundles")
    outputs: dict[str, bytes] = {}
    rows = []
    for path, raw, bundle in read_bundles(files):
        data = render(bundle)
        truth = active_medications(json.loads(data), path.name)
        if not truth:
            raise SystemExit(f"{path.name}: no active medication; a full-record case must have some to find")
        outputs[path.name] = data
        counts = Counter(e["resource"]["resourceType"] for e in bundle.get("entry", []))
        rows.append({
            "fixture": path.name,
            "source": path.name,
            "source_sha256": hashlib.sha256(raw).hexdigest(),
            "fixture_sha256": hashlib.sha256(data).hexdigest(),
            "source_bytes": len(raw),
            "fixture_bytes": len(data),
            "record_tokens_estimate": (len(data.decode("utf-8")) - 1) // CHARS_PER_TOKEN,
            "active_medications": len(truth),
            "entries": sum(counts.values()),
            "resource_counts": dict(sorted(counts.items())),
        })
    manifest = {
        "generator": "scripts/make_full_records.py",
        "record_access": "fhir",
        "why": "whole Synthea records (20k-700k tokens): run only with --groundeval-fhir, where the agent queries "
               "the record; in file mode each case is skipped",
        "token_estimate": f"compact JSON characters / {CHARS_PER_TOKEN}",
        "fixtures": rows,
    }
    outputs["MANIFEST.json"] = (json.dumps(manifest, indent=2) + "\n").encode("utf-8")
    return outputs


def main(argv: list[str] | None = None) -> int:
    """Write or check ``fixtures/full-records`` (see the module docstring)."""
    return fixture_files.main(
        argv, doc=__doc__, default_source=DEFAULT_SOURCE, default_out=DEFAULT_OUT, build=build, pattern="*.json",
        what=lambda n: f"{n} whole records and MANIFEST.json",
    )


if __name__ == "__main__":
    raise SystemExit(main())
