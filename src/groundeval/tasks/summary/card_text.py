"""The summary judge card as text: the docs' block markers, and the card's lines and table.

``card_lines`` and ``card_markdown`` are generic (``scorers.judge_card_text``); the block of
docs/tasks/summary.md that shows the packaged baseline card is bounded by ``DOCS_BEGIN`` and
``DOCS_END`` and rewritten by scripts/summary_card_docs.py.
"""

from __future__ import annotations

from groundeval.scorers.judge_card_text import card_lines, card_markdown

__all__ = ["DOCS_BEGIN", "DOCS_END", "DOCS_TODO", "card_lines", "card_markdown"]

DOCS_BEGIN = "<!-- baseline-card:begin (uv run python scripts/summary_card_docs.py rewrites this block) -->"
DOCS_END = "<!-- baseline-card:end -->"
DOCS_TODO = ("TODO(baseline-card): the packaged card does not exist yet; regenerate it from the hand-written set "
             "and run scripts/summary_card_docs.py")
"""The block's only line while ``fixtures/summary-judge-cards/baseline.json`` is missing (tests/test_docs.py)."""
