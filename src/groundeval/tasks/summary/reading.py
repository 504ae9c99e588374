"""Read a summary as a clinician writes it: sections, lists, tables, negation and history.

``read(summary, phrases)`` finds every mention of ``phrases`` (whole words, case, spacing,
punctuation and British spellings aside) and gives each a ``status``:

* ``hedged``: the mention's sentence labels it both current and ended (``text.contradictory``);
  ConText marks it uncertain or hypothetical ("possible hypertension", "rule out CKD": its
  ``POSSIBLE_EXISTENCE`` and ``HYPOTHETICAL`` rules); or
  its list is qualified as a whole (a **collective qualifier**, ``text.collective``: "some current,
  others stopped", "current and past", "several since stopped") in its own line, its lead-in or its
  heading. Such a list gives no item a status.
* ``negated``: medSpaCy's ConText marks it negated ("No hypertension", "Not on A, B or C").
* ``ended``: ConText marks it historical; or its section (medSpaCy's sectionizer, with the
  headings of ``SECTION_RULES``: "Past", "Resolved problems", "Completed medications") or the
  lead-in of its list (the closest line above ending with ``:``) is an ended one; or its clause
  holds an ended word (``text.ENDED_WORDS``); or, when its sentence holds no current word and it is
  not listed under a current heading or lead-in, its clause holds a year or a range of years with
  no word that keeps it going ("ankle sprain (2019)", "2004-2010"; not "since 2015", "started
  2019", nor a full date "2019-04-17", which dates a record entry, not its end); or, likewise, the
  sentence opens with an ended word ("Past acute bronchitis, gingivitis.", "History of ...", "Hx",
  "Old", "Remote"), its lead-in names an ended list ("Old problems:", "Prev.:", "D/c'd:", "Historical diagnoses -",
  "Inactive", "Background") or
  qualifies its list item by item ("..., all resolved", "both stopped", "both cleared", "neither
  active", "all in the past": a distributive qualifier, unlike a collective one). A line's own
  lead-in ("Resolved: a; b; c") governs every item of its line and speaks over a heading above.
* ``current``: otherwise.

``allergy`` is True for a mention in an allergy section, under a lead-in naming allergies, or in a
sentence with a word starting ``allerg``. Markdown markup (``|``, ``*``, ``#``, backticks) is read
as spaces, so a table is read row by row (each row a line).

medSpaCy (ConText: Harkema H, Dowling JN, Thornblade T, Chapman WW. *ConText: an algorithm for
determining negation, experiencer, and temporal status from clinical reports.* J Biomed Inform
2009;42(5):839-851; the sectionizer; its clinical tokenizer) is imported on first use only
(about 2 s), so nothing but scoring a summary pays for it. Its default rules miss "(stopped 2020)"
and "no longer on"; ``CONTEXT_RULES`` adds those.
"""

from __future__ import annotations

import dataclasses
import functools
import re
import threading
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from groundeval.tasks.summary.reading_allergy import allergic, allergy_line
from groundeval.tasks.summary.reading_layout import (
    LAST_STOP,
    LEAD_SEPARATOR,
    fields,
    lead_in,
    list_marks_items,
    own_lead_in,
    says_ended,
)
from groundeval.tasks.summary.reading_rules import CONTEXT_RULES, DROPPED_DEFAULT_RULES, ENDED_SECTIONS, SECTION_RULES
from groundeval.tasks.summary.reading_status import (
    BRACKET_STATUS,
    DATE_RANGE,
    STATUS_WORD,
    bullet_status,
    echo_status,
    entry_status,
    list_status,
    object_status,
    predicate_status,
    subject_predicate,
    table_status,
    trailing_status,
)
from groundeval.tasks.summary.text import (
    bracketed_semicolons,
    collective,
    conjunct_span,
    contradictory,
    current_label,
    ended_clause,
    markup_free,
    normalise,
    other_orders,
    resolved,
)

__all__ = ["CONTEXT_RULES", "ENDED_SECTIONS", "SECTION_RULES", "Mention", "read"]

_LOCK = threading.Lock()
_BOUNDARY = re.compile(r"\n|[.!?;](?=\s|$)")


@dataclass(frozen=True, slots=True)
class Mention:
    """One mention of a phrase in a summary.

    Attributes:
        phrase: The phrase found (normalised).
        start: Character offset in the summary.
        end: Character offset after it.
        sentence: The sentence (or list item, or table row) holding it.
        status: ``current``, ``ended``, ``negated`` or ``hedged`` (module docstring).
        allergy: True when it is stated as an allergy.
        collective: True when a collective qualifier hedged it.
        sentence_start: Character offset of ``sentence`` in the summary.
        over: True when the text says the item is over, not merely past: its sentence or lead-in
            holds a word of ``text.RESOLVED_WORDS``, or it sits under an ended heading or lead-in
            that is not a history one (``Past:``, ``Inactive``, ``Completed medications``; not
            ``Past medical history``, ``PMH``, ``Hx``).
        uncertain: True when ConText marks it uncertain or hypothetical and not negated
            ("possible CKD", "rule out diabetes").
    """

    phrase: str
    start: int
    end: int
    sentence: str
    status: str
    allergy: bool
    collective: bool = False
    sentence_start: int = 0
    over: bool = False
    uncertain: bool = False


@functools.cache
def _pipeline() -> Any:
    """MedSpaCy's tokenizer, ConText and sectionizer.

    ConText holds medSpaCy's default rules but ``DROPPED_DEFAULT_RULES``, and ``CONTEXT_RULES``.
    """
    import loguru
    import medspacy
    from medspacy.context import ConText, ConTextRule
    from medspacy.section_detection import Sectionizer, SectionRule

    loguru.logger.disable("PyRuSH")  # PyRuSH logs every token at DEBUG to stderr
    loguru.logger.disable("medspacy")
    nlp = medspacy.load(medspacy_enable=["medspacy_tokenizer"])  # sentences are ours (below)
    context = ConText(nlp, rules=None)
    context.add([r for r in ConTextRule.from_json(context.DEFAULT_RULES_FILEPATH)
                 if r.literal.lower() not in DROPPED_DEFAULT_RULES])
    context.add([ConTextRule(lit, cat, direction=d, max_scope=6 if cat == "HISTORICAL" else None,
                             terminated_by={"CLAUSE_END"} if cat == "HISTORICAL" else None)
                 for lit, cat, d in CONTEXT_RULES]
                + [ConTextRule(p, "CLAUSE_END", direction="BACKWARD", allowed_types={"CLAUSE"}) for p in (",", ";")])
    sections = Sectionizer(nlp, require_start_line=True)
    sections.add([SectionRule(f"{h}:", cat) for h, cat in SECTION_RULES]
                 + [SectionRule(h, cat, pattern=[*({"LOWER": w} for w in h.replace("/", " / ").split()),
                                               {"TEXT": ":", "OP": "?"}]) for h, cat in SECTION_RULES])
    return nlp, context, sections


def _word_pattern(word: str) -> str:
    """A regex for one normalised word that also takes its British spelling."""
    out = re.escape(word)
    for american, british in (("emia", "a?emia"), ("hem", "ha?em"), ("edema", "o?edema"), ("esoph", "o?esoph"),
                              ("ischem", "ischa?em"), ("idemia", "ida?emia"), ("leukem", "leuka?em")):
        out = out.replace(american, british)
    return out


def _finder(phrase: str) -> re.Pattern[str]:
    """Whole words of ``phrase`` (the last also plural); a name ending in a letter may run into its number.

    Clinicians glue a strength to a drug name in shorthand (``HCTZ25``, ``simvastatin20``): the
    number is not part of the name, so it does not hide it (``a1c`` is still no ``a``).
    """
    words = [_word_pattern(w) for w in normalise(phrase).split()]
    if len(words[-1]) >= 4 and words[-1].isalpha():  # "colon polyps", "rib fractures": the plural names it too
        words[-1] += "(?:e?s)?"
    after = r"(?![0-9a-z%])" if words[-1][-1:].isdigit() else (
        r"(?![a-z%])(?!\d+(?:\.\d+)?(?!\.?\d)(?!(?:mg|mcg|ml|g)?(?![a-z])))")
    return re.compile(r"(?<![0-9a-z%])" + r"[^0-9a-z%]+".join(words) + after)


def _sentence_bounds(text: str, at: int) -> tuple[int, int]:
    """The sentence around ``at``: cut at line breaks, at ``;`` and at ``.``/``!``/``?`` before a space.

    ``text`` has its bracketed semicolons masked (``text.bracketed_semicolons``): they cut nothing.
    """
    start = 0
    for m in _BOUNDARY.finditer(text, 0, at):
        start = m.end()
    end = _BOUNDARY.search(text, at)
    return start, (end.start() + (0 if end.group() == "\n" else 1)) if end else len(text)


_SENTENCE_ENDED = re.compile(
    r"^(?:past|prior|prev|previous|previously|resolved|stopped|discontinued|completed|history of|hx of|pmh|pmhx|pshx"
    r"|psh|h/o|hx"
    r"|remote|old|former|earlier|historical|historic|inactive|background)(?![a-z])")
_DISTRIBUTIVE = re.compile(
    r"(?<![a-z])(?:(?:all|both|each|all of (?:them|these|which))\s+(?:now\s+|since\s+|were\s+|are\s+|have\s+been\s+)?"
    r"(?:resolved|stopped|completed|discontinued|ended|inactive|cleared|healed|finished|settled|over|in the past)"
    r"|(?:neither|none)\s+(?:of (?:them|these)\s+)?(?:is\s+|are\s+|now\s+|still\s+)*"
    r"(?:active|current|ongoing))(?![a-z])")
_YEAR = re.compile(r"(?<![\d/.])(?:(?:19|20)\d{2}\s*[-\u2013]\s*(?:19|20)\d{2}|(?<!\d-)(?:19|20)\d{2}(?![\d/]|-\d))"
                   r"|(?<![\d/.])(?:\d{1,2}[/.])?\d{1,2}[/.](?:19|20)\d{2}(?![\d/.])"
                   r"|(?<![\d/.-])(?:19|20)\d{2}-\d{2}(?:-\d{2})?(?![\d-])")
"""A year, or a date that holds one ("2012", "1994-2010", "20/05/2012", "05/2022", "2012-05-20"): an
item its clause dates is a past episode, unless the clause says it goes on (``_STILL``)."""
_STILL = re.compile(r"(?<![a-z])(?:since|started|starting|start|began|begun|added|commenced|restarted|re-started"
                    r"|from(?=\s+(?:[\d/.-]+|(?:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*\.?\s+\d+)\s*"
                    r"(?:onwards?|on(?![a-z])|to\s+(?:date|now|present)|until\s+now|-\s*(?:present|now|date)))"
                    r"|dx|diagnosed|onset|as of|to date"
                    r"|until now|ongoing|current|currently|active|on(?!\s+(?:\d|(?:jan|feb|mar|apr|may|jun|jul|aug|sep"
                    r"|oct|nov|dec)[a-z]*\.?\s+\d))|daily|bid|tid|qd|prn|renewed|re-?filled|re-?ordered|re-?issued|re-?prescribed|continued"
                    r"|q\d+(?:-\d+)?\s*h(?:rs?|ours?)?|qhs|nightly|weekly|monthly)(?![a-z])")
_GOING_ON = re.compile(r"(?<![a-z])(?:since|ongoing|still|continues|continuing|remains)(?![a-z])")
"""Words in an item's own clause that keep it going under an ended lead-in or after a date
("Background: ... treated with HCTZ 25 mg since 2004")."""
_OWN_CURRENT = re.compile(r"(?<![a-z])(?:(?:is|are)\s+(?:still\s+)?(?:active|current|ongoing)|currently|remains?"
                          r"|continues?|\((?:active|current|ongoing)\))(?![a-z])")
"""A current label an item's own conjunct gives it (``reading._read``)."""
_ON_NOW = re.compile(r"(?<![a-z])(?:on|taking|takes|continues(?:\s+on)?|remains\s+on|still\s+on)\s*$")
"""A verb right before a drug that says the patient takes it now ("also on HCTZ", "taking X")."""
_RELATIVE_ON = re.compile(r"(?<![a-z])(?:for|with|on|in)?\s*(?:which|whom)(?![a-z])[^.;:()]*?"
                         r"(?<![a-z])(?:on|takes|taking|uses|using|receives|continues|remains\s+on)(?![a-z])[^.;:]*$")
"""A relative clause before the item that puts the patient on it now ("Hx of stroke and CHD, for which he's
on simvastatin 20, amlodipine 5 and ..."): a history lead-in opening the sentence does not reach past it."""
_DOSE_TIMES = frozenset({"om", "on", "od", "bd", "tds", "qds", "mane", "nocte"})
"""Latin directions for a dose's time (BNF, "Latin abbreviations": o.m. omni mane, in the morning; o.n.
omni nocte): after a dose, "amlodipine 5 mg OM" names no otitis media (CASI's sense of OM)."""
_DOSE_BEFORE = re.compile(r"\d(?:\.\d+)?\s*(?:mg|mcg|micrograms?|g|ml|units?|iu|puffs?|tabs?|tablets?|caps?|drops?)?"
                          r"\.?\s*(?:(?:po|sl|sc|im|iv|pr|top|inh|oral|orally|daily|once|twice|x\s*\d)\s*)*$")
_NOT_ENDED = re.compile(r"(?<![a-z])(?:not|never|none)\s+(?:(?:been|yet|ever|fully|actually|really|completely|"
                        r"formally|officially)\s+)*(?:stopped|discontinued|completed|ended|resolved|healed|cleared|"
                        r"finished|d/c'?d)(?![a-z])|(?<=[a-z])n't\s+(?:(?:been|yet|ever|fully|really)\s+)*"
                        r"(?:stopped|discontinued|completed|ended|resolved|healed|cleared|finished)(?![a-z])",
                        re.IGNORECASE)
"""An ended word under "not", "never" or "none" ("has not been stopped", "Gingivitis: not resolved",
"never discontinued", "- none resolved"): the item goes on. ``_read`` reads it as "ongoing" (the
same length), so no status rule and no ConText trigger takes the ended word for the item's."""


def _going_on(found: re.Match[str]) -> str:
    return "ongoing".ljust(len(found[0]))  # every match is longer than "ongoing" ("n't ended" is the shortest)


_STILL_GOING = re.compile(
    r"(?<![a-z])(?:still\s+(?:has|have|had|on|taking|takes|uses|using|running|present|active|ongoing|symptomatic)"
    r"(?:\s+(?:it|them))?|(?:continues|continuing)\s+to\s+(?:take|use|have)\s+(?:it|them)|(?:has|have)\s+come\s+back"
    r"|recurred|now\s+(?:resumed|restarted|re-?started|back\s+on)|(?:and|but)\s+(?:is|are)\s+(?:still\s+)?"
    r"(?:current|active|ongoing))(?![a-z])")
"""Words after an item that say it goes on now, whatever ended before ("he had strep throat last week
and still has it", "stopped by the GP but the patient continues to take it daily", "previously stopped,
now resumed"): the item is stated current."""


_SPACED_DASH = re.compile(r"\s[-\u2013\u2014]\s")
_ON_NOW_OWN = re.compile(r"^\s*(?:(?:and|but|now|still|currently|also)\s+)*(?:on|taking|takes|remains\s+on)\s*$")
"""A clause of its own that opens with the patient on the item now ("..., on clopidogrel")."""
_HISTORY_HEAD = re.compile(r"(?<![a-z])(?:history|hx|pmh|pmhx|psh|pshx|h/o|background)(?![a-z])")
_LISTED_CURRENT = re.compile(r"(?<![a-z])(?:current|active|meds|medications|problems?)(?![a-z])")
_LEAD_ENDED = re.compile(
    r"(?<![a-z])(?:(?<!-)old|prev|d/c'?d|dc'?d|historical|historic|history|hx|pmhx|psh|pshx|inactive|not active"
    r"|not current"
    r"|not ongoing|one-off|one-time"
    r"|no longer|background|earlier|former|remote"
    r"|expired|finished|done|self-limit(?:ed|ing)|episodic|acute episodes?|settled|got better)(?![a-z])")


def _clause_at(sentence: str, offset: int) -> str:
    """The clause of ``sentence`` (cut at commas and ``and``/``or`` lists aside) that holds ``offset``."""
    start = sentence.rfind(",", 0, offset) + 1
    end = sentence.find(",", offset)
    return sentence[start:end if end != -1 else len(sentence)]


_BRACKET_AFTER = re.compile(r"[^,;()\n]{0,30}?\(([^()\n]{0,60})\)")


def _brackets_before(clause: str, offset: int) -> str:
    """``clause`` with the brackets that close before ``offset`` blanked (same length).

    A bracket closing before an item belongs to what it follows ("CHD (since Feb 21, 2017)
    treated with simvastatin", "HTN (1929) on HCTZ"): its year dates that, not the item; a bracket
    cut open by a comma inside it ("2017) treated with ...") likewise.
    """
    before = clause[:max(0, min(offset, len(clause)))]
    blanked = re.sub(r"\([^()]*\)", lambda m: " " * len(m[0]), before)
    close = blanked.rfind(")")
    if close >= 0 and "(" not in blanked[:close]:
        blanked = " " * (close + 1) + blanked[close + 1:]
    return blanked + clause[len(before):]


def _past_lead_in(clause: str, offset: int) -> str:
    """``clause`` without a named lead-in before ``offset`` (``HTN (1929): HCTZ``, ``HTN (1929) - HCTZ``).

    A year in the lead-in dates what the lead-in names (a problem-oriented entry's problem, Weed
    1968), not the plan after its colon; a lead-in that is only a date ("2012: amoxicillin") still
    dates its items. ``clause`` is cut from its sentence at commas (``_clause_at``) and ``offset``
    is the item's offset in it.
    """
    before = clause[:max(0, min(offset, len(clause)))]
    cuts = list(LEAD_SEPARATOR.finditer(before))  # "HTN (1929): HCTZ" or "1. HTN (1929) - HCTZ 25 mg"
    if not cuts or not re.search(r"[a-z]{2}", _YEAR.sub(" ", before[:cuts[-1].start()].lower())):
        return clause
    return clause[cuts[-1].end():]


def _historical_at(ent: Any, doc: Any) -> tuple[int, ...]:
    """The character offsets of the ConText triggers that mark ``ent`` historical (``()``: none)."""
    if not ent._.is_historical:
        return ()
    return tuple(doc[m.modifier_span[0]].idx for m in ent._.modifiers if m.category == "HISTORICAL")


def _negated(ent: Any, doc: Any, text: str) -> bool:
    """True when ConText negates ``ent`` by a trigger whose bracket does not close before it.

    "(no prior hypertension diagnosis), BMI 28.42 kg/m2": a negation opened inside a bracket
    speaks of what the bracket holds; ConText's scope would run on to the sentence's end.
    """
    if not ent._.is_negated:
        return False
    for modifier in ent._.modifiers:
        if modifier.category != "NEGATED_EXISTENCE":
            continue
        start, _ = modifier.modifier_span
        between = text[doc[start].idx:ent.start_char]
        if _NEGATED_OTHER.match(between.lower()):
            continue
        if between.count(")") <= between.count("("):
            return True
    return False


def _uncertain(ent: Any, doc: Any, text: str) -> bool:
    """True when ConText makes ``ent`` uncertain or hypothetical, but not by a condition on the reader.

    "If you get called: last BP on file was 142/85 mmHg": a conditional whose subject is the
    handoff's reader ("if you", "if paged", "if called") frames what follows for the reader; it
    makes no finding about the patient hypothetical.
    """
    if not (ent._.is_uncertain or ent._.is_hypothetical):
        return False
    return any(m.category in ("POSSIBLE_EXISTENCE", "HYPOTHETICAL")
               and not _READER_CONDITION.match(text[doc[m.modifier_span[0]].idx:ent.start_char].lower())
               for m in ent._.modifiers)


_READER_CONDITION = re.compile(r"(?:if|when|should)\s+(?:you|paged|called|contacted|bleeped)(?![a-z])")


_NEGATED_OTHER = re.compile(
    r"(?:(?:with|has|had|and)\s+)?(?:n't|not|no|nil|nkda|without)(?:\s+(?:been|really|much|ever|known|recorded|documented|drug|significant))*"
    r"\s*(?:changed|altered|modified|adjusted|changes?\s+(?:to|in)|change\b|allerg\w*)(?![a-z])")
"""A negation whose object is not the item: a change ("his regimen hasn't changed in decades: A, B";
"no change to: A") or an allergy ("no recorded allergies and a long list of active problems: A").
The items after it are stated, not denied."""


@functools.lru_cache(maxsize=256)
def _read(summary: str, phrases: tuple[str, ...]) -> tuple[Mention, ...]:
    written, summary = summary, _NOT_ENDED.sub(_going_on, summary)  # same length: offsets hold
    plain = markup_free(fields(summary))
    bounded = bracketed_semicolons(plain)
    low = plain.lower()
    found: list[tuple[str, int, int]] = []
    for phrase in phrases:
        if normalise(phrase):
            found += [(normalise(phrase), m.start(), m.end()) for m in _finder(phrase).finditer(low)
                      if not (normalise(phrase) in _DOSE_TIMES and _DOSE_BEFORE.search(low, 0, m.start()))]
    # a name inside a longer one read at the same place is that one ("fluoride" in "Sodium fluoride
    # dental gel ... is finished" is read as "sodium fluoride", whose sentence's subject it is)
    found = [(p, s, e) for p, s, e in found if not any(a <= s and e <= b and b - a > e - s for _, a, b in found)]
    if not found:
        return ()
    from spacy.util import filter_spans

    nlp, context, sections = _pipeline()
    with _LOCK:  # the pipeline's components keep per-call state: one document at a time
        doc = nlp.make_doc(plain)
        for i, token in enumerate(doc):  # a sentence per line, and after . ! ? ; (``_sentence_bounds``)
            before = doc[i - 1] if i else None
            token.is_sent_start = before is None or "\n" in before.text or (
                before.text in (".", "!", "?", ";") and bounded[before.idx] != ","
                and bool(before.whitespace_ or token.is_space))
        spans = [doc.char_span(s, e, label="ITEM", alignment_mode="expand") for _, s, e in found]
        doc.ents = filter_spans([s for s in spans if s is not None])
        doc = sections(context(doc))
        ents = [(e.start_char, e.end_char, _negated(e, doc, plain), _historical_at(e, doc),
                 _uncertain(e, doc, plain),
                 str(e._.section_category or ""), e._.section_title.start_char if e._.section_title else -1)
                for e in doc.ents]
    out = []
    others = other_orders(plain)
    for phrase, start, end in found:
        ent = next((e for e in ents if e[0] <= start and end <= e[1]), (start, end, False, (), False, "", -1))
        _, _, negated, triggers, uncertain, section, title = ent
        triggers = tuple(t for t in triggers  # other orders' stop, not the item's own ("the old fluoride gel Rx")
                         if not any(a <= t < b and not a <= start < b for a, b in others))
        s0, s1 = _sentence_bounds(bounded, start)
        sentence = plain[s0:s1].strip()
        lead, lead_at = lead_in(summary, start)
        own = own_lead_in(plain[s0:s1], start - s0)
        if not own:  # "Resolved: a; b; c": a lead-in opening the line governs its items past a ";"
            line_part = LAST_STOP.split(plain[plain.rfind("\n", 0, start) + 1:start])[-1]
            own = own_lead_in(line_part, len(line_part))
        line0 = plain.rfind("\n", 0, start) + 1
        if not (line0 <= title < start or (lead_at >= 0 and lead_at <= title < lead_at + len(lead) + 8)):
            section = ""  # a heading counts for its own line, or for the lines it governs (``lead_in``)
        clause = _clause_at(plain[s0:start] + "x" * (end - start) + plain[end:s1], start - s0)  # the item: a word
        allergy = (allergic(clause + " " + lead + " " + own) or section in ("allergies", "allergy")
                   or allergy_line(sentence))
        clause_ended, sentence_current = ended_clause(plain[s0:s1], start - s0)
        clause_ended = (clause_ended or trailing_status(plain[s0:s1], end - s0)
                        or predicate_status(plain[s0:s1], start - s0) or list_status(plain[s0:s1], start - s0)
                        or subject_predicate(plain[s0:s1], start - s0, end - s0)
                        or object_status(plain[s0:s1], start - s0) or echo_status(plain[s0:s1], start - s0)
                        or bullet_status(summary[line0:s1], start - line0, end - line0, listed=bool(lead)))
        # A history trigger in the line's own lead-in ("Atopic history: A, B and C, all still on his
        # active list") does not end items the sentence labels current; elsewhere it does.
        # A history trigger in an earlier clause ("h/o stroke 2006, HTN also on HCTZ 25mg") does not
        # end a drug its own clause says the patient is on.
        clause_at = s0 + plain[s0:start].rfind(",") + 1
        on_now = bool(_ON_NOW.search(plain[clause_at:start].lower()))
        # "IHD since 1994 - hx abnormal coronary imaging that year - on Zocor (simvastatin) 20 mg, Toprol-XL ...":
        # a history trigger in an aside two spaced dashes set off does not reach past the closing one
        dashes = [m.start() for m in _SPACED_DASH.finditer(plain, s0, start)]
        historical = any(not (own and s0 <= t < s0 + len(own) and sentence_current) and not (t < clause_at and on_now)
                         and not (any(d < t for d in dashes) and any(t < d for d in dashes)) for t in triggers)
        # An item whose own conjunct labels it current ("hypertension is active and strep throat
        # resolved"; "lisinopril 10 mg (active) and amoxicillin (completed)") keeps that label over
        # an ended word or a history trigger in the other conjunct.
        clause_end = plain.find(",", end, s1)
        a, b = conjunct_span(plain[clause_at:clause_end if clause_end >= 0 else s1], start - clause_at)
        conj = plain[clause_at + a:clause_at + b].lower()
        if ((current_label(conj) or _OWN_CURRENT.search(conj)) and not ended_clause(conj, start - clause_at - a)[0]
                and not STATUS_WORD.search(conj)):
            clause_ended = False  # ... and "active history of asthma" is a known, active diagnosis (``text._ended_in``)
            historical = any(clause_at + a <= t < clause_at + b and not plain[t:t + 10].lower().startswith("history of")
                             for t in triggers)
        # A collective qualifier gives no item a status, but an item that states its own in its own
        # clause ("- penicillin V (stopped)" under "Medications (current and past)") keeps it.
        own_status = clause_ended or historical or negated or current_label(clause)
        bracket = _BRACKET_AFTER.match(plain, end)  # "acetaminophen 325 mg (sprain, 2019)": its own bracket
        if bracket and (bracket.end() > s1 or re.search(r"[.!?:]\s", plain[end:bracket.start(1)])):
            bracket = None  # a bracket of another sentence
        own_current = bool(bracket and current_label(bracket[1]) and not ended_clause(bracket[1], -1)[0])
        bracket_ended = bool(bracket and BRACKET_STATUS.search(bracket[1]))
        entry = entry_status(summary, line0, start, s1)  # "Sodium fluoride gel\n    Inactive (completed)"
        own_current = own_current or entry == "current"
        bracket_ended = bracket_ended or entry == "ended"
        # a collective lead-in in the item's clause ("Past and current history: HTN (current)") leaves
        # an item that states its own status in its own bracket that status
        hedge_collective = (collective(clause) and not (own_current or bracket_ended)) or (
            any(collective(t) for t in (sentence, lead, own)) and not own_status)
        governing = own or lead  # a line's own lead-in ("**Old problems**: a; b") speaks over a heading above
        lead_ended = (ended_clause(governing, -1)[0]
                      or bool(_LEAD_ENDED.search(governing.lower()))) if governing else False
        low_sentence = " ".join(sentence.lstrip(" -*•").lower().split())
        sentence_ended = bool(_SENTENCE_ENDED.match(low_sentence) or _DISTRIBUTIVE.search(low_sentence)) and not (
            _RELATIVE_ON.search(plain[s0:start].lower()) or (clause_at > s0 and _ON_NOW_OWN.search(
                plain[clause_at:start].lower())))  # "Prior stroke, on clopidogrel": its own clause puts him on it
        at_clause = start - s0 - (plain[s0:start].rfind(",") + 1)  # the item's offset in its clause
        low_clause = " ".join(_past_lead_in(_brackets_before(clause, at_clause), at_clause).lower().split())
        listed_current = section in ("medications", "current", "problem_list") or bool(
            governing and _LISTED_CURRENT.search(governing.lower()) and not lead_ended)
        clause_ended = clause_ended or bracket_ended
        low_clause = low_clause + (" " + " ".join(bracket[1].lower().split()) if bracket else "")
        opened = plain.rfind("(", s0, start)  # "(20/05/2012, with strep throat)": the bracket's date is its items'
        if opened >= 0 and plain.find(")", opened, start) == -1:
            low_clause += " " + " ".join(plain[opened + 1:start].lower().split())
        dated = ((bool(_YEAR.search(low_clause)) and not _STILL.search(low_clause))  # "ankle sprain (2015)"
                 or bool(DATE_RANGE.search(low_clause))) and not listed_current  # a dated line under "Current
        # medications" is listed as current
        going_on = bool(_STILL_GOING.search(plain[end:s1].lower()))  # "... and still has it", "now restarted"
        if going_on and not contradictory(sentence) and not negated:
            historical = clause_ended = lead_ended = sentence_ended = dated = False
        tabled = table_status(summary, start)
        if tabled is not None and not hedge_collective:
            status = tabled  # the row's own status column speaks for its item
        elif hedge_collective or contradictory(sentence) or (uncertain and not negated):
            status = "hedged"  # "possible hypertension", "? CKD", "rule out sepsis": no status committed
        elif negated:
            status = "negated"
        elif not own_current and (historical or section in ENDED_SECTIONS or clause_ended
                                  or ((lead_ended or sentence_ended or dated) and not sentence_current
                                      and not _GOING_ON.search(low_clause))):  # "PMH: HTN (ongoing)": its own
            status = "ended"
        else:
            status = "current"
        head = governing.lower()
        history_head = bool(_HISTORY_HEAD.search(head))
        over = status == "ended" and (resolved(sentence) or resolved(head) or (
            not history_head and (section in ("past", "past_medications") or lead_ended)))
        raw = written[s0:s1]
        out.append(Mention(phrase, start, end, raw.strip(), status, allergy, hedge_collective,
                           s0 + len(raw) - len(raw.lstrip()), over, uncertain and not negated))
        own_text = clause[clause.rfind(":") + 1:]
        if (status == "hedged" and (hedge_collective or contradictory(sentence)) and not uncertain
                and not (contradictory(own_text) or collective(own_text))
                and list_marks_items(summary, line0 if own or not lead else lead_at)):
            # "Problems (active and resolved): HTN; strep throat (resolved)": where the list's items say
            # which ended, an item that says nothing is one of the others, current
            ended_own = bracket_ended or (clause_ended and says_ended(own_text))
            out[-1] = dataclasses.replace(out[-1], status="ended" if ended_own else "current", collective=False,
                                          over=over or ended_own)
    return tuple(sorted(out, key=lambda m: m.start))


def read(summary: str, phrases: Iterable[str]) -> list[Mention]:
    """Every mention of ``phrases`` in ``summary``, in text order, with its status (module docstring)."""
    return list(_read(summary, tuple(sorted(set(phrases)))))


