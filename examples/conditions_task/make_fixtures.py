"""Derive the conditions example's fixtures from raw Synthea bundles (deterministic).

Usage, from the repository root::

    uv run python examples/conditions_task/make_fixtures.py [--source DIR] [--check]

Reads every ``*.json`` Bundle in ``--source`` (default ``../shared/data/synthea``) and writes,
with the same file name, a Bundle of its ``Patient`` and ``Condition`` entries, unchanged and in
source order, to ``fixtures/`` next to this script, plus ``MANIFEST.json`` (source SHA-256 and
counts). Everything else (encounters, observations, medications) is dropped: the task does not
ask about it. ``--check`` writes nothing and exits 1 if a committed fixture differs.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from pathlib import Path
from typing import Any

KEEP = ("Patient", "Condition")
HERE = Path(__file__).resolve().parent
DEFAULT_SOURCE = HERE.parents[1].parent / "shared" / "data" / "synthea"


def render(data: Any) -> bytes:
    return (json.dumps(data, indent=1, ensure_ascii=False) + "\n").encode("utf-8")


def build(source: Path) -> dict[str, bytes]:
    outputs: dict[str, bytes] = {}
    rows = []
    for path in sorted(source.glob("*.json")):
        raw = path.read_bytes()
        bundle = json.loads(raw)
        if bundle.get("resourceType") != "Bundle":
            print(f"skipping {path.name}: not a Bundle", file=sys.stderr)
            continue
        entries = [e for e in bundle.get("entry", []) if e.get("resource", {}).get("resourceType") in KEEP]
        trimmed = {"resourceType": "Bundle", "type": bundle.get("type", "collection"), "entry": entries}
        outputs[path.name] = render(trimmed)
        conditions = [e["resource"] for e in entries if e["resource"]["resourceType"] == "Condition"]
        rows.append({"file": path.name, "source_sha256": hashlib.sha256(raw).hexdigest(),
                     "conditions": len(conditions)})
    if not outputs:
        raise SystemExit(f"no Bundles in {source}; pass --source DIR")
    outputs["MANIFEST.json"] = render({"source": "Synthea bundles (see ../shared/data/synthea/SOURCE.md)",
                                       "keep": list(KEEP), "files": rows})
    return outputs


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--source", type=Path, default=DEFAULT_SOURCE)
    parser.add_argument("--out", type=Path, default=HERE / "fixtures")
    parser.add_argument("--check", action="store_true")
    args = parser.parse_args()
    outputs = build(args.source)
    stale = [n for n, data in outputs.items() if not (args.out / n).is_file() or (args.out / n).read_bytes() != data]
    if args.check:
        for name in stale:
            print(f"out of date: {name}", file=sys.stderr)
        return 1 if stale else 0
    args.out.mkdir(parents=True, exist_ok=True)
    for name in stale:
        (args.out / name).write_bytes(outputs[name])
    print(f"wrote {len(stale)} of {len(outputs)} files to {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
