"""``groundeval compare`` and ``groundeval report``: read run records, never run an eval.

Examples::

    groundeval compare runs/A.json runs/B.json
    groundeval compare runs/A.json runs/B.json --format markdown >> "$GITHUB_STEP_SUMMARY"
    groundeval compare runs/A.json runs/B.json --format json --fail-on-regression
    groundeval report runs/B.json -o report.html
    groundeval report runs/A.json runs/B.json -o report.html

Exit status: 0; 1 with ``--fail-on-regression`` when a case regressed (passed -> not passed) or was
lost (a verdict -> none: excluded, not run or its case file unreadable), run B has a collection
error (a case file that could not be read) or an ``invalid_case`` (one that failed its checks),
or is incomplete; 2 for runs that cannot be compared
(different tasks), bad arguments or a file that is not a run record.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING

from groundeval.records.write_errors import describe, named

if TYPE_CHECKING:
    from groundeval.records.run_record import RunRecord

__all__ = ["SUBCOMMANDS", "compare_main", "main", "report_main"]

SUBCOMMANDS = frozenset({"compare", "report"})


def _compare_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="groundeval compare",
        description="Compare two run records: headline figures with paired intervals, per-case changes.",
    )
    parser.add_argument("baseline", metavar="RUN_A.json", help="the baseline run record")
    parser.add_argument("current", metavar="RUN_B.json", help="the run record compared against it")
    parser.add_argument("--format", choices=("text", "markdown", "json"), default="text", help="output format")
    parser.add_argument("-o", "--output", default=None, metavar="PATH", help="write to PATH instead of stdout")
    parser.add_argument(
        "--fail-on-regression", action="store_true",
        help="exit 1 when a case passed in A and fails in B, or has no verdict in B (excluded, not run or its "
        "file unreadable), or B has a collection error or an invalid_case (a case file that could not be read "
        "or failed its checks) or is incomplete",
    )
    return parser


def _report_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="groundeval report", description="Write a self-contained HTML report of one run (or two, compared).",
    )
    parser.add_argument("runs", nargs="+", metavar="RUN.json", help="one run record, or a baseline and a current one")
    parser.add_argument(
        "-o", "--output", default="report.html", metavar="PATH", help="HTML file (default: report.html)",
    )
    return parser


def _load(parser: argparse.ArgumentParser, path: str) -> RunRecord:
    from groundeval.reporting.compare import load_record

    try:
        return load_record(path)
    except (OSError, ValueError) as exc:
        parser.error(str(exc))  # exits 2


def compare_main(argv: Sequence[str]) -> int:
    """``groundeval compare``; returns the exit status."""
    from groundeval.reporting.compare import compare_runs
    from groundeval.reporting.render import comparison_json, comparison_text
    from groundeval.reporting.summary_md import comparison_markdown
    parser = _compare_parser()
    args = parser.parse_args(list(argv))
    a, b = _load(parser, args.baseline), _load(parser, args.current)
    comp = compare_runs(a, b)
    if args.format == "json":
        text = comparison_json(comp)
    else:
        render = comparison_text if args.format == "text" else comparison_markdown
        text = render(comp, fail_on_regression=args.fail_on_regression)
    if args.output:
        try:
            with named(args.output), open(args.output, "w", encoding="utf-8") as fh:
                fh.write(text if text.endswith("\n") else text + "\n")
        except OSError as exc:
            return _unwritable(exc, "--output")
    else:
        from groundeval.redaction import clean_text

        print(clean_text(text))  # a record's text reaches the terminal with no control character
    if comp.problems:  # not comparable (different tasks): a gate must not pass on a wrong baseline
        return 2
    return 1 if args.fail_on_regression and comp.gate.failed else 0


def report_main(argv: Sequence[str]) -> int:
    """``groundeval report``; returns the exit status."""
    from groundeval.reporting.html import write_report
    parser = _report_parser()
    args = parser.parse_args(list(argv))
    if len(args.runs) > 2:
        parser.error("give one run record, or two (baseline, current)")
    records = [_load(parser, p) for p in args.runs]
    first, *rest = records
    try:
        path = write_report(args.output, first, rest[0] if rest else None)
    except OSError as exc:
        return _unwritable(exc, "--output")
    print(f"report: {path}")
    return 0


def _unwritable(exc: OSError, option: str) -> int:
    """Say which file could not be written and why; the exit status 2 (nothing was written whole)."""
    print(f"groundeval: {describe(exc)}; give {option} a writable path", file=sys.stderr)
    return 2


def main(argv: Sequence[str] | None = None) -> int:
    """Dispatch ``compare``/``report`` (the first argument) to its entry function."""
    args = list(sys.argv[1:] if argv is None else argv)
    if not args or args[0] not in SUBCOMMANDS:
        print(f"usage: groundeval {{{','.join(sorted(SUBCOMMANDS))}}} ...", file=sys.stderr)
        return 2
    try:
        return compare_main(args[1:]) if args[0] == "compare" else report_main(args[1:])
    except BrokenPipeError:  # `groundeval compare ... | head`: the reader left; not an error
        import os

        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
