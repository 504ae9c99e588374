"""``groundeval calibrate``: measure the summary scorer against people's labels and write its judge card.

Examples::

    uv run groundeval calibrate --task summary --judge baseline \
        --labels fixtures/summary-calibration/labels.jsonl -o fixtures/summary-judge-cards/baseline.json
    uv run groundeval calibrate --task summary --judge anthropic/claude-sonnet-5-5 --labels ours.jsonl -o sonnet.json
    uv run groundeval calibrate --task summary --judge baseline      # smoke test on the code-made control set

With ``--labels`` (the documented JSONL, ``groundeval.scorers.labels``) the whole scorer,
rules and judge, is measured against the reference labeller; that card is the only kind a run
gates on. Without it the judge alone is measured on a control set made by code from the task's
cases (``groundeval.tasks.summary.calibration``): a smoke test whose card says so, and which a run
never presents as calibration. Every verdict of a model judge is one model call (``--limit``
bounds the control set's cases); up to ``--concurrency`` calls are in flight at once (the
executor's score stage, ``groundeval.execution.score_stage``; default as a run's,
``execution.DEFAULT_CONCURRENCY``), and the card is the same as asked one after another.
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


def _calls(text: str) -> int:
    """``--concurrency``: a whole number of judge calls in flight at once, at least 1."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number of calls") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{value} calls in flight ask nothing; give 1 or more (1: one at a time)")
    return value


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="groundeval calibrate", description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--task", default="summary", choices=["summary"], help="the judged task (summary)")
    parser.add_argument("--judge", required=True, help="baseline, a model spec, or package.module:attribute")
    parser.add_argument("--data-dir", type=Path, default=None, help="case files (default: the packaged fixtures)")
    parser.add_argument("--limit", type=_positive, default=None, help="use only the first N >= 1 cases (by file name)")
    parser.add_argument("--labels", type=Path, default=None,
                        help="human labels (JSONL, docs/tasks/summary.md); without it: the code-made smoke test")
    parser.add_argument("--reference-labeller", default=None,
                        help="measure against this labeller (default: per summary, the first who is not its writer)")
    parser.add_argument("--max-words", type=_positive, default=None, help="the scorer's word limit (a run's default)")
    parser.add_argument("--min-rubric-score", type=float, default=None,
                        help="the rubric score a passing case reaches (a run's default)")
    parser.add_argument("--concurrency", type=_calls, default=None,
                        help="judge calls in flight at once (default: 4, as a run's --groundeval-concurrency)")
    parser.add_argument("-o", "--output", type=Path, default=None, help="write the judge card here (JSON)")
    return parser


def _defaults() -> tuple[int, float]:
    """A run's ``max_words`` and ``min_rubric_score`` defaults (``SummaryTask``'s fields)."""
    import dataclasses

    from groundeval.tasks.summary.task import SummaryTask

    found = {f.name: f.default for f in dataclasses.fields(SummaryTask)}
    return int(found["max_words"]), float(found["min_rubric_score"])  # type: ignore[arg-type]


def main(argv: Sequence[str]) -> int:
    """Run the calibration; print the figures; write the card with ``-o``. Returns the exit status."""
    args = _parser().parse_args(list(argv))
    from groundeval.clinical.lab_thresholds import default_thresholds
    from groundeval.datasets import default_data_dir
    from groundeval.execution import DEFAULT_CONCURRENCY
    from groundeval.execution.score_stage import ScoreStage
    from groundeval.scorers.judge_card import write_card
    from groundeval.scorers.judge_card_text import card_lines
    from groundeval.tasks.summary.calibration import calibrate
    from groundeval.tasks.summary.card import calibrate_labels
    from groundeval.tasks.summary.cases import read_case
    from groundeval.tasks.summary.judge import make_judge
    from groundeval.tasks.summary.label_calibration import load_cases
    from groundeval.tasks.summary.labels import read_labels
    from groundeval.tasks.summary.truth import summary_rubric

    data_dir = args.data_dir or default_data_dir("summary")
    if args.limit is not None and args.labels is not None:
        print("ERROR: --limit bounds the control set's cases; with --labels every labelled summary is scored "
              "(write a smaller label file instead)", file=sys.stderr)
        return 2
    from groundeval.models import server_logs

    server_logs.use_directory(args.output.resolve().parent if args.output is not None else None)
    judge = None
    stage = ScoreStage(args.concurrency or DEFAULT_CONCURRENCY)
    try:
        judge = make_judge(args.judge)
        if args.labels is not None:
            labels = read_labels(args.labels)
            words, score = _defaults()
            card = calibrate_labels(
                judge, labels, load_cases(labels.case_ids, data_dir),
                max_words=args.max_words or words,
                min_rubric_score=score if args.min_rubric_score is None else args.min_rubric_score,
                reference_labeller=args.reference_labeller, stage=stage)
        else:
            files = [p for p in sorted(data_dir.glob("*.json")) if not p.name.startswith("MANIFEST")][: args.limit]
            cases = []
            for path in files:
                case = read_case(path)
                cases.append((case.case_id, summary_rubric(case.data, default_thresholds(), str(path))["criteria"]))
            card = calibrate(judge, cases, stage=stage)
    except GroundevalError as exc:
        hint = "" if args.judge.strip() == "baseline" else (
            "\n(to calibrate offline, with no key: groundeval calibrate --task summary --judge baseline)")
        print(f"ERROR: {exc}{hint}", file=sys.stderr)
        return 2
    finally:
        stage.close()
        close = getattr(judge, "close", None)
        if callable(close):  # a local/<gguf> judge stops its llama.cpp server
            close()
    for line in card_lines(card):
        print(line)
    if args.output is not None:
        write_card(card, args.output)
        print(f"wrote {args.output}")
    else:
        print(json.dumps({"kappa": card["kappa"], "n": card["n"], "set": card["calibration_set"]["kind"]}))
    return 0
