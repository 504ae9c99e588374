"""Where a summary states an item's status relative to the item: after it, in its bracket, on its line or row.

``reading.read`` reads these beside medSpaCy's ConText: a bare status clause after a list item
("- Acute bronchitis (2019), resolved"), an ended predicate after the item's modifiers
("Acetaminophen 325 mg from his sprain was d/c'd"), a status set off by a dash at a list's end, a
status column or an end column in a table, a status on the indented line under an EHR entry.
Each function takes the sentence (or line, or the summary) and the item's offsets and answers
whether that layout ends the item (or gives its status).
"""

from __future__ import annotations

import re

from groundeval.tasks.summary.text import current_label

__all__ = ["BRACKET_STATUS", "DATE_RANGE", "STATUS_WORD", "bullet_status", "echo_status", "entry_status", "list_status",
           "object_status", "predicate_status", "subject_predicate", "table_status", "trailing_status"]

_ENTRY_LEAD = re.compile(r"^\s*(?:[-*\u2022+]\s+|\d+[.)]\s+)?[A-Za-z ]{0,24}$")
_ENTRY_STATUS = re.compile(
    r"[ \t]+(?:status:\s*)?(?:(?P<ended>inactive|stopped|completed|discontinued|ended|resolved|expired)"
    r"|(?P<current>active|current|ongoing))(?![a-z])", re.IGNORECASE)


def entry_status(text: str, line0: int, start: int, end: int) -> str | None:
    """``ended`` or ``current`` from the indented line under an entry the item opens, or None.

    EHR templates give an entry's status on its own indented line ("Sodium fluoride gel" over
    "    Inactive (completed)", "Hydrochlorothiazide 25 MG" over "    Status: active   Start: ...").
    """
    if not _ENTRY_LEAD.match(text[line0:start]):
        return None
    nl = text.find("\n", start)
    if nl < 0:
        return None
    found = _ENTRY_STATUS.match(text, nl + 1)
    if found is None:
        return None
    return "ended" if found["ended"] else "current"
"""A problem-oriented entry (``# Stroke (2006): clopidogrel 75 mg``): one problem and its plan on
its own line, not a heading over the lines below it (Weed LL. *Medical records that guide and
teach.* N Engl J Med 1968;278(11):593-600)."""



BRACKET_STATUS = re.compile(r"^\s*(?:(?:course|courses|rx)\s+)?(?:stopped|completed|discontinued|done|finished|ended"
                             r"|expired|inactive|d/c'?d|held|on hold|withheld|suspended)\s*$", re.IGNORECASE)
"""An item's own bracket holding only its ended status ("amoxicillin 500 mg x7d in 2019 (done)")."""


_STATUS_CLAUSE = re.compile(
    r"^\s*(?:(?:19|20)\d{2}\s*\(?\s*)?(?:long\s+|now\s+|since\s+|was\s+|were\s+|has\s+been\s+|have\s+been\s+"
    r"|since\s+been\s+)?"
    r"(?:resolved|stopped|completed|discontinued|ended|healed|cleared|finished|inactive|expired|d/c'?d|dc'?d"
    r"|given|administered|used|taken|(?:a|an)\s+(?:one-off|one-time|single)(?:\s+dose)?)"
    r"(?![a-z])(?!\s+(?:every|each|once\s+(?:a\s+)?(?:day|daily|weekly|week|nightly)|twice|daily|nightly|weekly"
    r"|regularly|as needed|as required|when needed|prn|bid|tid|qid|qd|q\d|at night|in the morning|up to)(?![a-z]))"
    r"[^,]*$", re.IGNORECASE)
"""A bare ended status (a past participle, after an optional auxiliary; a year may come first:
"2019 (completed)"). A participle followed by a schedule ("taken every four to six hours", "used
twice daily") is a dosing instruction, not a status."""
_STARTED_CLAUSE = re.compile(r"^\s*(?:started|start|began|begun|commenced|from|prescribed|issued)\b[^,]*$",
                             re.IGNORECASE)


def trailing_status(sentence: str, offset: int) -> bool:
    """True when the clause right after the one holding ``offset`` is a bare ended status.

    ``- Acute bronchitis (2019), resolved`` and ``Amoxicillin 500 mg, completed 2018`` end their
    item: a status clause after a list item or a line's one item speaks of the clause before it
    (only that one: ``A, B, resolved`` ends B, as ``lisinopril, metformin stopped`` ends metformin).
    """
    cut = sentence.find(",", offset)
    if cut == -1:
        return False
    clauses = sentence[cut + 1:].split(",")
    if len(clauses) > 1 and _STARTED_CLAUSE.match(clauses[0]):  # "X, started 2019-05-01, ended 2019-05-11"
        clauses = clauses[1:]
    return bool(_STATUS_CLAUSE.match(clauses[0].rstrip(" .;)")))


_MONTH_YEAR = r"(?<![a-z])(?:jan|feb|mar|apr|may|jun|jul|aug|sep|sept|oct|nov|dec)[a-z]{0,6}\.?\s+\d{4}"
DATE_RANGE = re.compile(
    rf"(?<![\d/.-])(?:\d{{4}}-\d{{2}}(?:-\d{{2}})?|\d{{1,2}}/(?:\d{{1,2}}/)?\d{{2,4}}|{_MONTH_YEAR})\s*"
    r"(?:to|until|till|through|thru|-|\u2013|\u2014)\s*"
    rf"(?:\d{{4}}-\d{{2}}(?:-\d{{2}})?|\d{{1,2}}/(?:\d{{1,2}}/)?\d{{2,4}}|{_MONTH_YEAR})(?![\d/])", re.IGNORECASE)
"""A span of two dates ("2019-05-01 to 2019-05-11", "5/2019-5/2019", "May 2019 - June 2019"): an
item given its start and its end is over (a year range, "2004-2010", is ``_YEAR``'s)."""

_PREDICATE = re.compile(
    r"^\s*(?:has|have|had)\s+(?:since\s+|now\s+|also\s+)?been\s+(?:since\s+|now\s+)?"
    r"(?:resolved|stopped|completed|discontinued|ended|healed|cleared|finished|withdrawn|ceased)(?![a-z])[^,]*$"
    r"|^\s*(?:was|were)\s+(?:since\s+|then\s+|later\s+|subsequently\s+)?"
    r"(?:stopped|discontinued|completed|withdrawn|ceased)(?![a-z])[^,]*$", re.IGNORECASE)


def predicate_status(sentence: str, offset: int) -> bool:
    """True when the item at ``offset`` opens the sentence and its last clause is an ended predicate.

    ``Alteplase 100 mg, prescribed in December 2018, has been stopped``: the clauses between a
    subject and its verb are asides, so an auxiliary with an ended participle closing the
    sentence ("has been stopped", "was discontinued") speaks of the item in its first clause.
    """
    parts = sentence.rstrip(" .;").split(",")
    return len(parts) > 2 and offset < len(parts[0]) and bool(_PREDICATE.match(parts[-1]))


_SUBJECT_LEAD = re.compile(r"^\s*(?:(?:and|but|then)\s+)?(?:(?:the|his|her|their|a|an)\s+)?(?:[\w-]+\s*/\s*)*$",
                           re.IGNORECASE)
"""What may come before a subject: a conjunction, a determiner, the combination's other ingredients
("The APAP/dextromethorphan/doxylamine cough syrup courses ... are finished")."""
_OWN_PREDICATE = re.compile(
    r"^(?:(?!\b(?:after|when|because|since|until|once|as|while|before|that|which|who|and|but|or)\b)[^,;:])*?"
    r"(?<![a-z])(?:was|were|has\s+been|have\s+been|had\s+been|is|are)\s+"
    r"(?:since\s+|then\s+|later\s+|subsequently\s+|now\s+|all\s+)?"
    r"(?:stopped|discontinued|d/c'?d|dc'?d|completed|ceased|withdrawn|finished|over|done)(?![a-z])", re.IGNORECASE)


def subject_predicate(sentence: str, start: int, end: int) -> bool:
    """True when the item at ``start:end`` is its clause's subject and the clause's verb ends it.

    ``Acetaminophen 325 mg from his ankle sprain in April 2019 was d/c'd``: the words between a
    subject and its verb (a strength, a prepositional phrase: no comma, no subordinate clause)
    modify the subject, so an ended predicate speaks of it however far ConText's window reaches.
    """
    before = sentence[:start]
    cut = max(before.rfind(","), before.rfind(";"), before.rfind(":"))
    rest = re.sub(r"\([^()]*\)", lambda m: " " * len(m[0]), sentence[end:])  # "(2017, 2022)" is an aside
    return bool(_SUBJECT_LEAD.match(before[cut + 1:])) and bool(_OWN_PREDICATE.match(rest))


_ENDED_VERB = re.compile(
    r"(?<![a-z])(?:he|she|they|pt|patient|the patient)(?:'s|\s+has|\s+have|\s+had)?\s+"
    r"(?:now\s+|since\s+|already\s+|also\s+|long\s+)?(?:finished|completed|stopped|discontinued|ceased|come\s+off"
    r"|came\s+off)\s+(?=\S)", re.IGNORECASE)
_OBJECT_BREAK = re.compile(r"[;:]|(?<![a-z])(?:but|while|whereas|although|though|yet|is|are|was|were|remains?"
                           r"|continues?|still|takes?|taking|on|started|restarted|resumed|which|who)(?![a-z])",
                           re.IGNORECASE)


def object_status(sentence: str, offset: int) -> bool:
    """True when the item at ``offset`` is an object of an ended verb whose subject is the patient.

    ``He's finished the cough syrup (acetaminophen/dextromethorphan/doxylamine) and the sodium
    fluoride gel``: every drug the verb takes as its object is over, however long the list (ConText's
    window is six tokens), until a new clause ("but", a verb of taking) begins.
    """
    before = re.sub(r"\([^()]*\)", lambda m: " " * len(m[0]), sentence[:offset])
    ends = [m.end() for m in _ENDED_VERB.finditer(before)]
    return bool(ends) and not _OBJECT_BREAK.search(before[ends[-1]:])


_ECHO = re.compile(r"^\s*(?:as|and so|so)\s+(?:did|has|have|had|were|was)(?![a-z])", re.IGNORECASE)


def echo_status(sentence: str, offset: int) -> bool:
    """True when the item's clause echoes the ended verb of the clause before it.

    ``the sprain resolved in May 2019, as did a viral sinusitis in 2014``: "as did" repeats
    "resolved" for the item it introduces.
    """
    cut = sentence.rfind(",", 0, offset)
    if cut == -1 or not _ECHO.match(sentence[cut + 1:offset]):
        return False
    before = sentence[:cut]
    return bool(STATUS_WORD.search(before[before.rfind(",") + 1:].lower()))


_LEAD_OUT = re.compile(
    r"\s[-\u2013\u2014]+\s*(?:all\s+|both\s+|each\s+|now\s+)?"
    r"(?:resolved|stopped|completed|discontinued|ended|healed|cleared|finished|settled|inactive|d/c'?d|dc'?d)"
    r"(?![a-z])[^,;:]*$", re.IGNORECASE)


def list_status(sentence: str, offset: int) -> bool:
    """True when the sentence is a list whose status follows it after a spaced dash.

    ``Pharyngitis x2, gingivitis, gingival dz - resolved``: a status set off by a dash at the end
    of a list speaks of the whole list (a lead-in turned round), unlike a bare status clause
    (``lisinopril, metformin stopped`` ends metformin only, ``trailing_status``).
    """
    found = _LEAD_OUT.search(sentence.rstrip(" .;"))
    return found is not None and offset < found.start()


_BULLET = re.compile(r"^\s*(?:[-*\u2022+]|\d+[.)])\s+")
STATUS_WORD = re.compile(
    r"(?<![a-z])(?:resolved|stopped|completed|discontinued|ended|healed|cleared|finished|expired|d/c'?d|dc'?d)(?![a-z])")


_MODIFIERS = re.compile(r"\s*(?:(?!(?:on|off|taking|takes|started|restarted|resumed|stopped|and|or|with|not|no)\b)"
                        r"[A-Za-z][\w-]*\s+){1,2}")
"""One or two words before an item opening a list item ("- Recurrent gingivitis, ...", "- Acute viral
sinusitis, ..."): its modifiers, not another item or a verb."""


def bullet_status(line: str, offset: int, end: int, *, listed: bool = False) -> bool:
    """True when a list item opens with the item at ``offset`` and states an ended status after it.

    ``- Amoxicillin 500 mg, 10-day course - completed``, ``- Recurrent gingivitis, last 2022,
    resolved``: a bullet (``-``, ``*``, ``•``, ``1.``) names its item first (after at most two
    modifiers) and its status last; the status is the item's (``text.CURRENT_WORDS`` in the line
    keep it current). A bullet of several items closed by a bare status clause (``- A, B, C,
    resolved``) gives the status to each. ``listed``: the line is a list item without a marker, under a heading.
    """
    bullet = _BULLET.match(line) or (re.match(r"\s*", line) if listed else None)
    if bullet is None:
        return False
    if not (offset - bullet.end() <= 2 or _MODIFIERS.fullmatch(line[bullet.end():offset])):
        # "- Viral pharyngitis, gingivitis, gingival disease, resolved": a list item of several items
        # closed by a bare status clause of its own gives it to each of them
        head, _, last = line.rstrip(" .;").rpartition(",")
        return (bool(head) and offset < len(head) and bool(_STATUS_CLAUSE.match(last))
                and not re.search(r"[;:]|(?<![a-z])(?:current|currently|active|ongoing)(?![a-z])", head.lower()))
    rest = line[end:].lower()
    return bool(STATUS_WORD.search(rest)) and not re.search(r"(?<![a-z])(?:current|currently|active|ongoing)(?![a-z])",
                                                              rest)


_YES = frozenset({"yes", "y", "active", "current", "ongoing", "taking", "continue", "continued", "on",
                  "\u2713", "\u2714"})
_NO = frozenset({"no", "n", "stopped", "inactive", "ended", "completed", "discontinued", "expired", "finished", "done",
                 "resolved", "not taking", "off", "historical", "\u2717", "\u2718", "-"})


def table_status(text: str, at: int) -> str | None:
    """``current`` or ``ended`` from a table's status column (``| Drug | Current? |`` over ``| X | No |``), or None.

    A row is read against the first row of its table: a column headed ``current``, ``active``,
    ``current?``, ``active?`` or ``on it?`` holding ``yes``/``no`` (or a tick) gives the row's item
    that status; so does an end column (``Until``, ``End date``, ``Stopped``: ``_END_COLUMNS``)
    holding a date or an ended word (ended) or a dash or current word (current).
    """
    line0 = text.rfind("\n", 0, at) + 1
    line1 = text.find("\n", at)
    row = text[line0:line1 if line1 != -1 else len(text)]
    if row.count("|") < 2:
        return None
    start = line0
    while start > 0:
        prev0 = text.rfind("\n", 0, start - 1) + 1
        if text[prev0:start - 1].count("|") < 2:
            break
        start = prev0
    header_end = text.find("\n", start)
    header = [c.strip().lower().rstrip("?").strip() for c in text[start:header_end].strip().strip("|").split("|")]
    if start == line0:
        return None
    cells = [c.strip().lower() for c in row.strip().strip("|").split("|")]
    for name, cell in zip(header, cells, strict=False):
        if name in ("current", "active", "on it", "currently taking", "status"):
            if cell in _NO:
                return "ended"
            if cell in _YES:
                return "current"
        if name in _END_COLUMNS:
            if re.search(r"\d", cell) or STATUS_WORD.search(cell):
                return "ended"
            if not cell.strip(" -\u2013\u2014()") or current_label(cell) or cell.strip(" -\u2013\u2014()") in (
                    "present", "now", "ongoing", "n/a", "na", "none"):
                return "current"
    return None


_END_COLUMNS = frozenset({"until", "to", "end", "ended", "end date", "stopped", "stop date", "date stopped", "stop",
                          "finish", "finished", "date ended", "discontinued",
                          "resolved", "date resolved", "resolved on", "stopped on", "ended on"})
"""Table columns that give an item's end: a date or an ended word there ends the row's item; a
dash, "-(active)" or "ongoing" keeps it current (``| Viral sinusitis | 2014-03-26 | 2014-04-09 |``)."""
