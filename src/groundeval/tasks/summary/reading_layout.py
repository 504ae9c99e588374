"""Where a mention sits in a summary's layout: headings, list lead-ins, list items, field lists.

A heading or a list's lead-in gives its status to every item under it (``reading.read``); a
table row or a one-line field list carries each item's status in its own cell. What counts as a
heading: a Markdown heading, a bold line, a short line in capitals, a bare known heading, a label
and its status set off by a dash ("Meds - stopped"), or a short label line right over a list item
("Active diagnoses" over "- None at disorder level"). A line ending with ``:`` leads the list
under it.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable

from groundeval.tasks.summary.reading_rules import SECTION_RULES
from groundeval.tasks.summary.reading_status import STATUS_WORD
from groundeval.tasks.summary.text import collective, contradictory, markup_free, normalise

__all__ = ["LAST_STOP", "LEAD_SEPARATOR", "fields", "heading", "lead_in", "list_marks_items", "none_under",
           "own_lead_in", "says_ended"]


def _lines(text: str) -> list[tuple[int, int]]:
    out, pos = [], 0
    for line in text.split("\n"):
        out.append((pos, pos + len(line)))
        pos += len(line) + 1
    return out


_STRONG = re.compile(r"^\s*(?:#{1,6}\s+\S.*|\*\*[^*]+\*\*:?|__[^_]+__:?"
                     r"|[A-Za-z][A-Za-z/&' ]{1,30}\s[-\u2013\u2014]\s(?:current|active|ongoing|stopped|past|resolved"
                     r"|inactive|completed|discontinued|historical|ended|previous)(?:\s*(?:/|and|or)\s*[a-z]+)?)\s*$")
"""A line that heads a section: Markdown, bold, or a label and its status set off by a dash ("Meds -
current", "Meds - stopped", "Problems - resolved")."""


_HEADING = re.compile(r"^\s*(?:#{1,6}\s+\S.*|\*\*[^*]+\*\*:?|__[^_]+__:?|.*:)\s*$")


_CAPS = re.compile(r"^\s*[A-Z][A-Z/&' ]{2,40}(?:\s*\([^()\n]{1,30}\))?\s*$")


_KNOWN_HEADINGS = frozenset(normalise(h) for h, _ in SECTION_RULES) | {"past medical history", "allergies", "results"}


_PROBLEM_LINE = re.compile(r"^\s*#{1,6}\s*[^:#\n]+:\s*\S")


def _strong(line: str) -> bool:
    """True for a line that heads a section down to the next heading.

    A Markdown heading, a line wholly in bold, a bare known heading (``Discontinued``, ``Past
    medical history``) or a short line in capitals (``PROBLEMS``).
    """
    if _STRONG.match(line) or _CAPS.match(line):
        return True
    return normalise(markup_free(line)) in _KNOWN_HEADINGS


def heading(line: str) -> bool:
    """True for a line that only heads what follows (``## Medications (current and past)``, ``Past:``).

    A heading states nothing about an item by itself: its labels are read as its items' (``read``),
    never as a hedged statement of its own.
    """
    return bool(_HEADING.match(line) or _strong(line))


def lead_in(text: str, at: int) -> tuple[str, int]:
    """The heading or list lead-in that governs the line at ``at``: ``(its text, its offset)``, or ``("", -1)``.

    A Markdown heading (``## Past``; not a problem-oriented entry, ``# Stroke: clopidogrel``), a
    line wholly in bold (``**Resolved problems**``), a bare known heading (``Discontinued``) or a
    short line in capitals (``MEDICATIONS``) governs every line down to the next heading; a line
    ending with ``:`` (a lead-in) governs the list items and lines right under it, down to a blank
    line or the next heading. ``text`` is the summary as written (markup kept).
    """
    cut = text.rfind("\n", 0, at)
    if cut <= 0:
        return "", -1
    offset, blank, under = cut, False, text[cut + 1:]
    for line in reversed(text[:cut].split("\n")):
        offset -= len(line)
        over_list = bool(_LIST_LABEL.match(line)) and bool(_BULLET_LINE.match(under))  # "Active diagnoses" over "- ..."
        if (_HEADING.match(line) or _strong(line) or over_list) and not _PROBLEM_LINE.match(line):
            strong = _strong(line)
            return ("", -1) if blank and not strong else (markup_free(line).strip(), offset)
        blank = blank or not line.strip()
        under = line
        offset -= 1
    return "", -1


_LIST_LABEL = re.compile(r"^\s*[A-Z][A-Za-z/&' ()-]{2,40}$")
"""A short label line with no closing punctuation ("Active diagnoses", "Past / resolved"): over a list
item right under it, a heading without a colon."""


_BULLET_LINE = re.compile(r"^\s*(?:[-*\u2022+]|\d+[.)])\s")


LAST_STOP = re.compile(r"[.!?](?=\s)")


LEAD_SEPARATOR = re.compile(r":|\s[-\u2013\u2014]\s")


def own_lead_in(sentence: str, offset: int) -> str:
    """The part of the sentence before a colon or a spaced dash preceding ``offset``.

    ``Stopped: a, b`` gives ``Stopped``; ``Historical diagnoses - a, b`` gives ``Historical diagnoses``;
    in ``IHD since 1994 - hx abnormal imaging that year - on Zocor`` the two dashes set off an aside,
    and the lead-in is what comes before the first.
    """
    cuts = list(LEAD_SEPARATOR.finditer(sentence, 0, offset))
    if len(cuts) >= 2 and ":" not in cuts[-1][0] + cuts[-2][0]:  # "IHD since 1994 - hx abnormal imaging - on Zocor":
        return sentence[:cuts[-2].start()]  # two dashes set off an aside, not a lead-in
    return sentence[:cuts[-1].start()] if cuts else ""


_FIELD_BAR = re.compile(r"(?<=\S)\s*\|(?=\s)")


_STATUS_FIELD = re.compile(r"\s*(?:active|current|ongoing|stopped|completed|discontinued|ended|resolved|inactive"
                           r"|expired|done|finished|d/c'?d|\d{4}(?:-\d{2}){0,2}|\d{1,2}/\d{1,2}(?:/\d{2,4})?)\s*(?:\||$)",
                           re.IGNORECASE)
"""A field holding only a status or a date ("Amoxicillin 500 mg | completed | 2019"): it speaks of the
field before it, so its bar joins them as a comma does."""


def _field_cut(line: str, bar: re.Match[str]) -> str:
    """A field bar read as ``;``, or as ``,`` before a field holding only a status or a date."""
    return bar[0][:-1] + ("," if _STATUS_FIELD.match(line, bar.end()) else ";")


def fields(summary: str) -> str:
    """``summary`` with the bars of a one-line field list (``38M | dx: none | meds: x``) read as ``;``.

    A bar in a line that is not part of a table (no line next to it holds a bar, and it does not
    open with one) separates fields, each its own sentence: "dx: none" does not negate the
    "meds: ..." field after it. A table's row stays one sentence (its cells are one item's).
    Same length as ``summary``.
    """
    lines = summary.split("\n")
    barred = ["|" in line for line in lines]
    out = []
    for i, line in enumerate(lines):
        alone = not (i and barred[i - 1]) and not (i + 1 < len(lines) and barred[i + 1])
        if barred[i] and alone and not line.lstrip().startswith("|"):
            line = _FIELD_BAR.sub(functools.partial(_field_cut, line), line)
        out.append(line)
    return "\n".join(out)


def says_ended(text: str) -> bool:
    """True when ``text`` (an item's own part of a list, its lead-in cut off) says the item ended."""
    low = text.lower()
    return bool(STATUS_WORD.search(low)) and not collective(low) and not contradictory(low)


_BLOCK_END = re.compile(r"\n[ \t]*\n")


def list_marks_items(summary: str, at: int) -> bool:
    """True when the list whose lead-in (or line) starts at ``at`` gives some of its items an ended status of their own.

    The list runs from ``at`` to the next blank line; its lead-in (up to the first colon, or the
    first line when that is a heading) is cut off, and the rest cut into items at line breaks,
    ``;`` and ``,`` outside brackets: "Medications (current and stopped): lisinopril 10 mg daily,
    amoxicillin (completed)" marks amoxicillin; "Medications (current and past): lisinopril,
    atenolol" marks none, and stays a hedge.
    """
    stop = _BLOCK_END.search(summary, at)
    block = summary[at:stop.start() if stop else len(summary)]
    first, _, rest = block.partition("\n")
    body = first.partition(":")[2] + "\n" + rest if ":" in first else rest
    return any(says_ended(part) for line in body.split("\n") for part in re.split(r"[;,](?![^()]*\))", line))


_NONE = re.compile(r"^\s*(?:[-*•]\s*)?(?:none|nil|no|not any)\b", re.IGNORECASE)


def none_under(summary: str, nouns: Iterable[str]) -> str | None:
    """A line that says "none" under a heading or lead-in naming one of ``nouns``, or None.

    ``Medications:`` over ``- None current`` says no current medication; so does ``Medications: none``.
    """
    plain = markup_free(summary)
    keys = tuple(nouns)
    for s, e in _lines(plain):
        line = plain[s:e]
        head, colon, rest = line.partition(":")
        if colon and any(k in head.lower() for k in keys) and _NONE.match(rest) and not any(
                w in normalise(rest).split()[1:2] for w in ("other",)):
            return summary[s:e].strip()
        lead = lead_in(summary, s + 1)[0] if s else ""
        if _NONE.match(line) and (not colon or _NONE.match(head)) and lead and any(k in lead.lower() for k in keys):
            return summary[s:e].strip()
    return None
