"""``groundeval compare`` and ``groundeval report``: read run records, never run an eval.

Examples::

    groundeval compare runs/A.json runs/B.json
    groundeval compare runs/A.json runs/B.json --format markdown >> "$GITHUB_STEP_SUMMARY"
    groundeval compare runs/A.json runs/B.json --format json --fail-on-regression
    groundeval report runs/B.json -o report.html
    groundeval report runs/A.json runs/B.json -o report.html
    groundeval compare runs/A.json runs/B.json runs/C.json --baseline runs/B.json
    groundeval report runs/A.json runs/B.json runs/C.json -o matrix.html

Three or more runs give a model matrix (``groundeval.reporting.matrix``): every run against the
baseline (``--baseline``, default the first), each pairwise comparison and gate exactly as for two.

Exit status: 0; 1 with ``--fail-on-regression`` when a case regressed (passed -> not passed) or was
lost (a verdict -> none: excluded, not run or its case file unreadable), run B has a collection
error (a case file that could not be read) or an ``invalid_case`` (one that failed its checks),
or is incomplete; 2 for runs that cannot be compared
(different tasks), bad arguments or a file that is not a run record. With three or more runs,
the same per run against the baseline: 1 when any gate fails, 2 when any run cannot be compared.
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
        description="Compare two run records: headline figures with paired intervals, per-case changes; "
        "three or more: a model matrix against a baseline.",
    )
    parser.add_argument("runs", nargs="+", metavar="RUN.json",
                        help="two run records (baseline, current), or three or more (a matrix)")
    parser.add_argument(
        "--baseline", default=None, metavar="RUN",
        help="the run the others are compared with: its path as given, its run id or its letter (A, B, ...); "
        "default: the first",
    )
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
        prog="groundeval report",
        description="Write a self-contained HTML report of one run, two compared, or a matrix of three or more.",
    )
    parser.add_argument("runs", nargs="+", metavar="RUN.json",
                        help="one run record, a baseline and a current one, or three or more")
    parser.add_argument(
        "--baseline", default=None, metavar="RUN",
        help="the run the others are compared with: its path as given, its run id or its letter; default: the first",
    )
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


def _baseline(parser: argparse.ArgumentParser, records: Sequence[RunRecord], paths: Sequence[str],
              name: str | None) -> int:
    from groundeval.reporting.matrix import pick_baseline

    try:
        return pick_baseline(records, paths, name)
    except ValueError as exc:
        parser.error(str(exc))  # exits 2


def compare_main(argv: Sequence[str]) -> int:
    """``groundeval compare``; returns the exit status."""
    parser = _compare_parser()
    args = parser.parse_args(list(argv))
    if len(args.runs) < 2:
        parser.error("give two run records (baseline, current), or three or more for a matrix")
    records = [_load(parser, p) for p in args.runs]
    base = _baseline(parser, records, args.runs, args.baseline)
    if len(records) > 2:
        return _matrix_main(args, records, base)
    from groundeval.reporting.compare import compare_runs
    from groundeval.reporting.render import comparison_json, comparison_text
    from groundeval.reporting.summary_md import comparison_markdown

    a, b = records[base], records[1 - base]
    comp = compare_runs(a, b)
    if args.format == "json":
        text = comparison_json(comp)
    else:
        render = comparison_text if args.format == "text" else comparison_markdown
        text = render(comp, fail_on_regression=args.fail_on_regression)
    status = _emit(args.output, text)
    if status is not None:
        return status
    if comp.problems:  # not comparable (different tasks): a gate must not pass on a wrong baseline
        return 2
    return 1 if args.fail_on_regression and comp.gate.failed else 0


def _matrix_main(args: argparse.Namespace, records: Sequence[RunRecord], base: int) -> int:
    """``groundeval compare A B C ...``: the model matrix; the exit status as for two runs, over every pair."""
    from groundeval.reporting.matrix import compare_matrix
    from groundeval.reporting.matrix_render import matrix_json, matrix_markdown, matrix_text

    m = compare_matrix(records, base)
    if args.format == "json":
        text = matrix_json(m)
    else:
        render = matrix_text if args.format == "text" else matrix_markdown
        text = render(m, fail_on_regression=args.fail_on_regression)
    status = _emit(args.output, text)
    if status is not None:
        return status
    if m.problems:
        return 2
    return 1 if args.fail_on_regression and m.gate_failed else 0


def _emit(output: str | None, text: str) -> int | None:
    """Write ``text`` to ``output`` or stdout; the exit status when it could not be written, else None."""
    if output:
        try:
            with named(output), open(output, "w", encoding="utf-8") as fh:
                fh.write(text if text.endswith("\n") else text + "\n")
        except OSError as exc:
            return _unwritable(exc, "--output")
    else:
        from groundeval.redaction import clean_text

        print(clean_text(text))  # a record's text reaches the terminal with no control character
    return None


def report_main(argv: Sequence[str]) -> int:
    """``groundeval report``; returns the exit status."""
    parser = _report_parser()
    args = parser.parse_args(list(argv))
    records = [_load(parser, p) for p in args.runs]
    base = _baseline(parser, records, args.runs, args.baseline) if len(records) > 1 else 0
    from groundeval.reporting.html import write_matrix_report, write_report

    try:
        if len(records) > 2:
            path = write_matrix_report(args.output, records, base)
        else:
            first, *rest = records
            if base == 1:
                first, rest = records[1], [records[0]]
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
