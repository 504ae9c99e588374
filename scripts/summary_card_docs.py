"""Rewrite the packaged baseline judge card's table in docs/tasks/summary.md from the card itself.

Usage::

    uv run groundeval calibrate --task summary --judge baseline \
        --labels fixtures/summary-calibration/labels.jsonl -o fixtures/summary-judge-cards/baseline.json
    uv run python scripts/summary_card_docs.py          # rewrite the block
    uv run python scripts/summary_card_docs.py --check  # exit 1 when the block is not the card's

The block between ``card_text.DOCS_BEGIN`` and ``DOCS_END`` is ``card_text.card_markdown`` of
``fixtures/summary-judge-cards/baseline.json``, or the ``DOCS_TODO`` line while there is no such
card (tests/test_docs.py checks the same).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "tasks" / "summary.md"
CARD = ROOT / "fixtures" / "summary-judge-cards" / "baseline.json"


def expected_block() -> str:
    """What the docs block must hold: the card's table, or the TODO line without a card."""
    from groundeval.tasks.summary.card_text import DOCS_TODO, card_markdown

    if not CARD.is_file():
        return DOCS_TODO
    return card_markdown(json.loads(CARD.read_text(encoding="utf-8")))


def current_block(text: str) -> tuple[int, int]:
    """Start and end offsets of the block's body in the page."""
    from groundeval.tasks.summary.card_text import DOCS_BEGIN, DOCS_END

    start = text.index(DOCS_BEGIN) + len(DOCS_BEGIN)
    return start, text.index(DOCS_END, start)


def main(argv: list[str]) -> int:
    """Rewrite (or ``--check``) the block; returns the exit status."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 when the block differs from the card")
    args = parser.parse_args(argv)
    text = PAGE.read_text(encoding="utf-8")
    start, end = current_block(text)
    wanted = "\n" + expected_block() + "\n"
    if text[start:end] == wanted:
        return 0
    if args.check:
        print(f"{PAGE}: the baseline card's block is stale; run uv run python scripts/summary_card_docs.py",
              file=sys.stderr)
        return 1
    PAGE.write_text(text[:start] + wanted + text[end:], encoding="utf-8")
    print(f"rewrote the baseline card's block in {PAGE}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
