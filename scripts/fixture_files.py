"""The fixture scripts' shared ending: compare what a script builds with the committed files, or write it.

Each ``make_*.py`` builds its outputs in memory (file name -> bytes, a manifest included) and
hands them here: ``--check`` reports every stale or missing file and every file the script does
not make (a stray), and writing replaces the directory's matching files with exactly the outputs.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from pathlib import Path


def check(outputs: Mapping[str, bytes], out: Path, pattern: str) -> tuple[list[str], list[str]]:
    """``(stale, stray)``: outputs whose file is missing or differs, and files matching ``pattern`` not made.

    Each is also printed to standard error with the fix.
    """
    stale = [n for n, d in outputs.items() if not (out / n).is_file() or (out / n).read_bytes() != d]
    stray = sorted(p.name for p in out.glob(pattern) if p.name not in outputs)
    for name in stale:
        print(f"stale or missing: {out / name}", file=sys.stderr)
    for name in stray:
        print(f"not made by this script (delete it): {out / name}", file=sys.stderr)
    return stale, stray


def verdict(stale: list[str], stray: list[str]) -> str:
    """``all current`` or ``N stale, M stray``, for the script's one-line report."""
    return "all current" if not stale and not stray else f"{len(stale)} stale, {len(stray)} stray"


def write(outputs: Mapping[str, bytes], out: Path, pattern: str) -> None:
    """Write every output into ``out``, deleting the files matching ``pattern`` that are not outputs."""
    out.mkdir(parents=True, exist_ok=True)
    for stray in out.glob(pattern):
        if stray.name not in outputs:
            stray.unlink()
    for name, data in outputs.items():
        (out / name).write_bytes(data)
