"""The rule tables the summary reader applies: medSpaCy sectionizer headings and ConText rules.

``reading.read`` loads them into medSpaCy's sectionizer and ConText (Harkema H, Dowling JN,
Thornblade T, Chapman WW. *ConText: an algorithm for determining negation, experiencer, and
temporal status from clinical reports.* J Biomed Inform 2009;42(5):839-851), beside its defaults.
The baseline judge's rules hash (``judge.BASELINE_SHA256``) holds them, so a card made before a
change no longer matches.
"""

from __future__ import annotations

__all__ = ["CONTEXT_RULES", "DROPPED_DEFAULT_RULES", "ENDED_SECTIONS", "SECTION_RULES"]

SECTION_RULES: tuple[tuple[str, str], ...] = (
    ("past", "past"), ("resolved", "past"), ("resolved problems", "past"), ("past problems", "past"),
    ("inactive problems", "past"), ("previous problems", "past"), ("past history", "past"),
    ("completed medications", "past_medications"), ("stopped medications", "past_medications"),
    ("completed/stopped medications", "past_medications"), ("discontinued medications", "past_medications"),
    ("past medications", "past_medications"), ("previous medications", "past_medications"),
    ("prior medications", "past_medications"), ("medication history", "past_medications"),
    ("stopped", "past_medications"), ("discontinued", "past_medications"), ("completed", "past_medications"),
    ("current medications", "medications"), ("medications", "medications"), ("active medications", "medications"),
    ("meds", "medications"), ("current", "current"), ("active", "current"), ("ongoing", "current"),
    ("active problems", "problem_list"), ("problems", "problem_list"),
    ("current problems", "problem_list"), ("allergies", "allergies"), ("drug allergies", "allergies"),
    # singular and British forms of the same headings
    ("current medication", "medications"), ("medication", "medications"), ("active medication", "medications"),
    ("current medicines", "medications"), ("medicines", "medications"),
    ("past medication", "past_medications"), ("previous medication", "past_medications"),
    ("stopped medication", "past_medications"), ("completed medication", "past_medications"),
    ("discontinued medication", "past_medications"), ("past medicines", "past_medications"),
    ("inactive medications", "past_medications"), ("inactive medication", "past_medications"),
    ("inactive meds", "past_medications"), ("historical medications", "past_medications"),
    ("historical medication", "past_medications"), ("past meds", "past_medications"),
    ("previous meds", "past_medications"), ("stopped meds", "past_medications"),
    ("discontinued meds", "past_medications"), ("completed courses", "past_medications"),
    ("completed / stopped", "past_medications"), ("stopped / completed", "past_medications"),
    ("no longer taking", "past_medications"), ("inactive", "past"), ("historical", "past"),
    ("resolved / past", "past"), ("past / resolved", "past"),
)
"""Headings the sectionizer knows besides its defaults: (heading, category). Only a heading at the
start of a line counts (``require_start_line``)."""

ENDED_SECTIONS = frozenset({"past", "past_medications", "past_medical_history"})
"""Section categories whose items are ended (medSpaCy's ``past_medical_history`` and ours)."""

CONTEXT_RULES: tuple[tuple[str, str, str], ...] = (
    ("stopped", "HISTORICAL", "BACKWARD"), ("discontinued", "HISTORICAL", "BACKWARD"),
    ("completed", "HISTORICAL", "BIDIRECTIONAL"), ("resolved", "HISTORICAL", "BACKWARD"),
    ("stopped", "HISTORICAL", "FORWARD"), ("discontinued", "HISTORICAL", "FORWARD"),
    ("previously on", "HISTORICAL", "FORWARD"), ("formerly on", "HISTORICAL", "FORWARD"),
    ("no longer on", "HISTORICAL", "FORWARD"), ("no longer taking", "HISTORICAL", "FORWARD"),
    ("off", "HISTORICAL", "FORWARD"), ("not on", "NEGATED_EXISTENCE", "FORWARD"),
    ("not taking", "NEGATED_EXISTENCE", "FORWARD"),
    # A relative clause ends a negation's scope ("findings rather than diagnoses, for which he
    # takes Norco"): it states something new of what the negated phrase named, as ConText's own
    # termination terms ("but", "however", "except") end a negation at a new clause.
    ("which", "NEGATED_EXISTENCE", "TERMINATE"),
    # ... and a history's scope too ("a history of opioid abuse for which he remains on
    # buprenorphine/naloxone": the drug is what he is on now, not history).
    ("which", "HISTORICAL", "TERMINATE"),
    # A new clause with its own subject and verb ends a negation ("no allergies recorded, and he is
    # on HCTZ 25 mg", "no active diagnoses, and the only current med is hydrocodone").
    ("he is", "NEGATED_EXISTENCE", "TERMINATE"), ("she is", "NEGATED_EXISTENCE", "TERMINATE"),
    ("he takes", "NEGATED_EXISTENCE", "TERMINATE"), ("she takes", "NEGATED_EXISTENCE", "TERMINATE"),
    ("he remains", "NEGATED_EXISTENCE", "TERMINATE"), ("she remains", "NEGATED_EXISTENCE", "TERMINATE"),
    ("the only current", "NEGATED_EXISTENCE", "TERMINATE"),
    # Past events in the patient's own words of a handoff (ConText's temporality "historical":
    # Harkema et al. 2009, section 2.2: a condition that occurred in the past; the clinical
    # shorthand "s/p" and "status post" is ConText's own trigger in its 2009 lexicon).
    ("s/p", "HISTORICAL", "FORWARD"), ("status post", "HISTORICAL", "FORWARD"),
    ("treated for", "HISTORICAL", "FORWARD"), ("recovered from", "HISTORICAL", "FORWARD"),
    ("remote", "HISTORICAL", "FORWARD"), ("had", "HISTORICAL", "FORWARD"), ("took", "HISTORICAL", "FORWARD"),
    ("received", "HISTORICAL", "FORWARD"), ("was on", "HISTORICAL", "FORWARD"), ("were on", "HISTORICAL", "FORWARD"),
    ("used to take", "HISTORICAL", "FORWARD"), ("episode of", "HISTORICAL", "FORWARD"),
    ("episodes of", "HISTORICAL", "FORWARD"), ("background of", "HISTORICAL", "FORWARD"),
    ("finished", "HISTORICAL", "BIDIRECTIONAL"), ("cleared", "HISTORICAL", "BACKWARD"),
    ("healed", "HISTORICAL", "BACKWARD"), ("settled", "HISTORICAL", "BACKWARD"),
    ("got better", "HISTORICAL", "BACKWARD"), ("expired", "HISTORICAL", "BACKWARD"),
    ("given", "HISTORICAL", "BACKWARD"), ("was used", "HISTORICAL", "BACKWARD"),
    ("were used", "HISTORICAL", "BACKWARD"), ("treated", "HISTORICAL", "BACKWARD"),
    ("ceased", "HISTORICAL", "BACKWARD"), ("in the past", "HISTORICAL", "BACKWARD"),
    ("has had", "HISTORICAL", "PSEUDO"), ("have had", "HISTORICAL", "PSEUDO"),
    ("has also had", "HISTORICAL", "PSEUDO"), ("have also had", "HISTORICAL", "PSEUDO"),
    # A finite course or a single dose, and a status written after its item ("penicillin V course
    # complete", "- done", "not current", "one-off", "self-limiting", "recovered", "was prescribed").
    ("course complete", "HISTORICAL", "BACKWARD"), ("course done", "HISTORICAL", "BACKWARD"),
    ("course over", "HISTORICAL", "BACKWARD"), ("- done", "HISTORICAL", "BACKWARD"),
    ("courses done", "HISTORICAL", "BACKWARD"), ("courses complete", "HISTORICAL", "BACKWARD"),
    ("courses over", "HISTORICAL", "BACKWARD"), ("d/c'd", "HISTORICAL", "BACKWARD"),
    ("dc'd", "HISTORICAL", "BACKWARD"), ("d/ced", "HISTORICAL", "BACKWARD"),
    ("short course", "HISTORICAL", "BIDIRECTIONAL"),
    ("not current", "HISTORICAL", "BIDIRECTIONAL"), ("not active", "HISTORICAL", "BIDIRECTIONAL"),
    ("no longer current", "HISTORICAL", "BIDIRECTIONAL"), ("no longer active", "HISTORICAL", "BIDIRECTIONAL"),
    ("not ongoing", "HISTORICAL", "BIDIRECTIONAL"), ("recovered", "HISTORICAL", "BACKWARD"),
    ("self-limiting", "HISTORICAL", "BACKWARD"), ("self-limited", "HISTORICAL", "BACKWARD"),
    ("one-off", "HISTORICAL", "BACKWARD"), ("one dose", "HISTORICAL", "BACKWARD"),
    ("single dose", "HISTORICAL", "BIDIRECTIONAL"), ("one-time dose", "HISTORICAL", "BIDIRECTIONAL"),
    ("administered", "HISTORICAL", "BACKWARD"), ("was prescribed", "HISTORICAL", "FORWARD"),
    ("were prescribed", "HISTORICAL", "FORWARD"), ("currently off", "HISTORICAL", "FORWARD"),
    ("limited course", "HISTORICAL", "BIDIRECTIONAL"), ("lapsed", "HISTORICAL", "BACKWARD"),
    ("inactive", "HISTORICAL", "BACKWARD"), ("old rx", "HISTORICAL", "BACKWARD"),
    ("no longer needed", "HISTORICAL", "BACKWARD"), ("one-time", "HISTORICAL", "BACKWARD"),
    ("temporary", "HISTORICAL", "BACKWARD"), ("not part of", "HISTORICAL", "BACKWARD"),
    # A switch ends the drug switched from ("X replaced by Y", "X changed to Y", "X switched to Y").
    ("replaced by", "HISTORICAL", "BACKWARD"), ("changed to", "HISTORICAL", "BACKWARD"),
    ("switched to", "HISTORICAL", "BACKWARD"), ("briefly", "HISTORICAL", "BIDIRECTIONAL"),
    ("not currently prescribed", "HISTORICAL", "BACKWARD"), ("not currently taking", "HISTORICAL", "BACKWARD"),
    ("end date", "HISTORICAL", "BACKWARD"), ("ended on", "HISTORICAL", "BACKWARD"),
    # A drug held is not being taken ("warfarin 5 mg (on hold)"); a status left open is uncertain
    # ("alteplase - unsure if stopped", "strep throat - may have settled"): a hedge, not a status.
    ("on hold", "HISTORICAL", "BACKWARD"), ("held", "HISTORICAL", "BACKWARD"),
    ("withheld", "HISTORICAL", "BACKWARD"),
    ("unsure", "POSSIBLE_EXISTENCE", "BIDIRECTIONAL"), ("not sure", "POSSIBLE_EXISTENCE", "BIDIRECTIONAL"),
    ("unclear if", "POSSIBLE_EXISTENCE", "BIDIRECTIONAL"), ("may have", "POSSIBLE_EXISTENCE", "BACKWARD"),
    ("might have", "POSSIBLE_EXISTENCE", "BACKWARD"),
    # an exception ends a negation ("no active diagnoses other than gingivitis, which is ongoing")
    ("other than", "NEGATED_EXISTENCE", "TERMINATE"), ("apart from", "NEGATED_EXISTENCE", "TERMINATE"),
    ("aside from", "NEGATED_EXISTENCE", "TERMINATE"), ("besides", "NEGATED_EXISTENCE", "TERMINATE"),
)

DROPPED_DEFAULT_RULES = frozenset({"as needed"})
"""Literals of medSpaCy's default ConText rules left out: "as needed" is PRN (pro re nata), a
dosing schedule, not a hypothesis, and its default HYPOTHETICAL trigger made every drug and problem
after it uncertain ("paracetamol 325 mg as needed for an ankle sprain"). (A PSEUDO rule of the same
literal does not reliably win over the default when many rules are loaded.)"""
"""ConText rules the defaults lack: (literal, category, direction). The historical ones reach at
most 6 tokens and stop at a comma or semicolon (``CLAUSE_END``), so ``lisinopril, metformin
stopped`` ends metformin only; negation keeps ConText's own scope (``Not on A, B or C``). Past
tense of an event (``treated for``, ``had``, ``took``, ``received``, ``was on``, ``... given``,
``... cleared``) marks its item historical; ``has had``/``have had`` (a state still holding) is a
pseudo-trigger that marks nothing."""
