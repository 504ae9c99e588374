"""Which mentions of a summary name a rubric item, and in what status (shared by rules and baseline judge).

A criterion's item is named by every one of its ``names`` (each ingredient of a combination) or
by one of its brands as a whole: the criterion's ``alternatives`` (a branded product's own brand:
"Levora" is not "Seasonique", though both hold levonorgestrel and ethinyl estradiol) or, for an
unbranded product, ``synonyms.brands_of`` (the RxNorm brands of the packaged catalog and FDA-label
brands of its ingredients). ``strict`` (the rule layer) reads
names as written (case, spacing, punctuation and British spelling aside); otherwise (the
baseline judge) a name also counts by its synonyms, clinical abbreviations and, for a drug, its
name without salt words (``synonyms.variants``). A condition's abbreviations are never used for
a must-not criterion: ``MDD`` names an active "Major depressive disorder" and must not make a
resolved "Major depression, single episode" current; a drug's are (``APAP 325 PRN`` names a
stopped acetaminophen: ``synonyms.drug_abbreviations``).

Each mention's ``status`` comes from ``reading.read``: ``current``, ``ended``, ``negated`` or
``hedged``; a mention stated as an allergy is never a current drug or problem.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from groundeval.tasks.summary.reading import Mention, read
from groundeval.tasks.summary.synonyms import (
    brands_of,
    drug_abbreviations,
    drug_words,
    same_concept,
    spelling,
    variants,
)

__all__ = ["ItemMentions", "item_mentions"]

_DRUG_TYPES = frozenset({"medication", "stopped_medication"})


@dataclass(frozen=True, slots=True)
class ItemMentions:
    """The mentions of one criterion's item.

    Attributes:
        per_name: For each of the criterion's names, the mentions of it (text order).
        whole: Mentions of a brand (names the item whole).
    """

    per_name: tuple[tuple[Mention, ...], ...]
    whole: tuple[Mention, ...]

    def all(self) -> list[Mention]:
        """Every mention, in text order."""
        return sorted({m for ms in self.per_name for m in ms} | set(self.whole), key=lambda m: m.start)

    def named(self, statuses: frozenset[str], *, allergy: bool = False) -> Mention | None:
        """A mention showing the item named with a status in ``statuses``, or None.

        The item is named by a brand, or by every name; ``allergy`` asks for mentions stated as an
        allergy (else such mentions are left out).
        """
        def ok(m: Mention) -> bool:
            return m.status in statuses and m.allergy == allergy

        whole = next((m for m in self.whole if ok(m)), None)
        if whole is not None:
            return whole
        picks = [next((m for m in ms if ok(m)), None) for ms in self.per_name]
        return picks[0] if picks and all(p is not None for p in picks) else None

    def named_all(self, statuses: frozenset[str]) -> list[Mention]:
        """Every mention (not as an allergy) that names the item with a status in ``statuses``.

        A brand's mentions, or, when every name is mentioned so, the first name's mentions.
        """
        whole = [m for m in self.whole if m.status in statuses and not m.allergy]
        per = [[m for m in ms if m.status in statuses and not m.allergy] for ms in self.per_name]
        return whole + (per[0] if per and all(per) else [])

    def hedged(self) -> Mention | None:
        """A hedged mention of the whole item (a brand, or every name in one sentence), or None.

        An ingredient named inside another combination product (``Acetaminophen 21.7 MG/ML /
        Dextromethorphan ...``, the parts joined by `` / ``) does not hedge a product of its own.
        """
        whole = next((m for m in self.whole if m.status == "hedged"), None)
        if whole is not None or not self.per_name:
            return whole
        for m in self.per_name[0]:
            if len(self.per_name) == 1 and _in_combination(m):
                continue
            if m.status == "hedged" and all(any(o.status == "hedged" and o.sentence == m.sentence for o in ms)
                                            for ms in self.per_name[1:]):
                return m
        return None


def _in_combination(m: Mention) -> bool:
    """True when the mention is one part of a combination product written ``A 300 MG / B 5 MG``."""
    at = m.start - m.sentence_start
    before, after = m.sentence[:max(at, 0)], m.sentence[at + (m.end - m.start):]
    return bool(re.search(r"\s/\s*[^;,()]{0,60}$", before) or re.match(r"^\s*\d[^;,()]{0,25}?\s/\s", after))


def _phrases(criterion: Mapping[str, Any], strict: bool) -> tuple[list[list[str]], list[str]]:
    ctype = criterion["type"]
    drug = ctype in _DRUG_TYPES
    names = [str(n) for n in criterion["names"]]
    brands = [spelling(str(a)) for a in criterion.get("alternatives") or []]
    if drug and not brands:  # a branded product is named by its own brand; another brand is another product
        brands += brands_of(names)
    per_name = []
    for name in names:
        if strict:
            group = [spelling(name)]
        elif criterion["kind"] == "must_not_state":
            group = [spelling(name), *([drug_words(name), *drug_abbreviations(name)] if drug else same_concept(name))]
        else:
            group = variants(name, drug=drug)
        per_name.append(group)
    return per_name, list(dict.fromkeys(b for b in brands if b))


def item_mentions(criterion: Mapping[str, Any], summary: str, *, strict: bool) -> ItemMentions:
    """The mentions of ``criterion``'s item in ``summary`` (module docstring)."""
    per_name, brands = _phrases(criterion, strict)
    phrases = [p for group in per_name for p in group] + brands
    found = read(summary, phrases)
    groups = tuple(tuple(m for m in found if m.phrase in group) for group in per_name)
    whole = tuple(m for m in found if m.phrase in brands)
    return ItemMentions(groups, whole)
