"""The reconcile prompt and its docs page state the same rules, word for word, and each is in the prompt."""

from __future__ import annotations

import re

from groundeval.tasks.reconcile.prompt import INSTRUCTIONS, RECORD_RULE, RULES, STATUS_RULES
from tests._paths import REPO

PAGE = REPO / "docs" / "tasks" / "reconcile.md"


def _flat(text: str) -> str:
    return " ".join(text.split())


def _reconcile_section() -> str:
    return _flat(PAGE.read_text(encoding="utf-8"))


def test_every_rule_the_prompt_states_is_in_the_readmes_reconcile_section_word_for_word() -> None:
    section, prompt = _reconcile_section(), _flat(INSTRUCTIONS)
    assert _flat(RECORD_RULE) in section and _flat(RECORD_RULE) in prompt
    for name, meaning in STATUS_RULES:
        assert _flat(f"`{name}`: {meaning}") in section, name
        assert _flat(f"- {name}: {meaning}") in prompt, name
    for n, rule in enumerate(RULES, 1):
        assert _flat(f"{n}. {rule}") in section, f"rule {n} is not in docs/tasks/reconcile.md: {rule[:60]}"
        assert _flat(f"{n}. {rule}") in prompt
    # and nothing more: the page's numbered list is exactly the prompt's
    listed = re.findall(r"Rules: (1\. .*?) \*\*How the truth pairs", section)
    assert listed and listed[0].count(". ") >= len(RULES) and f"{len(RULES) + 1}. " not in listed[0]


def test_the_prompt_states_the_pairing_dosing_and_contradiction_rules_the_truth_implements() -> None:
    text = _flat(INSTRUCTIONS)
    for words in ("the latest authoredOn gives its dosage", "compared ingredient by ingredient",
                  "A brand name is the same drug as its generic", "even at another strength",
                  "A medication given two or more statuses is a contradiction", "two tablets of a 10 mg tablet are 20 mg"):
        assert words in text, words
