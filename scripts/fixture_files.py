"""The fixture scripts' shared ending: compare what a script builds with the committed files, or write it.

Each ``make_*.py`` builds its outputs in memory (file name -> bytes, a manifest included) and
hands them here: ``--check`` reports every stale or missing file and every file the script does
not make (a stray), and writing replaces the directory's matching files with exactly the outputs.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Mapping
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


def main(
    argv: list[str] | None,
    *,
    doc: str | None,
    default_source: Path,
    default_out: Path,
    build: Callable[[Path], Mapping[str, bytes]],
    pattern: str,
    what: Callable[[int], str],
    against: str = "",
) -> int:
    """A fixture script's command line: write the outputs of ``build(source)``, or with --check verify them.

    Args:
        argv: The arguments (None: ``sys.argv``).
        doc: The script's docstring (its first line is the description).
        default_source: The raw Synthea bundles' directory.
        default_out: Where the outputs go.
        build: ``source -> {file name: bytes}``, the manifest included.
        pattern: The glob of the files the script owns in ``out`` (others are left alone).
        what: ``files -> what they are`` for the one-line report, given the outputs but the manifest
            (``25 case files and MANIFEST.json``).
        against: What --check compares beyond the bytes, appended to the report (`` (bytes, and ...)``).

    Returns:
        The exit status: 1 when --check finds a stale, missing or stray file, else 0.
    """
    parser = argparse.ArgumentParser(description=(doc or "").splitlines()[0])
    parser.add_argument("--source", type=Path, default=default_source, help="directory of raw Synthea bundles")
    parser.add_argument("--out", type=Path, default=default_out, help="directory for the case files")
    parser.add_argument("--check", action="store_true", help="verify the committed files, write nothing")
    args = parser.parse_args(argv)
    if not args.source.is_dir():
        raise SystemExit(f"--source {args.source}: the directory does not exist; give the raw Synthea bundles")
    outputs = build(args.source)
    made = what(len(outputs) - 1)
    if args.check:
        stale, stray = check(outputs, args.out, pattern)
        print(f"checked {made} in {args.out} against the bundles in {args.source}{against}: " + verdict(stale, stray))
        return 1 if stale or stray else 0
    write(outputs, args.out, pattern)
    print(f"wrote {made} to {args.out}")
    return 0
