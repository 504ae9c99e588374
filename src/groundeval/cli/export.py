"""``groundeval export RUN.json ... --format csv|parquet [-o FILE]``: run records as one table.

Examples::

    groundeval export runs/*.json -o results.csv
    groundeval export runs/A.json runs/B.json --format parquet -o results.parquet

Exit status: 0; 2 for bad arguments, a file that is not a run record, an unwritable output; 4
when the ``export`` extra (pandas, pyarrow) is missing, with the install command.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence

__all__ = ["export_main"]


SUFFIXES = {".csv": "csv", ".parquet": "parquet", ".pq": "parquet"}
"""File name suffix of ``-o`` -> the format it implies; any other suffix is refused with the fix."""


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="groundeval export",
        description="Write run records as one table: one row per case and trial, metrics as columns.",
    )
    parser.add_argument("runs", nargs="+", metavar="RUN.json", help="run records")
    parser.add_argument(
        "--format", choices=("csv", "parquet"), default=None, help="table format (default: from -o's suffix, else csv)"
    )
    parser.add_argument(
        "-o", "--output", default=None, metavar="FILE", help="write to FILE (default: CSV on stdout; parquet needs -o)"
    )
    return parser


def export_main(argv: Sequence[str]) -> int:
    """``groundeval export``; returns the exit status."""
    from groundeval.extras import extra_missing_message, has_module

    parser = _parser()
    args = parser.parse_args(list(argv))
    suffix = os.path.splitext(args.output or "")[1].lower()
    implied = SUFFIXES.get(suffix)
    if args.output and suffix and implied is None:
        parser.error(
            f"-o {args.output}: groundeval export writes CSV or Parquet, not {suffix}; name the file .csv "
            "(spreadsheets such as Excel open it) or .parquet"
        )
    if args.format and implied and args.format != implied:
        parser.error(f"--format {args.format} with -o {args.output}: the suffix says {implied}; make them agree")
    fmt = args.format or implied or "csv"
    if fmt == "parquet" and not args.output:
        parser.error("--format parquet needs -o FILE (Parquet is binary)")
    for module in ("pandas", *(("pyarrow",) if fmt == "parquet" else ())):
        if not has_module(module):
            print(
                f"ERROR: {extra_missing_message('export', module, f'groundeval export --format {fmt}')}",
                file=sys.stderr,
            )
            return 4
    from groundeval.export import load_runs
    from groundeval.records.write_errors import describe, named

    try:
        table = load_runs(args.runs)
    except (OSError, ValueError) as exc:
        parser.error(str(exc))
    try:
        if fmt == "parquet":
            with named(args.output):
                table.to_parquet(args.output, index=False)
        elif args.output:
            with named(args.output):
                table.to_csv(args.output, index=False)
        else:
            try:
                table.to_csv(sys.stdout, index=False)
                sys.stdout.flush()
            except BrokenPipeError:  # the reader stopped early (``| head``): not an error of the export
                # Python's documented way out: point stdout at devnull so the flush at exit cannot fail
                os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
                return 0
    except OSError as exc:
        print(f"groundeval: {describe(exc)}; give -o a writable path", file=sys.stderr)
        return 2
    if args.output:
        print(f"export: {args.output} ({len(table)} rows, {len(table.columns)} columns)")
    return 0
