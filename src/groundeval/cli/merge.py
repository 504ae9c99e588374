"""``groundeval merge``: join the run records of a run split with ``--groundeval-shard=K/N``.

Examples::

    groundeval merge shard-1/*.json shard-2/*.json shard-3/*.json -o run.json
    groundeval merge runs/*.json -o run.json --summary-md summary.md --baseline main.json --fail-on-regression
    groundeval merge shards/*/run.json -o run.json --junit shards/*/junit.xml --junitxml junit.xml

The merged record is the one an unsharded run of the same cases would write
(``groundeval.records.merge``); ``groundeval report`` and ``groundeval compare`` read it like
any other. Exit status: the merged run's own (0 when every case passed or the
``--groundeval-min-pass-rate`` verdicts clear it, 1 for a failed case, 2 for a stopped shard),
1 with ``--fail-on-regression`` when the gate against ``--baseline`` fails; 2 when the records
cannot be merged (the message names the files and why) or a file cannot be read or written.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

__all__ = ["merge_main"]


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="groundeval merge",
        description="Join the run records of every shard of a run (--groundeval-shard=K/N) into one run record.",
    )
    parser.add_argument("records", nargs="+", metavar="RECORD.json", help="each shard's run record, once")
    parser.add_argument("-o", "--output", required=True, metavar="RUN.json", help="the merged run record to write")
    parser.add_argument("--junit", nargs="+", default=[], metavar="SHARD.xml",
                        help="each shard's junit XML file (pytest's --junitxml), for --junitxml")
    parser.add_argument("--junitxml", default=None, metavar="PATH",
                        help="write one junit XML file of every shard's testcases, with the merged run's properties")
    parser.add_argument("--summary-md", default=None, metavar="PATH",
                        help="also write the Markdown summary (and append it to $GITHUB_STEP_SUMMARY when set)")
    parser.add_argument("--baseline", default=None, metavar="RUN.json",
                        help="compare the merged run with this run record (the regression gate)")
    parser.add_argument("--fail-on-regression", action="store_true",
                        help="with --baseline: exit 1 when the gate fails, as --groundeval-fail-on-regression")
    return parser


def merge_main(argv: Sequence[str]) -> int:
    """``groundeval merge``; returns the exit status (see the module docstring)."""
    from groundeval.records.merge import MergeError, merge_records
    from groundeval.records.write_errors import describe, named, replace_whole
    from groundeval.reporting.cases import load_record

    parser = _parser()
    args = parser.parse_args(list(argv))
    if args.fail_on_regression and args.baseline is None:
        parser.error("--fail-on-regression needs --baseline RUN.json to compare with")
    if bool(args.junit) != bool(args.junitxml):
        parser.error("--junitxml PATH and --junit SHARD.xml ... go together: give each shard's junit file")
    try:
        records = [(Path(p), load_record(p)) for p in args.records]
        baseline = load_record(args.baseline) if args.baseline else None
    except (OSError, ValueError) as exc:
        parser.error(str(exc))  # exits 2
    from groundeval.errors import ConfigError
    from groundeval.tasks import make_task

    first = records[0][1]
    try:
        task = make_task(str(first.settings.get("task_spec") or first.task), first.settings.get("task_options") or {})
        record = merge_records(records, task)
    except (MergeError, ConfigError) as exc:
        print(f"groundeval merge: {exc}", file=sys.stderr)
        return 2
    status = int(record.exit_status or 0)
    gate = None
    if baseline is not None:
        from groundeval.reporting import regressions

        if baseline.task != record.task:
            print(f"groundeval merge: --baseline={args.baseline} is a run of the {baseline.task} task; the shards "
                  f"are {record.task}: give a baseline run of the same task", file=sys.stderr)
            return 2
        gate = regressions(baseline, record)
        if args.fail_on_regression and gate.failed and status == 0:
            status = 1
    try:
        if args.summary_md:
            from groundeval.reporting import write_summary_markdown

            write_summary_markdown(record, gate, args.summary_md)
        if args.junitxml:
            from groundeval.plugin.junit_merge import merge_junit

            with named(args.junitxml):
                replace_whole(Path(args.junitxml), merge_junit([Path(p) for p in args.junit], record))
        record = record.model_copy(update={"exit_status": status})
        with named(args.output):
            Path(args.output).parent.mkdir(parents=True, exist_ok=True)
            replace_whole(Path(args.output), record.model_dump_json(indent=2) + "\n")
    except OSError as exc:
        print(f"groundeval merge: {describe(exc)}; give a writable path", file=sys.stderr)
        return 2
    except ValueError as exc:  # a --junit file that is not junit XML
        print(f"groundeval merge: {exc}", file=sys.stderr)
        return 2
    agg = record.aggregate
    rate = "n/a" if agg.pass_rate is None else f"{agg.pass_rate:.3f}"
    print(f"merged {len(records)} shards: {agg.cases} case records, pass rate {rate}"
          f"{'' if gate is None else ('; gate FAILED' if gate.failed else '; gate passed')}; record: {args.output}")
    return status
