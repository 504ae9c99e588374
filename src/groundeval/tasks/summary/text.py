"""Text matching for the summary task: normalised names, stated values with units, words.

Shared by the rule layer of the scorer (``scorer``) and the rule-based ``baseline`` judge
(``judge.BaselineJudge``): what text matching can decide and nothing more.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from groundeval.tasks.summary.numbers import bound_after, bound_before, rounds_to

__all__ = [
    "CURRENT_WORDS",
    "ENDED_WORDS",
    "RESOLVED_WORDS",
    "UNIT_ALIASES",
    "any_contains",
    "collective",
    "conjunct_span",
    "contains",
    "contradictory",
    "contradictory_mention",
    "current_label",
    "ended_clause",
    "markup_free",
    "normalise",
    "other_orders",
    "resolved",
    "sentences",
    "stated_values",
    "value_matches",
    "word_count",
]

UNIT_ALIASES: dict[str, str] = {
    "mmhg": "mm[hg]", "mm hg": "mm[hg]", "mm[hg]": "mm[hg]",
    "kg/m²": "kg/m2", "kg/m^2": "kg/m2", "kg/m2": "kg/m2",
    "mg/dl": "mg/dl", "mmol/l": "mmol/l", "meq/l": "mmol/l", "%": "%",
    "ml/min/1.73m2": "ml/min/{1.73_m2}", "ml/min/1.73 m2": "ml/min/{1.73_m2}", "ml/min/{1.73_m2}": "ml/min/{1.73_m2}",
    "ml/min": "ml/min/{1.73_m2}",
    "mg": "mg", "mcg": "mcg", "ug": "mcg", "µg": "mcg", "g": "g", "kg": "kg", "cm": "cm", "ml": "ml",
    "unt/ml": "unt/ml", "units/ml": "unt/ml", "mg/ml": "mg/ml", "mg/g": "mg/g", "mg/actuat": "mg/actuat", "meq": "meq",
    "/min": "/min", "bpm": "/min", "beats/min": "/min", "g/dl": "g/dl", "pg/ml": "pg/ml", "ng/ml": "ng/ml",
    "mcg/h": "mcg/h", "mcg/hr": "mcg/h", "mcg/hour": "mcg/h", "ug/h": "mcg/h", "ug/hr": "mcg/h", "µg/h": "mcg/h",
    "µg/hr": "mcg/h", "mg/h": "mg/h", "mg/hr": "mg/h", "mg/d": "mg/d", "mg/day": "mg/d", "mg/24h": "mg/d",
    "mg/24 h": "mg/d", "mg/24hr": "mg/d", "mg/24 hr": "mg/d", "mg/24 hours": "mg/d", "mcg/d": "mcg/d",
    "mcg/day": "mcg/d", "mcg/24h": "mcg/d", "mcg/24 h": "mcg/d", "mcg/24hr": "mcg/d",
    "°c": "cel", "° c": "cel", "℃": "cel", "degc": "cel", "deg c": "cel", "cel": "cel",
    "°f": "[degf]", "° f": "[degf]", "℉": "[degf]", "degf": "[degf]", "deg f": "[degf]", "[degf]": "[degf]",
    "mg/mg": "mg/mg",
    # SI units of results as laboratories outside the US report them ("Hb 132 g/L", "creatinine 88
    # umol/L", IFCC "HbA1c 48 mmol/mol")
    "g/l": "g/l", "umol/l": "umol/l", "µmol/l": "umol/l", "\u03bcmol/l": "umol/l", "micromol/l": "umol/l",
    "mmol/mol": "mmol/mol",
}
"""Unit spellings a summary may use -> one key per unit (lower case, UCUM-like). Units outside
this table are not read as units: a number followed by one is not checked. A patch's rate
(``25 mcg/h``, ``0.015 mg/24 h``) and a temperature (``37.5 °C``, ``99.4 °F``) are units."""

ENDED_WORDS = ("stopped", "discontinued", "completed", "previous", "previously", "past", "former", "formerly",
               "no longer", "ended", "prior", "resolved", "history of", "historical", "healed", "off ")
"""Words that mark a drug or a problem as not current in the sentence naming it."""

RESOLVED_WORDS = ("resolved", "healed", "cleared", "recovered", "no longer", "inactive", "not active", "ended",
                  "remission", "cured", "stopped", "discontinued", "completed", "neither", "none active")
"""Words that say a problem is over, not merely dated: "prior stroke" or "MI in 2015" keeps a
problem on the list (SNOMED CT files event disorders such as stroke and myocardial infarction as
disorders that stay on the problem list; a "history of" finding, 392521001, is a situation about
the patient, not a resolution), "stroke, resolved" does not."""

_RESOLVED = re.compile("|".join(rf"(?<![a-z]){re.escape(w)}(?![a-z])" for w in RESOLVED_WORDS))


def resolved(sentence: str) -> bool:
    """True when ``sentence`` holds a word of ``RESOLVED_WORDS`` (lower-cased, whole words).

    Other orders of a drug said to be over ("the prior 2006 and 2017 orders having been stopped",
    ``_OTHER_ORDERS``) end nothing the sentence names.
    """
    return bool(_RESOLVED.search(_OTHER_ORDERS.sub(" ", " ".join(sentence.lower().split()))))


CURRENT_WORDS = ("current", "currently", "active", "ongoing")
"""Words that label a drug or a problem as current. One preceded by ``not`` (or ``not a``, ``not
an``, ``not the``: "is not a current medicine"), or followed by ``order``, ``prescription``,
``script``, ``Rx``, ``supply`` or ``one`` (another order of it: "older courses - completed (current
order dated 2025)"), ``no longer``,
``previously``, ``formerly``, ``was``, ``were``, ``neither``, ``none`` or ``nor`` ("no longer active",
"neither active") is not a current label."""

_CURRENT = re.compile(r"(?<![a-z])(?<!not )(?<!neither )(?<!none )(?<!nor )(?<!no longer )(?<!previously )"
                      r"(?<!formerly )(?<!was )(?<!were )(?<!no )(?<!not a )(?<!not an )(?<!no longer a )"
                      r"(?<!no longer an )(?<!not the )"
                      r"(?:currently|current|active|ongoing)(?![a-z])"
                      r"(?!\s+(?:\d{4}\s+)?(?:order|prescription|script|rx|supply|one|course|fill)(?![a-z]))"
                      r"(?!\s+(?:off|not|no longer|stopped|discontinued|ended)(?![a-z]))")
_DOSE_HISTORY = re.compile(r"(?<![a-z])(?:previously|formerly|prior|earlier|was|were|from)\s+(?:dose\s+|on\s+)?"
                           r"\d+(?:\.\d+)?\s*(?:mg|mcg|g|ml|units?|%)(?![a-z])")
_OTHER_ORDERS = re.compile(
    r"(?<![a-z])(?:older|earlier|prior|previous|past|other|old|the)\s+(?:[a-z0-9/']+\s+(?:and\s+[a-z0-9/']+\s+)?){0,2}"
    r"(?:scripts?|orders?|courses?|prescriptions?|rxs?|supplies|ones|fills?)"
    r"(?:\s+(?:in|from)\s+[^,;()]{0,24}?|\s+[0-9/']+(?:\s*(?:and|,|/)\s*[0-9/']+)*)?\s+(?:[-\u2013\u2014:]\s*)?"
    r"(?:were\s+|was\s+|have\s+been\s+|had\s+been\s+|having\s+been\s+|all\s+|now\s+)*"
    r"(?:completed|stopped|discontinued|ended|expired|d/c'?d|finished|done)(?![a-z])")
"""Other orders of the same drug said to be over ("current script 2025; older scripts completed",
"the 2006 and 2017 ones were stopped"): about those orders, not the item the clause names."""
_NONE_ENDED = re.compile(r"(?<![a-z])(?:no|nothing|never|none|not\s+any)(?![a-z])"
                         r"(?:(?!(?<![a-z])(?:but|however|although|though|whereas|while|and)(?![a-z]))[^,;.()]){0,40}"
                         r"(?<![a-z])(?:stopped|discontinued|completed|ended|resolved|past|previous|prior)(?![a-z])"
                         r"(?:\s*(?:or|and|/|,)\s*(?:stopped|discontinued|completed|ended|resolved)(?![a-z]))*")
"""An ended word under a negation ("nothing has ever been discontinued", "no previous drugs
stopped", "no past or resolved problems"): it says nothing ended."""
_ENDED = re.compile("|".join(rf"(?<![a-z]){re.escape(w.strip())}(?![a-z-])" if w == "off " else
                             rf"(?<![a-z]){re.escape(w.strip())}(?![a-z])" for w in ENDED_WORDS))
"""Any of ``ENDED_WORDS`` as whole words ("off", but not "off-label")."""
_OTHER_HISTORY = re.compile(
    r"(?<![a-z])(?:" + "|".join(re.escape(w.strip()) for w in ENDED_WORDS) + r")\s+(?:on\s+)?"
    r"(?=[a-z])(?!(?:in|at|by|to|due|for|and|or|since|after|with|because|as|of|the|a|an|on|now|per|until|when|while"
    r"|current|currently|active|ongoing)(?![a-z]))"
    r"(?!(?!(?:poorly\s+|well\s+|un)?(?:controlled|elevated|raised|compensated|decompensated)(?![a-z]))[a-z]+ed(?![a-z]))")
"""An ended word followed by what it ended ("prior MI", "previously angina", "history of heroin use",
"previously on losartan"): history of that other thing, not a status of the item the clause names.
Not before a participle ("previously treated": a status of the clause's item), but before a state
adjective ("previously uncontrolled", "no longer raised": the item's past state, not its end)."""
_RESTARTED = re.compile(
    r"(?<![a-z])(?:restarted|re-started|resumed|reinstated|re-?prescribed|back\s+on)(?![a-z])[^,;()]{0,60}?"
    r"(?<![a-z])(?:after|following)\s+(?:being\s+|having\s+been\s+|it\s+was\s+|they\s+were\s+|its\s+)?"
    r"(?:(?:earlier|previous|prior|two|several)\s+)?(?:courses?\s+(?:were\s+|was\s+)?)?"
    r"(?:stopped|discontinued|completed|ended|held|d/c'?d|dc'?d)(?:\s+(?:twice|once|\w+\s+times))?(?![a-z])")
"""A drug taken again after a stop ("Plavix 75 (restarted March 2019 after being stopped twice)"):
the stop is the past of a drug the patient is on now."""
_PRIOR_VISIT = re.compile(r"(?<![a-z])(?:from|since|than|as|vs\.?|versus|to|at)\s+(?:the\s+)?(?:prior|previous)"
                          r"(?![a-z])(?:\s+(?:visit|review|admission|note|encounter|handover))?")
""""unchanged from prior", "same as previous": the earlier visit, not an ended item."""
_PAST_STATE = re.compile(r"(?<![a-z])(?:previously|formerly|prior|no longer)\s+(?:poorly\s+|well\s+|un)?"
                         r"(?:controlled|elevated|raised|compensated|decompensated|symptomatic|stable|unstable|high|low)"
                         r"(?![a-z])")
"""An item's past state ("previously uncontrolled", "no longer raised"): it goes on."""
_UNIT_PATTERN = "|".join(sorted((re.escape(u) for u in UNIT_ALIASES), key=len, reverse=True))
_DENOMINATOR = (r"/\s*(?:\d|(?:m?g|mcg|ug|µg|kg|[mdµ]?l|min|h|hr|d|day|dose|actuat\w*|spray|puff|tab\w*|cap\w*"
                r"|m2|m²|mmol|units?|unt|vial|patch|inh\w*)(?![a-z]))")
_VALUE = re.compile(rf"(?<![\w.])(\d+(?:\.\d+)?)\s*({_UNIT_PATTERN})(?!\w)(?!{_DENOMINATOR})", re.IGNORECASE)
_NUMBER = re.compile(r"\d+(?:\.\d+)?")
_SERIES = re.compile(rf"(?<![\w./\u2013-])(\d+(?:\.\d+)?(?:\s*[/\u2013-]\s*\d+(?:\.\d+)?)+)\s*({_UNIT_PATTERN})(?!\w)"
                     rf"(?!{_DENOMINATOR})", re.IGNORECASE)
"""Numbers sharing one unit: a combination's strengths (``5/325 mg``) or a range (``5.7-6.4 %``)."""
_MASS = r"mg|mcg|ug|µg|g"
_PAIR = re.compile(rf"(?<![\w.])(\d+(?:\.\d+)?)\s*({_MASS})\s*/\s*(\d+(?:\.\d+)?)\s*({_MASS})(?!\w)(?!{_DENOMINATOR})",
                   re.IGNORECASE)
"""Two strengths each with its unit: ``2 mg/0.5 mg`` (buprenorphine/naloxone)."""
_PER_VOLUME = re.compile(rf"(?<![\w.])(\d+(?:\.\d+)?)\s*({_MASS}|units?|unt|meq)\s*/\s*(\d+(?:\.\d+)?)\s*ml(?!\w)",
                         re.IGNORECASE)
"""An amount in a volume: ``2.5 mg/3 mL`` (albuterol 0.83 mg/mL), ``150 mg/3 mL``."""
_PRESSURE = re.compile(r"(?<![\w.])(\d{2,3})\s*/\s*(\d{2,3})\s*(mm\s?\[?hg\]?)", re.IGNORECASE)
_WORD = re.compile(r"\S+")
_HAS_WORD = re.compile(r"\w")
_MARKUP = re.compile(r"[|*#`>]|^\s*[-+•]\s|(?<=\n)\s*[-+•]\s|^\s*\d+[.)]\s|(?<=\n)\s*\d+[.)]\s|:?-{3,}:?")
_CUR_WORD = r"(?:current(?:ly)?|active|ongoing)"
_END_WORD = r"(?:stopped|discontinued|past|previous|prior|resolved|ended|completed|inactive|historical)"
_STATUS = rf"(?:{_CUR_WORD}|{_END_WORD})"
_QUANT = r"(?:some|others|several|many|most|a few|few|certain)"
_COLLECTIVE = re.compile(
    rf"(?<![a-z])(?:{_QUANT}\s+(?:\w+\s+){{0,2}}?(?:since\s+|now\s+|are\s+|were\s+|still\s+)?{_STATUS}"
    rf"|{_CUR_WORD}\s*(?:and|or|/|&|\+)\s*{_END_WORD}|{_END_WORD}\s*(?:and|or|/|&|\+)\s*{_CUR_WORD}"
    rf"|all\s+ever\s+(?:prescribed|recorded|listed|taken)"
    rf"|(?:record|chart)\s+contents|contents\s+of\s+the\s+(?:record|chart)"
    rf"|(?:every|all)\s+coded\s+(?:entr(?:y|ies)|items?|conditions?|drugs?|displays?)"
    rf"|(?:on|taking)\s*(?:and|or|/|&|\+)\s*(?:previously|formerly|prior(?:ly)?|past|no longer|once)"
    rf"\s*(?:on|taking|taken)?"
    rf"|(?:previously|formerly|once)\s+(?:on|taking)\s*(?:and|or|/|&|\+)\s*(?:currently\s+)?(?:on|taking)"
    rf"|(?:whether|if)\s+{_STATUS}\s+or\s+not)(?![a-z])")
_SENTENCE = re.compile(r"(?<=[.!?;\n])\s+|\n+")


def normalise(text: str) -> str:
    """Lower case, Unicode NFKC, every run of non-alphanumerics one space, trimmed."""
    folded = unicodedata.normalize("NFKC", text).lower()
    return " ".join(re.sub(r"[^0-9a-z%]+", " ", folded).split())


def contains(text: str, phrase: str) -> bool:
    """True when ``phrase`` appears in ``text`` as whole words, after ``normalise`` of both."""
    needle = normalise(phrase)
    return bool(needle) and f" {needle} " in f" {normalise(text)} "


def word_count(text: str) -> int:
    """Words: whitespace-separated tokens holding a letter or a digit.

    Table pipes, Markdown markup (``|``, ``---``, ``**``, ``#``) and list bullets are not words, so a
    table counts the words of its cells.
    """
    return sum(1 for w in _WORD.findall(text) if _HAS_WORD.search(w))


def markup_free(text: str) -> str:
    """``text`` with Markdown markup (table pipes, ``*``, ``#``, backticks, bullets, rules) turned into spaces.

    Same length as ``text`` (offsets hold), so a table row reads as its cells in order.
    """
    return _MARKUP.sub(lambda m: " " * len(m[0]), text)


def collective(text: str) -> bool:
    """True when ``text`` qualifies a list as a whole rather than each item.

    "some current, others stopped", "(all ever prescribed), several since stopped", "current and
    past", "active/resolved", ", some stopped", "on / previously on", "Record contents" (a list
    given as what the record holds, not as what is current): a quantifier (``some``, ``others``, ``several``,
    ``many``, ``most``, ``a few``, ``certain``) before a status word, a current and an ended word
    joined by ``and``/``or``/``/`` (``completed/stopped`` is not one), or "all ever prescribed".
    Such a qualifier gives no
    item of its list a status (``docs/tasks/summary.md``).
    """
    return bool(_COLLECTIVE.search(" ".join(text.lower().split())))


def current_label(text: str) -> bool:
    """True when ``text`` holds a current label (``CURRENT_WORDS``, not negated: "no current", "currently off")."""
    return bool(_CURRENT.search(" ".join(text.lower().split())))


def ended_clause(sentence: str, offset: int) -> tuple[bool, bool]:
    """``(ended, current)`` for the item at ``offset`` of ``sentence``.

    ``ended``: the clause holding ``offset`` (the sentence cut at commas outside brackets) holds an
    ended word (``ENDED_WORDS``) that is not another thing's history ("CHF after a previous MI":
    ``_ANOTHERS_PAST`` before words that do not reach the item, ``_names_at``); ``current``: the
    sentence holds a current label (``CURRENT_WORDS``). ``offset`` -1 reads the whole ``sentence``
    as one clause with no item in it (a lead-in, an item's own bracket).
    """
    pos, clause = 0, sentence
    for part in _clauses(sentence):
        if pos <= offset <= pos + len(part):
            clause = part
            break
        pos += len(part) + 1
    at = offset - pos  # the item's offset in its clause
    relative = _RELATIVE.search(clause.lower(), 0, max(0, at))
    if relative:  # "a history of opioid abuse for which he remains on X": the relative clause is X's own
        clause, at = clause[relative.end():], at - relative.end()
    if 0 <= at <= len(clause):  # an item in the clause (``offset`` -1: none, a lead-in or a bracket read alone)
        low_clause = clause.lower()
        clause = _ANOTHERS_PAST.sub(
            lambda m: m[0] if _names_at(low_clause, m.end(), at) or _OTHER_ORDERS.match(low_clause, m.start())
            else " " * len(m[0]), low_clause)
    # "(previously 5 mg)" dates a dose, not the drug; "older scripts completed" speaks of other orders
    low = _PAST_STATE.sub(" ", _PRIOR_VISIT.sub(" ", _NONE_ENDED.sub(" ", _OTHER_ORDERS.sub(" ", _DOSE_HISTORY.sub(
        " ", _RESTARTED.sub(" restarted ", " ".join(clause.lower().split())))))))
    return _ended_in(low), bool(_CURRENT.search(" ".join(sentence.lower().split())))


def _ended_in(low: str) -> bool:
    """True when ``low`` holds an ended word, "history of" only where no current label stands beside it.

    "History of hypertension (active)", "active history of asthma": a history of a problem a clinician
    calls active is a known diagnosis that goes on, not one that ended (SNOMED CT files "history of"
    findings as situations about the patient, 392521001, not as resolutions).
    """
    words = {m.group(0).strip() for m in _ENDED.finditer(low)}
    return bool(words) and not (words <= {"history of"} and _CURRENT.search(low))


_ANOTHERS_PAST = re.compile(
    r"(?<![a-z])(?:(?:previous|prior|past|former)\s+(?=[a-z])(?!(?:and|or|on|medical|history|histories|medications?"
    r"|meds|medicines?|problems?|diagnos\w*|conditions?|issues?|illness\w*|drugs?|prescriptions?|orders?|scripts?"
    r"|fills?|rxs?|supplies|ones|treatments?|therapy|therapies|regimens?|use|dose|doses)(?![a-z]))"
    r"|(?:previously|formerly)\s+on\s+(?=[a-z]))")
"""A past adjective before a noun ("a previous MI", "prior stroke", "previously on atenolol"): that
thing's history. Not before a class of items ("previous medications": a lead-in); other orders
("prior courses completed") are ``_OTHER_ORDERS``'."""


def other_orders(text: str) -> list[tuple[int, int]]:
    """``(start, end)`` of each place ``text`` says other orders of a drug ended (``_OTHER_ORDERS``).

    "clopidogrel 75 mg (current course started March 2019 - the 2006 and 2017 courses were
    stopped)": the stop is those courses', so a ConText history trigger inside it ends nothing.
    """
    return [m.span() for m in _OTHER_ORDERS.finditer(text.lower())]


def _names_at(clause: str, start: int, at: int) -> bool:
    """True when the words from ``start`` reach the item at ``at`` with no other thing between.

    ``prior stroke``: "prior" is the item's own history; ``CHF after a previous MI``, ``prior
    stroke (2006) and hypertension``: it is another thing's (``_ANOTHERS_PAST``), so it ends
    neither CHF nor hypertension.
    """
    between = clause[start:max(start, at)].lower()
    return start <= at <= start + 30 and not re.search(r"[,;()]|(?<![a-z])(?:and|or|with|after|since|for|despite"
                                                       r"|following|due|than)(?![a-z])", between)


_RELATIVE = re.compile(r"(?<![a-z])(?:for|with|on|in)?\s*(?:which|whom)(?![a-z])(?![^()]*\))")
"""A relative pronoun opening a new clause before the item (not inside a bracket)."""


def bracketed_semicolons(text: str) -> str:
    """``text`` with every ``;`` inside round or square brackets (on its line) made a ``,``; same length.

    A semicolon inside a bracket separates the bracket's own parts ("clopidogrel 75 mg (restarted
    2019; earlier courses stopped), digoxin 125 mcg"): it ends no sentence, so what the bracket says
    stays in it.
    """
    out, depth = list(text), 0
    for i, ch in enumerate(text):
        if ch == "\n":
            depth = 0
        elif ch in "([":
            depth += 1
        elif ch in ")]":
            depth = max(0, depth - 1)
        elif ch == ";" and depth:
            out[i] = ","
    return "".join(out)


def sentences(text: str) -> list[str]:
    """The text cut at sentence ends, semicolons (outside brackets) and line breaks (list items are sentences)."""
    cuts = [(m.start(), m.end()) for m in _SENTENCE.finditer(bracketed_semicolons(text))]
    starts = [0, *(e for _, e in cuts)]
    ends = [*(s for s, _ in cuts), len(text)]
    return [text[a:b].strip() for a, b in zip(starts, ends, strict=True) if text[a:b].strip()]


def _cut_outside_brackets(text: str, cut: Callable[[int], int | None]) -> list[tuple[int, int]]:
    """``(start, end)`` of the parts of ``text`` cut where ``cut(i)`` (outside brackets) gives the next part's start."""
    out, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        if ch in "([":
            depth += 1
        elif ch in ")]":
            depth = max(0, depth - 1)
        elif depth == 0 and i >= start and (after := cut(i)) is not None:
            out.append((start, i))
            start = after
    out.append((start, len(text)))
    return out


def _clauses(sentence: str) -> list[str]:
    """The sentence cut at commas outside brackets."""
    return [sentence[a:b] for a, b in _cut_outside_brackets(sentence, lambda i: i + 1 if sentence[i] == "," else None)]


def contradictory(sentence: str) -> bool:
    """True when a clause of ``sentence`` labels what it names both current and ended.

    A clause is the sentence cut at commas outside brackets and at a conjunction joining two
    statements (``_CONJUNCTION``), so ``metformin (past/current)``, ``asthma (active, resolved)``
    and ``asthma active and resolved`` are contradictory while ``currently on lisinopril,
    previously on metformin`` and ``hypertension is active and strep throat resolved`` are not.
    The labels are ``CURRENT_WORDS`` and ``ENDED_WORDS`` as whole words, lower-cased. The rule is
    the project's rule for hedged answers: labels that cannot both be true state neither, and
    count as a contradiction (``docs/tasks/summary.md``).
    """
    low = _PRIOR_VISIT.sub(" ", _NONE_ENDED.sub(" ", _OTHER_ORDERS.sub(" ", _OTHER_HISTORY.sub(" ", _DOSE_HISTORY.sub(
        " ", " ".join(sentence.lower().split()))))))
    return any(_CURRENT.search(part) and _ended_in(part)
               for clause in _clauses(low) for part in _conjoined(clause))


_CONJUNCTION = re.compile(
    rf"\s(?:and|but|while|whereas|although|though|yet|with)\s(?!\s*(?:now\s+|since\s+)?(?:(?:{_END_WORD})(?![a-z])"
    rf"|(?:{_CUR_WORD})(?![a-z])(?!\s+(?!(?:and|or|but)(?![a-z]))[a-z])))")
"""A conjunction joining two statements ("hypertension is active and strep throat resolved", "on
lisinopril currently while amoxicillin was stopped", "a history of stroke and active hypertension");
not one joining two statuses of one item ("active and resolved", "current and past": a collective
or contradictory label)."""


def _conjoined_spans(clause: str) -> list[tuple[int, int]]:
    """``(start, end)`` of each part of ``clause`` cut at ``_CONJUNCTION``s outside brackets."""
    low = clause.lower()

    def cut(i: int) -> int | None:
        found = _CONJUNCTION.match(low, i) if low[i].isspace() else None
        return found.end() if found else None

    return _cut_outside_brackets(low, cut)


def conjunct_span(clause: str, offset: int) -> tuple[int, int]:
    """``(start, end)`` in ``clause`` of the part holding ``offset``, cut at statement conjunctions.

    The cuts are ``_CONJUNCTION``s outside brackets ("HTN is active and strep throat resolved").
    """
    return next(((a, b) for a, b in _conjoined_spans(clause) if a <= offset <= b), (0, len(clause)))


def _conjoined(clause: str) -> list[str]:
    """``clause`` cut at ``_CONJUNCTION``s outside brackets."""
    return [clause[a:b] for a, b in _conjoined_spans(clause)]



def contradictory_mention(text: str, names: Sequence[str]) -> str | None:
    """The first sentence of ``text`` that names any of ``names`` (``contains``) and is ``contradictory``, or None."""
    for s in sentences(text):
        if contradictory(s) and any(contains(s, n) for n in names):
            return s
    return None


def _unit(raw: str) -> str:
    return UNIT_ALIASES.get(" ".join(raw.lower().split()), raw.lower())


def stated_values(text: str) -> list[dict[str, Any]]:
    """Every number the text states with a unit.

    Returns:
        ``{"text", "value", "unit", "decimals", "start", "end", "series", "per"}`` dicts in text
        order: ``unit`` a key of ``UNIT_ALIASES``; ``series`` ``"/"`` or ``"-"`` for a number of a
        series sharing one unit (``5/325 mg``, ``2 mg/0.5 mg``, ``5.7-6.4 %``), else ``""``;
        ``per`` the volume in mL of an amount stated per volume (``2.5 mg/3 mL``: value 2.5,
        unit ``mg``, per 3.0), else None.

    ``132/85 mmHg`` gives two values in ``mm[hg]``; a number followed by no unit of
    ``UNIT_ALIASES`` is not stated with a unit and is not returned, nor is one whose unit goes on
    as a rate or concentration the table does not hold (``0.4 mg/spray``, ``5 mg/kg``), nor a
    bound (``<5.7 %``, ``>= 90 mL/min``: ``numbers.bound_before``); a strength followed by the next
    ingredient (``hydrocodone 10 mg/APAP 300 mg``) is read (10 mg).
    """
    out: list[dict[str, Any]] = []
    taken: list[tuple[int, int]] = []

    def add(found: re.Match[str], number: str, unit: str, *, series: str = "", per: float | None = None) -> None:
        out.append({"text": found[0], "value": float(number), "unit": unit, "decimals": len(number.partition(".")[2]),
                    "start": found.start(), "end": found.end(), "series": series, "per": per})

    for pattern in (_PRESSURE, _PER_VOLUME, _PAIR, _SERIES, _VALUE):
        for found in pattern.finditer(text):
            if (any(a <= found.start() < b for a, b in taken) or bound_before(text, found.start())
                    or bound_after(text, found.end())):
                continue
            taken.append(found.span())
            if pattern is _PRESSURE:
                for number in (found[1], found[2]):
                    add(found, number, "mm[hg]")
            elif pattern is _PER_VOLUME:
                add(found, found[1], _unit(found[2]), per=float(found[3]))
            elif pattern is _PAIR:
                add(found, found[1], _unit(found[2]), series="/")
                add(found, found[3], _unit(found[4]), series="/")
            elif pattern is _SERIES:
                sign = "/" if "/" in found[1] else "-"
                for number in _NUMBER.findall(found[1]):
                    add(found, number, _unit(found[2]), series=sign)
            else:
                add(found, found[1], _unit(found[2]))
    return sorted(out, key=lambda v: v["start"])


def value_matches(stated: Mapping[str, Any], record: Iterable[Mapping[str, Any]]) -> bool:
    """True when a record value has the stated unit and rounds to the stated number.

    ``record``: ``{"value", "unit"}`` dicts (``record.record_values``). A stated ``6.3 %`` matches a
    recorded ``6.27 %`` (rounded to the stated decimals, ``numbers.rounds_to``); ``6 %`` matches
    6.27 too (0 decimals), as a clinician would round.
    """
    return any(_unit(str(item["unit"])) == stated["unit"]
               and rounds_to(float(item["value"]), float(stated["value"]), int(stated["decimals"]))
               for item in record)


def any_contains(text: str, phrases: Sequence[str]) -> bool:
    """True when any of ``phrases`` is ``contains``-ed in ``text``."""
    return any(contains(text, p) for p in phrases)
