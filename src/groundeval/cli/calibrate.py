"""``groundeval calibrate``: measure a judge against labels known to be true and write its judge card.

Examples::

    uv run groundeval calibrate --task summary --judge baseline -o card.json
    uv run groundeval calibrate --task summary --judge anthropic/claude-sonnet-5-5 --limit 5 -o sonnet.json

The control set is made by code from the task's cases (``groundeval.tasks.summary.calibration``);
every verdict of a model judge is one model call (``--limit`` bounds the cases, hence the spend).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path

from groundeval.errors import GroundevalError

__all__ = ["main"]


def _positive(text: str) -> int:
    """``--limit``: a whole number of cases, at least 1 (0 cases measure nothing)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number of cases") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{value} cases measure nothing; give 1 or more, or leave --limit out")
    return value


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="groundeval calibrate", description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--task", default="summary", choices=["summary"], help="the judged task (summary)")
    parser.add_argument("--judge", required=True, help="baseline, a model spec, or package.module:attribute")
    parser.add_argument("--data-dir", type=Path, default=None, help="case files (default: the packaged fixtures)")
    parser.add_argument("--limit", type=_positive, default=None, help="use only the first N >= 1 cases (by file name)")
    parser.add_argument("-o", "--output", type=Path, default=None, help="write the judge card here (JSON)")
    return parser


def main(argv: Sequence[str]) -> int:
    """Run the calibration; print the figures; write the card with ``-o``. Returns the exit status."""
    args = _parser().parse_args(list(argv))
    from groundeval.datasets import default_data_dir
    from groundeval.tasks.labs.thresholds import default_thresholds
    from groundeval.tasks.summary.calibration import calibrate, write_card
    from groundeval.tasks.summary.cases import read_case
    from groundeval.tasks.summary.judge import make_judge
    from groundeval.tasks.summary.truth import summary_rubric

    data_dir = args.data_dir or default_data_dir("summary")
    try:
        judge = make_judge(args.judge)
        files = [p for p in sorted(data_dir.glob("*.json")) if not p.name.startswith("MANIFEST")][: args.limit]
        cases = []
        for path in files:
            case = read_case(path)
            cases.append((case.case_id, summary_rubric(case.data, default_thresholds(), str(path))["criteria"]))
        card = calibrate(judge, cases)
    except GroundevalError as exc:
        hint = "" if args.judge.strip() == "baseline" else (
            "\n(to calibrate offline, with no key: groundeval calibrate --task summary --judge baseline)")
        print(f"ERROR: {exc}{hint}", file=sys.stderr)
        return 2
    overall = card["overall"]
    print(f"judge {card['judge']} (prompt {card['prompt_sha256'][:12]}): kappa {overall['kappa']} "
          f"95% CI {overall['kappa_95ci']} n {overall['n']}; sensitivity {overall['sensitivity']}, "
          f"specificity {overall['specificity']}")
    for name, fig in card["by_type"].items():
        print(f"  {name}: kappa {fig['kappa']} {fig['kappa_95ci']} sensitivity {fig['sensitivity']} "
              f"specificity {fig['specificity']} n {fig['n']}")
    if args.output is not None:
        write_card(card, args.output)
        print(f"wrote {args.output}")
    else:
        print(json.dumps({"kappa": card["kappa"], "n": card["n"]}))
    return 0
