"""Truth-derivation throughput against ``json.loads`` of the same bytes.

Usage::

    uv run python bench/truth.py [--source DIR] [--copies N] [--active K] [--repeats R]

Measures, per raw Synthea bundle in ``--source`` (default ``../shared/data/synthea``), the CPU time
(``time.process_time``) and wall time of ``json.loads`` and of the extraction truth
(``medication_list.medication_truth``: the active list and the excluded RxCUIs, what
``ExtractionTask.truth`` computes) on the parsed
dict. Runs are interleaved (parse, truth, parse, truth, ... per file and repeat) so machine load
hits both alike; the best of ``--repeats`` per file is kept. Prints MB/s of each and the
truth/parse ratio (target: within 1.5x of the parse).

``--copies N`` simulates a population: the source bundles repeated N times (each copy with fresh
ids, so nothing is cached). ``--active K`` adds one synthetic patient with K distinct active
requests, the case where the old quadratic collapse took 81 s at K = 10,000.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from groundeval.clinical.medication_list import medication_truth

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_SOURCE = ROOT.parent / "shared" / "data" / "synthea"


def _copy(raw: bytes, n: int) -> bytes:
    """Copy ``n`` of a bundle: every ``urn:uuid:`` fullUrl and reference renamed alike (fresh bytes)."""
    return raw if n == 0 else raw.replace(b"urn:uuid:", f"urn:uuid:c{n}-".encode())


def _big(active: int) -> bytes:
    pid = "00000000-0000-4000-8000-000000000001"
    entries: list[dict[str, Any]] = [{"fullUrl": f"urn:uuid:{pid}", "resource": {"resourceType": "Patient", "id": pid}}]
    entries += [{"fullUrl": f"urn:uuid:r{i}", "resource": {
        "resourceType": "MedicationRequest", "id": f"r{i}", "status": "active", "intent": "order",
        "subject": {"reference": f"urn:uuid:{pid}"},
        "medicationCodeableConcept": {"coding": [{"system": "http://www.nlm.nih.gov/research/umls/rxnorm",
                                                  "code": str(100000 + i), "display": f"drug {i}"}]}}}
        for i in range(active)]
    return json.dumps({"resourceType": "Bundle", "type": "collection", "entry": entries}).encode()


def _timed(fn: Callable[[], object]) -> tuple[float, float]:
    cpu, wall = time.process_time(), time.perf_counter()
    fn()
    return time.process_time() - cpu, time.perf_counter() - wall


def _truth(bundle: dict[str, Any]) -> None:
    medication_truth(bundle, "bench")


def measure(blobs: list[bytes], repeats: int) -> dict[str, float]:
    """Best-of-``repeats`` CPU and wall seconds of parse and truth, summed over ``blobs``."""
    keys = ("parse_cpu", "parse_wall", "truth_cpu", "truth_wall")
    best = {k: [float("inf")] * len(blobs) for k in keys}
    for _ in range(repeats):
        for i, blob in enumerate(blobs):
            text = blob.decode("utf-8")
            bundle: dict[str, Any] = {}

            def parse(text: str = text, into: dict[str, Any] = bundle) -> None:
                into.update(json.loads(text))

            def truth(bundle: dict[str, Any] = bundle) -> None:
                _truth(bundle)

            for key, fn in (("parse", parse), ("truth", truth)):
                cpu, wall = _timed(fn)
                best[f"{key}_cpu"][i] = min(best[f"{key}_cpu"][i], cpu)
                best[f"{key}_wall"][i] = min(best[f"{key}_wall"][i], wall)
    return {k: sum(v) for k, v in best.items()}


def report(label: str, blobs: list[bytes], repeats: int) -> float:
    """Print one line of figures for ``blobs``; return truth CPU / parse CPU."""
    mb = sum(len(b) for b in blobs) / 1e6
    t = measure(blobs, repeats)
    ratio = t["truth_cpu"] / max(t["parse_cpu"], 1e-9)
    print(
        f"{label}: {len(blobs)} bundles, {mb:.1f} MB | json.loads {mb / max(t['parse_cpu'], 1e-9):.1f} MB/s CPU "
        f"({t['parse_cpu']:.3f} s CPU, {t['parse_wall']:.3f} s wall) | truth {mb / max(t['truth_cpu'], 1e-9):.1f} MB/s "
        f"CPU ({t['truth_cpu']:.3f} s CPU, {t['truth_wall']:.3f} s wall) | truth/parse {ratio:.2f}x "
        + ("(within 1.5x)" if ratio <= 1.5 else "(ABOVE the 1.5x target)")
    )
    return ratio


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark; exit status 0 (it reports, it does not judge)."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--source", type=Path, default=DEFAULT_SOURCE, help="directory of raw Synthea bundles")
    parser.add_argument("--copies", type=int, default=0, help="also time a population of N copies of the sources")
    parser.add_argument("--active", type=int, default=0, help="also time one bundle with K active requests")
    parser.add_argument("--repeats", type=int, default=3, help="interleaved runs per file; the best is kept")
    args = parser.parse_args(argv)
    raws = [p.read_bytes() for p in sorted(args.source.glob("*.json"))]
    raws = [r for r in raws if json.loads(r).get("resourceType") == "Bundle"]
    if not raws:
        print(f"no raw Synthea bundles in {args.source}; pass --source DIR", file=sys.stderr)
        return 2
    report("synthea", raws, args.repeats)
    if args.copies:
        report(f"population x{args.copies}", [_copy(r, n) for n in range(args.copies) for r in raws], args.repeats)
    if args.active:
        report(f"one bundle, {args.active:,} active requests", [_big(args.active)], args.repeats)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
